// Flush and compaction: the only code that writes segments and manifests. It runs on the `maintenance`
// queue (or inside `open` and `close`), one job at a time, and never blocks readers; the writer waits only
// for the moment a new Version is published.

extension Database {
    // MARK: Freezing the memtable

    /// Moves every partition's active runs to `frozen` and starts a new log. Called with the writer gate held.
    func freezeLocked() throws {
        guard !options.readOnly else { return }
        let v = currentVersion
        guard !v.hasFrozen, v.partitions.values.contains(where: { !$0.active.isEmpty }) else { return }
        if options.durability == .deferred { try log.file.sync() }
        let number = allocateFileNumber()
        let file = try fileSystem.createFile(atPath: path(.log(number)))
        try file.append(LogRecord.fileHeader(databaseID: databaseID))
        try file.sync()
        try fileSystem.syncDirectory(atPath: directory)
        log.file.close()
        log.file = file
        log.number = number
        // The manifest learns of the new log before any commit goes into it: an open that finds it missing
        // then knows acknowledged commits may be gone.
        try manifestState.withLock { ms in
            var manifest = ms.manifest
            let manifestNumber = allocateFileNumber()
            manifest.newestLogNumber = number
            manifest.nextFileNumber = nextFileNumber
            try installManifest(manifest, number: manifestNumber)
            try? fileSystem.removeFile(atPath: path(.manifest(ms.manifestNumber)))
            ms.manifest = manifest
            ms.manifestNumber = manifestNumber
        }
        published.withLock { p in
            var parts = p.version.partitions
            for (id, ps) in parts where !ps.active.isEmpty {
                parts[id] = ps.with(active: [], frozen: ps.active)
            }
            p.version = Version(sequence: p.version.sequence, partitions: parts)
            p.flushTarget = (p.version.sequence, number)
        }
    }

    /// Freezes and queues a background flush. Called with the writer gate held.
    func freezeAndScheduleFlush() throws {
        try freezeLocked()
        published.withLock { $0.flushScheduled = true }
        maintenance.async { [self] in
            defer { published.withLock { $0.flushScheduled = false } }
            guard !published.withLock({ $0.closed }) else { return }
            do {
                try runFlush()
                try compactWhereNeeded()
            } catch let error as StorageError {
                published.withLock { $0.backgroundError = error }
            } catch {
                published.withLock { $0.backgroundError = StorageError(.io, "\(error)") }
            }
        }
    }

    /// Queues a background compaction of every partition over the segment trigger.
    func scheduleCompaction() {
        maintenance.async { [self] in
            guard !published.withLock({ $0.closed }) else { return }
            do {
                try compactWhereNeeded()
            } catch let error as StorageError {
                published.withLock { $0.backgroundError = error }
            } catch {
                published.withLock { $0.backgroundError = StorageError(.io, "\(error)") }
            }
        }
    }

    /// Flushes the memtable now and waits for it (and for any background flush); with background
    /// maintenance, the flush goes through the compaction check as any other does.
    package func flush() throws {
        try onMaintenance { try runFlush() }
        writerGate.wait()
        defer { writerGate.signal() }
        try freezeLocked()
        try onMaintenance { try runFlush() }
        if options.backgroundMaintenance { scheduleCompaction() }
    }

    // MARK: Flush

