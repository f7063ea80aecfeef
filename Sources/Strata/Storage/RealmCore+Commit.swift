import Engine
import Foundation

/// Beginning, committing and cancelling write transactions: what the pending records become in the engine.
extension RealmCore {
    // MARK: - Writes

    var isInWriteTransaction: Bool { write != nil }

    func beginWrite() throws {
        if isFrozen { fatalError("Can't perform transactions on a frozen Realm") }
        if write != nil { fatalError("The Realm is already in a write transaction") }
        // A commit needs a version of its own: refuse to start one that could not end in a readable state.
        if let limit = configuration.maximumNumberOfActiveVersions, database.liveSnapshotCount >= Int(limit) {
            throw Realm.Error(
                .fail,
                "Number of active versions (\(database.liveSnapshotCount)) in \(shared.displayName) exceeded the limit of \(limit) "
                    + "(maximumNumberOfActiveVersions): every frozen Realm, object or results, and every Realm instance that has not "
                    + "refreshed, keeps a version alive; release them or raise the limit",
                fileURL: configuration.fileURL)
        }
        // A write that another Realm holds in this task (or thread) would never end while this one waits for it.
        // Only Realms of a thread or task count: a queue's or an actor's write may span blocks that run on any
        // thread, and end in another task.
        let context: SharedFile.WriteContext? = queue == nil && pump == nil ? .current : nil
        if let context, let holder = shared.writeHolder.withLock({ $0 }), holder.context == context, holder.core != ObjectIdentifier(self) {
            fatalError(
                "Cannot begin a write transaction on \(shared.displayName): another Realm instance of this thread is in a write "
                    + "transaction on the same file, and this one would wait for it forever. Commit or cancel that write first, "
                    + "or write through that Realm (Realm() gives the same instance for the same configuration on one thread)")
        }
        let tx: WriteTransaction
        do {
            tx = try database.beginWrite()
        } catch {
            throw realmError(error, fileURL: configuration.fileURL)
        }
        if database.isShared {
            // The engine caught up with other processes as the write began: their commits' change sets, and a
            // schema one of them wrote, before this write reads anything.
            shared.absorbOtherCommits()
            do {
                try shared.reloadSchemaIfStale(from: tx.snapshot)
            } catch {
                tx.abort()
                throw realmError(error, fileURL: configuration.fileURL)
            }
        }
        writeSerial += 1
        let w = WriteState(tx: tx, spillThreshold: spillThreshold)
        do {
            w.captures = try capturesChanges(at: tx.snapshot)
        } catch {
            tx.abort()
            throw realmError(error, fileURL: configuration.fileURL)
        }
        write = w
        if let context { shared.writeHolder.withLock { $0 = (context, ObjectIdentifier(self)) } }
        // The write sees the latest version, as Realm's does.
        do {
            try moveToLatest()
        } catch {
            write = nil
            tx.abort()
            throw realmError(error, fileURL: configuration.fileURL)
        }
    }

    /// Commits touching more objects than this log no key set for observers (see `commitWrite`).
    static let largeCommit = 65_536

