import Engine
import Foundation

// Invariants:
// (1) A write of a file that captures changes commits, in the same engine transaction as its objects, one outbox
//     entry with the operations that take every object it touched from the version it began at to its end
//     state, the undo image (state before) of each such object, the objects' new metadata, and the client
//     state with the next sequence. A write that changed nothing sync sees writes none of these.
// (2) Capture compares states (before and after), so every path that changes an object is recorded: setters,
//     adds, deletes, deleteAll, links nulled by deletes, cascades of embedded objects.

/// Change capture: what a write transaction did, recorded as field operations at its commit.
extension RealmCore {
    /// The client state stored at `snapshot`, nil when the file has never captured changes.
    func syncClientState(at snapshot: Snapshot) throws -> SyncStorage.ClientState? {
        guard let bytes = try snapshot.get(SyncStorage.stateKey, in: SyncStorage.partition) else { return nil }
        do {
            return try SyncStorage.ClientState.decode(bytes)
        } catch {
            throw Realm.Error(.invalidDatabase, "the sync state of \(shared.displayName) cannot be read (\(error)); the file is damaged")
        }
    }

    /// Whether writes at `snapshot` capture changes: the configuration asks for it, or the file has captured
    /// before (then every write does, whatever its configuration, so that no process's edit is left out).
    func capturesChanges(at snapshot: Snapshot) throws -> Bool {
        if configuration.capturesChanges { return true }
        return try snapshot.get(SyncStorage.stateKey, in: SyncStorage.partition) != nil
    }

    /// Refuses, at open, a schema sync cannot name every object of: each type that is not embedded needs a
    /// primary key, as Realm's sync required.
    func checkSchemaForCapture() throws {
        guard try capturesChanges(at: snapshot) else { return }
        let missing = bindings.values.filter { !$0.info.schema.isEmbedded && $0.info.primaryKeyIndex == nil }.map { $0.info.schema.className }
        guard missing.isEmpty else {
            throw Realm.Error(
                .schemaMismatch,
                "\(shared.displayName) captures changes for sync, and every type that is not embedded needs a primary key: "
                    + "\(Set(missing).sorted().joined(separator: ", ")) has none. Give each a `@Persisted(primaryKey: true)` property "
                    + "(sync names objects by primary key), or make it an EmbeddedObject",
                fileURL: configuration.fileURL)
        }
    }

    /// The bindings by partition (one per type; a declared class's over a dynamic one).
    func bindingsByPartition() -> [UInt32: TypeBinding] {
        var out: [UInt32: TypeBinding] = [:]
        for b in bindings.values where out[b.partition] == nil { out[b.partition] = b }
        return out
    }

    /// Records what write `w` did in the outbox (Invariant 1). Called at commit, after links to deleted objects
    /// were nulled and orphaned embedded objects deleted.
    func captureChanges(_ w: WriteState) throws {
        let base = w.tx.snapshot
        let byPartition = bindingsByPartition()
        var touched: [UInt32: Set<Int64>] = [:]
        for k in w.allKeys() { touched[k.partition, default: []].insert(k.key) }
        for k in w.spilledKeys { touched[k.partition, default: []].insert(k.key) }
        // Objects deleteAll removed: every object the type had.
        for partition in w.clearedPartitions {
            try base.scan(partition) { k, _ in
                if let key = ObjectKey.decode(k) { touched[partition, default: []].insert(key) }
                return true
            }
        }
        var topLevel: [(TypeBinding, Int64)] = []
        var embedded: [String: Set<Int64>] = [:]
        for (partition, keys) in touched {
            guard let b = byPartition[partition] else { continue }
            if b.info.schema.isEmbedded {
                embedded[b.info.schema.className, default: []].formUnion(keys)
            } else {
                topLevel += keys.map { (b, $0) }
            }
        }
        topLevel += ownersOfEmbedded(embedded, byPartition)

        let before = SyncReader(core: self, snapshot: base)
        let after = SyncReader(core: self, snapshot: nil)
        var befores: [ObjectReference: SyncObject] = [:]
        var afters: [ObjectReference: SyncObject] = [:]
        var seen = Set<PendingKey>()
        for (b, key) in topLevel where seen.insert(PendingKey(partition: b.partition, key: key)).inserted {
            if let (ref, o) = before.object(b, key) { befores[ref] = o }
            if let (ref, o) = after.object(b, key) { afters[ref] = o }
        }
        let refs = Set(befores.keys).union(afters.keys).sorted()
        guard !refs.isEmpty else { return }

        var state = try syncClientState(at: base) ?? .new()
        let client = state.clientID
        var operations: [[UInt8]] = []
        var undo: [[UInt8]] = []
        var operationCount = 0
        for ref in refs {
            let meta = try syncMeta(ref, at: base)
            let beforeState = Self.syncState(befores[ref], meta: meta)
            let (ops, afterObject) = SyncDiff.operations(ref, before: beforeState.object, after: afters[ref], increments: w.increments[ref] ?? [:]) {
                defer { state.nextElement += 1 }
                return ElementID(client: client, counter: state.nextElement)
            }
            guard !ops.isEmpty else { continue }
            for op in ops {
                var bytes: [UInt8] = []
                SyncCoding.write(op, into: &bytes)
                operations.append(bytes)
            }
            operationCount += ops.count
            var image: [UInt8] = []
            SyncCoding.write(ref, into: &image)
            SyncCoding.write(beforeState, into: &image)
            undo.append(image)
            let newState: SyncObjectState = afterObject.map { .live($0) } ?? .deleted(Tombstone(version: Tombstone.unordered, client: client))
            try writeSyncMeta(SyncStorage.ObjectMeta.of(newState), for: ref, old: meta, in: w.tx)
        }
        guard operationCount > 0 else { return }
        let schemaVersion = shared.storedSchema.withLock { $0?.schemaVersion } ?? configuration.schemaVersion
        let header = ChangeSet(clientID: client, sequence: state.nextSequence, baseVersion: state.serverVersion, schemaVersion: schemaVersion, operations: [])
        try writeOutboxEntry(header, operations: operations, undo: undo, in: w.tx)
        state.nextSequence += 1
        try w.tx.put(SyncStorage.stateKey, state.encoded(), in: SyncStorage.partition)
    }

