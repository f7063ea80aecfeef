import Dispatch

// Large transactions. A write transaction whose batch grows past what should stay in memory (a blocking
// migration of millions of objects) writes the batch so far to private segments, "spills", and goes on with
// an empty batch. Its commit flushes the memtable, spills the rest and installs every spilled segment, newest
// first, above the partitions' segments with one manifest switch: the switch is the commit point, so a crash
// before it leaves the database as it was (the spilled files are orphans, removed at the next open) and one
// after it has the whole transaction. Nothing of a spilled transaction goes through the log.
//
// A spill sorts the batch into runs on the transaction's thread and hands them, with the batch that holds
// their bytes, to a worker that writes the segments (compression, checksums, key filters, sync) while the
// transaction goes on with another batch: a large write uses two cores. Until a spill's segments are installed
// in the transaction's state, its runs are read in their place.
//
// Invariants:
// (1) Spilled segments are named by no manifest until the commit's; only the commit's manifest switch (on the
//     maintenance queue) makes them part of a Version. They are written by the holder of the writer gate, or by
//     the spill worker for it, and the holder waits for the worker before it commits or aborts.
// (2) Within one partition a later spill is newer: the list is kept newest first, as a Version's segments.
//     Spills are installed in the order they began, and runs still in flight are newer than any installed.
// (3) A drop in the transaction discards the partition's earlier spills; its later ones start the
//     partition's next life (a new incarnation), above nothing. A batch with a drop is spilled once every
//     earlier spill is installed (by the worker, as any other, or on the transaction's thread without
//     `spillInBackground`).
// (4) A spill whose worker failed fails its transaction: the error is thrown by the next spill and by the
//     commit, never dropped with the operations it held.

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

    /// Spills whose segments the worker is writing, oldest first.
    var inFlight: [SpillJob] = []
    /// Batches of installed spills, whose memory the next spills' batches take over once nothing reads it.
    var spareBatches: [SpareBatch] = []

    /// A batch whose spill was installed, and the region its runs read it through: while the region lives (a
    /// view, or a scan of one, still holds the runs), its memory must not change.
    struct SpareBatch {
        let batch: WriteBatch
        weak var arena: MappedRegion?
    }

    /// A spare batch whose memory nothing reads any more, taken out of the list.
    func takeSpareBatch() -> WriteBatch? {
        guard let i = spareBatches.firstIndex(where: { $0.arena == nil }) else { return nil }
        return spareBatches.remove(at: i).batch
    }
    /// The error of a spill whose worker failed: the transaction cannot commit.
    var failure: (any Error)?

    var isEmpty: Bool { files.isEmpty && dropped.isEmpty && metadata.isEmpty && inFlight.isEmpty && failure == nil }

    /// `range` widened to hold every key of `run` (which has at least one).
    static func widened(_ range: (low: [UInt8], high: [UInt8])?, by run: MemRun) -> (low: [UInt8], high: [UInt8]) {
        let low = run.key(0), high = run.key(run.count - 1)
        var widened = (low: [UInt8](low), high: [UInt8](high))
        if let range {
            if range.low.withUnsafeBytes({ Bytes.compare($0, low) < 0 }) { widened.low = range.low }
            if range.high.withUnsafeBytes({ Bytes.compare($0, high) > 0 }) { widened.high = range.high }
        }
        return widened
    }

    /// The runs in flight of `partition`, newest first.
    func runsInFlight(_ partition: UInt32) -> [MemRun] {
        inFlight.reversed().flatMap { job in job.runs.filter { $0.partition == partition }.map(\.run) }
    }
}

/// One spill whose segments the worker writes: its runs, the batch holding their bytes, and what came of it.
final class SpillJob: @unchecked Sendable {  // @unchecked: the worker sets the results before `done` is signalled; the transaction reads them after waiting for it
    struct Run {
        let partition: UInt32
        let run: MemRun
        let dropTombstones: Bool
        let userMetadata: UInt64
    }

