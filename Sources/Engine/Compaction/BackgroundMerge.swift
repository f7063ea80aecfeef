import Dispatch

// Background merges that hold nothing while they build their output.
//
// A merge the size-tiered policy asks for (`compactionWindow`) is planned and installed as maintenance work: in a
// shared database holding LOCK.writer through the maintenance descriptors, caught up with the files, but not the
// writer gate (`withMaintenanceLock`); in an exclusive one on the maintenance queue. In between it is built on
// the `merging` queue holding neither, so that write transactions,
// flushes, a large write's spills and install, and other processes' commits go on while it runs: a commit never
// waits for a merge, only for the moment one is installed. The install checks that the inputs are still the
// partition's, in order (flushes and spills only put segments above them); when a drop or another process's merge
// took them meanwhile, the output is removed. A merge a close suspended is resumed the same way: its saved state is
// read before the plan, holding nothing; its plan takes it out of the manifest's pending merges, keeping its partial
// output, so that no other process resumes it too, and builds on from that state; another close suspends it again
// (listed once more), and a death leaves its output an orphan.
//
// Invariants:
// (1) Only the plan and install steps (and a suspension) read or write the manifest, allocate file numbers or
//     delete files. The plan creates the output file exclusively under a number allocated there, so that another
//     process allocating the same number from the manifest's counter finds the file and takes the next one
//     (`createSegmentFile`); a resumed merge's output is in no manifest from its plan on. The build reads only the
//     segments mapped at the plan (an unlinked file stays readable while mapped) and writes only its own output.
//     Before the plan, a suspended merge's state file and output are read (`preloadSuspendedState`): neither
//     changes while a manifest lists the merge (file numbers are never reused), and what was read is used only
//     when the plan finds the same merge still pending.
// (2) One merge at a time per instance (`merging` is serial). A close or a pause stops it at its next check and
//     suspends it (`SuspendedMerge.swift`), then goes on; a simulated death stops it and keeps nothing.

extension Database {
    /// A merge chosen by the policy, or one a close suspended: what it reads and the file it writes.
    struct MergePlan {
        let id: UInt32
        let version: Version
        let partition: PartitionState
        let window: Range<Int>
        let output: MergeOutput
    }

    /// A merge's output: a new file created at the plan, or a suspended merge's partial output, taken out of the
    /// manifest at the plan (`takePendingMerge`) and written on from its writer's saved state.
    enum MergeOutput {
        case new(number: UInt64, file: any WritableFile)
        case resumed(number: UInt64, state: SuspendedSegment)

        var number: UInt64 {
            switch self {
            case .new(let number, _), .resumed(let number, _): return number
            }
        }
    }

    /// Queues the merges the size-tiered policy asks for, built in the background without the writer gate or
    /// LOCK.writer. Errors are kept for the next caller (`backgroundError`).
    func scheduleCompaction() {
        merging.async { [self] in
            guard options.compactionSegmentTrigger != nil, !isClosing else { return }
            do {
                try mergeInBackground()
            } catch let error as StorageError where error.code == .closed {
                return
            } catch let error as StorageError {
                published.withLock { $0.backgroundError = error }
            } catch {
                published.withLock { $0.backgroundError = StorageError(.io, "\(error)") }
            }
        }
    }

    /// Runs `body` as maintenance work: in a shared database holding LOCK.writer through the maintenance
    /// descriptors, caught up, without the writer gate (`withMaintenanceLock`); in an exclusive one on the
    /// maintenance queue.
    func asMaintenance<R>(_ body: () throws -> R) throws -> R {
        if isShared { return try withMaintenanceLock(body) }
        return try onMaintenance(body)
    }

    /// Resumes the merges a close suspended, then plans, builds and installs merges until the policy asks for
    /// none, a close or pause begins, or an output cannot be installed (the next trigger plans again). A
    /// suspended merge is taken and built as a new one is: only its plan and install hold the lock.
    ///
    /// `stepsAside`: the build pauses while a large write is under way (`pauseWhileLargeWriteUnderWay`); false for
    /// a caller that may itself hold such a write (`mergeWhereNeededNow`).
    func mergeInBackground(stepsAside: Bool = true) throws {
        guard let trigger = options.compactionSegmentTrigger else { return }
        while true {
            let preloaded = preloadSuspendedState()
            let plan = try asMaintenance { () throws -> MergePlan? in
                guard !isClosing, !published.withLock({ $0.closed }) else { return nil }
                if let resumed = try takePendingMerge(preloaded: preloaded) { return resumed }
                let v = currentVersion
                for id in v.partitions.keys.sorted() {
                    guard let ps = v.partitions[id],
                        let window = Self.compactionWindow(
                            sizes: ps.segments.map(\.fileBytes), entries: ps.segments.map(\.entryCount), minimumSegments: trigger)
                    else { continue }
                    let output = try createSegmentFile()
                    return MergePlan(id: id, version: v, partition: ps, window: window, output: .new(number: output.number, file: output.file))
                }
                return nil
            }
            guard let plan else { return }
            guard try buildAndInstall(plan, stepsAside: stepsAside) else { return }
        }
    }