    func commitWrite(skipping: Set<ObjectIdentifier> = []) throws {
        guard let w = write else { fatalError("Can't commit a non-existing write transaction") }
        var summary = ChangeSummary()
        // A write that spilled no longer lists every key it changed.
        summary.everything = w.droppedPartitions || w.schemaChanged || w.hasSpilled
        do {
            if let failed = w.spillError { throw failed }
            let version = shared.storedSchema.withLock { $0?.schemaVersion } ?? configuration.schemaVersion
            if w.schemaChanged, let schema = shared.storedSchema.withLock({ $0 }) {
                try w.tx.put(StoredSchema.schemaKey, schema.encoded(), in: StoredSchema.metadataPartition)
            }
            // Embedded objects that no parent took (none, unless a caller added one and dropped it) go.
            for orphan in w.orphans {
                if let b = bindings.values.first(where: { $0.partition == orphan.partition }) {
                    deleteCascading(b, orphan.key, w, nullifyLinks: false)
                }
            }
            try nullifyLinks(w, &summary)
            if w.captures { try captureChanges(w) }
            // The change set (keys changed per partition) is built only when some instance of the file observes
            // changes; otherwise the commit log gets no entry, and an observer added later reads the commit as
            // unknown changes (it re-evaluates, as it does after a commit too old for the log).
            let observed = shared.isObserved()
            if !observed {
                // Nobody to tell.
            } else if w.pendingCount > Self.largeCommit {
                // A very large commit is logged as unknown changes: observers re-evaluate from scratch, which
                // costs about what checking this many keys one by one would, and the key set is not built.
                summary.everything = true
            } else {
                for (partition, keys) in w.pendingKeysByPartition() { summary.keys[partition, default: []].formUnion(keys) }
                shared.changeSetsBuilt.add(1)
            }
            // Index entries of deleted objects go first: an object added since with the same primary key puts its
            // entry below, and the later operation on a key wins.
            for (partition, entry) in w.deletedPrimaryKeys { try w.tx.delete(entry, in: partition) }
            for (partition, entry, key) in w.livePrimaryKeyEntries() { try w.tx.put(entry, ObjectKey.bytes(key), in: partition) }
            // In key order, so the engine receives sorted operations and skips sorting them. Keys first seen in
            // increasing order (a bulk insert) are in order already.
            let ordered = w.sortedKeys()
            var encoded: [UInt8] = []
            // The indexes the file lists now (another instance may have built one this binding predates).
            let storedNow = shared.storedSchema.withLock { $0 }
            // Keys come partition by partition: the partition's encoded binding and indexes are looked up once,
            // and the bindings of its pending records when they change. An encoded record of a type without
            // indexes, the usual entry, needs nothing here (it is in the batch already).
            let tx = w.tx
            var lastPartition: UInt32?
            var encodedBinding: TypeBinding?
            var encodedIndexes: [(property: Int, partition: UInt32)] = []
            var recordBinding: TypeBinding?
            var recordIndexes: [(property: Int, partition: UInt32)] = []
            for (pk, position) in ordered {
                guard let entry = w.entry(at: position, in: pk.partition) else { continue }
                if pk.partition != lastPartition {
                    lastPartition = pk.partition
                    encodedBinding = w.encodedBindingIfAny(pk.partition)
                    encodedIndexes = encodedBinding.map { SecondaryIndex.indexes(of: $0, in: storedNow) } ?? []
                }
                switch entry {
                case .encoded(let range) where w.encodedVersion == version:
                    // Its index entries are read from the record's bytes in the batch.
                    if !encodedIndexes.isEmpty, let binding = encodedBinding { try writeIndexEntries(pk, range, binding, encodedIndexes, w) }
                    continue
                case .deleted:
                    if encodedIndexes.isEmpty {
                        try ObjectKey.withBytes(pk.key) { try tx.deleteBytes($0, in: pk.partition) }
                    } else {
                        guard let binding = encodedBinding else { fatalError("encoded pending records have no binding") }
                        try writeDeletion(pk, binding, encodedIndexes, w)
                    }
                    continue
                case .encoded, .record:
                    break
                }
                guard let record = w.record(pk) else { continue }
                if record.binding !== recordBinding {
                    recordBinding = record.binding
                    recordIndexes = SecondaryIndex.indexes(of: record.binding, in: storedNow)
                }
                let indexes = recordIndexes
                try ObjectKey.withBytes(pk.key) { key in
                    if !indexes.isEmpty {
                        let after = record.deleted ? nil : indexes.map { SecondaryIndex.readValue(record.values[$0.property], record.binding, $0.property) }
                        let isNew = w.isDropped(pk.partition) || pk.key > largestStoredKey(record.binding, w)
                        try SecondaryIndex.update(record.binding, indexes, key: pk.key, keyBytes: key, after: after, isNew: isNew, in: w.tx)
                    }
                    if record.deleted {
                        try w.tx.deleteBytes(key, in: pk.partition)
                    } else {
                        record.binding.encode(record.values, schemaVersion: version, into: &encoded)
                        try encoded.withUnsafeBytes { try w.tx.putBytes(key, $0, in: pk.partition) }
                    }
                }
            }
            for (partition, next) in w.nextKeys {
                try w.tx.put(StoredSchema.nextKeyKey(partition), ObjectKey.bytes(next), in: StoredSchema.metadataPartition)
            }
            // Logged before it is published (the writer lock is held), so no reader sees the version without it.
            if observed { shared.recordCommit(sequence: w.tx.snapshot.sequence + 1, summary) }
            try w.tx.commit()
        } catch {
            write = nil
            w.tx.abort()
            // try?: the write failed and its error is thrown; staying at the version it began from is consistent.
            try? moveToLatest()
            discardWriteReads()
            throw realmError(error, fileURL: configuration.fileURL)
        }
        write = nil
        // Added objects are managed for good: what they held while unmanaged (links to other objects, which
        // may link back) is let go, so objects linked in a cycle are freed once the program drops them.
        w.releaseUnmanagedState()
        mustMoveToLatest(skipping: skipping, catchingUp: false)
        shared.committed(by: self)
        asyncWrites.writeEnded(self)
    }