    /// Writes an outbox entry: its header (chunk 0), its operations (chunks 1…) and its undo images.
    func writeOutboxEntry(_ header: ChangeSet, operations: [[UInt8]], undo: [[UInt8]], in tx: WriteTransaction) throws {
        let opChunks = SyncStorage.chunks(operations)
        var head: [UInt8] = []
        SyncCoding.writeHeader(header, operationCount: operations.count, into: &head)
        head.appendVarint(UInt64(opChunks.count))
        try tx.put(SyncStorage.outboxKey(header.sequence, chunk: 0), head, in: SyncStorage.partition)
        for (i, chunk) in opChunks.enumerated() {
            try tx.put(SyncStorage.outboxKey(header.sequence, chunk: UInt32(i + 1)), chunk, in: SyncStorage.partition)
        }
        try writeUndo(header.sequence, undo, in: tx)
    }

    /// Replaces the undo images of outbox entry `sequence`.
    func writeUndo(_ sequence: UInt64, _ images: [[UInt8]], in tx: WriteTransaction, replacing old: Int = 0) throws {
        let chunks = SyncStorage.chunks(images)
        for (i, chunk) in chunks.enumerated() {
            try tx.put(SyncStorage.undoKey(sequence, chunk: UInt32(i)), chunk, in: SyncStorage.partition)
        }
        if old > chunks.count {
            for i in chunks.count..<old { try tx.delete(SyncStorage.undoKey(sequence, chunk: UInt32(i)), in: SyncStorage.partition) }
        }
    }

    func writeSyncMeta(_ meta: SyncStorage.ObjectMeta?, for ref: ObjectReference, old: SyncStorage.ObjectMeta?, in tx: WriteTransaction) throws {
        guard meta != old else { return }
        if let meta {
            try tx.put(SyncStorage.objectKey(ref), meta.encoded(), in: SyncStorage.partition)
        } else {
            try tx.delete(SyncStorage.objectKey(ref), in: SyncStorage.partition)
        }
    }

    /// The top-level objects that hold the embedded objects `keys` (by embedded type name), through any depth
    /// of embedding: one scan of each type that holds such a type, in the write's view.
    private func ownersOfEmbedded(_ keys: [String: Set<Int64>], _ byPartition: [UInt32: TypeBinding]) -> [(TypeBinding, Int64)] {
        var pending = keys
        var out: [(TypeBinding, Int64)] = []
        var rounds = 0
        while !pending.isEmpty && rounds < SyncCoding.maxDepth {
            rounds += 1
            var next: [String: Set<Int64>] = [:]
            for b in byPartition.values {
                let holding = b.info.schema.properties.indices.filter { i in
                    let p = b.info.schema.properties[i]
                    return p.type == .object && pending[p.objectClassName ?? ""] != nil
                }
                guard !holding.isEmpty else { continue }
                forEachRecord(b) { key, record in
                    let holds = holding.contains { i in
                        let wanted = pending[b.info.schema.properties[i].objectClassName ?? ""] ?? []
                        switch record.value(i) {
                        case .link(let k): return wanted.contains(k)
                        case .list(let items): return items.contains { if case .link(let k) = $0 { wanted.contains(k) } else { false } }
                        default: return false
                        }
                    }
                    guard holds else { return true }
                    if b.info.schema.isEmbedded {
                        next[b.info.schema.className, default: []].insert(key)
                    } else {
                        out.append((b, key))
                    }
                    return true
                }
            }
            pending = next
        }
        return out
    }
}