    /// Writes the frozen runs of every partition to new segments and installs them. On the maintenance queue.
    func runFlush() throws {
        let v = currentVersion
        guard let target = published.withLock({ $0.flushTarget }) else { return }
        var created: [UInt64] = []
        var outputs: [(id: UInt32, incarnation: UInt64, segment: SegmentReader?)] = []
        do {
            for (id, ps) in v.partitions where !ps.frozen.isEmpty {
                let dropTombstones = ps.segments.isEmpty
                let it = try MergingIterator(version: v, runs: ps.frozen, segments: [], from: nil, includeTombstones: true)
                let segment = try writeSegment(
                    partition: id, from: it, expectedEntries: ps.frozen.reduce(0) { $0 + $1.count }, dropTombstones: dropTombstones,
                    minSequence: ps.frozen.map(\.minSequence).min() ?? 0, maxSequence: ps.frozen.map(\.maxSequence).max() ?? 0,
                    userMetadata: ps.frozen.map(\.userMetadata).min() ?? 0, created: &created)
                outputs.append((id, ps.incarnation, segment))
            }
            try manifestState.withLock { ms in
                let newVersion = published.withLock { p -> Version in
                    var parts = p.version.partitions
                    for out in outputs {
                        guard let cur = parts[out.id], cur.incarnation == out.incarnation else { continue }
                        parts[out.id] = cur.with(frozen: [], segments: (out.segment.map { [$0] } ?? []) + cur.segments)
                        if parts[out.id]!.isEmpty { parts[out.id] = nil }
                    }
                    p.version = Version(sequence: p.version.sequence, partitions: parts)
                    p.flushTarget = nil
                    return p.version
                }
                created = []
                try writeManifest(for: newVersion, lastFlushedSequence: target.sequence, logNumber: target.logNumber, state: &ms)
                ms.flushes += 1
            }
            try removeLogs(before: target.logNumber)
        } catch {
            for n in created { try? fileSystem.removeFile(atPath: path(.segment(n))) }
            throw error
        }
    }

    /// Writes the entries of `it` to a new segment; nil when there is nothing to write.
    /// With `stopWhenClosed` (compactions), a close in the meantime stops the write with a `.closed` error and
    /// the partial file goes: a close never waits for a long merge.
    func writeSegment(
        partition: UInt32, from it: MergingIterator, expectedEntries: Int, dropTombstones: Bool, stopWhenClosed: Bool = false,
        minSequence: UInt64, maxSequence: UInt64, userMetadata: UInt64, created: inout [UInt64]
    ) throws -> SegmentReader? {
        let number = allocateFileNumber()
        let filePath = path(.segment(number))
        let file = try fileSystem.createFile(atPath: filePath)
        created.append(number)
        let writer = try SegmentWriter(
            file: file, partition: partition, databaseID: databaseID, expectedEntries: expectedEntries, compress: options.compression)
        var sinceCheck = 0
        while it.isValid {
            let v = it.value
            if v != nil || !dropTombstones { try writer.add(key: it.currentKey, value: v) }
            try it.next()
            sinceCheck += 1
            if stopWhenClosed, sinceCheck >= 4096 {
                sinceCheck = 0
                if published.withLock({ $0.closed }) {
                    file.close()
                    throw StorageError(.closed, "compaction of partition \(partition) stopped by close", file: directory)
                }
            }
        }
        if writer.entryCount == 0 {
            file.close()
            try? fileSystem.removeFile(atPath: filePath)
            created.removeLast()
            return nil
        }
        _ = try writer.finish(minSequence: minSequence, maxSequence: maxSequence, userMetadata: userMetadata)
        return try SegmentReader(
            region: try fileSystem.map(atPath: filePath), fileNumber: number, expectedPartition: partition, databaseID: databaseID,
            cache: blockCache)
    }

    // MARK: Compaction

    /// Compacts `partition` now (every partition when nil), waiting for it.
    package func compact(_ partition: UInt32? = nil) throws {
        if options.readOnly {
            throw StorageError(.invalidArgument, "the database was opened read-only (Database.compact)", file: directory)
        }
        try onMaintenance {
            let ids = partition.map { [$0] } ?? currentVersion.partitions.keys.sorted()
            for id in ids { try compactPartition(id, minimumSegments: 2) }
        }
    }

