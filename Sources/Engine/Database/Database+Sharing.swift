// Several processes on one database (`Options.sharing = .shared`): an app and its widget or extension, a
// service and its admin tool. `Engine.docc/Sharing.md` describes the protocol; in short:
//
// - Nothing is held while idle. `LOCK.writer` is `flock`ed around each piece of work that changes the files
//   (a write transaction, a flush, a merge's plan and install but not its build, a manifest switch, a close's
//   last flush) and released after.
// - The files are the shared state. A process learns what the others did by reading them ("catching up"):
//   `CURRENT` names the manifest (replaced by an atomic rename), the manifest names the segments and the logs
//   to replay, and log records check themselves (length, sequence and checksum), so a record still being
//   appended reads as the end of the log, and one torn by a killed writer is cut by the next writer.
// - A catch-up with the same manifest reads only the log bytes written since the last one; a new manifest
//   (another process flushed, compacted or switched logs) rebuilds the memtable from the logs it names, which
//   hold at most the unflushed tail, never the whole database.
// - A file is deleted only by a writer-lock holder, after a durable manifest stopped naming it. A process that
//   maps it already keeps reading it (an unlinked file lives while mapped); one that finds it gone while
//   catching up without the lock started from a manifest that is no longer current, and starts again.
// - Each open process has a session file, `SESSION.<pid>.<n>`. The process that finds no other live session
//   ("alone") is the only one that recovers at open (flushes a dead session's log, removes orphans) and
//   flushes at close. A killed process's session file stays until the next "alone" check sees its process gone.
//
// Invariants:
// (1) Every manifest switch, log switch, torn-tail cut and file deletion is made by the holder of LOCK.writer,
//     after catching up: its in-memory Version is then exactly what the files hold.
// (2) A process's published Version is always a prefix of the commit sequence the files hold.
// (3) Segment and log numbers are allocated only under LOCK.writer, from a counter caught up to the manifest,
//     and a segment file is created exclusively: a background merge creates its output under the lock and
//     builds it after releasing it, before any manifest records the number, so another process that takes the
//     same number from the manifest's counter finds the file and takes the next (`createSegmentFile`). Two
//     processes never write the same file.
// (4) A `flock` belongs to the descriptor, not the thread. An instance opens LOCK.writer (and LOCK.queue) twice:
//     its write transactions, explicit flushes and compactions and its close take the writer descriptors, and
//     only the holder of the writer gate takes or releases them (an open, before any job of the instance can
//     run, is the one exception, and schedules its background work after releasing them); its background
//     flushes and merges take the maintenance descriptors, and only the holder of `maintenanceGate` does. The
//     two exclude each other as two processes do, and wait in the same turnstile: background work never holds
//     the writer gate, so a commit of this instance never waits behind it for another process's write.
// (5) A maintenance-lock holder catches up as a reader (`catchUp(asWriter: false)`): it never touches this
//     instance's log (the writer gate's), only the manifest, the published Version and files no manifest names.
// (6) A manifest whose `logNumber` is older than its `newestLogNumber` names logs some instance froze and has
//     not flushed yet: a rebuild replays them into frozen runs, with their flush target, so that this instance
//     does not freeze the same commits again (which would switch the manifest and throw away the other's
//     flush, again and again); it flushes them itself only if its active runs fill up meanwhile
//     (`appendAndPublish`), or when it must (a spill, an explicit flush, a close).

import Dispatch

extension Database {
    /// How a database is shared between `Database` instances, in one process or several.
    package enum Sharing: Sendable, Equatable {
        /// One instance holds the database for its whole life (`LOCK`): no coordination, and any other open
        /// fails with `.locked`.
        case exclusive
        /// Any number of instances, in any processes, open it read-write or read-only; each locks only while
        /// it writes, flushes or compacts.
        case shared
    }

    /// What a shared database needs beyond an exclusive one.
    final class SharedState: @unchecked Sendable {
        /// `LOCK.writer`, held around each write transaction and each change of the files.
        let writerLock: (any ProcessLock)?
        /// `LOCK.writer` again, through descriptors of its own, for background flushes and merges (invariant 4).
        let maintenanceLock: (any ProcessLock)?
        /// Held by the thread that takes or holds `maintenanceLock`.
        let maintenanceGate = DispatchSemaphore(value: 1)
        /// This instance's session file (nil for a read-only instance, which writes nothing).
        let session: String?
        /// The log being read and the offset of the first byte not yet replayed.
        struct Tail {
            var log: UInt64
            var offset: Int
        }
        let tail: Locked<Tail>
        /// Set when a close begins: a background merge then stops (and is suspended) instead of making the close
        /// wait for it.
        let closing = Locked(false)
        /// The log `tail` names, open for reading (guarded by `tail`'s lock).
        var tailFile: (log: UInt64, file: any ReadableFile)?
        /// `CURRENT` as last read, kept open, and the manifest it names (guarded by `tail`'s lock): while no
        /// rename replaced it, the manifest is the same, and one `fstat` says so.
        var currentFile: (manifest: UInt64, file: any ReadableFile)?
        /// The keys of the commits other instances made, as catching up replays them (`takeOtherCommits`).
        let otherCommits = Locked<[CommitKeys]>([])

