// Freezing the memtable and flushing it to segments: with compaction (Database+Compaction.swift), the only
// code that writes segments. It runs on the `maintenance` queue (or inside `open` and `close`), one job at a
// time, and never blocks readers; the writer waits only for the moment a new Version is published.

import Dispatch

extension Database {
    // MARK: Freezing the memtable

    /// Moves every partition's active runs to `frozen` and starts a new log. Called with the writer gate held.
    func freezeLocked() throws {
        guard !options.readOnly else { return }
        let v = currentVersion
        guard !v.hasFrozen, v.partitions.values.contains(where: { !$0.active.isEmpty }) else { return }
        // Sync points 3-5 (Recovery.md, "Sync points").
        if options.durability == .deferred { try log.file.sync(.ordered) }
        let number = allocateFileNumber()
        var file = try fileSystem.createFile(atPath: path(.log(number)))
        try file.append(LogRecord.fileHeader(databaseID: databaseID))
        try file.sync(.ordered)
        try fileSystem.syncDirectory(atPath: directory, .durable)
        if isShared {
            // Every instance appends at the end, wherever the others left it (O_APPEND).
            file.close()
            file = try fileSystem.openForAppending(atPath: path(.log(number)))
        }
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
            // Other instances find the new log through the manifest; this one reads on from its start.
            shared?.tail.withLock { $0 = SharedState.Tail(log: number, offset: LogRecord.fileHeaderBytes) }
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
        scheduleFlushAndCompaction(clearingFlushScheduled: true)
    }

