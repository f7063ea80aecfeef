import Engine
import Foundation

// Invariants:
// (1) The versions kept (`SyncStorage.versionKey`) are the server's versions this file applied, each with the
//     server's salt and its change set's identity: each change set's, and a snapshot's version's (no identity).
//     A server whose salt differs at one of them, or that lacks it, lost what this file saw there (it was
//     restored from an older backup).
// (2) A recovery is one uncaptured write. The outbox is undone, leaving the objects as the file had them at
//     the last server version it applied (the lost history's end). The server's objects now take their place,
//     and one change set of a new client id carries what the file had there that the server lacks; the
//     outbox's entries follow under that id, renumbered after it. The new id starts a history the server has
//     never seen, so no sequence of the old one can collide with it or leave a gap.
// (3) What the server's history did after the last version both share (`newTimeline`) wins where it touched a
//     property, an object's creation or its deletion: it happened after the restore, so after what was lost.
//     An integer property it did not set is recovered as an addition (what this file had over the value at the
//     shared version), so that both sides' additions are kept.
// (4) Two kinds of change sets in that history bring back the lost history rather than follow it, so they count
//     as untouched, and their additions are part of the value this file's additions are measured from:
//     - a change set this file applied in the lost history (the same identity), sent again by its client;
//     - one renumbered by a recovery, when what it was is such a change set;
//     - another client's recovery (`ChangeSet.Recovery`) through a version below this file's: this file's values
//       are newer than the ones it carried. A recovery through this file's version or beyond carried all this
//       file saw: this file then adds nothing from the lost history.
//     A recovery names the change sets it carries, and the server counts them as received from their clients,
//     so that a client that had not seen its own change set come back does not send it again.

/// What a sync session found when its server had lost history it had seen: the server's objects now, and its
/// change sets after the last version this file shares with it.
package struct SyncRecovery: Sendable {
    /// The file's client id and server version when the loss was found; a file recovered since (by another
    /// process sharing it) is left alone.
    package var clientID: UInt64
    package var fromVersion: UInt64
    package var snapshot: SyncSnapshot
    /// The server's change sets after the last version this file shares with it, through the snapshot's version;
    /// empty when no shared version is known (then the file's values win wherever they differ).
    package var newTimeline: [ServerChangeSet]
    /// The last version both share (0: none known); salts this file keeps above it are let go.
    package var sharedVersion: UInt64
    /// The file's client id from here on (the server leased the recovery to it).
    package var newClientID: UInt64

    package init(clientID: UInt64, fromVersion: UInt64, snapshot: SyncSnapshot, newTimeline: [ServerChangeSet], sharedVersion: UInt64,
                 newClientID: UInt64) {
        self.newClientID = newClientID
        self.clientID = clientID
        self.fromVersion = fromVersion
        self.snapshot = snapshot
        self.newTimeline = newTimeline
        self.sharedVersion = sharedVersion
    }
}

/// What this file keeps of one server version it applied: the server's salt for it, and which change set it was
/// (zero identity for a snapshot's version).
package struct KnownVersion: Sendable, Hashable {
    package var version: UInt64
    package var salt: UInt64
    package var identity: ChangeSet.Identity

    package init(version: UInt64, salt: UInt64, identity: ChangeSet.Identity = ChangeSet.Identity(clientID: 0, sequence: 0)) {
        self.version = version
        self.salt = salt
        self.identity = identity
    }
}

extension SyncStorage {
    static let versionTag: UInt8 = 0x76  // "v"
    /// Versions kept per value: 128 entries of 24 bytes (salt, client id, sequence; all 0 where none is known).
    static let versionsPerBlock: UInt64 = 128
    static let versionEntryBytes = 24
    static var versionBlockBytes: Int { Int(versionsPerBlock) * versionEntryBytes }

    static func versionKey(block: UInt64) -> [UInt8] {
        var k: [UInt8] = [versionTag]
        withUnsafeBytes(of: block.bigEndian) { k.append(contentsOf: $0) }
        return k
    }
}

extension RealmCore {
    private static func word(_ bytes: UnsafeRawBufferPointer, _ at: Int) -> UInt64 {
        (0..<8).reversed().reduce(UInt64(0)) { $0 << 8 | UInt64(bytes[at + $1]) }
    }

    private func damagedVersions(_ block: UInt64, _ count: Int) -> Realm.Error {
        Realm.Error(.invalidDatabase, "the sync versions of \(shared.displayName) at block \(block) hold \(count) bytes, not \(SyncStorage.versionBlockBytes); the file is damaged")
    }