    /// Compacts every partition whose segments the size-tiered policy says to merge (`compactionWindow`),
    /// until none does. On the maintenance queue. A close in the meantime stops it (the next open starts again).
    func compactWhereNeeded() throws {
        guard let trigger = options.compactionSegmentTrigger else { return }
        do {
            for id in currentVersion.partitions.keys.sorted() {
                while let ps = currentVersion.partitions[id],
                    let window = Self.compactionWindow(
                        sizes: ps.segments.map(\.fileBytes), entries: ps.segments.map(\.entryCount), minimumSegments: trigger)
                {
                    guard try compactPartition(id, window: window) else { break }
                }
            }
        } catch let error as StorageError where error.code == .closed {
            return
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

    func compactPartition(_ id: UInt32, window: Range<Int>, stopWhenClosed: Bool = true) throws -> Bool {
        let v = currentVersion
        guard let ps = v.partitions[id], window.count >= 2, window.upperBound <= ps.segments.count else { return false }
        let inputs = Array(ps.segments[window])
        let reachesOldest = window.upperBound == ps.segments.count
        var created: [UInt64] = []
        do {
            let it = try MergingIterator(version: v, runs: [], segments: inputs, from: nil, includeTombstones: !reachesOldest)
            let output = try writeSegment(
                partition: id, from: it, expectedEntries: inputs.reduce(0) { $0 + $1.entryCount }, dropTombstones: reachesOldest,
                stopWhenClosed: stopWhenClosed,
                minSequence: inputs.map(\.minSequence).min() ?? 0, maxSequence: inputs.map(\.maxSequence).max() ?? 0,
                userMetadata: inputs.map(\.userMetadata).min() ?? 0, created: &created)
            let installed = try manifestState.withLock { ms -> Bool in
                let newVersion = published.withLock { p -> Version? in
                    // The inputs are still there, in order (flushes since only put segments before them).
                    guard let cur = p.version.partitions[id], cur.incarnation == ps.incarnation,
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
                    for: newVersion, lastFlushedSequence: ms.manifest.lastFlushedSequence, logNumber: ms.manifest.logNumber, state: &ms)
                ms.compactions += 1
                return true
            }
            if !installed {
                for n in created { try? fileSystem.removeFile(atPath: path(.segment(n))) }
            }
            return installed
        } catch {
            for n in created { try? fileSystem.removeFile(atPath: path(.segment(n))) }
            throw error
        }
    }

    // MARK: Manifest

    /// Writes a manifest describing `version`'s segments, switches CURRENT to it, and deletes the segments and
    /// manifest it no longer names.
    func writeManifest(for version: Version, lastFlushedSequence: UInt64, logNumber: UInt64, state ms: inout ManifestState) throws {
        var partitions: [UInt32: [SegmentInfo]] = [:]
        for (id, ps) in version.partitions where !ps.segments.isEmpty {
            partitions[id] = ps.segments.map(\.info)
        }
        let number = allocateFileNumber()
        let manifest = Manifest(
            nextFileNumber: nextFileNumber, lastFlushedSequence: lastFlushedSequence, logNumber: logNumber,
            newestLogNumber: max(logNumber, ms.manifest.newestLogNumber), partitions: partitions, databaseID: databaseID)
        try installManifest(manifest, number: number)
        let old = ms.manifest
        let oldNumber = ms.manifestNumber
        ms.manifest = manifest
        ms.manifestNumber = number
        // The new manifest is durable: what only the old one named can go (snapshots keep their mappings).
        let live = Set(partitions.values.flatMap { $0.map(\.fileNumber) })
        for n in old.partitions.values.flatMap({ $0.map(\.fileNumber) }) where !live.contains(n) {
            try? fileSystem.removeFile(atPath: path(.segment(n)))
        }
        try? fileSystem.removeFile(atPath: path(.manifest(oldNumber)))
    }

    /// Writes `MANIFEST-number`, syncs it, and makes it current with an atomic rename of `CURRENT`.
    func installManifest(_ manifest: Manifest, number: UInt64) throws {
        try Self.installManifest(manifest, number: number, fileSystem: fileSystem, directory: directory)
    }

    static func installManifest(_ manifest: Manifest, number: UInt64, fileSystem: any FileSystem, directory: String) throws {
        func path(_ n: FileName) -> String { directory + "/" + n.name }
        let file = try fileSystem.createFile(atPath: path(.manifest(number)))
        try file.append(manifest.encoded())
        try file.sync()
        file.close()
        try fileSystem.syncDirectory(atPath: directory)
        let tmp = try fileSystem.createFile(atPath: path(.currentTemporary))
        try tmp.append(Array((FileName.manifest(number).name + "\n").utf8))
        try tmp.sync()
        tmp.close()
        try fileSystem.rename(from: path(.currentTemporary), to: path(.current))
        try fileSystem.syncDirectory(atPath: directory)
    }

    /// Deletes log files numbered below `logNumber` (their commits are in segments named by a durable manifest).
    func removeLogs(before logNumber: UInt64) throws {
        for name in try fileSystem.listDirectory(atPath: directory) {
            if case .log(let n)? = FileName(parsing: name), n < logNumber {
                try? fileSystem.removeFile(atPath: path(.log(n)))
            }
        }
    }
}
