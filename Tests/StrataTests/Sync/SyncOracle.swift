import Foundation
import TestSupport

@testable import Strata

/// Sync's rules over a dictionary: the convergence tests' oracle.
final class MemorySyncStore: SyncStore {
    var states: [ObjectReference: SyncObjectState] = [:]

    func state(of object: ObjectReference) -> SyncObjectState { states[object] ?? .absent }
    func setState(_ state: SyncObjectState, of object: ObjectReference) { states[object] = state }
    func objectsMaybeLinking(to object: ObjectReference) -> [ObjectReference] {
        states.compactMap { $0.value.object == nil ? nil : $0.key }.sorted()
    }

    /// The live objects.
    var live: [ObjectReference: SyncObject] { states.compactMapValues(\.object) }
}

/// An in-process ordering server: it takes each client's change sets once, in sequence order (a repeat is
/// skipped, a gap refused), gives them versions, applies them to the oracle, and serves its history.
final class OrderingServer {
    private(set) var history: [ServerChangeSet] = []
    private(set) var lastSequence: [UInt64: UInt64] = [:]
    let oracle = MemorySyncStore()
    /// Every operation accepted, counted by kind (`increment` amounts summed), to check exactly-once application.
    private(set) var acceptedIncrements: Int64 = 0

    /// Takes change sets from one client; returns the last sequence it holds from that client (the ack).
    @discardableResult
    func push(client: UInt64, _ changeSets: [ChangeSet]) -> UInt64 {
        for c in changeSets {
            let last = lastSequence[client] ?? 0
            if c.sequence <= last { continue }
            guard c.sequence == last + 1 else { break }
            let version = UInt64(history.count + 1)
            history.append(ServerChangeSet(version: version, changeSet: c))
            lastSequence[client] = c.sequence
            for op in c.operations {
                SyncRules.apply(op, author: c.clientID, base: c.baseVersion, version: version, to: oracle)
                if case .addInteger(let ref, "count", let n) = op, ref == SyncTesting.ref("counter") { acceptedIncrements += n }
            }
        }
        return lastSequence[client] ?? 0
    }

    /// The history after `version`, at most `limit` change sets.
    func pull(after version: UInt64, limit: Int = .max) -> [ServerChangeSet] {
        Array(history.dropFirst(Int(version)).prefix(limit))
    }

    var version: UInt64 { UInt64(history.count) }
}

enum SyncContents {
    /// The live objects of `type` in `realm`, as sync's model with their lists' ids and positions.
    static func of(_ realm: Realm, type: String = "SyncItem") throws -> [ObjectReference: SyncObject] {
        let core = realm.core
        let reader = RealmCore.SyncReader(core: core, snapshot: core.snapshot)
        guard let binding = core.boundType(named: type) else { return [:] }
        var out: [ObjectReference: SyncObject] = [:]
        var failure: (any Error)?
        core.forEachRecord(binding) { _, record in
            let values = (0..<binding.info.schema.properties.count).map { record.value($0) }
            guard let ref = reader.reference(binding, values) else { return true }
            do {
                let meta = try core.syncMeta(ref, at: core.snapshot)
                if let o = RealmCore.syncState(reader.object(binding, values), meta: meta).object { out[ref] = normalized(o) }
            } catch {
                failure = error
                return false
            }
            return true
        }
        if let failure { throw failure }
        return out
    }

    /// An object with empty collections left out (a missing collection and an empty one are the same).
    static func normalized(_ o: SyncObject) -> SyncObject {
        SyncObject(fields: o.fields.filter { _, f in
            switch f {
            case .list(let l): !l.isEmpty
            case .set(let s): !s.isEmpty
            case .map(let m): !m.isEmpty
            case .value: true
            }
        })
    }

    static func normalized(_ objects: [ObjectReference: SyncObject]) -> [ObjectReference: SyncObject] { objects.mapValues(normalized) }

    /// The first difference between two sets of objects, for a failure message.
    static func difference(_ a: [ObjectReference: SyncObject], _ b: [ObjectReference: SyncObject]) -> String? {
        for ref in Set(a.keys).union(b.keys).sorted() {
            guard let x = a[ref] else { return "\(ref) only in the second" }
            guard let y = b[ref] else { return "\(ref) only in the first" }
            for name in Set(x.fields.keys).union(y.fields.keys).sorted() where x.fields[name] != y.fields[name] {
                return "\(ref).\(name): \(String(describing: x.fields[name])) against \(String(describing: y.fields[name]))"
            }
        }
        return nil
    }
}
