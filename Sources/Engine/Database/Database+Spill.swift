// Large transactions. A write transaction whose batch grows past what should stay in memory (a blocking
// migration of millions of objects) writes the batch so far to private segments, "spills", and goes on with
// an empty batch. Its commit flushes the memtable, spills the rest and installs every spilled segment, newest
// first, above the partitions' segments with one manifest switch: the switch is the commit point, so a crash
// before it leaves the database as it was (the spilled files are orphans, removed at the next open) and one
// after it has the whole transaction. Nothing of a spilled transaction goes through the log.
//
// Invariants:
// (1) Spilled segments are written by the holder of the writer gate and named by no manifest until the
//     commit's; only the commit's manifest switch (on the maintenance queue) makes them part of a Version.
// (2) Within one partition a later spill is newer: the list is kept newest first, as a Version's segments.
// (3) A drop in the transaction discards the partition's earlier spills; its later ones start the
//     partition's next life (a new incarnation), above nothing.

/// What one write transaction has spilled so far.
final class SpillState {
    /// Per partition, the spilled segments, newest first.
    var segments: [UInt32: [SegmentReader]] = [:]
    /// Partitions the transaction dropped: their state before it does not survive the commit.
    var dropped: Set<UInt32> = []
    /// The user metadata the transaction set, per partition.
    var metadata: [UInt32: UInt64] = [:]
    /// Bytes of keys and values spilled.
    var bytes = 0
    /// Every spilled file still owned by the transaction (removed when it aborts).
    var files: [UInt64] = []
    /// Per partition, the smallest and largest key of every entry spilled since the partition's last drop
    /// (`WriteTransaction.spillMayHold`).
    var keyRanges: [UInt32: (low: [UInt8], high: [UInt8])] = [:]

    var isEmpty: Bool { files.isEmpty && dropped.isEmpty && metadata.isEmpty }
}

extension Database {
    /// Writes `batch`'s operations to spilled segments of `state` and empties it. Called with the writer gate
    /// held. On an error, the batch and `state` are as they were (the segments written so far are removed), so
    /// that the transaction can go on holding its batch in memory.
    func spill(_ batch: WriteBatch, into state: SpillState) throws {
        let operations = batch.operationsByPartition
        guard !operations.isEmpty else { return }
        let base = currentVersion
        // The batch's bytes are read in place, and it is emptied only once every segment is written.
        let arena = MappedRegion(borrowing: batch.buffer)
        var created: [UInt64] = []
        // What the state becomes, per partition touched: its spilled segments, whether it was dropped, its
        // user metadata.
        var segments = state.segments, dropped = state.dropped, metadata = state.metadata, keyRanges = state.keyRanges
        var discarded: [UInt64] = []
        do {
            for (id, pb) in operations.sorted(by: { $0.key < $1.key }) {
                if pb.drop {
                    discarded += (segments[id] ?? []).map(\.fileNumber)
                    segments[id] = nil
                    keyRanges[id] = nil
                    dropped.insert(id)
                }
                if let m = pb.userMetadata { metadata[id] = m }
                guard !pb.slots.isEmpty else { continue }
                let userMetadata = metadata[id] ?? base.partitions[id]?.userMetadata ?? 0
                let run = MemRun.build(arena: arena, operations: pb.slots, sequence: base.sequence + 1, userMetadata: userMetadata)
                if run.count > 0 {
                    let low = run.key(0), high = run.key(run.count - 1)
                    var range = (low: [UInt8](low), high: [UInt8](high))
                    if let r = keyRanges[id] {
                        if r.low.withUnsafeBytes({ Bytes.compare($0, low) < 0 }) { range.low = r.low }
                        if r.high.withUnsafeBytes({ Bytes.compare($0, high) > 0 }) { range.high = r.high }
                    }
                    keyRanges[id] = range
                }
                let it = try MergingIterator(version: base, runs: [run], segments: [], from: nil, includeTombstones: true)
                // A deletion hides older data; in a partition this transaction dropped, and has not spilled
                // since, there is none.
                let nothingBelow = dropped.contains(id) && (segments[id] ?? []).isEmpty
                let segment = try writeSegment(
                    partition: id, from: it, expectedEntries: run.count, dropTombstones: nothingBelow, minSequence: base.sequence + 1,
                    maxSequence: base.sequence + 1, userMetadata: userMetadata, created: &created)
                if let segment { segments[id, default: []].insert(segment, at: 0) }
            }
        } catch {
            for n in created { try? fileSystem.removeFile(atPath: path(.segment(n))) }  // try?: cleanup of unnamed files after the error thrown here
            throw error
        }
        withExtendedLifetime(arena) {}
        state.bytes += batch.payloadBytes
        batch.reset()
        state.segments = segments
        state.dropped = dropped
        state.metadata = metadata
        state.keyRanges = keyRanges
        state.files += created
        for n in discarded { discardSpilled(n, from: state) }
    }