    func cancelWrite() {
        guard let w = write else { fatalError("Can't cancel a non-existing write transaction") }
        // Objects added in the write are invalidated, as in Realm (not unmanaged again): their accessors know the
        // write that added them. What they held while unmanaged is let go.
        cancelledWrites.insert(writeSerial)
        w.releaseUnmanagedState()
        w.tx.abort()
        write = nil
        mustMoveToLatest()
        discardWriteReads()
        asyncWrites.writeEnded(self)
    }

    /// The write under way; traps with RealmSwift's words and `what` (the type and property, where there is one)
    /// outside one.
    func requireWrite(_ what: @autoclosure () -> String) -> WriteState {
        writeChanges += 1
        guard let w = write else {
            if isFrozen { fatalError("Attempting to modify a frozen object - call thaw on the Object instance first. (\(what()))") }
            fatalError(
                "Cannot modify managed objects outside of a write transaction. (\(what()) in \(shared.displayName): call write {} or "
                    + "beginWrite() on the Realm first)")
        }
        spillIfDue(w)
        return w
    }

    /// The next object key of a partition, read from and advanced in `tx` (migrations).
    static func allocateKey(partition p: UInt32, in tx: WriteTransaction, cache: inout [UInt32: Int64]) throws -> Int64 {
        if cache[p] == nil {
            let stored = try tx.snapshot.get(StoredSchema.nextKeyKey(p), in: StoredSchema.metadataPartition)
            cache[p] = stored.flatMap { $0.withUnsafeBytes { ObjectKey.decode($0) } } ?? 0
        }
        let k = cache[p] ?? 0
        cache[p] = k + 1
        return k
    }

    /// The next object key of a type without an Int primary key.
    func allocateKey(_ binding: TypeBinding, _ w: WriteState) -> Int64 {
        let p = binding.partition
        if w.nextKeys[p] == nil {
            let stored = mustRead("the key counter of \(binding.info.schema.className)") {
                try w.tx.snapshot.get(StoredSchema.nextKeyKey(p), in: StoredSchema.metadataPartition)
            }
            w.nextKeys[p] = stored.flatMap { $0.withUnsafeBytes { ObjectKey.decode($0) } } ?? 0
        }
        let k = w.nextKeys[p]!
        w.nextKeys[p] = k + 1
        return k
    }