    /// The batch whose bytes the runs borrow: the job owns it until it is installed.
    let batch: WriteBatch
    let arena: MappedRegion
    let runs: [Run]
    let base: Version
    private let done = DispatchSemaphore(value: 0)
    /// Set by the worker: the segments written, per partition in the runs' order.
    private(set) var segments: [(partition: UInt32, segment: SegmentReader)] = []
    /// Set by the worker: the files it created and kept.
    private(set) var created: [UInt64] = []
    private(set) var error: (any Error)?

    init(batch: WriteBatch, arena: MappedRegion, runs: [Run], base: Version) {
        self.batch = batch
        self.arena = arena
        self.runs = runs
        self.base = base
    }

    /// Writes the segments (on the worker).
    func write(_ database: Database) {
        var created: [UInt64] = []
        do {
            let sequence = base.sequence + 1
            for r in runs {
                let it = try MergingIterator(version: base, runs: [r.run], segments: [], from: nil, includeTombstones: true)
                if let segment = try database.writeSegment(
                    partition: r.partition, from: it, expectedEntries: r.run.count, dropTombstones: r.dropTombstones, minSequence: sequence,
                    maxSequence: sequence, userMetadata: r.userMetadata, created: &created)
                {
                    segments.append((r.partition, segment))
                }
            }
        } catch {
            for n in created { try? database.fileSystem.removeFile(atPath: database.path(.segment(n))) }  // try?: unnamed files of a failed spill, whose error is kept
            created = []
            segments = []
            self.error = error
        }
        self.created = created
        done.signal()
    }

    /// Waits until the worker is done with the job.
    func wait() {
        done.wait()
        done.signal()
    }

    /// Whether the worker is done with the job.
    var isDone: Bool {
        guard done.wait(timeout: .now()) == .success else { return false }
        done.signal()
        return true
    }
}

extension Database {
    /// Spills in flight at most: one written by the worker while the transaction fills the next batch. A
    /// transaction faster than its worker waits for it rather than holding more batches in memory (a second
    /// in flight would only wait in the worker's queue, holding its batch).
    static let spillsInFlight = 1

    /// Spills `batch`'s operations into `state` and empties it: sorts them into runs here and has the spill
    /// worker write their segments while the transaction goes on (the operations move to a batch of the
    /// worker's, without a copy), or, without `spillInBackground`, writes them here. Called with the writer gate
    /// held. Throws an earlier spill's failure, and, like `spill`, leaves `batch` and `state` as they were when
    /// it throws.
    func beginSpill(_ batch: WriteBatch, into state: SpillState) throws {
        let operations = batch.operationsByPartition
        guard !operations.isEmpty else { return }
        largeWriteUnderWay.store(true, ordering: .releasing)
        if !options.spillInBackground {
            try installSpills(state, whileInFlight: 1)
            try spill(batch, into: state)
            return
        }
        // Room for this one: the earlier spills still in flight are waited for (all of them when the batch drops
        // a partition, whose earlier spilled segments it discards).
        let drops = operations.filter(\.value.drop).map(\.key)
        try installSpills(state, whileInFlight: drops.isEmpty ? Self.spillsInFlight : 1)
        // Nothing throws from here on. What the transaction spilled of a partition it drops is gone, as `spill`
        // does it.
        for id in drops {
            for segment in state.segments[id] ?? [] { discardSpilled(segment.fileNumber, from: state) }
            state.segments[id] = nil
            state.keyRanges[id] = nil
            state.dropped.insert(id)
        }
        let base = currentVersion
        let payloadBytes = batch.payloadBytes
        // The runs borrow the moved batch's bytes (the same memory, at the same offsets): the job keeps it until
        // it is installed, and its runs until nothing reads them.
        let moved = batch.handOff(reusing: state.takeSpareBatch())
        let arena = MappedRegion(borrowing: moved.buffer)
        var runs: [SpillJob.Run] = []
        for (id, pb) in operations.sorted(by: { $0.key < $1.key }) {
            if let m = pb.userMetadata { state.metadata[id] = m }
            guard !pb.slots.isEmpty else { continue }
            let userMetadata = state.metadata[id] ?? base.partitions[id]?.userMetadata ?? 0
            let run = MemRun.build(arena: arena, operations: pb.slots, sequence: base.sequence + 1, userMetadata: userMetadata)
            guard run.count > 0 else { continue }
            state.keyRanges[id] = SpillState.widened(state.keyRanges[id], by: run)
            // A deletion hides older data; in a partition this transaction dropped, and has not spilled since,
            // there is none.
            let nothingBelow = state.dropped.contains(id) && (state.segments[id] ?? []).isEmpty && state.runsInFlight(id).isEmpty
            runs.append(SpillJob.Run(partition: id, run: run, dropTombstones: nothingBelow, userMetadata: userMetadata))
        }
        let job = SpillJob(batch: moved, arena: arena, runs: runs, base: base)
        state.inFlight.append(job)
        state.bytes += payloadBytes
        spilling.async { job.write(self) }
    }