    /// The first merge a close suspended whose inputs and files are still whole, taken out of the manifest (its
    /// output file kept) so that no other process resumes it too: this instance builds it on from where it
    /// stopped, holding nothing, and installs it or suspends it again. Merges that no longer apply are dropped
    /// with their files. As maintenance work. A death before the install leaves the output an orphan (removed
    /// at the next open that finds no other process) and the inputs as they were: it costs the merge's
    /// progress, never data.
    ///
    /// `preloaded` is a merge's saved state read before the lock (`preloadSuspendedState`): used when that merge is
    /// still pending, so that the lock is not held while it is read and checked.
    func takePendingMerge(preloaded: (merge: PendingMerge, state: SuspendedSegment)? = nil) throws -> MergePlan? {
        for merge in manifestState.withLock({ $0.manifest.pendingMerges }) {
            let v = currentVersion
            guard let ps = v.partitions[merge.partition], merge.applies(to: ps.segments.map(\.fileNumber)),
                let state = preloaded.flatMap({ $0.merge == merge ? $0.state : nil }) ?? loadSuspendedState(merge),
                state.partition == merge.partition
            else {
                try dropPendingMerge(merge)
                continue
            }
            try manifestState.withLock { ms in
                // The version read under the manifest's lock, as every manifest switch reads it.
                try writeManifest(
                    for: currentVersion, lastFlushedSequence: ms.manifest.lastFlushedSequence, logNumber: ms.manifest.logNumber,
                    state: &ms, pendingMerges: ms.manifest.pendingMerges.filter { $0 != merge }, keepingOutputOf: merge)
            }
            let start = ps.segments.firstIndex { $0.fileNumber == merge.inputs[0] }!
            return MergePlan(
                id: merge.partition, version: v, partition: ps, window: start..<(start + merge.inputs.count),
                output: .resumed(number: merge.output, state: state))
        }
        return nil
    }

    /// The saved state of the first merge a close suspended that still applies, read and checked holding nothing
    /// (a large merge's state took milliseconds to decode, and every commit of every process waited for it). Its
    /// file is written once, before a manifest names it, and removed only when the merge is taken or dropped,
    /// which is checked again under the lock (`takePendingMerge`). Nil when there is none or it cannot be read
    /// (the take then reads it, or drops the merge).
    func preloadSuspendedState() -> (merge: PendingMerge, state: SuspendedSegment)? {
        let v = currentVersion
        for merge in manifestState.withLock({ $0.manifest.pendingMerges }) {
            guard let ps = v.partitions[merge.partition], merge.applies(to: ps.segments.map(\.fileNumber)) else { continue }
            options.suspendedStateHook?()
            guard let state = loadSuspendedState(merge), state.partition == merge.partition else { return nil }
            return (merge, state)
        }
        return nil
    }

    /// Builds `plan`'s output holding nothing, then installs it as maintenance work. Returns whether it was
    /// installed.
    private func buildAndInstall(_ plan: MergePlan, stepsAside: Bool) throws -> Bool {
        let inputs = Array(plan.partition.segments[plan.window])
        let reachesOldest = plan.window.upperBound == plan.partition.segments.count
        // The output file exists from the plan on: removed with whatever else the build created if it fails.
        var created: [UInt64] = [plan.output.number]
        let output: SegmentReader?
        do {
            var resuming: (number: UInt64, state: SuspendedSegment)? = nil
            var new: (number: UInt64, file: any WritableFile)? = nil
            switch plan.output {
            case .new(let number, let file): new = (number, file)
            case .resumed(let number, let state): resuming = (number, state)
            }
            let it = try Self.mergeInput(plan.version, inputs, after: resuming?.state.lastKey, reachesOldest: reachesOldest)
            output = try writeSegment(
                partition: plan.id, from: it, expectedEntries: inputs.reduce(0) { $0 + $1.entryCount }, dropTombstones: reachesOldest,
                stopWhenClosed: true,
                minSequence: inputs.map(\.minSequence).min() ?? 0, maxSequence: inputs.map(\.maxSequence).max() ?? 0,
                userMetadata: inputs.map(\.userMetadata).min() ?? 0, created: &created, resuming: resuming,
                suspend: { writer, number in
                    // A death keeps nothing; a close or a pause keeps the merge for later.
                    guard !self.dying.load(ordering: .acquiring) else { return false }
                    return try self.asMaintenance {
                        let merge = PendingMerge(
                            partition: plan.id, inputs: inputs.map(\.fileNumber), reachesOldest: reachesOldest, output: number,
                            state: self.allocateFileNumber())
                        return try self.suspendMerge(merge, writer: writer)
                    }
                },
                output: new, pausesForLargeWrites: stepsAside)
        } catch {
            for n in created { try? fileSystem.removeFile(atPath: path(.segment(n))) }  // try?: an output no manifest names
            throw error
        }
        let installed: Bool
        do {
            installed = try asMaintenance { () throws -> Bool in
                guard !dying.load(ordering: .acquiring) else { return false }
                return try installMerge(
                    plan.id, incarnation: plan.partition.incarnation, inputs: inputs, reachesOldest: reachesOldest, output: output,
                    created: &created)
            }
        } catch {
            for n in created { try? fileSystem.removeFile(atPath: path(.segment(n))) }  // try?: an output no manifest names
            throw error
        }
        if !installed {
            for n in created { try? fileSystem.removeFile(atPath: path(.segment(n))) }  // try?: an output no manifest names
        }
        return installed
    }

    /// Waits until the merge under way (if any) has stopped or finished. Called by a close or a pause after it
    /// set what makes the merge stop, holding neither LOCK.writer nor the maintenance queue (the merge's
    /// suspension takes them).
    func waitForBackgroundMerge() {
        if DispatchQueue.getSpecific(key: Self.mergingKey) == instance { return }
        merging.sync {}
    }
}
