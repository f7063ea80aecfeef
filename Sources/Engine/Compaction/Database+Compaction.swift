// Compaction: merging a partition's segments (size-tiered, `Engine.docc/Compaction.md`). Runs on the
// `maintenance` queue like the flush, one job at a time, never blocking readers.

extension Database {
    // MARK: Compaction

    /// Compacts `partition` now (every partition when nil), waiting for it.
    package func compact(_ partition: UInt32? = nil) throws {
        if options.readOnly {
            throw StorageError(.invalidArgument, "the database was opened read-only (Database.compact)", file: directory)
        }
        let work = {
            let ids = partition.map { [$0] } ?? self.currentVersion.partitions.keys.sorted()
            for id in ids { try self.compactPartition(id, minimumSegments: 2) }
        }
        if isShared { return try withSharedWriterLock(work) }
        try onMaintenance(work)
    }

    /// Runs the merges the size-tiered policy asks for whose inputs total at most
    /// `Tuning.closeCompactionBudgetBytes`, to the end (they do not stop at a close). Called by a close after
    /// its last flush, and by an open that flushed the commits of a session that never closed (a process that
    /// exited or was killed after writing): short sessions end before a background merge of their small
    /// segments finishes, and a stopped merge leaves nothing, so without this every session's flush added a
    /// segment for good. Larger merges stay in the background.
    func mergeSmallSegmentsNow() throws {
        guard let trigger = options.compactionSegmentTrigger else { return }
        for id in currentVersion.partitions.keys.sorted() {
            while let ps = currentVersion.partitions[id],
                let window = Self.compactionWindow(
                    sizes: ps.segments.map(\.fileBytes), entries: ps.segments.map(\.entryCount), minimumSegments: trigger),
                ps.segments[window].reduce(0, { $0 + $1.fileBytes }) <= Tuning.closeCompactionBudgetBytes
            {
                guard try compactPartition(id, window: window, stopWhenClosed: false) else { break }
            }
        }
    }

    /// Which consecutive segments (newest first, as a partition lists them) to merge, or nil: size-tiered, as
    /// RocksDB's universal compaction. From the newest, segments join while each is at most
    /// `compactionSizeRatio` times the total of those before it; at least `minimumSegments` must join. When the
    /// newer segments together reach `compactionSpaceAmplification` of the oldest, everything is merged (the
    /// only merge that drops deletions). Each merge's output is about the size of its inputs together, so a
    /// byte is rewritten once per tier of sizes: O(log(partition / memtable)) times.
    /// `entries` (the segments' entry counts, deletions included) makes deletions count too: a round of
    /// deletions is small in bytes but can leave the oldest segment mostly dead.
    package static func compactionWindow(sizes: [Int], entries: [Int]? = nil, minimumSegments: Int) -> Range<Int>? {
        guard sizes.count >= 2 else { return nil }
        let newer = sizes.dropLast().reduce(0, +)
        let newerEntries = entries.map { $0.dropLast().reduce(0, +) } ?? 0
        if Double(newer) >= Tuning.compactionSpaceAmplification * Double(sizes.last!)
            || Double(newerEntries) >= Tuning.compactionSpaceAmplification * Double(entries?.last ?? Int.max)
        {
            return 0..<sizes.count
        }
        var total = sizes[0]
        var end = 1
        while end < sizes.count, Double(sizes[end]) <= Tuning.compactionSizeRatio * Double(total) {
            total += sizes[end]
            end += 1
        }
        return end >= max(minimumSegments, 2) ? 0..<end : nil
    }

    /// Merges a partition's segments (all of them, or the consecutive `window` of its newest-first list)
    /// into one, dropping overwritten values, and deletions too when the window reaches the oldest segment:
    /// no snapshot needs them, since every snapshot holds the segments it reads. Returns whether the output
    /// was installed (the partition may have changed meanwhile).
    @discardableResult
    func compactPartition(_ id: UInt32, minimumSegments: Int) throws -> Bool {
        guard let ps = currentVersion.partitions[id], ps.segments.count >= max(minimumSegments, 2) else { return false }
        return try compactPartition(id, window: 0..<ps.segments.count, stopWhenClosed: false)
    }