    /// The server versions this file keeps (Invariant 1), ascending.
    func knownVersions(at snapshot: Snapshot) throws -> [KnownVersion] {
        var out: [KnownVersion] = []
        let cursor = try snapshot.cursor(SyncStorage.partition, from: [SyncStorage.versionTag])
        while let (key, value) = try cursor.next() {
            guard key.count == 9, key[0] == SyncStorage.versionTag else { break }
            let block = key[1...].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            guard value.count == SyncStorage.versionBlockBytes else { throw damagedVersions(block, value.count) }
            value.withUnsafeBytes { raw in
                for i in 0..<Int(SyncStorage.versionsPerBlock) {
                    let at = i * SyncStorage.versionEntryBytes
                    let salt = Self.word(raw, at)
                    guard salt != 0 else { continue }
                    out.append(KnownVersion(version: block * SyncStorage.versionsPerBlock + UInt64(i), salt: salt,
                                            identity: ChangeSet.Identity(clientID: Self.word(raw, at + 8), sequence: Self.word(raw, at + 16))))
                }
            }
        }
        return out
    }

    /// The salt this file keeps for server version `version` (0: none).
    func knownSalt(_ version: UInt64, at snapshot: Snapshot) throws -> UInt64 {
        let per = SyncStorage.versionsPerBlock
        return try snapshot.withValue(forKey: SyncStorage.versionKey(block: version / per), in: SyncStorage.partition) { raw -> UInt64 in
            guard let raw else { return 0 }
            guard raw.count == SyncStorage.versionBlockBytes else { throw damagedVersions(version / per, raw.count) }
            return Self.word(raw, Int(version % per) * SyncStorage.versionEntryBytes)
        }
    }

    /// Keeps `versions` (those with a salt), written in `tx` over what `view` holds; with `above`, first lets go
    /// of every version kept above that one.
    func recordVersions(_ versions: [KnownVersion], dropAbove above: UInt64? = nil, at view: Snapshot, in tx: WriteTransaction) throws {
        let per = SyncStorage.versionsPerBlock
        let size = SyncStorage.versionEntryBytes
        var blocks: [UInt64: [UInt8]] = [:]
        func entry(_ version: UInt64, _ words: [UInt64]) throws {
            let b = version / per
            if blocks[b] == nil { blocks[b] = try block(b, at: view) }
            var bytes: [UInt8] = []
            for w in words { withUnsafeBytes(of: w.littleEndian) { bytes.append(contentsOf: $0) } }
            let at = Int(version % per) * size
            blocks[b]!.replaceSubrange(at..<at + size, with: bytes)
        }
        if let above {
            for known in try knownVersions(at: view) where known.version > above { try entry(known.version, [0, 0, 0]) }
        }
        for v in versions where v.salt != 0 { try entry(v.version, [v.salt, v.identity.clientID, v.identity.sequence]) }
        for (b, bytes) in blocks {
            if bytes.allSatisfy({ $0 == 0 }) {
                try tx.delete(SyncStorage.versionKey(block: b), in: SyncStorage.partition)
            } else {
                try tx.put(SyncStorage.versionKey(block: b), bytes, in: SyncStorage.partition)
            }
        }
    }

    private func block(_ b: UInt64, at view: Snapshot) throws -> [UInt8] {
        try view.withValue(forKey: SyncStorage.versionKey(block: b), in: SyncStorage.partition) { raw in
            guard let raw else { return [UInt8](repeating: 0, count: SyncStorage.versionBlockBytes) }
            guard raw.count == SyncStorage.versionBlockBytes else { throw damagedVersions(b, raw.count) }
            return [UInt8](raw)
        }
    }

    /// What a server's history after the last shared version touched.
    private struct Touched {
        /// Objects it created or deleted.
        var objects = Set<ObjectReference>()
        /// Properties it set (other than by additions) or whose collections it changed.
        var fields: [ObjectReference: Set<String>] = [:]
        /// What it added to integer properties.
        var additions: [ObjectReference: [String: Int64]] = [:]

        /// Whether `set` brings back the lost history rather than follows it (Invariant 4).
        static func bringsBack(_ set: ChangeSet, lost: Set<ChangeSet.Identity>, version: UInt64) -> Bool {
            if lost.contains(set.identity) { return true }
            guard let recovery = set.recovery else { return false }
            // A renumbered outbox entry (no version of its own) is what it was sent as before.
            if recovery.through == 0 { return recovery.carried.contains { lost.contains($0) } }
            return recovery.through < version
        }

