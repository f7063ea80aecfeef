import Foundation
import PostgresNIO
import Strata

/// Sync's rules over a partition's objects in PostgreSQL, inside one push's transaction. The rules run
/// synchronously, so the objects a batch touches are loaded first; an object the rules ask for that was not
/// loaded is noted as missing and the batch is applied again once it is (`PushHandler`), so a guess that loads too
/// little costs a round trip, never a wrong result.
final class PostgresSyncStore: SyncStore {
    /// The objects read from the database (absent ones included), as they were before this push.
    private(set) var loaded: [ObjectReference: SyncObjectState] = [:]
    /// The objects whose linkers were read: every object of the database that links to each.
    private var linkersLoaded: [ObjectReference: [ObjectReference]] = [:]
    /// What the batch changed so far.
    private(set) var changed: [ObjectReference: SyncObjectState] = [:]
    /// Objects, and objects' linkers, the rules asked for that were not loaded.
    private(set) var missing = Set<ObjectReference>()
    private(set) var missingLinkers = Set<ObjectReference>()

    func state(of object: ObjectReference) -> SyncObjectState {
        if let s = changed[object] ?? loaded[object] { return s }
        missing.insert(object)
        return .absent
    }

    func setState(_ state: SyncObjectState, of object: ObjectReference) {
        changed[object] = state
    }

    func objectsMaybeLinking(to object: ObjectReference) -> [ObjectReference] {
        guard let stored = linkersLoaded[object] else {
            missingLinkers.insert(object)
            return []
        }
        var out = Set(stored)
        for (ref, s) in changed where s.object?.linkTargets.contains(object) == true { out.insert(ref) }
        return out.sorted()
    }

    /// Forgets what a batch changed and what it missed, to apply it again.
    func restart() {
        changed = [:]
        missing = []
        missingLinkers = []
    }

    // MARK: - Loading

    /// The objects an operation reads: its own, the targets of links in its values, and for a delete, its
    /// linkers (`load(linkersOf:)`).
    static func references(of op: ChangeOperation, into refs: inout Set<ObjectReference>, linkers: inout Set<ObjectReference>) {
        refs.insert(op.object)
        var targets = Set<ObjectReference>()
        switch op {
        case .create(_, let values): for v in values.values { v.collectLinks(into: &targets) }
        case .set(_, _, let v), .listInsert(_, _, _, _, let v), .listSet(_, _, _, let v), .setInsert(_, _, let v),
            .mapPut(_, _, _, let v):
            v.collectLinks(into: &targets)
        case .delete(let ref): linkers.insert(ref)
        default: break
        }
        refs.formUnion(targets)
    }

    /// Reads the objects `refs` names that are not loaded yet.
    func load(_ refs: Set<ObjectReference>, partition: String, connection: PostgresConnection, logger: Logger) async throws {
        let wanted = refs.filter { loaded[$0] == nil }
        guard !wanted.isEmpty else { return }
        let keys = wanted.map(ObjectKey.text)
        let rows = try await connection.query(
            "SELECT ref, state FROM strata_objects WHERE partition = \(partition) AND ref = ANY(\(keys))", logger: logger)
        for try await (key, state) in rows.decode((String, ByteBuffer).self) {
            let ref = try ObjectKey.reference(key)
            loaded[ref] = try ObjectKey.state(state, of: key)
        }
        for ref in wanted where loaded[ref] == nil { loaded[ref] = .absent }
    }

    /// Reads every object of the partition that links to each of `targets` (and loads them).
    func load(linkersOf targets: Set<ObjectReference>, partition: String, connection: PostgresConnection, logger: Logger) async throws {
        let wanted = targets.filter { linkersLoaded[$0] == nil }
        guard !wanted.isEmpty else { return }
        let keys = wanted.map(ObjectKey.text)
        let rows = try await connection.query(
            "SELECT ref, state FROM strata_objects WHERE partition = \(partition) AND links && \(keys)", logger: logger)
        for ref in wanted { linkersLoaded[ref] = [] }
        for try await (key, bytes) in rows.decode((String, ByteBuffer).self) {
            let ref = try ObjectKey.reference(key)
            let state = try ObjectKey.state(bytes, of: key)
            if loaded[ref] == nil { loaded[ref] = state }
            for target in state.object?.linkTargets ?? [] where wanted.contains(target) {
                linkersLoaded[target]!.append(ref)
            }
        }
    }
}

/// How objects are keyed and stored in `strata_objects`: the reference as hex of its binary form (so that any
/// primary key, strings with any characters among them, is a plain text key), the state in its binary form.
enum ObjectKey {
    static func text(_ ref: ObjectReference) -> String {
        var bytes: [UInt8] = []
        SyncCoding.write(ref, into: &bytes)
        return Hex.encode(bytes)
    }

    static func reference(_ text: String) throws -> ObjectReference {
        guard let bytes = Hex.decode(text) else { throw WireServerError.corrupt("object key \(text.prefix(40)) is not hex") }
        do {
            return try bytes.withUnsafeBytes { try SyncCoding.decodeReference($0) }
        } catch {
            throw WireServerError.corrupt("object key \(text.prefix(40)): \(error)")
        }
    }

    static func bytes(_ state: SyncObjectState) -> [UInt8] {
        var bytes: [UInt8] = []
        SyncCoding.write(state, into: &bytes)
        return bytes
    }

    static func state(_ buffer: ByteBuffer, of key: String) throws -> SyncObjectState {
        do {
            return try buffer.readableBytesView.withUnsafeBytes { try SyncCoding.decodeState($0) }
        } catch {
            throw WireServerError.corrupt("object \(key.prefix(40)): \(error)")
        }
    }

    static func links(_ state: SyncObjectState) -> [String] {
        (state.object?.linkTargets ?? []).map(text).sorted()
    }
}

enum Hex {
    static func encode(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func decode(_ text: String) -> [UInt8]? {
        let u = Array(text.utf8)
        guard u.count % 2 == 0 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: c - 0x30
            case 0x61...0x66: c - 0x61 + 10
            default: nil
            }
        }
        var out = [UInt8]()
        out.reserveCapacity(u.count / 2)
        var i = 0
        while i < u.count {
            guard let h = nibble(u[i]), let l = nibble(u[i + 1]) else { return nil }
            out.append(h << 4 | l)
            i += 2
        }
        return out
    }
}

/// A failure of the server's own state: bytes in its database that do not read.
enum WireServerError: Error, CustomStringConvertible {
    case corrupt(String)

    var description: String {
        switch self {
        case .corrupt(let what): "the sync database holds damaged data: \(what)"
        }
    }
}