    /// Replaces the merge's `inputs` (consecutive segments of partition `id`, of incarnation `incarnation`) with
    /// `output` in the published Version and writes the manifest, keeping the pending merges `keepingPending`
    /// keeps. Returns false, changing nothing, when the inputs are no longer there in order (flushes and spills
    /// since only put segments above them; a drop or another merge takes them). `created` is emptied once the
    /// manifest may name the output.
    func installMerge(
        _ id: UInt32, incarnation: UInt64, inputs: [SegmentReader], reachesOldest: Bool, output: SegmentReader?,
        created: inout [UInt64], keepingPending: (PendingMerge) -> Bool = { _ in true }
    ) throws -> Bool {
        try manifestState.withLock { ms -> Bool in
            let newVersion = published.withLock { p -> Version? in
                guard let cur = p.version.partitions[id], cur.incarnation == incarnation,
                    let start = cur.segments.firstIndex(where: { $0.fileNumber == inputs[0].fileNumber }),
                    start + inputs.count <= cur.segments.count,
                    cur.segments[start..<(start + inputs.count)].map(\.fileNumber) == inputs.map(\.fileNumber),
                    !reachesOldest || start + inputs.count == cur.segments.count
                else { return nil }
                var parts = p.version.partitions
                var segments = cur.segments
                segments.replaceSubrange(start..<(start + inputs.count), with: output.map { [$0] } ?? [])
                parts[id] = cur.with(segments: segments)
                if parts[id]!.isEmpty { parts[id] = nil }
                p.version = Version(sequence: p.version.sequence, partitions: parts)
                return p.version
            }
            guard let newVersion else { return false }
            created = []
            try writeManifest(
                for: newVersion, lastFlushedSequence: ms.manifest.lastFlushedSequence, logNumber: ms.manifest.logNumber, state: &ms,
                pendingMerges: ms.manifest.pendingMerges.filter(keepingPending))
            ms.compactions += 1
            return true
        }
    }

    /// What a merge of `inputs` reads: every entry, deletions too unless it reaches the oldest segment; from the
    /// key after `lastKey` when it resumes a suspended merge.
    static func mergeInput(_ version: Version, _ inputs: [SegmentReader], after lastKey: [UInt8]?, reachesOldest: Bool) throws -> MergingIterator {
        guard let lastKey else {
            return try MergingIterator(version: version, runs: [], segments: inputs, from: nil, includeTombstones: !reachesOldest)
        }
        let it = try lastKey.withUnsafeBytes {
            try MergingIterator(version: version, runs: [], segments: inputs, from: $0, includeTombstones: !reachesOldest)
        }
        if it.isValid, it.currentKey.elementsEqual(lastKey) { try it.next() }
        return it
    }

    /// With `stopWhenClosed`, a close stops the merge and suspends it for the next open (`SuspendedMerge.swift`);
    /// `resuming` goes on with such a merge of the same window.
    func compactPartition(
        _ id: UInt32, window: Range<Int>, stopWhenClosed: Bool = true, resuming: (merge: PendingMerge, state: SuspendedSegment)? = nil,
        stopAfterEntries: Int? = nil
    ) throws -> Bool {
        let v = currentVersion
        guard let ps = v.partitions[id], window.count >= 2, window.upperBound <= ps.segments.count else { return false }
        let inputs = Array(ps.segments[window])
        let reachesOldest = window.upperBound == ps.segments.count
        var created: [UInt64] = []
        do {
            let it = try Self.mergeInput(v, inputs, after: resuming?.state.lastKey, reachesOldest: reachesOldest)
            let suspend: ((SegmentWriter, UInt64) throws -> Bool)? =
                stopWhenClosed || stopAfterEntries != nil
                ? { writer, number in
                    // A simulated death keeps nothing.
                    guard !self.dying.load(ordering: .acquiring) else { return false }
                    let merge = PendingMerge(
                        partition: id, inputs: inputs.map(\.fileNumber), reachesOldest: reachesOldest, output: number,
                        state: self.allocateFileNumber())
                    return try self.suspendMerge(merge, writer: writer)
                } : nil
            let output = try writeSegment(
                partition: id, from: it, expectedEntries: inputs.reduce(0) { $0 + $1.entryCount }, dropTombstones: reachesOldest,
                stopWhenClosed: stopWhenClosed,
                minSequence: inputs.map(\.minSequence).min() ?? 0, maxSequence: inputs.map(\.maxSequence).max() ?? 0,
                userMetadata: inputs.map(\.userMetadata).min() ?? 0, created: &created,
                resuming: resuming.map { ($0.merge.output, $0.state) }, suspend: suspend, stopAfterEntries: stopAfterEntries)
            // A resumed merge is pending no more (writeManifest deletes its state file).
            let installed = try installMerge(
                id, incarnation: ps.incarnation, inputs: inputs, reachesOldest: reachesOldest, output: output, created: &created,
                keepingPending: { $0.output != resuming?.merge.output })
            if !installed {
                for n in created { try? fileSystem.removeFile(atPath: path(.segment(n))) }
            }
            return installed
        } catch {
            for n in created { try? fileSystem.removeFile(atPath: path(.segment(n))) }
            throw error
        }
    }
}