    /// Queues a background job that flushes what is frozen, then queues the merges the policy asks for
    /// (`BackgroundMerge.swift`: built without the writer gate or LOCK.writer); nothing once closed or while
    /// paused. In a shared database the flush too is built holding nothing (`flushInBackground`). Its error is
    /// kept for the next caller (`backgroundError`).
    func scheduleFlushAndCompaction(clearingFlushScheduled: Bool = false) {
        maintenance.async { [self] in
            defer { if clearingFlushScheduled { published.withLock { $0.flushScheduled = false } } }
            guard !published.withLock({ $0.closed }) else { return }
            do {
                let flushed: Bool
                if isShared {
                    flushed = try flushInBackground()
                } else {
                    flushed = !isPaused
                    if flushed { try runFlush() }
                }
                if flushed { scheduleCompaction() }
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
        if isShared {
            // A background flush under way holds no gate: it is waited for here (it installs, or finds this
            // flush's work done and discards its own).
            if DispatchQueue.getSpecific(key: Self.maintenanceKey) != instance { maintenance.sync {} }
            try withSharedWriterLock {
                try runFlush()
                try freezeLocked()
                try runFlush()
            }
            if options.backgroundMaintenance { scheduleCompaction() }
            return
        }
        try onMaintenance { try runFlush() }
        writerGate.wait()
        defer { writerGate.signal() }
        try freezeLocked()
        try onMaintenance { try runFlush() }
        if options.backgroundMaintenance { scheduleCompaction() }
    }

    // MARK: Flush

    /// Writes the frozen runs of every partition to new segments and installs them: on the maintenance queue of
    /// an exclusive database, or holding LOCK.writer in a shared one (a write transaction's flush below its
    /// spills, an explicit flush, a close).
    func runFlush() throws {
        let v = currentVersion
        guard let target = published.withLock({ $0.flushTarget }) else { return }
        var created: [UInt64] = []
        do {
            let outputs = try buildFlush(v, files: [:], created: &created)
            try installFlush(outputs, target: target, created: &created)
        } catch {
            for n in created { try? fileSystem.removeFile(atPath: path(.segment(n))) }  // try?: files no manifest names
            throw error
        }
    }

    /// A shared database's background flush: planned holding LOCK.writer through the maintenance descriptors
    /// (the target, the frozen runs and an output file per partition, created exclusively under numbers
    /// allocated there), built holding nothing, and installed holding the lock again if the instance still has
    /// the same frozen runs to flush. This instance's writes, and other processes', go on meanwhile; what froze
    /// them for the flush in the old design was the writer gate, held while the flush waited for LOCK.writer
    /// behind another process's write. Returns whether it installed.
    ///
    /// The install checks the flush target: a flush of this instance below a spill, or another process's flush,
    /// installed since, or the instance froze again (a new log), and the output goes. A manifest switched by
    /// another process (a merge) rebuilds the frozen runs from the logs with the same target (invariant 6 of
    /// `Database+Sharing.swift`), and the output still installs.
    func flushInBackground() throws -> Bool {
        typealias Plan = (target: (sequence: UInt64, logNumber: UInt64), version: Version, files: [UInt32: (number: UInt64, file: any WritableFile)])
        let plan = try withMaintenanceLock { () throws -> Plan? in
            guard !isClosing, let target = published.withLock({ $0.flushTarget }) else { return nil }
            let v = currentVersion
            var files: [UInt32: (number: UInt64, file: any WritableFile)] = [:]
            do {
                for (id, ps) in v.partitions where !ps.frozen.isEmpty { files[id] = try createSegmentFile() }
            } catch {
                for f in files.values {
                    f.file.close()
                    try? fileSystem.removeFile(atPath: path(.segment(f.number)))  // try?: files no manifest names
                }
                throw error
            }
            return (target, v, files)
        }
        guard let plan else { return false }
        var created = plan.files.values.map(\.number)
        do {
            options.flushBuildHook?()
            let outputs = try buildFlush(plan.version, files: plan.files, created: &created)
            let installed = try withMaintenanceLock { () throws -> Bool in
                guard !dying.load(ordering: .acquiring), !published.withLock({ $0.closed }),
                    let now = published.withLock({ $0.flushTarget }), now == plan.target
                else { return false }
                try installFlush(outputs, target: plan.target, created: &created)
                return true
            }
            if !installed {
                for n in created { try? fileSystem.removeFile(atPath: path(.segment(n))) }  // try?: files no manifest names
                manifestState.withLock { $0.flushesDiscarded += 1 }
            }
            return installed
        } catch {
            for n in created { try? fileSystem.removeFile(atPath: path(.segment(n))) }  // try?: files no manifest names
            throw error
        }
    }

    /// Writes the frozen runs of each partition of `version` to a segment: into `files[id]` when given (created
    /// at a background flush's plan), else a new file.
    private func buildFlush(
        _ version: Version, files: [UInt32: (number: UInt64, file: any WritableFile)], created: inout [UInt64]
    ) throws -> [(id: UInt32, segment: SegmentReader?)] {
        var outputs: [(id: UInt32, segment: SegmentReader?)] = []
        for (id, ps) in version.partitions where !ps.frozen.isEmpty {
            let dropTombstones = ps.segments.isEmpty
            let it = try MergingIterator(version: version, runs: ps.frozen, segments: [], from: nil, includeTombstones: true)
            let segment = try writeSegment(
                partition: id, from: it, expectedEntries: ps.frozen.reduce(0) { $0 + $1.count }, dropTombstones: dropTombstones,
                minSequence: ps.frozen.map(\.minSequence).min() ?? 0, maxSequence: ps.frozen.map(\.maxSequence).max() ?? 0,
                userMetadata: ps.frozen.map(\.userMetadata).min() ?? 0, created: &created, output: files[id])
            outputs.append((id, segment))
        }
        return outputs
    }

    /// Puts each output in place of its partition's frozen runs, and switches the manifest: what the logs
    /// before the target's are no longer needed for. Called where the flush was planned (the maintenance queue,
    /// or holding LOCK.writer), with the same flush target.
    ///
    /// A partition whose frozen runs are gone was dropped since the freeze (a drop replaces the partition): its
    /// output is not installed. With the same target, frozen runs that are there are the ones the output holds,
    /// even if a manifest switch rebuilt them (under another incarnation, for a partition no segment held).
    private func installFlush(_ outputs: [(id: UInt32, segment: SegmentReader?)], target: (sequence: UInt64, logNumber: UInt64), created: inout [UInt64]) throws {
        try manifestState.withLock { ms in
            let newVersion = published.withLock { p -> Version in
                var parts = p.version.partitions
                for out in outputs {
                    guard let cur = parts[out.id], !cur.frozen.isEmpty else { continue }
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
            ms.flushedBytes += outputs.reduce(0) { $0 + ($1.segment?.fileBytes ?? 0) }
        }
        try removeLogs(before: target.logNumber)
    }

    /// A new segment file, created exclusively under a new number: a number another process took meanwhile (a
    /// merge creates its output under LOCK.writer and builds it after releasing the lock, before any manifest
    /// records the number) is passed over for the next one.
    func createSegmentFile() throws -> (number: UInt64, file: any WritableFile) {
        var attempts = 0
        while true {
            let number = allocateFileNumber()
            do {
                return (number, try fileSystem.createNewFile(atPath: path(.segment(number))))
            } catch let error as StorageError where error.isExistingFile && attempts < 1000 {
                attempts += 1
            }
        }
    }

    /// Waits, a millisecond at a time, while a write transaction of this instance has spilled and not ended, or
    /// until a close or a pause begins. A background merge's build calls it between two batches of entries: on
    /// a machine with few cores a merge would otherwise take one of the cores a large write and its spill
    /// worker use. The merge holds nothing while it waits (neither the writer gate, nor LOCK.writer, nor the
    /// maintenance queue), so the write never waits for it; it is only put off until the write ends.
    func pauseWhileLargeWriteUnderWay() {
        let tick = DispatchSemaphore(value: 0)
        while largeWriteUnderWay.load(ordering: .acquiring), !isClosing { _ = tick.wait(timeout: .now() + .milliseconds(1)) }
    }

    /// Writes the entries of `it` to a new segment; nil when there is nothing to write.
    /// With `stopWhenClosed` (compactions), a close in the meantime stops the write with a `.closed` error: a
    /// close never waits for a long merge. `suspend` may then keep the partial file (returning true) for a later
    /// session to finish (`SuspendedMerge.swift`); otherwise it goes. `resuming` goes on writing such a file.
    func writeSegment(
        partition: UInt32, from it: MergingIterator, expectedEntries: Int, dropTombstones: Bool, stopWhenClosed: Bool = false,
        minSequence: UInt64, maxSequence: UInt64, userMetadata: UInt64, created: inout [UInt64],
        resuming: (number: UInt64, state: SuspendedSegment)? = nil, suspend: ((SegmentWriter, UInt64) throws -> Bool)? = nil,
        stopAfterEntries: Int? = nil, output: (number: UInt64, file: any WritableFile)? = nil, pausesForLargeWrites: Bool = false
    ) throws -> SegmentReader? {
        let number: UInt64
        let file: any WritableFile
        let writer: SegmentWriter
        if let resuming {
            number = resuming.number
            try fileSystem.truncateFile(atPath: path(.segment(number)), toSize: resuming.state.committedBytes)
            // The partial file's header names its format: one an earlier build began (format 2) ends in format 2.
            let format = try fileSystem.map(atPath: path(.segment(number))).withUnsafeBytes { Bytes.loadUInt32LE($0, at: 8) }
            guard let format, (2...SegmentFormat.formatVersion).contains(format) else {
                throw StorageError.corrupted(
                    "a suspended merge's partial segment declares format \(format.map(String.init) ?? "none"), not one a merge writes",
                    file: FileName.segment(number).name, offset: 8)
            }
            file = try fileSystem.openForAppending(atPath: path(.segment(number)))
            // A background merge's caller lists it from the plan on (it took it out of the manifest).
            if !created.contains(number) { created.append(number) }
            writer = SegmentWriter(
                resuming: resuming.state, format: format, file: file, fileNumber: number, databaseID: databaseID, compress: options.compression,
                cipher: cipher)
        } else {
            (number, file) = try output ?? createSegmentFile()
            created.append(number)
            writer = try SegmentWriter(
                file: file, fileNumber: number, partition: partition, databaseID: databaseID, expectedEntries: expectedEntries,
                compress: options.compression, cipher: cipher)
        }
        var sinceCheck = 0
        var writtenNow = 0
        // Compared with a plain Int per entry (no budget: never reached).
        let stopAfter = stopAfterEntries ?? (stopWhenClosed ? options.mergeEntriesBeforeSuspending : nil) ?? Int.max
        while it.isValid {
            let v = it.value
            if v != nil || !dropTombstones { try writer.add(key: it.currentKey, value: v) }
            try it.next()
            sinceCheck += 1
            writtenNow += 1
            if (stopWhenClosed && sinceCheck >= Tuning.mergeCloseCheckEntries) || writtenNow == stopAfter {
                sinceCheck = 0
                if stopWhenClosed, output != nil || resuming != nil { options.mergeCheckHook?() }
                if pausesForLargeWrites { pauseWhileLargeWriteUnderWay() }
                // A merge with nothing left to write is finished instead.
                if (stopWhenClosed && isClosing) || writtenNow == stopAfter, it.isValid {
                    // A merge stopped with more to write is worth keeping. A suspension that fails costs only the
                    // merge's progress (nothing reads its output), so the merge is then dropped as before
                    // suspensions, and the next open starts it again.
                    if let suspend {
                        let kept: Bool
                        do {
                            kept = try suspend(writer, number)
                        } catch {
                            kept = false
                        }
                        if kept { created.removeAll { $0 == number } }
                    }
                    file.close()
                    throw StorageError(.closed, "compaction of partition \(partition) stopped by close", file: directory)
                }
            }
        }
        let filePath = path(.segment(number))
        if writer.entryCount == 0 {
            file.close()
            try? fileSystem.removeFile(atPath: filePath)
            created.removeLast()
            return nil
        }
        _ = try writer.finish(minSequence: minSequence, maxSequence: maxSequence, userMetadata: userMetadata)
        return try SegmentReader(
            region: try fileSystem.map(atPath: filePath), fileNumber: number, expectedPartition: partition, databaseID: databaseID,
            cache: blockCache, cipher: cipher)
    }
}