        init(writerLock: (any ProcessLock)?, maintenanceLock: (any ProcessLock)?, session: String?, tail: Tail) {
            self.writerLock = writerLock
            self.maintenanceLock = maintenanceLock
            self.session = session
            self.tail = Locked(tail)
        }
    }

    /// Whether other instances may have the database open (`Options.sharing`).
    package var isShared: Bool { shared != nil }

    /// What one commit of another instance wrote: the keys it put or deleted, per partition, and the partitions
    /// it dropped. The object layer builds its change sets from them, as it does from its own commits.
    package struct CommitKeys: Sendable {
        package var sequence: UInt64
        package var keys: [UInt32: [[UInt8]]] = [:]
        package var dropped: Set<UInt32> = []
        /// The commits up to `sequence` since the last one reported were flushed to segments before this
        /// instance could read them from the log: what they wrote is unknown (`keys` is empty).
        package var isUnknown = false
    }

    /// The most commits `takeOtherCommits` keeps; older ones are dropped (a reader then knows only that
    /// something changed).
    package static let otherCommitsKept = 4096

    /// The commits of other instances replayed since the last call, oldest first (at most `otherCommitsKept`:
    /// a gap in the sequence numbers means more were replayed than kept, or some were flushed to segments before
    /// this instance could read them from the log).
    package func takeOtherCommits() -> [CommitKeys] {
        shared?.otherCommits.withLock { list in
            defer { list = [] }
            return list
        } ?? []
    }

    // MARK: Refreshing

    /// Reads what other instances committed since this one last looked, and publishes it. Returns whether the
    /// latest commit changed. An exclusive database has nothing to read (false).
    @discardableResult
    package func refresh() throws -> Bool {
        guard isShared else { return false }
        try published.withLock { p in
            if p.closed { throw StorageError(.closed, "the database is closed (Database.refresh)", file: directory) }
        }
        let before = currentVersion.sequence
        let manifestBefore = manifestState.withLock { $0.manifestNumber }
        try catchUp(asWriter: false)
        return currentVersion.sequence != before || manifestState.withLock { $0.manifestNumber } != manifestBefore
    }

    /// Runs `body` holding the writer gate and LOCK.writer, caught up; an exclusive database just runs it (its
    /// maintenance queue serializes its jobs).
    func withSharedWriterLock<R>(_ body: () throws -> R) throws -> R {
        guard isShared else { return try body() }
        writerGate.wait()
        defer { writerGate.signal() }
        guard let lock = shared?.writerLock else { return try body() }
        try lock.lock()
        defer { lock.unlock() }
        try catchUp(asWriter: true)
        return try body()
    }

    /// Runs `body` holding LOCK.writer through the maintenance descriptors, caught up as a reader, without the
    /// writer gate (invariants 4 and 5): background flushes and merges plan and install this way, so that a commit
    /// of this instance waits for them only in the turnstile, as for another process. An exclusive database (or
    /// a read-only one) just runs it.
    func withMaintenanceLock<R>(_ body: () throws -> R) throws -> R {
        guard let shared, let lock = shared.maintenanceLock else { return try body() }
        shared.maintenanceGate.wait()
        defer { shared.maintenanceGate.signal() }
        try lock.lock()
        defer { lock.unlock() }
        try catchUp(asWriter: false)
        advanceFileNumbers(to: manifestState.withLock { $0.manifest.nextFileNumber })
        return try body()
    }

    /// Runs `body` if no write transaction of this instance is open now (none starts while it runs); returns
    /// whether it ran.
    @discardableResult
    package func ifNoWriteIsOpen(_ body: () throws -> Void) rethrows -> Bool {
        guard writerGate.wait(timeout: .now()) == .success else { return false }
        defer { writerGate.signal() }
        try body()
        return true
    }

