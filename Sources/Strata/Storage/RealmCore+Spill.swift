import Engine
import Foundation

// Large writes. A write transaction keeps what it changes in the engine transaction's batch (records encoded
// there) and in pending records; past `spillThreshold` bytes of them it spills: every encoded record, every
// deletion and the index entries they need go to segments private to the transaction
// (`WriteTransaction.spill()`), and the write forgets them. Reads in the write then look at the write's
// pending objects first and at `WriteTransaction.view` (the base version with the spilled segments above it)
// next, so that a write of any size holds a bounded amount of memory and reads what it wrote.
//
// Invariants:
// (1) A spill happens between operations, at the start of one (`requireWrite`), never while an add resolves
//     links: no caller holds a range in the batch or a record the spill lets go.
// (2) What a spill writes is complete for its objects: their records, their secondary-index entries (the old
//     ones read from the view), their primary-key index entries; the commit writes only what stayed pending.
// (3) A spill that fails leaves the batch and the pending objects as they were; the commit throws its error.
// (4) A record an object read before a spill may be older than the view: one whose key the spills may hold
//     (`spilledOver`) is read again before it is used.

extension RealmCore {
    /// Bytes of pending objects past which a write spills. Large enough that a write of a few thousand objects
    /// never does; small enough that a write of millions holds a few tens of megabytes.
    static let defaultSpillThreshold = 16 << 20

    /// Spills `w` when it holds enough, unless an add is resolving links.
    @inline(__always)
    func spillIfDue(_ w: WriteState) {
        if w.spillDue, addDepth <= 1, resolvingAdd == 0, deferredAdds.isEmpty { spill(w) }
    }

    /// Writes the write's encoded records and deletions, with their index entries, to spilled segments and
    /// forgets them (see the top of this file).
    @inline(never)
    func spill(_ w: WriteState) {
        let version = shared.storedSchema.withLock { $0?.schemaVersion } ?? configuration.schemaVersion
        // Records encoded at another schema version are re-encoded by the commit; they stay.
        if let encoded = w.encodedVersion, encoded != version { return w.deferSpill() }
        let stored = shared.storedSchema.withLock { $0 }
        var indexesByPartition: [UInt32: [(property: Int, partition: UInt32)]] = [:]
        func indexes(_ binding: TypeBinding) -> [(property: Int, partition: UInt32)] {
            if let known = indexesByPartition[binding.partition] { return known }
            let found = SecondaryIndex.indexes(of: binding, in: stored)
            indexesByPartition[binding.partition] = found
            return found
        }
        do {
            // Partition by partition, entry by entry in the order added (no lookup by key): the binding of the
            // encoded entries and the indexes are found once per partition, and an encoded record of a type
            // without indexes needs nothing here (it is in the batch already).
            for partition in w.pendingPartitions {
                let encodedBinding = w.encodedBindingIfAny(partition)
                let encodedIndexes = encodedBinding.map(indexes) ?? []
                let keys = w.keys(in: partition)
                for position in keys.indices {
                    guard let entry = w.entry(at: position, in: partition) else { continue }
                    let pk = PendingKey(partition: partition, key: keys[position])
                    switch entry {
                    case .encoded(let range):
                        guard let binding = encodedBinding, !encodedIndexes.isEmpty else { continue }
                        try writeIndexEntries(pk, range, binding, encodedIndexes, w)
                    case .deleted:
                        let binding = w.encodedBinding(partition)
                        try writeDeletion(pk, binding, indexes(binding), w)
                    case .record(let r) where r.deleted:
                        try writeDeletion(pk, r.binding, indexes(r.binding), w)
                    case .record(let r):
                        // A record whose links and lists are resolved (every one, between operations) is encoded
                        // into the batch first; an embedded object no parent has taken stays (the commit deletes
                        // it).
                        guard !w.orphans.contains(pk), r.binding.schemaVersion == version, w.encodeRecord(pk, version: version),
                            case .encoded(let range)? = w.entry(at: position, in: partition)
                        else { continue }
                        w.encodedVersion = version
                        try writeIndexEntries(pk, range, r.binding, indexes(r.binding), w)
                    }
                }
            }
            // Index entries of deleted objects first, as at commit: a later object with the same primary key
            // puts its entry above.
            for (partition, entry) in w.deletedPrimaryKeys { try w.tx.delete(entry, in: partition) }
            for (partition, entry, key) in w.livePrimaryKeyEntries() { try w.tx.put(entry, ObjectKey.bytes(key), in: partition) }
            try w.tx.spill()
        } catch {
            // The write goes on in memory; its commit throws this error (nothing of it is lost or half-written).
            w.spillError = error
            return
        }
        w.forgetSpilled()
        // Objects added with links whose records went to the view need their unmanaged state no more (as
        // after a commit).
        // Held until all are done, as in `releaseUnmanagedState`.
        let alive = w.objectsToInvalidate.compactMap(\.object)
        w.objectsToInvalidate.removeAll { weak in
            guard let o = weak.object else { return true }
            guard let a = o._accessor, w.isLive(PendingKey(partition: a.binding.partition, key: a.key)) == nil else { return false }
            o._unmanagedLinks = nil
            o._unmanagedCollections = nil
            o._setValues = nil
            return true
        }
        withExtendedLifetime(alive) {}
    }

    /// Whether a record of object `key` read in this write (from its base, or from the view before a spill)
    /// may be older than the view: the write spilled an entry of it (or dropped its type). Reads and writes
    /// that would use such a record read it again; the others (most, in a loop that changes objects in
    /// order) keep it.
    @inline(__always)
    func spilledOver(_ w: WriteState, _ partition: UInt32, _ key: Int64) -> Bool {
        guard w.hasSpilled else { return false }
        // Most keys a loop asks about lie outside what was spilled (above it, when the loop goes in key order).
        let spilled = w.spilledKeys(partition)
        guard key >= spilled.low && key <= spilled.high else { return false }
        return ObjectKey.withBytes(key) { w.tx.spillMayHold($0, in: partition) }
    }

    /// Writes the deletion of object `pk` of `binding`'s type into the batch, with the removal of its
    /// secondary-index entries.
    func writeDeletion(_ pk: PendingKey, _ binding: TypeBinding, _ indexes: [(property: Int, partition: UInt32)], _ w: WriteState) throws {
        try ObjectKey.withBytes(pk.key) { key in
            if !indexes.isEmpty {
                let isNew = w.isDropped(pk.partition) || pk.key > largestStoredKey(binding, w)
                try SecondaryIndex.update(binding, indexes, key: pk.key, keyBytes: key, after: nil, isNew: isNew, in: w.tx)
            }
            try w.tx.deleteBytes(key, in: pk.partition)
        }
    }

    /// Puts the secondary-index entries of pending object `pk`, whose record is encoded in the batch at
    /// `range` (the entries it replaces are read from the write's view).
    func writeIndexEntries(
        _ pk: PendingKey, _ range: Range<Int>, _ binding: TypeBinding, _ indexes: [(property: Int, partition: UInt32)], _ w: WriteState
    ) throws {
        guard !indexes.isEmpty else { return }
        var after: [StoredValue] = []
        w.tx.visitPendingBytes(range) { raw in after = indexes.map { binding.value($0.property, in: raw) } }
        let isNew = w.isDropped(pk.partition) || pk.key > largestStoredKey(binding, w)
        try ObjectKey.withBytes(pk.key) { key in
            try SecondaryIndex.update(binding, indexes, key: pk.key, keyBytes: key, after: after, isNew: isNew, in: w.tx)
        }
    }
}
