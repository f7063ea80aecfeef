import Dispatch
import Atomics

// Invariants:
// (1) A commit is visible (published in a Version) only after its log record was written and, in `.full`
//     durability, synced.
// (2) Only the holder of the writer gate appends to the log, changes the sequence number, or freezes the
//     memtable; only the maintenance queue writes manifests (a shared database's maintenance holds the writer
//     gate instead), and segments are written by it, by a spilling write, and by a background merge's build on
//     the `merging` queue, whose output only the maintenance queue installs (`BackgroundMerge.swift`).
// (3) A manifest names only synced segment files; CURRENT is switched by an atomic rename, and a log file or
//     segment is deleted only after a durable manifest no longer needs it.
// (4) After a failed log write the database refuses further writes (`poisoned`), so nothing is ever
//     appended behind a damaged record.

/// A log-structured key-value store: partitions of key -> value bytes, with MVCC snapshots.
///
/// ## Topics
/// - Opening: ``open(at:options:fileSystem:)``, ``close()``
/// - Writing: ``beginWrite()``, ``write(_:)``
/// - Reading: ``snapshot()``
/// - Maintenance: ``flush()``, ``compact(_:)``, ``statistics()``, ``checkConsistency()``
package final class Database: @unchecked Sendable {
    /// How much a commit waits for the disk.
    package enum Durability: Sendable, Equatable {
        /// `fdatasync` before `commit()` returns (the default, as Realm does): a commit that returned survives
        /// a power cut.
        case full
        /// Commits are written to the operating system but synced only at flush, close and `sync()`: a crash
        /// of the process loses nothing, a power cut may lose the last commits (never a part of one).
        case deferred
    }

    package struct Options: Sendable {
        package var durability: Durability = .full
        package var createIfMissing = true
        /// Memtable bytes that trigger a flush.
        package var memtableFlushBytes = Tuning.memtableFlushBytes
        /// Segments in one partition that trigger a compaction; nil disables automatic compaction.
        package var compactionSegmentTrigger: Int? = Tuning.compactionSegmentTrigger
        /// Flush and compact on a background queue (true), or only when asked (false; tests).
        package var backgroundMaintenance = true
        /// Write a large transaction's spilled segments on a worker while it goes on (true), or on its own
        /// thread (false).
        package var spillInBackground = true
        /// The most snapshots alive at once; nil for no limit.
        package var maximumLiveSnapshots: Int? = nil
        /// LZ4-compress segment blocks when that saves space.
        package var compression = true
        /// Bytes of decompressed blocks cached for point reads.
        package var blockCacheBytes = Tuning.blockCacheBytes
        /// Open without writing anything: no log is created or cut, nothing is flushed, writes throw. The
        /// commits in the log are replayed into memory.
        package var readOnly = false
        /// With `readOnly`: when another process holds the database, open it anyway, without the lock, and read
        /// what its files hold at that moment (the `strata` tool's read-only commands). The other process may
        /// remove a file meanwhile; the open then fails with the file's name and can be retried.
        package var readBesideWriter = false
        /// A 64-byte key: every segment block and index and every log record is sealed with AES-256-GCM under a
        /// key derived from it, and the manifest is authenticated with it (`Cipher`). A database is created
        /// encrypted or plain and stays so; opening it with the wrong key, without its key, or a plain one with a
        /// key fails with `.decryptionFailed`.
        package var encryptionKey: [UInt8]? = nil
        /// Tests: a background merge stops once it has written this many entries, and is suspended as a close
        /// would suspend it (`SuspendedMerge.swift`).
        package var mergeEntriesBeforeSuspending: Int? = nil
        /// Tests: whether a close does its share of merging (`advanceMergesAtClose`).
        package var closeMergeShare = true
        /// Tests: called by a background merge while it builds its output, at each of its checks (every 4,096
        /// entries), holding no lock: a test holds the merge there to show what goes on meanwhile.
        package var mergeCheckHook: (@Sendable () -> Void)? = nil
        /// Tests: called by a background merge before it reads a suspended merge's saved state, holding no lock.
        package var suspendedStateHook: (@Sendable () -> Void)? = nil
        /// Tests: called by a shared database's background flush once planned, before it builds its segments,
        /// holding no lock (`flushInBackground`).
        package var flushBuildHook: (@Sendable () -> Void)? = nil
        /// Whether other instances, in this process or others, may open the database at the same time
        /// (`Database+Sharing.swift`). Shared by default; `.exclusive` costs nothing to coordinate and refuses
        /// every other open.
        package var sharing: Sharing = .shared
        package init() {}
    }

    package let directory: String
    /// The identity written into every file (`Manifest.databaseID`).
    let databaseID: UInt64
    let fileSystem: any FileSystem
    package let options: Options
    /// The cipher of an encrypted database (`Options.encryptionKey`); nil for a plain one.
    let cipher: Cipher?
    private let fileLock: any FileLock
    /// The coordination of a shared database (`Options.sharing`); nil for an exclusive one.
    let shared: SharedState?
    let registry = SnapshotRegistry()
    let blockCache: BlockCache
    let writerGate = DispatchSemaphore(value: 1)
    let maintenance = DispatchQueue(label: "strata.engine.maintenance")
    /// Where background merges are built, holding neither the writer gate nor the maintenance queue
    /// (`BackgroundMerge.swift`).
    let merging = DispatchQueue(label: "strata.engine.merging")
    /// Builds the segments of large transactions' spills while they go on (`Database+Spill.swift`).
    let spilling = DispatchQueue(label: "strata.engine.spilling", qos: .userInitiated)
    static let mergingKey = DispatchSpecificKey<UInt64>()
    /// Set by `simulateProcessDeath`: a background merge then stops and keeps nothing.
    let dying = ManagedAtomic<Bool>(false)
    /// Marks `maintenance` as this database's, so that work already on it (a `deinit` run there when a
    /// background job held the last reference) does not wait for the queue it is on.
    static let maintenanceKey = DispatchSpecificKey<UInt64>()
    private static let instances = ManagedAtomic<UInt64>(1)
    /// `pauseBackgroundWork()` was called and `resumeBackgroundWork()` not since.
    private let paused = ManagedAtomic(false)
    /// Set from a write transaction's first spill until it ends (`endWrite`): a background merge steps aside
    /// meanwhile (`pauseWhileLargeWriteUnderWay`), so that the write and its spill worker have the cores.
    let largeWriteUnderWay = ManagedAtomic(false)
    let instance = Database.instances.loadThenWrappingIncrement(by: 1, ordering: .relaxed)

    /// `onMaintenance` from a write transaction, its wait counted in `maintenanceWaitNanoseconds`.
    func onMaintenanceFromWrite<R>(_ body: () throws -> R) rethrows -> R {
        let start = DispatchTime.now().uptimeNanoseconds
        var began: UInt64 = 0
        let result = try onMaintenance { () throws -> R in
            began = DispatchTime.now().uptimeNanoseconds
            return try body()
        }
        maintenanceWaitNanoseconds.wrappingIncrement(by: began &- start, ordering: .relaxed)
        return result
    }

    /// Runs `body` on the maintenance queue and waits for it; inline when already there.
    /// A shared database runs it inline: there, every job holds the writer gate, which serializes them.
    func onMaintenance<R>(_ body: () throws -> R) rethrows -> R {
        if shared != nil { return try body() }
        if DispatchQueue.getSpecific(key: Self.maintenanceKey) == instance { return try body() }
        return try maintenance.sync(execute: body)
    }

    struct Published {
        var version: Version
        var closed = false
        var poisoned: StorageError? = nil
        var backgroundError: StorageError? = nil
        var flushScheduled = false
        /// Set when the memtable was frozen: the last sequence it holds and the log that follows it.
        var flushTarget: (sequence: UInt64, logNumber: UInt64)? = nil
        var nextIncarnation: UInt64 = 1
    }
    let published: Locked<Published>

    /// Owned by the holder of the writer gate.
    final class LogState: @unchecked Sendable {
        var file: any WritableFile
        var number: UInt64
        init(file: any WritableFile, number: UInt64) {
            self.file = file
            self.number = number
        }
    }
    let log: LogState

    /// Owned by the maintenance queue (and `open`/`close`).
    struct ManifestState {
        var manifest: Manifest
        var manifestNumber: UInt64
        var flushes = 0
        /// The bytes of the segments flushed since the open (a close's share of merging grows with them).
        var flushedBytes = 0
        /// Background flushes built but not installed: another flush took their frozen runs first.
        var flushesDiscarded = 0
        var compactions = 0
    }
    let manifestState: Locked<ManifestState>
    private let fileNumbers: ManagedAtomic<UInt64>
    /// Nanoseconds writers spent waiting: in `beginWrite` for the writer gate and LOCK.writer, and inside a
    /// write for the maintenance queue (a large transaction's flushes and install), since the open.
    let writerWaitNanoseconds = ManagedAtomic<UInt64>(0)
    let maintenanceWaitNanoseconds = ManagedAtomic<UInt64>(0)

    init(directory: String, fileSystem: any FileSystem, options: Options, fileLock: any FileLock, version: Version,
         log: LogState, manifest: Manifest, manifestNumber: UInt64, nextIncarnation: UInt64, blockCache: BlockCache, shared: SharedState? = nil) {
        self.directory = directory
        self.databaseID = manifest.databaseID
        self.blockCache = blockCache
        self.fileSystem = fileSystem
        self.options = options
        self.cipher = options.encryptionKey.flatMap { Cipher(key: $0) }
        self.fileLock = fileLock
        self.shared = shared
        self.published = Locked(Published(version: version, nextIncarnation: nextIncarnation))
        self.log = log
        self.manifestState = Locked(ManifestState(manifest: manifest, manifestNumber: manifestNumber))
        self.fileNumbers = ManagedAtomic(manifest.nextFileNumber)
        maintenance.setSpecific(key: Self.maintenanceKey, value: instance)
        merging.setSpecific(key: Self.mergingKey, value: instance)
    }

    deinit {
        try? close()
    }

    func path(_ name: FileName) -> String { directory + "/" + name.name }

    /// A new file number, never reused.
    func allocateFileNumber() -> UInt64 {
        fileNumbers.loadThenWrappingIncrement(by: 1, ordering: .relaxed)
    }
    var nextFileNumber: UInt64 { fileNumbers.load(ordering: .relaxed) }

    /// Makes the next file number at least `number` (another process's manifest allocated up to it).
    func advanceFileNumbers(to number: UInt64) {
        var current = fileNumbers.load(ordering: .relaxed)
        while current < number {
            let (exchanged, original) = fileNumbers.compareExchange(expected: current, desired: number, ordering: .relaxed)
            if exchanged { return }
            current = original
        }
    }

    var currentVersion: Version { published.withLock { $0.version } }

    // MARK: - Reading

    /// A snapshot of the latest commit.
    package func snapshot() throws -> Snapshot {
        let version = try published.withLock { p in
            if p.closed { throw StorageError(.closed, "the database is closed (Database.snapshot)", file: directory) }
            return p.version
        }
        return try Snapshot(version: version, registry: registry, limit: options.maximumLiveSnapshots)
    }

    /// The sequence number of the latest commit.
    package var lastSequence: UInt64 { currentVersion.sequence }

    /// The number of snapshots alive now.
    package var liveSnapshotCount: Int { registry.count }

    // MARK: - Writing

    /// Starts a write transaction, waiting while another one is open.
    package func beginWrite() throws -> WriteTransaction {
        let waitStart = DispatchTime.now().uptimeNanoseconds
        writerGate.wait()
        do {
            try published.withLock { p in
                if p.closed { throw StorageError(.closed, "the database is closed (Database.beginWrite)", file: directory) }
                if let e = p.poisoned { throw e }
            }
            if options.readOnly {
                throw StorageError(.invalidArgument, "the database was opened read-only (Database.beginWrite); open it without readOnly to write", file: directory)
            }
        } catch {
            writerGate.signal()
            throw error
        }
        do {
            try lockForWriting()
        } catch {
            writerGate.signal()
            throw error
        }
        writerWaitNanoseconds.wrappingIncrement(by: DispatchTime.now().uptimeNanoseconds &- waitStart, ordering: .relaxed)
        do {
            return WriteTransaction(database: self, snapshot: try snapshotForWriter())
        } catch {
            endWrite()
            throw error
        }
    }

    private func snapshotForWriter() throws -> Snapshot {
        try Snapshot(version: currentVersion, registry: registry, limit: nil)
    }

    /// Runs `body` in a write transaction and commits it; an error thrown by `body` aborts it.
    @discardableResult
    package func write<R>(_ body: (WriteTransaction) throws -> R) throws -> R {
        let tx = try beginWrite()
        do {
            let result = try body(tx)
            try tx.commit()
            return result
        } catch {
            tx.abort()
            throw error
        }
    }

    func endWrite() {
        largeWriteUnderWay.store(false, ordering: .releasing)
        unlockAfterWriting()
        writerGate.signal()
    }

    /// Appends, syncs and publishes one transaction. Called with the writer gate held.
    func commit(_ batch: WriteBatch) throws -> UInt64 {
        let base = try published.withLock { p -> Version in
            if p.closed { throw StorageError(.closed, "the database is closed (WriteTransaction.commit)", file: directory) }
            if let e = p.poisoned { throw e }
            return p.version
        }
        if batch.isEmpty { return base.sequence }
        let sequence = base.sequence + 1
        LogRecord.seal(batch, sequence: sequence)
        let flushNow: Bool
        if let shared {
            // A refresh on another thread must not replay this record before it is published here.
            flushNow = try shared.tail.withLock { tail in
                let before = log.file.size
                let flush = try appendAndPublish(batch, sequence: sequence, base: base)
                tail.offset += log.file.size - before
                return flush
            }
        } else {
            flushNow = try appendAndPublish(batch, sequence: sequence, base: base)
        }
        if flushNow && options.backgroundMaintenance {
            try? freezeAndScheduleFlush()
        }
        return sequence
    }

    /// Appends a sealed batch to the log and publishes it; returns whether the memtable should be flushed.
    private func appendAndPublish(_ batch: WriteBatch, sequence: UInt64, base: Version) throws -> Bool {
        do {
            if let cipher {
                // The log gets the sealed record; the plain one stays the memtable's arena.
                let sealed = batch.buffer.withUnsafeBytes { LogRecord.encrypted($0, cipher: cipher, log: log.number, database: databaseID) }
                try sealed.withUnsafeBytes { try log.file.append($0) }
            } else {
                try batch.buffer.withUnsafeBytes { try log.file.append($0) }
            }
            // Sync point 1 (Recovery.md, "Sync points").
            if options.durability == .full { try log.file.sync(.durable) }
        } catch {
            let logName = FileName.log(log.number).name
            let poison = StorageError(
                .closed,
                "writing to \(logName) failed (\(error)); this Database refuses further writes so that nothing is written "
                    + "behind a damaged record. Close it and open the database again once the cause is fixed: every "
                    + "acknowledged commit is kept.",
                file: logName, underlying: error as? StorageError)
            published.withLock { $0.poisoned = poison }
            throw StorageError(.io, "commit of sequence \(sequence) failed: \(error)", file: logName, underlying: error as? StorageError)
        }
        let arena = MappedRegion(adopting: batch.buffer)
        // Build the new runs outside the lock: only the writer changes active runs.
        var changes: [(UInt32, PartitionBatch, [MemRun])] = []
        for (id, pb) in batch.operationsByPartition {
            let existing = pb.drop ? nil : base.partitions[id]
            let metadata = pb.userMetadata ?? existing?.userMetadata ?? 0
            var active = existing?.active ?? []
            if !pb.slots.isEmpty {
                active.insert(MemRun.build(arena: arena, operations: pb.slots, sequence: sequence, userMetadata: metadata), at: 0)
                while active.count >= 2, active[0].count * 2 >= active[1].count || active.count > 12 {
                    let merged = MemRun.merge(newer: active[0], older: active[1])
                    active.replaceSubrange(0...1, with: [merged])
                }
            }
            changes.append((id, pb, active))
        }
        return published.withLock { p -> Bool in
            var partitions = p.version.partitions
            for (id, pb, active) in changes {
                var current = partitions[id]
                if pb.drop { current = nil }
                let metadata = pb.userMetadata ?? current?.userMetadata ?? 0
                if let current {
                    partitions[id] = current.with(active: active, userMetadata: metadata)
                } else {
                    partitions[id] = PartitionState(id: id, incarnation: p.nextIncarnation, active: active, userMetadata: metadata)
                    p.nextIncarnation += 1
                }
                if let s = partitions[id], s.isEmpty, pb.userMetadata == nil { partitions[id] = nil }
            }
            p.version = Version(sequence: sequence, partitions: partitions)
            // Frozen runs a rebuild inherited (another instance's flush of them is under way: invariant 6 of
            // `Database+Sharing.swift`) are flushed here too once the active runs are full again.
            return p.version.activeBytes >= options.memtableFlushBytes && !p.flushScheduled
                && (!p.version.hasFrozen || (shared != nil && p.flushTarget != nil))
        }
    }

    /// Syncs the log: in `.deferred` durability, makes every commit so far durable.
    package func sync() throws {
        writerGate.wait()
        defer { writerGate.signal() }
        // Sync point 2 (Recovery.md, "Sync points").
        try log.file.sync(.durable)
    }

    // MARK: - Closing

    /// Flushes the memtable, waits for background work and releases the lock. Further use throws `.closed`.
    package func close() throws {
        if let shared { return try closeShared(shared) }
        writerGate.wait()
        defer { writerGate.signal() }
        let (wasClosed, poisoned) = markClosed()
        if wasClosed { return }
        // The merge under way stops (it sees the close) and is suspended on the maintenance queue.
        waitForBackgroundMerge()
        var failure: (any Error)? = nil
        onMaintenance {
            guard !poisoned, !options.readOnly else { return }
            do {
                try flushAtClose()
            } catch {
                failure = error
            }
        }
        abandonFiles()
        if let failure { throw failure }
    }

    /// A failed open: releases what the instance holds and writes nothing.
    func abandonAfterFailedOpen() {
        _ = markClosed()
        abandonFiles()
    }

    /// Marks the database closed; returns whether it already was, and whether it was poisoned.
    private func markClosed() -> (wasClosed: Bool, poisoned: Bool) {
        published.withLock { p in
            let was = p.closed
            p.closed = true
            return (was, p.poisoned != nil)
        }
    }

    /// A shared database's close: the last instance open flushes, as an exclusive one's close does; the others
    /// leave their commits in the log for the rest.
    private func closeShared(_ shared: SharedState) throws {
        shared.closing.withLock { $0 = true }
        // The merge under way stops and is suspended, taking the writer gate to do so: waited for before the
        // close takes the gate.
        waitForBackgroundMerge()
        writerGate.wait()
        defer { writerGate.signal() }
        let (wasClosed, poisoned) = markClosed()
        if wasClosed { return }
        var failure: (any Error)? = nil
        if !poisoned, !options.readOnly, let lock = shared.writerLock {
            do {
                try lock.lock()
                defer { lock.unlock() }
                try catchUp(asWriter: true)
                if otherLiveSessions().isEmpty { try flushAtClose() }
            } catch {
                failure = error
            }
        }
        abandonFiles()
        if let failure { throw failure }
    }

    /// What a close writes: the memtable to a segment, and its share of merging.
    private func flushAtClose() throws {
        if currentVersion.partitions.values.contains(where: { !$0.active.isEmpty || !$0.frozen.isEmpty }) {
            try runFlush()  // what an earlier, failed flush left frozen
            try freezeLocked()
            try runFlush()
        }
        if options.backgroundMaintenance {
            try mergeSmallSegmentsNow()
            try advanceMergesAtClose(sessionFlushedBytes: manifestState.withLock { $0.flushedBytes })
        }
    }

    /// Whether this read-only open is beside another process that holds the database (`readBesideWriter`), or, in
    /// a shared database, that has it open too.
    package var isBesideWriter: Bool {
        shared == nil ? fileLock is NoFileLock : options.readOnly && !otherLiveSessions().isEmpty
    }

    /// Closes the log and releases the lock.
    func abandonFiles() {
        log.file.close()
        fileLock.unlock()
        if let session = shared?.session {
            SessionFile.ended(session)
            // try?: a session file left behind is removed by the next instance that finds its process gone.
            try? fileSystem.removeFile(atPath: directory + "/" + session)
        }
    }

    /// Whether a close has begun, or background work is paused: a long merge stops for it.
    var isClosing: Bool {
        published.withLock { $0.closed } || shared?.closing.withLock { $0 } == true || isPaused || dying.load(ordering: .acquiring)
    }

    // MARK: - Pausing

    /// Stops background flushes and merges and waits until none runs: a merge under way is suspended as a close
    /// suspends it, and jobs queued meanwhile do nothing. What an app calls before the system suspends it (iOS
    /// kills a suspended app that holds a file lock in a shared container), so that a shared database holds no
    /// lock while it sleeps. Commits still work; their flush waits for `resumeBackgroundWork()`. Not to be called
    /// from a write transaction or from the maintenance queue: the merge under way suspends itself through them.
    package func pauseBackgroundWork() {
        paused.store(true, ordering: .releasing)
        if DispatchQueue.getSpecific(key: Self.maintenanceKey) != instance { maintenance.sync {} }
        waitForBackgroundMerge()
    }

    /// Lets background work run again, and starts what was put off.
    package func resumeBackgroundWork() {
        paused.store(false, ordering: .releasing)
        guard options.backgroundMaintenance, !options.readOnly else { return }
        scheduleFlushAndCompaction()
    }

    var isPaused: Bool { paused.load(ordering: .acquiring) }
}