    /// Takes LOCK.writer for a write transaction (the writer gate is held) and catches up.
    func lockForWriting() throws {
        guard let lock = shared?.writerLock else { return }
        try lock.lock()
        do {
            try catchUp(asWriter: true)
        } catch {
            lock.unlock()
            throw error
        }
    }

    /// Releases what `lockForWriting` took.
    func unlockAfterWriting() {
        shared?.writerLock?.unlock()
    }

    /// Brings the published Version up to what the files hold. `asWriter` (LOCK.writer held) also cuts a torn
    /// tail left by a killed writer and points this instance's log at the current one.
    func catchUp(asWriter: Bool) throws {
        guard let shared else { return }
        // A reader without the lock can meet a file that a newer manifest made another process delete: it then
        // starts again from the newer manifest. A writer holds the lock, so no file it needs can go.
        var attempts = 0
        while true {
            do {
                try manifestState.withLock { ms in
                    try shared.tail.withLock { tail in
                        try catchUpLocked(asWriter: asWriter, ms: &ms, tail: &tail)
                    }
                }
                return
            } catch let error as StorageError where error.isMissingFile && !asWriter && attempts < 100 {
                attempts += 1
                Syscalls.sleep(microseconds: 100)
            }
        }
    }

    /// The manifest `CURRENT` names. `CURRENT` is only ever replaced by a rename, so the copy kept open since the
    /// last read answers until it has no name left.
    private func readCurrent(_ shared: SharedState) throws -> UInt64 {
        if let kept = shared.currentFile, try !kept.file.isReplaced() { return kept.manifest }
        let file = try fileSystem.openForReading(atPath: path(.current))
        let bytes = try file.read(from: 0)
        guard bytes.count <= 64, bytes.last == UInt8(ascii: "\n"),
            case .manifest(let n)? = FileName(parsing: String(decoding: bytes.dropLast(), as: UTF8.self))
        else {
            throw StorageError.corrupted(
                "CURRENT should name a manifest (\"MANIFEST-000001\\n\"), it holds \(bytes.count) bytes that do not",
                file: FileName.current.name, offset: 0)
        }
        shared.currentFile = (n, file)
        return n
    }

    private func catchUpLocked(asWriter: Bool, ms: inout ManifestState, tail: inout SharedState.Tail) throws {
        guard let shared else { return }
        let current = try readCurrent(shared)
        if current != ms.manifestNumber {
            try rebuild(fromManifest: current, ms: &ms, tail: &tail)
        }
        // The log tail: what was appended since the last look (often nothing: one `fstat`).
        let name = FileName.log(tail.log).name
        let file: any ReadableFile
        if let open = shared.tailFile, open.log == tail.log {
            file = open.file
        } else {
            file = try fileSystem.openForReading(atPath: path(.log(tail.log)))
            shared.tailFile = (tail.log, file)
        }
        let bytes = try file.size() > tail.offset ? try file.read(from: tail.offset) : []
        let scan = bytes.withUnsafeBytes { LogRecord.scan($0, fileOffset: tail.offset) }
        if !scan.records.isEmpty {
            try published.withLock { p in
                var builder = ReplayBuilder(partitions: p.version.partitions, nextIncarnation: p.nextIncarnation)
                var sequence = p.version.sequence
                try replay(scan.records, log: tail.log, name: name, after: &sequence, into: &builder, reportingAfter: sequence)
                p.version = Version(sequence: sequence, partitions: builder.partitions)
                p.nextIncarnation = builder.nextIncarnation
            }
        }
        tail.offset = scan.validBytes
        guard asWriter else { return }
        if scan.damage != nil {
            if let later = scan.validRecordAfterDamage {
                var e = scan.damage!.located(file: name)
                e.message += "; a valid record follows at offset \(later), so this is damage inside the log, not a commit torn by a "
                    + "killed process. Restore the database from a backup."
                throw e
            }
            // A writer killed while appending: nothing acknowledged that record, and nothing may follow it.
            try fileSystem.truncateFile(atPath: path(.log(tail.log)), toSize: scan.validBytes)
            let cut = try fileSystem.openForAppending(atPath: path(.log(tail.log)))
            defer { cut.close() }
            try cut.sync(.ordered)
        }
        if log.number != tail.log {
            let file = try fileSystem.openForAppending(atPath: path(.log(tail.log)))
            log.file.close()
            log.file = file
            log.number = tail.log
        }
        advanceFileNumbers(to: ms.manifest.nextFileNumber)
    }

