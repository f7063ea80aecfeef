import Engine
import Foundation

// Invariants:
// (1) Runs are an encoding of the outbox's chunks only: a run decodes to the operations (or undo images) it
//     stands for, in its order, exactly as if each had been written alone. Runs are never sent: a change set
//     on the wire (`SyncCoding.encode`) writes each operation alone, and `readOperation` refuses a run's tag.
// (2) An undo run starts with an empty type name, which no reference has (a type's name is never empty), so
//     a reader tells it from an undo image by its first byte.
// (3) Every count a run states is checked against the bytes left before it is used; nothing is reserved for a
//     run as a whole (a change set of many runs would copy its operations at each).

/// Runs: many operations of one type (and property) written with the type's and property's names once, as
/// capture's direct path writes a large write's creates and sets into the outbox.
extension SyncCoding {
    /// The tags of run items in an outbox chunk (after the operation tags, 1...12).
    enum RunTag {
        /// type · property · varint n · n × (primary key, value): n `set`s.
        static let sets: UInt8 = 13
        /// type · varint f · f × property · varint primary key's index among them · varint n · n × f values:
        /// n `create`s, each of every listed property.
        static let creates: UInt8 = 14
    }

    /// The tags of undo runs (after an empty type name, invariant 2).
    enum UndoRunTag {
        /// type · varint n · n primary keys: n objects that did not exist before (`.state(.absent)`).
        static let absent: UInt8 = 1
        /// type · property · varint n · n × (primary key, value): n objects whose property held that value.
        static let fields: UInt8 = 2
    }

    /// Writes a name as a reference or a property name is written (its length, then its UTF-8).
    static func nameBytes(_ name: String) -> [UInt8] {
        var out: [UInt8] = []
        writeString(name, into: &out)
        return out
    }

    /// Reads one item of an outbox chunk, an operation or a run of them, appending what it stands for to `ops`.
    static func readOutboxItem(_ r: inout ByteReader, into ops: inout [ChangeOperation]) throws {
        guard r.remaining > 0, case let tag = r.bytes[r.position], tag == RunTag.sets || tag == RunTag.creates else {
            ops.append(try readOperation(&r))
            return
        }
        let start = r.position
        r.position += 1
        let type = try readString(&r, "type name")
        guard !type.isEmpty else { throw StorageError(.corrupted, "a run of operations names no type", file: nil, offset: start) }
        if tag == RunTag.sets {
            let property = try readString(&r, "property name")
            // Each set takes at least two bytes: its key's tag and its value's.
            let n = try r.readLength("run length", limit: r.remaining / 2)
            for _ in 0..<n {
                let ref = ObjectReference(type: type, primaryKey: try readValue(&r))
                ops.append(.set(ref, property: property, value: try readValue(&r)))
            }
            return
        }
        let f = try r.readLength("property count", limit: r.remaining)
        guard f > 0 else { throw StorageError(.corrupted, "a run of creates names no property", file: nil, offset: start) }
        var names: [String] = []
        names.reserveCapacity(f)
        for _ in 0..<f { names.append(try readString(&r, "property name")) }
        let key = try r.readLength("primary key's index", limit: f - 1)
        // Each create takes at least a byte per property.
        let n = try r.readLength("run length", limit: r.remaining / f)
        for _ in 0..<n {
            var values: [String: SyncValue] = [:]
            values.reserveCapacity(f)
            for name in names { values[name] = try readValue(&r) }
            ops.append(.create(ObjectReference(type: type, primaryKey: values[names[key]] ?? .null), values: values))
        }
    }

    /// Reads one item of an undo chunk, an undo image or a run of them, appending what it stands for to `out`.
    static func readUndoItem(_ r: inout ByteReader, into out: inout [(ObjectReference, UndoImage)]) throws {
        guard r.remaining > 0, r.bytes[r.position] == 0 else {
            let ref = try readReference(&r)
            out.append((ref, try readUndoImage(&r)))
            return
        }
        let start = r.position
        r.position += 1
        let tag = try r.readUInt8("undo run tag")
        let type = try readString(&r, "type name")
        guard !type.isEmpty else { throw StorageError(.corrupted, "a run of undo images names no type", file: nil, offset: start) }
        switch tag {
        case UndoRunTag.absent:
            let n = try r.readLength("run length", limit: r.remaining)
            for _ in 0..<n { out.append((ObjectReference(type: type, primaryKey: try readValue(&r)), .state(.absent))) }
        case UndoRunTag.fields:
            let property = try readString(&r, "property name")
            let n = try r.readLength("run length", limit: r.remaining / 2)
            for _ in 0..<n {
                let ref = ObjectReference(type: type, primaryKey: try readValue(&r))
                out.append((ref, .fields([property: .value(try readValue(&r))])))
            }
        default:
            throw StorageError(.corrupted, "unknown undo run tag \(tag)", file: nil, offset: start + 1)
        }
    }
}