        /// The server's change sets after the shared version, but those that bring back the lost history
        /// (Invariant 4): `lost` were applied here in it, and this file saw it through `version`.
        init(_ changes: [ServerChangeSet], lost: Set<ChangeSet.Identity>, version: UInt64) {
            for c in changes where !Self.bringsBack(c.changeSet, lost: lost, version: version) {
                for op in c.changeSet.operations {
                    switch op {
                    case .create(let ref, let values):
                        objects.insert(ref)
                        fields[ref, default: []].formUnion(values.keys)
                    case .delete(let ref):
                        objects.insert(ref)
                    case .addInteger(let ref, let p, let amount):
                        additions[ref, default: [:]][p, default: 0] &+= amount
                    case .set(let ref, let p, _), .listInsert(let ref, let p, _, _, _), .listMove(let ref, let p, _, _),
                        .listRemove(let ref, let p, _), .listSet(let ref, let p, _, _), .setInsert(let ref, let p, _),
                        .setRemove(let ref, let p, _), .mapPut(let ref, let p, _, _), .mapRemove(let ref, let p, _):
                        fields[ref, default: []].insert(p)
                    }
                }
            }
        }
    }

    /// Recovers from a server that lost history this file saw (Invariants 2 and 3). Returns false, changing
    /// nothing, when the file is no longer where the loss was found (another process recovered it).
    func recoverFromRestoredServer(_ recovery: SyncRecovery) throws -> Bool {
        guard write == nil else {
            fatalError("recoverFromRestoredServer(_:) begins a write transaction of its own: call it outside one")
        }
        try beginWrite()
        guard let w = write else { return false }
        do {
            w.captures = false
            let view = w.tx.view
            guard var state = try syncClientState(at: view), state.clientID == recovery.clientID, state.serverVersion == recovery.fromVersion
            else {
                cancelWrite()
                return false
            }
            let entries = try outboxEntries(after: state.acknowledged, at: view)
            let store = WriteSyncStore(core: self, snapshot: view)
            try undoOutbox(entries, into: store, at: view)

            // Every object either side knows: the server's, this file's live ones and its tombstones.
            var server: [ObjectReference: SyncObjectState] = [:]
            for (ref, s) in recovery.snapshot.states { server[ref] = s }
            var refs = Set(server.keys)
            for b in bindingsByPartition().values where !b.info.schema.isEmbedded && b.info.primaryKeyIndex != nil {
                forEachRecord(b) { _, record in
                    if let ref = store.reader.reference(b, (0..<b.info.schema.properties.count).map { record.value($0) }) { refs.insert(ref) }
                    return true
                }
            }
            refs.formUnion(try tombstoned(at: view))

            guard recovery.newClientID != 0, recovery.newClientID != state.clientID else {
                throw Realm.Error(.invalidInput, "a recovery needs a new client id other than 0 and the file's own")
            }
            let newClient = SyncStorage.ClientState(clientID: recovery.newClientID)
            var nextElement = state.nextElement
            let newID = { () -> ElementID in
                defer { nextElement += 1 }
                return ElementID(client: newClient.clientID, counter: nextElement)
            }
            let lost = try knownVersions(at: view).filter { $0.version > recovery.sharedVersion && $0.identity.clientID != 0 }.map(\.identity)
            let touched = Touched(recovery.newTimeline, lost: Set(lost), version: state.serverVersion)
            var operations: [ChangeOperation] = []
            // Another client's recovery carried everything of the lost history this file saw (Invariant 4).
            let covered = recovery.newTimeline.contains { ($0.changeSet.recovery?.through ?? 0) >= state.serverVersion }
            for ref in refs.sorted() where !covered {
                operations += recoveryOperations(ref, mine: store.state(of: ref), theirs: server[ref] ?? .absent, touched: touched, newID: newID)
            }
            for ref in refs { store.setState(server[ref] ?? .absent, of: ref) }

            // The recovered change set first, then the outbox's entries, all under the new id.
            let schemaVersion = shared.storedSchema.withLock { $0?.schemaVersion } ?? configuration.schemaVersion
            var renumbered: [ChangeSet] = []
            // Always sent, even empty: the server ends this recovery's turn when it arrives.
            renumbered.append(ChangeSet(clientID: newClient.clientID, sequence: 1, baseVersion: recovery.snapshot.version,
                                        schemaVersion: schemaVersion, operations: operations,
                                        recovery: ChangeSet.Recovery(through: state.serverVersion, carried: covered ? [] : lost.sorted())))
            // Entries the server holds (pushed after its restore, before this recovery) are in its objects.
            for entry in entries where entry.changeSet.sequence > recovery.snapshot.clientSequence {
                var cs = entry.changeSet
                // It names what it was (or already carried, renumbered by an earlier recovery).
                cs.recovery = ChangeSet.Recovery(through: 0, carried: cs.recovery?.through == 0 ? cs.recovery!.carried : [cs.identity])
                cs.clientID = newClient.clientID
                cs.sequence = UInt64(renumbered.count + 1)
                // The deletes it had seen: the shared history's (versions above it are the lost history's numbers).
                cs.baseVersion = min(cs.baseVersion, recovery.sharedVersion)
                renumbered.append(cs)
            }
            if state.nextSequence > 1 { try removeOutbox(through: state.nextSequence - 1, at: view, in: w.tx) }
            for cs in renumbered {
                let undo = applyAgain(cs, to: store)
                var ops = SyncStorage.ChunkBuilder()
                for op in cs.operations { ops.add { SyncCoding.write(op, into: &$0) } }
                try writeOutboxEntry(cs, operationCount: cs.operations.count, operations: ops.finish(), undo: undo, in: w.tx)
            }
            try writeOut(store, w)
            state.clientID = newClient.clientID
            state.nextSequence = UInt64(renumbered.count + 1)
            state.acknowledged = 0
            state.serverVersion = recovery.snapshot.version
            state.nextElement = nextElement
            try w.tx.put(SyncStorage.stateKey, state.encoded(), in: SyncStorage.partition)
            try recordVersions([KnownVersion(version: recovery.snapshot.version, salt: recovery.snapshot.salt)]
                + recovery.newTimeline.map { KnownVersion(version: $0.version, salt: $0.salt, identity: $0.changeSet.identity) },
                dropAbove: recovery.sharedVersion, at: view, in: w.tx)
        } catch {
            cancelWrite()
            throw error
        }
        try commitWrite()
        return true
    }