    /// Replays `records` after `sequence` into `builder`.
    /// Records after `reportingAfter` are new to this instance: their keys go to `takeOtherCommits`.
    private func replay(
        _ records: [LogRecord.Decoded], log: UInt64, name: String, after sequence: inout UInt64, into builder: inout ReplayBuilder,
        reportingAfter: UInt64
    ) throws {
        var reported: [CommitKeys] = []
        for record in records {
            if record.sequence <= sequence { continue }
            guard record.sequence == sequence + 1 else {
                throw StorageError.corrupted(
                    "record has sequence \(record.sequence), expected \(sequence + 1); commits are missing from the log",
                    file: name, offset: record.offset)
            }
            let plain: MappedRegion
            let ops: [UInt32: PartitionBatch]
            do {
                plain = try LogRecord.plain(record, cipher: cipher, log: log, database: databaseID)
                ops = try WriteBatch.decode(record: plain)
            } catch let error as StorageError {
                throw error.located(file: name, baseOffset: record.offset)
            }
            builder.apply(ops, arena: plain, sequence: record.sequence)
            sequence = record.sequence
            if record.sequence > reportingAfter {
                var commit = CommitKeys(sequence: record.sequence)
                for (id, pb) in ops {
                    if pb.drop { commit.dropped.insert(id) }
                    if !pb.slots.isEmpty {
                        commit.keys[id] = pb.slots.map { slot in
                            Array(plain.unsafeBytes[slot.keyOffset..<(slot.keyOffset + Int(slot.keyCount))])
                        }
                    }
                }
                reported.append(commit)
            }
        }
        guard !reported.isEmpty, let shared else { return }
        shared.otherCommits.withLock { list in
            list += reported
            if list.count > Self.otherCommitsKept { list.removeFirst(list.count - Self.otherCommitsKept) }
        }
    }

    /// Another process switched the manifest: take its segments (reusing the readers of those this instance
    /// has) and replay the logs it names.
    private func rebuild(fromManifest number: UInt64, ms: inout ManifestState, tail: inout SharedState.Tail) throws {
        let manifestName = FileName.manifest(number).name
        let region = try fileSystem.map(atPath: path(.manifest(number)))
        guard region.count <= Limits.maxManifestBytes else {
            throw StorageError.corrupted("manifest is \(region.count) bytes, the limit is \(Limits.maxManifestBytes)", file: manifestName, offset: 0)
        }
        let manifest = try region.withUnsafeBytes { try Manifest.decode($0, file: manifestName, cipher: cipher) }
        let old = currentVersion
        var known: [UInt64: SegmentReader] = [:]
        for ps in old.partitions.values {
            for segment in ps.segments { known[segment.fileNumber] = segment }
        }
        var nextIncarnation = published.withLock { $0.nextIncarnation }
        var partitions: [UInt32: PartitionState] = [:]
        for (id, infos) in manifest.partitions {
            var segments: [SegmentReader] = []
            for info in infos {
                if let reader = known[info.fileNumber], reader.info == info {
                    segments.append(reader)
                    continue
                }
                let segment = try SegmentReader(
                    region: try fileSystem.map(atPath: path(.segment(info.fileNumber))), fileNumber: info.fileNumber, expectedPartition: id,
                    databaseID: databaseID, cache: blockCache, cipher: cipher)
                guard segment.info == info || (cipher == nil && UInt64(segment.fileBytes) == info.fileBytes) else {
                    throw StorageError.corrupted(
                        "segment is not what \(manifestName) recorded (\(segment.fileBytes) bytes, \(info.fileBytes) recorded)", file: segment.name,
                        offset: nil)
                }
                segments.append(segment)
            }
            // A partition keeps its incarnation while it lives on: a compaction of this instance begun before is
            // still checked against its input segments when it installs.
            let incarnation: UInt64
            if let existing = old.partitions[id] {
                incarnation = existing.incarnation
            } else {
                incarnation = nextIncarnation
                nextIncarnation += 1
            }
            partitions[id] = PartitionState(id: id, incarnation: incarnation, segments: segments, userMetadata: segments.first?.userMetadata ?? 0)
        }
        var builder = ReplayBuilder(partitions: partitions, nextIncarnation: nextIncarnation)
        var sequence = manifest.lastFlushedSequence
        let seen = old.sequence
        if sequence > seen, let shared {
            // Commits this instance never read from a log: reported as unknown, so that readers re-read rather
            // than miss them.
            shared.otherCommits.withLock { $0.append(CommitKeys(sequence: sequence, isUnknown: true)) }
        }
        var newTail = SharedState.Tail(log: manifest.newestLogNumber, offset: LogRecord.fileHeaderBytes)
        var flushTarget: (sequence: UInt64, logNumber: UInt64)? = nil
        for logNumber in try logsToReplay(manifest) {
            if logNumber == manifest.newestLogNumber, logNumber != manifest.logNumber {
                // The older logs were frozen by some instance, whose flush is under way (invariant 6).
                builder.partitions = builder.partitions.mapValues { $0.with(active: [], frozen: $0.active + $0.frozen) }
                flushTarget = (sequence, logNumber)
            }
            let name = FileName.log(logNumber).name
            let bytes = try fileSystem.read(atPath: path(.log(logNumber)), from: 0)
            let scan = bytes.withUnsafeBytes { LogRecord.scan($0) }
            try replay(scan.records, log: logNumber, name: name, after: &sequence, into: &builder, reportingAfter: seen)
            if let damage = scan.damage, logNumber != manifest.newestLogNumber {
                throw damage.located(file: name)
            }
            if logNumber == manifest.newestLogNumber { newTail.offset = max(scan.validBytes, LogRecord.fileHeaderBytes) }
        }
        published.withLock { p in
            p.version = Version(sequence: sequence, partitions: builder.partitions)
            p.nextIncarnation = builder.nextIncarnation
            // Whatever this instance froze is in the logs the new manifest names, or already in its segments: the
            // frozen runs now are those of the logs it says are not flushed yet.
            p.flushTarget = flushTarget
        }
        ms.manifest = manifest
        ms.manifestNumber = number
        tail = newTail
        advanceFileNumbers(to: manifest.nextFileNumber)
    }

