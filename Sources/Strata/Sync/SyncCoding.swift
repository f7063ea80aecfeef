import Engine
import Foundation

// Invariants:
// (1) Encodings are deterministic: dictionary entries are written in key order, so equal values encode to equal
//     bytes (sets are ordered by encoding, and `ObjectReference` compares by it).
// (2) Every decode checks what it reads (tags, lengths, depth) and throws `StorageError.corrupted` with the
//     offset; a caller names the file and the entry.

/// The binary form of sync's values, operations, change sets and object states: the outbox's entries on disk,
/// and what a server receives.
package enum SyncCoding {
    static let formatVersion: UInt8 = 1
    static let recoveryFormatVersion: UInt8 = 2
    static let maxDepth = 64

    // MARK: - Values

    static func encode(_ v: SyncValue) -> [UInt8] {
        var out: [UInt8] = []
        write(v, into: &out)
        return out
    }

    static func write(_ v: SyncValue, into out: inout [UInt8]) {
        switch v {
        case .null: out.append(0)
        case .bool(let b): out.append(b ? 2 : 1)
        case .int(let i):
            out.append(3)
            out.appendVarint(UInt64(bitPattern: (i << 1) ^ (i >> 63)))
        case .float(let f):
            out.append(4)
            out.appendUInt32LE(f.bitPattern)
        case .double(let d):
            out.append(5)
            out.appendUInt64LE(d.bitPattern)
        case .string(let s):
            out.append(6)
            writeString(s, into: &out)
        case .data(let d):
            out.append(7)
            out.appendVarint(UInt64(d.count))
            out.append(contentsOf: d)
        case .date(let d):
            out.append(8)
            out.appendUInt64LE(d.timeIntervalSinceReferenceDate.bitPattern)
        case .uuid(let u):
            out.append(9)
            withUnsafeBytes(of: u.uuid) { out.append(contentsOf: $0) }
        case .objectId(let o):
            out.append(10)
            out.append(contentsOf: o.bytes.prefix(12))
            if o.bytes.count < 12 { out.append(contentsOf: repeatElement(0, count: 12 - o.bytes.count)) }
        case .decimal(let d):
            out.append(11)
            writeString(d.description, into: &out)
        case .link(let r):
            out.append(12)
            write(r, into: &out)
        case .embedded(let fields):
            out.append(13)
            writeDictionary(fields, into: &out)
        case .list(let items):
            out.append(14)
            out.appendVarint(UInt64(items.count))
            for item in items { write(item, into: &out) }
        case .dictionary(let d):
            out.append(15)
            writeDictionary(d, into: &out)
        }
    }

    static func writeString(_ s: String, into out: inout [UInt8]) {
        out.appendVarint(UInt64(s.utf8.count))
        out.append(contentsOf: s.utf8)
    }

    private static func writeDictionary(_ d: [String: SyncValue], into out: inout [UInt8]) {
        out.appendVarint(UInt64(d.count))
        for key in d.keys.sorted() {
            writeString(key, into: &out)
            write(d[key]!, into: &out)
        }
    }

    package static func write(_ r: ObjectReference, into out: inout [UInt8]) {
        writeString(r.type, into: &out)
        write(r.primaryKey, into: &out)
    }

    static func readString(_ r: inout ByteReader, _ what: String) throws -> String {
        let n = try r.readLength("\(what) length", limit: r.remaining)
        let bytes = try r.readBytes(count: n, what)
        guard let s = String(validating: bytes, as: UTF8.self) else {
            throw StorageError(.corrupted, "\(what) is not UTF-8", file: nil, offset: r.position - n)
        }
        return s
    }

    static func readValue(_ r: inout ByteReader, depth: Int = 0) throws -> SyncValue {
        guard depth < maxDepth else { throw StorageError(.corrupted, "a sync value nests more than \(maxDepth) deep", file: nil, offset: r.position) }
        let start = r.position
        let tag = try r.readUInt8("value tag")
        switch tag {
        case 0: return .null
        case 1: return .bool(false)
        case 2: return .bool(true)
        case 3:
            let z = try r.readVarint("integer")
            return .int(Int64(bitPattern: z >> 1) ^ -Int64(bitPattern: z & 1))
        case 4: return .float(Float(bitPattern: try r.readUInt32LE("float")))
        case 5: return .double(Double(bitPattern: try r.readUInt64LE("double")))
        case 6: return .string(try readString(&r, "string"))
        case 7:
            let n = try r.readLength("data length", limit: r.remaining)
            return .data(Data(try r.readBytes(count: n, "data")))
        case 8: return .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: try r.readUInt64LE("date"))))
        case 9:
            let b = [UInt8](try r.readBytes(count: 16, "uuid"))
            return .uuid(UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])))
        case 10: return .objectId(ObjectId(bytes: [UInt8](try r.readBytes(count: 12, "objectId"))))
        case 11:
            let text = try readString(&r, "decimal")
            guard let d = Decimal128.parse(text) else {
                throw StorageError(.corrupted, "a decimal holds '\(text.prefix(40))', which is not a decimal number", file: nil, offset: start)
            }
            return .decimal(Decimal128(storage: d))
        case 12: return .link(try readReference(&r, depth: depth + 1))
        case 13: return .embedded(try readDictionary(&r, depth: depth + 1))
        case 14:
            let n = try r.readLength("list length", limit: r.remaining)
            var items: [SyncValue] = []
            items.reserveCapacity(min(n, 4096))
            for _ in 0..<n { items.append(try readValue(&r, depth: depth + 1)) }
            return .list(items)
        case 15: return .dictionary(try readDictionary(&r, depth: depth + 1))
        default:
            throw StorageError(.corrupted, "unknown sync value tag \(tag)", file: nil, offset: start)
        }
    }

    private static func readDictionary(_ r: inout ByteReader, depth: Int) throws -> [String: SyncValue] {
        let n = try r.readLength("dictionary length", limit: r.remaining)
        var out: [String: SyncValue] = [:]
        for _ in 0..<n {
            let key = try readString(&r, "dictionary key")
            out[key] = try readValue(&r, depth: depth)
        }
        return out
    }

    package static func readReference(_ r: inout ByteReader, depth: Int = 0) throws -> ObjectReference {
        let type = try readString(&r, "type name")
        return ObjectReference(type: type, primaryKey: try readValue(&r, depth: depth))
    }

    // MARK: - Operations and change sets

    static func write(_ op: ChangeOperation, into out: inout [UInt8]) {
        func head(_ tag: UInt8, _ ref: ObjectReference, _ property: String?) {
            out.append(tag)
            write(ref, into: &out)
            if let property { writeString(property, into: &out) }
        }
        func element(_ e: ElementID) { write(e, into: &out) }
        func position(_ p: ListPosition) { write(p, into: &out) }
        switch op {
        case .create(let ref, let values):
            head(1, ref, nil)
            writeDictionary(values, into: &out)
        case .set(let ref, let p, let v):
            head(2, ref, p)
            write(v, into: &out)
        case .delete(let ref):
            head(3, ref, nil)
        case .addInteger(let ref, let p, let n):
            head(4, ref, p)
            out.appendUInt64LE(UInt64(bitPattern: n))
        case .listInsert(let ref, let p, let e, let pos, let v):
            head(5, ref, p)
            element(e)
            position(pos)
            write(v, into: &out)
        case .listMove(let ref, let p, let e, let pos):
            head(6, ref, p)
            element(e)
            position(pos)
        case .listRemove(let ref, let p, let e):
            head(7, ref, p)
            element(e)
        case .listSet(let ref, let p, let e, let v):
            head(8, ref, p)
            element(e)
            write(v, into: &out)
        case .setInsert(let ref, let p, let v):
            head(9, ref, p)
            write(v, into: &out)
        case .setRemove(let ref, let p, let v):
            head(10, ref, p)
            write(v, into: &out)
        case .mapPut(let ref, let p, let k, let v):
            head(11, ref, p)
            writeString(k, into: &out)
            write(v, into: &out)
        case .mapRemove(let ref, let p, let k):
            head(12, ref, p)
            writeString(k, into: &out)
        }
    }

    static func write(_ e: ElementID, into out: inout [UInt8]) {
        out.appendUInt64LE(e.client)
        out.appendVarint(e.counter)
    }

    static func write(_ p: ListPosition, into out: inout [UInt8]) {
        out.appendVarint(UInt64(p.bytes.count))
        out.append(contentsOf: p.bytes)
    }

    static func readElement(_ r: inout ByteReader) throws -> ElementID {
        ElementID(client: try r.readUInt64LE("element client"), counter: try r.readVarint("element counter"))
    }

    static func readPosition(_ r: inout ByteReader) throws -> ListPosition {
        let n = try r.readLength("position length", limit: r.remaining)
        let bytes = [UInt8](try r.readBytes(count: n, "position"))
        guard let last = bytes.last, last != 0 else {
            throw StorageError(.corrupted, "a list position is empty or ends in a zero byte", file: nil, offset: r.position - n)
        }
        return ListPosition(bytes: bytes)
    }

    static func readOperation(_ r: inout ByteReader) throws -> ChangeOperation {
        let start = r.position
        let tag = try r.readUInt8("operation tag")
        guard (1...12).contains(tag) else { throw StorageError(.corrupted, "unknown operation tag \(tag)", file: nil, offset: start) }
        let ref = try readReference(&r)
        if tag == 1 { return .create(ref, values: try readDictionary(&r, depth: 1)) }
        if tag == 3 { return .delete(ref) }
        let p = try readString(&r, "property name")
        switch tag {
        case 2: return .set(ref, property: p, value: try readValue(&r))
        case 4: return .addInteger(ref, property: p, amount: Int64(bitPattern: try r.readUInt64LE("amount")))
        case 5:
            let e = try readElement(&r)
            let pos = try readPosition(&r)
            return .listInsert(ref, property: p, element: e, position: pos, value: try readValue(&r))
        case 6:
            let e = try readElement(&r)
            return .listMove(ref, property: p, element: e, position: try readPosition(&r))
        case 7: return .listRemove(ref, property: p, element: try readElement(&r))
        case 8:
            let e = try readElement(&r)
            return .listSet(ref, property: p, element: e, value: try readValue(&r))
        case 9: return .setInsert(ref, property: p, value: try readValue(&r))
        case 10: return .setRemove(ref, property: p, value: try readValue(&r))
        case 11:
            let k = try readString(&r, "map key")
            return .mapPut(ref, property: p, key: k, value: try readValue(&r))
        default: return .mapRemove(ref, property: p, key: try readString(&r, "map key"))
        }
    }

    /// A change set's header (its operations follow as `write(_:into:)` writes each).
    /// Format 1, or 2 for a recovery's change set (its `Recovery` follows the schema version).
    static func writeHeader(_ c: ChangeSet, operationCount: Int, into out: inout [UInt8]) {
        out.append(c.recovery == nil ? formatVersion : recoveryFormatVersion)
        out.appendUInt64LE(c.clientID)
        out.appendVarint(c.sequence)
        out.appendVarint(c.baseVersion)
        out.appendVarint(c.schemaVersion)
        if let recovery = c.recovery {
            out.appendVarint(recovery.through)
            out.appendVarint(UInt64(recovery.carried.count))
            for id in recovery.carried {
                out.appendUInt64LE(id.clientID)
                out.appendVarint(id.sequence)
            }
        }
        out.appendVarint(UInt64(operationCount))
    }

    /// A change set's header, without its operations, and how many operations follow.
    static func readHeader(_ r: inout ByteReader) throws -> (ChangeSet, count: UInt64) {
        let version = try r.readUInt8("format version")
        guard version == formatVersion || version == recoveryFormatVersion else {
            throw StorageError(.corrupted, "change set format \(version) is not one this version reads (\(formatVersion) or \(recoveryFormatVersion))", file: nil, offset: 0)
        }
        let client = try r.readUInt64LE("client id")
        let seq = try r.readVarint("sequence")
        let base = try r.readVarint("base version")
        let schema = try r.readVarint("schema version")
        var recovery: ChangeSet.Recovery?
        if version == recoveryFormatVersion {
            let through = try r.readVarint("recovered version")
            // Each carried identity takes at least 9 bytes.
            let n = try r.readLength("carried change set count", limit: r.remaining / 9)
            var carried: [ChangeSet.Identity] = []
            carried.reserveCapacity(n)
            for _ in 0..<n { carried.append(ChangeSet.Identity(clientID: try r.readUInt64LE("carried client id"), sequence: try r.readVarint("carried sequence"))) }
            recovery = ChangeSet.Recovery(through: through, carried: carried)
        }
        let count = try r.readVarint("operation count")
        return (ChangeSet(clientID: client, sequence: seq, baseVersion: base, schemaVersion: schema, operations: [], recovery: recovery), count)
    }

    package static func encode(_ c: ChangeSet) -> [UInt8] {
        var out: [UInt8] = []
        writeHeader(c, operationCount: c.operations.count, into: &out)
        for op in c.operations { write(op, into: &out) }
        return out
    }

    package static func decodeChangeSet(_ bytes: UnsafeRawBufferPointer) throws -> ChangeSet {
        var r = ByteReader(bytes)
        var (set, count) = try readHeader(&r)
        guard count <= UInt64(r.remaining) else {
            throw StorageError(.corrupted, "operation count \(count) is more than the \(r.remaining) bytes left hold", file: nil, offset: r.position)
        }
        set.operations.reserveCapacity(Int(count))
        for _ in 0..<count { set.operations.append(try readOperation(&r)) }
        guard r.isAtEnd else { throw StorageError(.corrupted, "\(r.remaining) bytes follow the change set", file: nil, offset: r.position) }
        return set
    }

    // MARK: - Object states

    package static func write(_ s: SyncObjectState, into out: inout [UInt8]) {
        switch s {
        case .absent: out.append(0)
        case .deleted(let t):
            out.append(1)
            out.appendUInt64LE(t.version)
            out.appendUInt64LE(t.client)
        case .live(let o):
            out.append(2)
            out.appendVarint(UInt64(o.fields.count))
            for name in o.fields.keys.sorted() {
                writeString(name, into: &out)
                write(o.fields[name]!, into: &out)
            }
        }
    }

    static func write(_ image: UndoImage, into out: inout [UInt8]) {
        switch image {
        case .state(let s):
            out.append(0)
            write(s, into: &out)
        case .fields(let fields):
            out.append(1)
            out.appendVarint(UInt64(fields.count))
            for name in fields.keys.sorted() {
                writeString(name, into: &out)
                write(fields[name]!, into: &out)
            }
        }
    }

    static func readUndoImage(_ r: inout ByteReader) throws -> UndoImage {
        let start = r.position
        switch try r.readUInt8("undo image tag") {
        case 0: return .state(try readState(&r))
        case 1:
            let n = try r.readLength("field count", limit: r.remaining)
            var fields: [String: FieldState] = [:]
            for _ in 0..<n {
                let name = try readString(&r, "property name")
                fields[name] = try readField(&r)
            }
            return .fields(fields)
        case let tag:
            throw StorageError(.corrupted, "unknown undo image tag \(tag)", file: nil, offset: start)
        }
    }

    static func write(_ f: FieldState, into out: inout [UInt8]) {
        switch f {
        case .value(let v):
            out.append(0)
            write(v, into: &out)
        case .list(let elements):
            out.append(1)
            out.appendVarint(UInt64(elements.count))
            for e in elements {
                write(e.id, into: &out)
                write(e.position, into: &out)
                write(e.value, into: &out)
            }
        case .set(let values):
            out.append(2)
            out.appendVarint(UInt64(values.count))
            for v in values { write(v, into: &out) }
        case .map(let m):
            out.append(3)
            writeDictionary(m, into: &out)
        }
    }

    /// A reference alone in `bytes` (a server's key of an object): checked, with nothing after it.
    package static func decodeReference(_ bytes: UnsafeRawBufferPointer) throws -> ObjectReference {
        try whole(bytes, "reference") { try readReference(&$0) }
    }

    /// An object state alone in `bytes` (a server's row, a snapshot's object): checked, with nothing after it.
    package static func decodeState(_ bytes: UnsafeRawBufferPointer) throws -> SyncObjectState {
        try whole(bytes, "object state") { try readState(&$0) }
    }

    private static func whole<T>(_ bytes: UnsafeRawBufferPointer, _ what: String, _ read: (inout ByteReader) throws -> T) throws -> T {
        var r = ByteReader(bytes)
        let value = try read(&r)
        guard r.isAtEnd else { throw StorageError(.corrupted, "\(r.remaining) bytes follow the \(what)", file: nil, offset: r.position) }
        return value
    }

    package static func readState(_ r: inout ByteReader) throws -> SyncObjectState {
        let start = r.position
        switch try r.readUInt8("object state tag") {
        case 0: return .absent
        case 1: return .deleted(Tombstone(version: try r.readUInt64LE("tombstone version"), client: try r.readUInt64LE("tombstone client")))
        case 2:
            let n = try r.readLength("field count", limit: r.remaining)
            var fields: [String: FieldState] = [:]
            for _ in 0..<n {
                let name = try readString(&r, "property name")
                fields[name] = try readField(&r)
            }
            return .live(SyncObject(fields: fields))
        case let tag:
            throw StorageError(.corrupted, "unknown object state tag \(tag)", file: nil, offset: start)
        }
    }

    static func readField(_ r: inout ByteReader) throws -> FieldState {
        let start = r.position
        switch try r.readUInt8("field tag") {
        case 0: return .value(try readValue(&r))
        case 1:
            let n = try r.readLength("list length", limit: r.remaining)
            var elements: [ListElement] = []
            elements.reserveCapacity(min(n, 4096))
            for _ in 0..<n {
                let id = try readElement(&r)
                let pos = try readPosition(&r)
                elements.append(ListElement(id: id, position: pos, value: try readValue(&r)))
            }
            return .list(elements)
        case 2:
            let n = try r.readLength("set length", limit: r.remaining)
            var values: [SyncValue] = []
            for _ in 0..<n { values.append(try readValue(&r)) }
            return .set(values)
        case 3: return .map(try readDictionary(&r, depth: 1))
        case let tag:
            throw StorageError(.corrupted, "unknown field tag \(tag)", file: nil, offset: start)
        }
    }
}