    /// Installs the spills of `state` the worker is done with, oldest first, and waits for the oldest while
    /// `limit` or more are in flight (1: all of them). Throws a spill's failure (invariant 4).
    func installSpills(_ state: SpillState, whileInFlight limit: Int) throws {
        if let failure = state.failure { throw failure }
        while let job = state.inFlight.first {
            if state.inFlight.count < limit, !job.isDone { break }
            job.wait()
            state.inFlight.removeFirst()
            if let error = job.error {
                state.failure = error
                throw error
            }
            for (id, segment) in job.segments { state.segments[id, default: []].insert(segment, at: 0) }
            state.files += job.created
            // Its memory serves a later spill's batch, once nothing reads the runs.
            state.spareBatches.append(SpillState.SpareBatch(batch: job.batch, arena: job.arena))
            if state.spareBatches.count > 2 { state.spareBatches.removeFirst() }
        }
    }

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
                if run.count > 0 { keyRanges[id] = SpillState.widened(keyRanges[id], by: run) }
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
    ///
    /// `spillsOnly`: the spilled segments and the spills in flight alone, without the committed state below them
    /// (`WriteTransaction.spillsOnlyView`).
    func spillView(_ state: SpillState, base: Snapshot, spillsOnly: Bool = false) -> Snapshot {
        var parts = spillsOnly ? [:] : currentVersion.partitions
        for id in state.dropped { parts[id] = nil }
        for (id, spilled) in state.segments {
            if let current = parts[id] {
                parts[id] = current.with(segments: spilled + current.segments)
            } else {
                parts[id] = PartitionState(id: id, incarnation: 0, segments: spilled)
            }
        }
        // Spills in flight are read from their runs, newest first, above every installed segment (the memtable
        // is empty below a spill).
        for id in Set(state.inFlight.flatMap { $0.runs.map(\.partition) }) {
            let runs = state.runsInFlight(id)
            if let current = parts[id] {
                parts[id] = current.with(frozen: runs)
            } else {
                parts[id] = PartitionState(id: id, incarnation: 0, frozen: runs)
            }
        }
        return Snapshot(unlimited: Version(sequence: base.sequence, partitions: parts), registry: registry)
    }

    private func discardSpilled(_ number: UInt64, from state: SpillState) {
        state.files.removeAll { $0 == number }
        try? fileSystem.removeFile(atPath: path(.segment(number)))  // try?: a file no manifest names; the next open removes it
    }

    /// Removes the files of a spilled transaction that will not commit (once the worker is done with them).
    func abandonSpill(_ state: SpillState) {
        for job in state.inFlight {
            job.wait()
            state.files += job.created
        }
        state.inFlight = []
        for n in state.files { try? fileSystem.removeFile(atPath: path(.segment(n))) }  // try?: unnamed files; the next open removes what stays
        state.files = []
        state.segments = [:]
    }

    /// Commits a transaction that spilled: its remaining operations are spilled too, the memtable is flushed
    /// (so that the spilled segments sit above every earlier commit), and one manifest switch installs them.
    /// Called with the writer gate held.
    func commit(_ batch: WriteBatch, spilled state: SpillState) throws -> UInt64 {
        var installing = false
        do {
            try published.withLock { p in
                if p.closed { throw StorageError(.closed, "the database is closed (WriteTransaction.commit)", file: directory) }
                if let e = p.poisoned { throw e }
            }
            try installSpills(state, whileInFlight: 1)
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