    /// The logs a manifest says hold commits not yet in its segments, oldest first: those from its `logNumber` to
    /// its `newestLogNumber` (a log a killed process created after the newest is empty: the manifest learns of a
    /// log before anything is written to it).
    func logsToReplay(_ manifest: Manifest) throws -> [UInt64] {
        var logs: [UInt64] = []
        for name in try fileSystem.listDirectory(atPath: directory) {
            if case .log(let n)? = FileName(parsing: name), n >= manifest.logNumber, n <= manifest.newestLogNumber { logs.append(n) }
        }
        logs.sort()
        for needed in Set([manifest.logNumber, manifest.newestLogNumber]) where !logs.contains(needed) {
            throw StorageError(
                .io, "\(FileName.log(needed).name), which the manifest names, is gone (another process flushed it meanwhile)",
                file: FileName.log(needed).name, underlying: SystemErrno.noEntry)
        }
        return logs
    }

    // MARK: Sessions

    /// The session files of other instances that are still alive; those of dead processes are removed.
    /// Read-only instances have none: they change nothing another instance could wait for.
    package func otherLiveSessions() -> [String] {
        Self.liveSessions(in: directory, fileSystem: fileSystem, except: shared?.session)
    }

    /// The session files of the shared instances open on the database in `directory`, in any process (those
    /// of dead processes are removed on the way).
    package static func liveSessions(in directory: String, fileSystem: any FileSystem = PosixFileSystem(), except own: String? = nil) -> [String] {
        // try?: a directory that cannot be listed has no sessions this instance could see.
        guard let names = try? fileSystem.listDirectory(atPath: directory) else { return [] }
        var live: [String] = []
        for name in names where name != own {
            guard let pid = SessionFile.processID(name) else { continue }
            if pid == Syscalls.processID ? SessionFile.isOpenHere(name) : Syscalls.processExists(pid) {
                live.append(name)
            } else {
                // try?: another instance may remove the same stale file first.
                try? fileSystem.removeFile(atPath: directory + "/" + name)
            }
        }
        return live
    }
}

/// The names of session files, and the sessions this process has open.
enum SessionFile {
    private static let openHere = Locked<Set<String>>([])
    private static let counter = Locked<UInt64>(0)

    /// A new session name for this process.
    static func make() -> String {
        let n = counter.withLock { c -> UInt64 in
            c += 1
            return c
        }
        let name = "SESSION.\(Syscalls.processID).\(n)"
        openHere.withLock { _ = $0.insert(name) }
        return name
    }

    static func ended(_ name: String) { openHere.withLock { _ = $0.remove(name) } }

    static func isOpenHere(_ name: String) -> Bool { openHere.withLock { $0.contains(name) } }

    /// The process of a session file's name; nil for any other name.
    static func processID(_ name: String) -> Int32? {
        let parts = name.split(separator: ".")
        guard parts.count == 3, parts[0] == "SESSION", let pid = Int32(parts[1]), UInt64(parts[2]) != nil else { return nil }
        return pid
    }
}