    /// Links to objects deleted in this write become nil, in every type that links to their type: one scan of
    /// each such type per commit, whatever the number of deletions.
    func nullifyLinks(_ w: WriteState, _ summary: inout ChangeSummary) throws {
        guard !w.deletedKeys.isEmpty, let stored = shared.storedSchema.withLock({ $0 }) else { return }
        // Objects deleted and not added again (an Int primary key deleted and then given to a new object in the
        // same write names a live object).
        // Only types something links to: the deletions of others need no check.
        let linkedTypes = Set(stored.types.flatMap { t in t.properties.compactMap { $0.type == .object ? $0.objectClassName : nil } })
        var deletedKeys: [String: Set<Int64>] = [:]
        for (partition, (name, keys)) in w.deletedKeys where linkedTypes.contains(name) {
            let gone = Set(keys).filter { key in
                // A key the write spilled is live if the view has it.
                !(w.isLive(PendingKey(partition: partition, key: key)) ?? (w.hasSpilled && mustRead("object #\(key) of \(name)") {
                    try ObjectKey.withBytes(key) { try w.tx.view.contains($0, in: partition) }
                }))
            }
            if !gone.isEmpty { deletedKeys[name] = gone }
        }
        guard !deletedKeys.isEmpty else { return }
        for t in stored.types {
            let linkFields = t.properties.filter { $0.type == .object && deletedKeys[$0.objectClassName ?? ""] != nil }
            /// The value with links to deleted objects removed (lists) or nulled (links); nil when unchanged.
            func cleaned(_ v: StoredValue?, _ p: StoredSchema.StoredProperty) -> StoredValue? {
                let deleted = deletedKeys[p.objectClassName ?? ""] ?? []
                switch v {
                case .link(let k)? where deleted.contains(k): return .null
                case .list(let items)? where p.isMap ?? false:
                    // A map keeps its keys: a value naming a deleted object becomes nil.
                    var changed = false
                    let kept = items.map { item -> StoredValue in
                        if case .link(let k) = item, deleted.contains(k) {
                            changed = true
                            return .null
                        }
                        return item
                    }
                    return changed ? .list(kept) : nil
                case .list(let items)?:
                    let kept = items.filter { if case .link(let k) = $0 { return !deleted.contains(k) } else { return true } }
                    return kept.count == items.count ? nil : .list(kept)
                default: return nil
                }
            }
            guard !linkFields.isEmpty else { continue }
            let bound = bindings.values.first { $0.info.schema.className == t.name && $0.partition == t.partition }
            func dangling(_ v: StoredValue?, _ p: StoredSchema.StoredProperty) -> Bool { cleaned(v, p) != nil }
            // Pending records of this write first.
            for (_, record) in w.records(in: t.partition) where !record.deleted {
                for p in linkFields {
                    guard let i = record.binding.info.schema.properties.firstIndex(where: { $0.columnName == p.name }) else { continue }
                    if let c = cleaned(record.values[i], p) { record.values[i] = c }
                }
            }
            // Then the stored records (none when deleteAll dropped the type in this write).
            guard !w.isDropped(t.partition) else { continue }
            var rewrites: [(Int64, [UInt8])] = []
            let layouts = RecordLayouts(partition: t.partition, in: stored)
            try w.tx.view.scan(t.partition) { k, v in
                guard let key = ObjectKey.decode(k), w.isLive(PendingKey(partition: t.partition, key: key)) == nil else { return true }
                guard try linkFields.contains(where: { p in dangling(try ObjectRecord.value(of: p.fieldId, in: v, layouts: layouts), p) }) else {
                    return true
                }
                if bound != nil {
                    rewrites.append((key, []))
                } else {
                    var record = try ObjectRecord.decodeAll(v, layouts: layouts)
                    for p in linkFields { if let c = cleaned(record.fields[p.fieldId], p) { record.fields[p.fieldId] = c } }
                    rewrites.append((
                        key,
                        ObjectRecord.encode(
                            schemaVersion: record.schemaVersion, fields: record.fields.map { ($0.id, $0.value) }, layout: layouts.layout(record.schemaVersion))
                    ))
                }
                return true
            }
            for (key, bytes) in rewrites {
                summary.keys[t.partition, default: []].insert(key)
                if let bound {
                    let record = pendingRecord(bound, key, w)
                    for p in linkFields {
                        guard let i = bound.info.schema.properties.firstIndex(where: { $0.columnName == p.name }) else { continue }
                        if let c = cleaned(record.values[i], p) { record.values[i] = c }
                    }
                } else {
                    try w.tx.put(ObjectKey.bytes(key), bytes, in: t.partition)
                }
            }
        }
    }
}