    /// Flushes the memtable, as the commit of a spilled transaction does, so that every earlier commit sits in
    /// segments below the spilled ones (a snapshot's runs are read before its segments: `spillView`). Called
    /// with the writer gate held, before a spill.
    func flushBelowSpill() throws {
        try onMaintenanceFromWrite { try runFlush() }
        try freezeLocked()
        try onMaintenanceFromWrite { try runFlush() }
        if currentVersion.partitions.values.contains(where: { !$0.active.isEmpty || !$0.frozen.isEmpty }) {
            // The spilled segments cannot be placed above runs: reads would answer from the older data.
            throw StorageError(.io, "the memtable could not be flushed below a spilled transaction; abort the write and retry", file: directory)
        }
    }

    /// A snapshot of what the spilling transaction sees below its batch: the committed state with the spilled
    /// segments above each partition's, the partitions it dropped gone first (as the commit will install
    /// them). Called with the writer gate held, after `flushBelowSpill` and the spill: nothing has been
    /// committed since `base`, whose sequence the view keeps, and the memtable is empty.
    func spillView(_ state: SpillState, base: Snapshot) -> Snapshot {
        var parts = currentVersion.partitions
        for id in state.dropped { parts[id] = nil }
        for (id, spilled) in state.segments {
            if let current = parts[id] {
                parts[id] = current.with(segments: spilled + current.segments)
            } else {
                parts[id] = PartitionState(id: id, incarnation: 0, segments: spilled)
            }
        }
        return Snapshot(unlimited: Version(sequence: base.sequence, partitions: parts), registry: registry)
    }

    private func discardSpilled(_ number: UInt64, from state: SpillState) {
        state.files.removeAll { $0 == number }
        try? fileSystem.removeFile(atPath: path(.segment(number)))  // try?: a file no manifest names; the next open removes it
    }

    /// Removes the files of a spilled transaction that will not commit.
    func abandonSpill(_ state: SpillState) {
        for n in state.files { try? fileSystem.removeFile(atPath: path(.segment(n))) }  // try?: unnamed files; the next open removes what stays
        state.files = []
        state.segments = [:]
    }

    /// Commits a transaction that spilled: its remaining operations are spilled too, the memtable is flushed
    /// (so that the spilled segments sit above every earlier commit), and one manifest switch installs them.
    /// Called with the writer gate held.
    func commit(_ batch: WriteBatch, spilled state: SpillState) throws -> UInt64 {
        try published.withLock { p in
            if p.closed { throw StorageError(.closed, "the database is closed (WriteTransaction.commit)", file: directory) }
            if let e = p.poisoned { throw e }
        }
        var installing = false
        do {
            try spill(batch, into: state)
            try onMaintenanceFromWrite { try runFlush() }
            try freezeLocked()
            return try onMaintenanceFromWrite { () throws -> UInt64 in
                try runFlush()
                return try manifestState.withLock { ms -> UInt64 in
                    let (version, nextIncarnation) = published.withLock { p -> (Version, UInt64) in
                        var parts = p.version.partitions
                        var next = p.nextIncarnation
                        for id in state.dropped { parts[id] = nil }
                        for (id, spilled) in state.segments {
                            let metadata = state.metadata[id]
                            if let current = parts[id] {
                                parts[id] = current.with(segments: spilled + current.segments, userMetadata: metadata)
                            } else {
                                parts[id] = PartitionState(id: id, incarnation: next, segments: spilled, userMetadata: metadata ?? 0)
                                next += 1
                            }
                        }
                        return (Version(sequence: p.version.sequence + 1, partitions: parts), next)
                    }
                    installing = true
                    try writeManifest(for: version, lastFlushedSequence: version.sequence, logNumber: log.number, state: &ms)
                    state.files = []
                    published.withLock { p in
                        p.version = version
                        p.nextIncarnation = nextIncarnation
                    }
                    // Many spills leave many segments in a partition: they are merged in the background.
                    if options.backgroundMaintenance { scheduleCompaction() }
                    return version.sequence
                }
            }
        } catch {
            if installing {
                // The switch may have happened: the spilled files stay (an open removes them if no manifest
                // names them), and so that nothing is written on an unknown state, further writes are refused.
                published.withLock { p in
                    p.poisoned = StorageError(
                        .closed, "installing a large transaction failed (\(error)); close the database and open it again",
                        file: directory, underlying: error as? StorageError)
                }
            } else {
                abandonSpill(state)
            }
            throw error
        }
    }
}