    /// The objects this file keeps tombstones of.
    private func tombstoned(at snapshot: Snapshot) throws -> [ObjectReference] {
        var out: [ObjectReference] = []
        let cursor = try snapshot.cursor(SyncStorage.partition, from: SyncStorage.objectPrefix)
        while let (key, value) = try cursor.next() {
            guard key.first == SyncStorage.objectPrefix[0] else { break }
            let meta = try value.withUnsafeBytes { try SyncStorage.ObjectMeta.decode($0) }
            guard case .tombstone = meta else { continue }
            out.append(try key.withUnsafeBytes { try SyncCoding.decodeReference(UnsafeRawBufferPointer(rebasing: $0[1...])) })
        }
        return out
    }

    /// The operations that give the server's object (`theirs`) what this file had (`mine`) and the server lost,
    /// leaving what the server's newer history touched (Invariant 3).
    private func recoveryOperations(
        _ ref: ObjectReference, mine: SyncObjectState, theirs: SyncObjectState, touched: Touched, newID: () -> ElementID
    ) -> [ChangeOperation] {
        switch (mine, theirs) {
        case (.live(let o), .live(let t)):
            var target = t
            var increments: [String: Int64] = [:]
            let touchedFields = touched.fields[ref] ?? []
            for (name, field) in o.fields where !touchedFields.contains(name) {
                if case .value(.int(let now))? = t.fields[name], case .value(.int(let had)) = field {
                    // What this file had over the value at the shared version goes on as an addition, so that
                    // the server's additions since (and any made before this recovery arrives) are kept. Also when
                    // the two values are equal: the server's additions since may sum to what the lost history
                    // added here, and both are kept.
                    let delta = had &- (now &- (touched.additions[ref]?[name] ?? 0))
                    guard delta != 0 else { continue }
                    increments[name] = delta
                    target.fields[name] = .value(.int(now &+ delta))
                } else if Self.differs(field, t.fields[name]) && touched.additions[ref]?[name] == nil {
                    target.fields[name] = field
                }
            }
            return SyncDiff.operations(ref, before: t, after: target, increments: increments, names: target.fields.keys.sorted(), newID: newID).operations
        case (.live(let o), _):
            // Created (or created again) in the lost history; a newer delete or create on the server stands.
            guard !touched.objects.contains(ref) else { return [] }
            return SyncDiff.operations(ref, before: nil, after: o, increments: [:], newID: newID).operations
        case (.deleted, .live):
            guard !touched.objects.contains(ref) else { return [] }
            return [.delete(ref)]
        default:
            return []
        }
    }

    private static func differs(_ a: FieldState?, _ b: FieldState?) -> Bool {
        func plain(_ f: FieldState?) -> FieldState? {
            switch f {
            case .list(let l)?: l.isEmpty ? nil : .list(l)
            case .set(let s)?: s.isEmpty ? nil : f
            case .map(let m)?: m.isEmpty ? nil : f
            default: f
            }
        }
        // Lists compare by their values: element ids differ between the two sides for the same contents.
        if case .list(let x)? = a, case .list(let y)? = b { return x.map(\.value) != y.map(\.value) }
        return plain(a) != plain(b)
    }
}
