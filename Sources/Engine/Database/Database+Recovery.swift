// Opening a database: lock, read CURRENT and the manifest, map the segments, replay the log, and start a
// new log. Open costs O(log length + number of segments), never O(data): a segment's header and footer are
// read here, its block index (one entry per 32 KiB block) when first used.

extension Database {
    /// What recovery found, for tests and tools.
    package struct RecoveryReport: Sendable {
        /// Commits replayed from the log.
        package var replayedCommits = 0
        /// Bytes dropped from the tail of the last log (a commit torn by a crash), with the reason.
        package var droppedTailBytes = 0
        package var droppedTailReason: String? = nil
    }

    /// Opens (or creates) the database in `path`, a directory.
    ///
    /// - Throws: `.locked` when another process has it open; `.corrupted` naming the file and offset when a
    ///   manifest, `CURRENT`, segment footer or a log record other than the last is damaged.
    package static func open(at path: String, options: Options = Options(), fileSystem: any FileSystem = PosixFileSystem()) throws -> Database {
        try open(at: path, options: options, fileSystem: fileSystem, report: nil)
    }

    package static func open(
        at directory: String, options: Options = Options(), fileSystem fs: any FileSystem = PosixFileSystem(),
        report: UnsafeReportBox?
    ) throws -> Database {
        if options.readOnly, fs.fileExists(atPath: directory) {
            // A directory this process may not read is a permission error, not a missing database.
            _ = try fs.listDirectory(atPath: directory)
        }
        if options.readOnly && !fs.fileExists(atPath: directory + "/" + FileName.current.name) {
            throw StorageError(.invalidArgument, "no database here to open read-only", file: directory)
        }
        var cipher: Cipher? = nil
        if let key = options.encryptionKey {
            guard let c = Cipher(key: key) else {
                throw StorageError(.invalidArgument, "an encryption key must be \(Cipher.keyBytes) bytes long, this one is \(key.count)", file: directory)
            }
            cipher = c
        }
        if !fs.fileExists(atPath: directory) {
            guard options.createIfMissing else {
                throw StorageError(.invalidArgument, "no database at this path and createIfMissing is false", file: directory)
            }
            try fs.createDirectory(atPath: directory)
        }
        if options.sharing == .shared {
            return try openShared(at: directory, options: options, fileSystem: fs, report: report, cipher: cipher)
        }
        let lock: any FileLock
        do {
            lock = try fs.lock(atPath: directory + "/" + FileName.lock.name)
        } catch let e as StorageError where e.code == .locked && options.readOnly && options.readBesideWriter {
            lock = NoFileLock()
        }
        if !(lock is NoFileLock) {
            let sessions = liveSessions(in: directory, fileSystem: fs, except: nil)
            if !sessions.isEmpty {
                lock.unlock()
                if options.readOnly && options.readBesideWriter {
                    return try openShared(at: directory, options: options, fileSystem: fs, report: report, cipher: cipher)
                }
                throw StorageError(
                    .locked,
                    "the database is open in shared mode by \(sessions.count) other instance(s) (\(sessions.joined(separator: ", "))); "
                        + "open it with sharing: .shared too, or close them first.",
                    file: directory + "/" + FileName.lock.name)
            }
        }
        do {
            return try recover(at: directory, options: options, fileSystem: fs, report: report, cipher: cipher, lock: lock, sharing: nil)
        } catch {
            lock.unlock()
            throw error
        }
    }

    /// How an instance joins a shared database (`Database+Sharing.swift`).
    struct SharingSetup {
        var writerLock: (any ProcessLock)?
        /// LOCK.writer through descriptors of its own, for background flushes and merges (`withMaintenanceLock`).
        var maintenanceLock: (any ProcessLock)? = nil
        var session: String?
        /// No other instance is open: this one recovers what a killed one left, as an exclusive open does.
        var alone: Bool
    }

    /// Opens a shared database: registers a session under LOCK (taken a moment), then recovers holding
    /// LOCK.writer, fully when alone, otherwise only reading what the files hold.
    static func openShared(
        at directory: String, options: Options, fileSystem fs: any FileSystem, report: UnsafeReportBox?, cipher: Cipher?
    ) throws -> Database {
        func path(_ n: String) -> String { directory + "/" + n }
        var setup = SharingSetup(writerLock: nil, session: nil, alone: false)
        do {
            let gate = try fs.lock(atPath: path(FileName.lock.name))
            defer { gate.unlock() }
            if !options.readOnly {
                let session = SessionFile.make()
                setup.session = session
                try fs.createFile(atPath: path(session)).close()
            }
        } catch let e as StorageError where e.code == .locked {
            guard options.readOnly && options.readBesideWriter else {
                throw StorageError(
                    .locked,
                    "the database is open exclusively by another process or instance (LOCK is held); open every instance with "
                        + "sharing: .shared, or close that one first.",
                    file: path(FileName.lock.name), underlying: SystemErrno.wouldBlock)
            }
        } catch {
            if let session = setup.session { SessionFile.ended(session) }
            throw error
        }
        func abandon() {
            guard let session = setup.session else { return }
            SessionFile.ended(session)
            try? fs.removeFile(atPath: path(session))  // try?: cleanup after the error being thrown
        }
        if options.readOnly {
            // No lock: a file can vanish under a reader that started from a manifest no longer current.
            // What it then finds missing is not damage if CURRENT changed meanwhile: it starts again.
            var attempts = 0
            while true {
                let current = try? fs.read(atPath: path(FileName.current.name), from: 0)  // try?: compared below, nil is a change too
                do {
                    return try recover(at: directory, options: options, fileSystem: fs, report: report, cipher: cipher, lock: NoFileLock(), sharing: setup)
                } catch let error as StorageError where attempts < 100 {
                    guard error.isMissingFile || (try? fs.read(atPath: path(FileName.current.name), from: 0)) != current else { throw error }
                    attempts += 1
                    Syscalls.sleep(microseconds: 100)
                }
            }
        }
        do {
            let writerLock = TurnstileLock(
                queue: try fs.processLock(atPath: path(FileName.lock.name + ".queue")),
                writer: try fs.processLock(atPath: path(FileName.lock.name + ".writer")))
            try writerLock.lock()
            let db: Database
            do {
                defer { writerLock.unlock() }
                setup.writerLock = writerLock
                setup.maintenanceLock = TurnstileLock(
                    queue: try fs.processLock(atPath: path(FileName.lock.name + ".queue")),
                    writer: try fs.processLock(atPath: path(FileName.lock.name + ".writer")))
                setup.alone = liveSessions(in: directory, fileSystem: fs, except: setup.session).isEmpty
                db = try recover(at: directory, options: options, fileSystem: fs, report: report, cipher: cipher, lock: NoFileLock(), sharing: setup)
            }
            if options.backgroundMaintenance { db.scheduleCompaction() }
            return db
        } catch {
            abandon()
            throw error
        }
    }

    /// The rest of an open, holding what `open` or `openShared` took.
    private static func recover(
        at directory: String, options: Options, fileSystem fs: any FileSystem, report: UnsafeReportBox?, cipher: Cipher?, lock: any FileLock,
        sharing: SharingSetup?
    ) throws -> Database {
        // Only an exclusive instance, or a shared one alone, rewrites what it finds (flushes a dead session's log,
        // starts a new log, removes orphans).
        var mayRewrite = !options.readOnly && (sharing?.alone ?? true)
        func path(_ n: FileName) -> String { directory + "/" + n.name }
        let names = try fs.listDirectory(atPath: directory)
        var parsed: [FileName] = names.compactMap { FileName(parsing: $0) }
        let listed = Set(parsed.compactMap { name -> UInt64? in if case .segment(let n) = name { n } else { nil } })

        // CURRENT and the manifest.
        var manifest: Manifest
        var manifestNumber: UInt64
        if !fs.fileExists(atPath: path(.current)) {
            // Without CURRENT, only an interrupted creation may have left files: the first manifest and
            // CURRENT.tmp. Anything else means the directory was damaged.
            let dataFiles = parsed.filter {
                switch $0 {
                case .segment, .log: true
                case .manifest(let n): n != 1
                default: false
                }
            }
            guard dataFiles.isEmpty else {
                throw StorageError.corrupted(
                    "CURRENT is missing but the directory holds \(dataFiles.count) segment, log or manifest files; "
                        + "it was damaged or partly deleted. Restore it from a backup.", file: FileName.current.name, offset: nil)
            }
            // A new database: manifest 1, log 2, next file 3.
            manifest = Manifest(nextFileNumber: 3, lastFlushedSequence: 0, logNumber: 2, partitions: [:], databaseID: newDatabaseID())
            manifestNumber = 1
            try installManifest(manifest, number: 1, fileSystem: fs, directory: directory, cipher: cipher)
            parsed = []
        } else {
            // CURRENT and the manifest are small: read, not mapped (a mapping and its removal cost more than the
            // read), each after its size is checked (a damaged one may be any size).
            func readBounded(_ file: FileName, limit: Int) throws -> (bytes: [UInt8], size: Int) {
                let f = try fs.openForReading(atPath: path(file))
                let size = try f.size()
                return (size <= limit ? try f.read(from: 0) : [], size)
            }
            let (current, currentSize) = try readBounded(.current, limit: 64)
            let text = String(decoding: current, as: UTF8.self)
            guard currentSize <= 64, text.hasSuffix("\n"), case .manifest(let n)? = FileName(parsing: String(text.dropLast())) else {
                throw StorageError.corrupted(
                    "CURRENT should name a manifest (\"MANIFEST-000001\\n\"), it holds \(currentSize) bytes that do not",
                    file: FileName.current.name, offset: 0)
            }
            manifestNumber = n
            let name = FileName.manifest(n).name
            guard fs.fileExists(atPath: path(.manifest(n))) else {
                throw StorageError.corrupted("CURRENT names \(name), which does not exist", file: FileName.current.name, offset: 0)
            }
            let (bytes, manifestSize) = try readBounded(.manifest(n), limit: Limits.maxManifestBytes)
            guard manifestSize <= Limits.maxManifestBytes else {
                throw StorageError.corrupted("manifest is \(manifestSize) bytes, the limit is \(Limits.maxManifestBytes)", file: name, offset: 0)
            }
            manifest = try bytes.withUnsafeBytes { try Manifest.decode($0, file: name, cipher: cipher) }
            // The logs that may hold acknowledged commits not yet in segments must be here (all but a database
            // whose creation stopped before its first log: nothing was committed to it).
            let unborn = n == 1 && manifest.lastFlushedSequence == 0 && manifest.partitions.isEmpty
            if !unborn {
                for log in Set([manifest.logNumber, manifest.newestLogNumber]).sorted() where !fs.fileExists(atPath: path(.log(log))) {
                    throw StorageError.corrupted(
                        "the manifest needs \(FileName.log(log).name), which may hold commits made after sequence "
                            + "\(manifest.lastFlushedSequence) that are not in segments yet, but it is missing: acknowledged commits "
                            + "would be lost. Restore the directory from a backup.",
                        file: name, offset: nil)
                }
            }
        }

        // A database this instance creates, or whose creation stopped before its first log, has no log to share:
        // the instance makes it, as an instance alone does (holding LOCK.writer, no other instance has anything
        // in flight).
        if sharing != nil, !options.readOnly, !fs.fileExists(atPath: path(.log(manifest.newestLogNumber))) { mayRewrite = true }

        // The identity every file must carry (0 in a manifest from before identities: nothing is checked, and
        // the database gets one now, written with its next manifest).
        let checkedID = manifest.databaseID
        if manifest.databaseID == 0 { manifest.databaseID = newDatabaseID() }

        // Segments.
        let blockCache = BlockCache(capacityBytes: options.blockCacheBytes)
        var partitions: [UInt32: PartitionState] = [:]
        var incarnation: UInt64 = 1
        for (id, infos) in manifest.partitions {
            var segments: [SegmentReader] = []
            for info in infos {
                let segmentPath = path(.segment(info.fileNumber))
                // The listing names most (a file another instance made since is looked for on disk).
                guard listed.contains(info.fileNumber) || fs.fileExists(atPath: segmentPath) else {
                    if sharing != nil, (try? fs.read(atPath: path(.current), from: 0)) != Array((FileName.manifest(manifestNumber).name + "\n").utf8) {
                        // try?: an unreadable CURRENT is found by the next attempt. Another instance replaced this
                        // manifest meanwhile and removed what only it named: start again from the new one.
                        throw StorageError(.io, "the manifest changed while it was read", file: segmentPath, underlying: SystemErrno.noEntry)
                    }
                    throw StorageError.corrupted(
                        "the manifest lists \(FileName.segment(info.fileNumber).name), which is missing", file: FileName.manifest(manifestNumber).name,
                        offset: nil)
                }
                let segment = try SegmentReader(
                    region: try fs.map(atPath: segmentPath), fileNumber: info.fileNumber, expectedPartition: id, databaseID: checkedID,
                    cache: blockCache, cipher: cipher)
                guard UInt64(segment.fileBytes) == info.fileBytes else {
                    throw StorageError.corrupted(
                        "segment is \(segment.fileBytes) bytes, the manifest recorded \(info.fileBytes)", file: segment.name, offset: nil)
                }
                // An encrypted database's manifest is authenticated: its record of each segment must be the footer's
                // (a segment put back from an older copy under the same number is refused here).
                if cipher != nil, segment.info != info {
                    throw StorageError(
                        .decryptionFailed,
                        "the segment's footer (\(segment.entryCount) entries, sequences \(segment.minSequence)-\(segment.maxSequence)) is not "
                            + "what the authenticated manifest recorded (\(info.entryCount) entries, sequences \(info.minSequence)-\(info.maxSequence)): "
                            + "the file was replaced",
                        file: segment.name, offset: nil)
                }
                segments.append(segment)
            }
            partitions[id] = PartitionState(
                id: id, incarnation: incarnation, segments: segments, userMetadata: segments.first?.userMetadata ?? 0)
            incarnation += 1
        }

        // Replay the logs at or after the manifest's log number, in order.
        var recovery = RecoveryReport()
        var sequence = manifest.lastFlushedSequence
        let logs = parsed.compactMap { name -> UInt64? in
            // (A shared database's logs past the newest the manifest names were made by a process killed
            // before it could name them: nothing was written to them.)
            if case .log(let n) = name, n >= manifest.logNumber, sharing == nil || n <= manifest.newestLogNumber { return n }
            return nil
        }.sorted()
        var builder = ReplayBuilder(partitions: partitions, nextIncarnation: incarnation)
        var reusableLog: UInt64? = nil
        var lastLogValidBytes = LogRecord.fileHeaderBytes
        // A shared instance beside others takes the logs another instance froze and has not flushed yet as frozen
        // runs, as a catch-up does (invariant 6 of `Database+Sharing.swift`).
        var inheritedFlushTarget: (sequence: UInt64, logNumber: UInt64)? = nil
        for (i, number) in logs.enumerated() {
            let name = FileName.log(number).name
            if sharing != nil, !mayRewrite, !options.readOnly, number == manifest.newestLogNumber, number != manifest.logNumber {
                builder.partitions = builder.partitions.mapValues { $0.with(active: [], frozen: $0.active + $0.frozen) }
                inheritedFlushTarget = (sequence, number)
            }
            // A shared database's log is read, not mapped: another process may cut a torn tail meanwhile.
            let region = sharing != nil ? MappedRegion(copying: try fs.read(atPath: path(.log(number)), from: 0)) : try fs.map(atPath: path(.log(number)))
            if checkedID != 0, let id = region.withUnsafeBytes({ LogRecord.databaseID(ofLog: $0) }), id != 0, id != UInt32(truncatingIfNeeded: checkedID) {
                throw StorageError.corrupted(
                    "the log belongs to another database (identity \(String(id, radix: 16)), this database's ends in "
                        + "\(String(UInt32(truncatingIfNeeded: checkedID), radix: 16))): it was copied in from elsewhere, and its commits "
                        + "are not this database's. Restore the directory from one backup.",
                    file: name, offset: 12)
            }
            let scan = region.withUnsafeBytes { LogRecord.scan($0) }
            if i == logs.count - 1 { lastLogValidBytes = max(scan.validBytes, LogRecord.fileHeaderBytes) }
            if i == logs.count - 1, scan.damage == nil, scan.records.isEmpty, region.count == LogRecord.fileHeaderBytes {
                reusableLog = number
            }
            for record in scan.records {
                if record.sequence <= sequence { continue }
                guard record.sequence == sequence + 1 else {
                    throw StorageError.corrupted(
                        "record has sequence \(record.sequence), expected \(sequence + 1); commits are missing from the log",
                        file: name, offset: record.offset)
                }
                let ops: [UInt32: PartitionBatch]
                let plain: MappedRegion
                do {
                    plain = try LogRecord.plain(record, cipher: cipher, log: number, database: manifest.databaseID)
                    ops = try WriteBatch.decode(record: plain)
                } catch let error as StorageError {
                    throw error.located(file: name, baseOffset: record.offset)
                }
                builder.apply(ops, arena: plain, sequence: record.sequence)
                sequence = record.sequence
                recovery.replayedCommits += 1
            }
            if let damage = scan.damage {
                let isLast = i == logs.count - 1
                guard isLast else {
                    throw damage.located(file: name)
                }
                if let later = scan.validRecordAfterDamage {
                    var e = damage.located(file: name)
                    e.message += "; a valid record follows at offset \(later), so this is damage inside the log, not a "
                        + "commit torn by a crash. Restore the database from a backup."
                    throw e
                }
                // A torn tail of the last log: a commit that never returned. Cut it off.
                recovery.droppedTailBytes = region.count - scan.validBytes
                recovery.droppedTailReason = "\(damage.located(file: name))"
                if !options.readOnly {
                    try fs.truncateFile(atPath: path(.log(number)), toSize: scan.validBytes)
                    // Sync point 13 (Recovery.md): the cut reaches the disk before the new log (12) does, or
                    // a later open would find this torn log no longer last, and call it damage.
                    let cut = try fs.openForAppending(atPath: path(.log(number)))
                    defer { cut.close() }
                    try cut.sync(.ordered)
                }
            }
        }
        report?.report = recovery

        // The log for this session: after a clean close the last log is empty and is reused, so that open
        // writes nothing; otherwise a new one.
        let logNumber: UInt64
        let logFile: any WritableFile
        var tailOffset = LogRecord.fileHeaderBytes
        if options.readOnly {
            logNumber = logs.last ?? manifest.logNumber
            logFile = RefusingFile(directory: directory)
            tailOffset = lastLogValidBytes
        } else if !mayRewrite {
            // A shared instance beside others: it appends to the log they all append to.
            logNumber = manifest.newestLogNumber
            logFile = try fs.openForAppending(atPath: path(.log(logNumber)))
            tailOffset = lastLogValidBytes
        } else if recovery.replayedCommits == 0, let reuse = reusableLog {
            logNumber = reuse
            logFile = try fs.openForAppending(atPath: path(.log(reuse)))
            // Older logs go once a manifest no longer names them (below, after it is rewritten): deleted
            // first, a crash in between would leave a manifest naming a missing log.
        } else {
            logNumber = max(manifest.nextFileNumber, (logs.last ?? 0) + 1)
            manifest.nextFileNumber = logNumber + 1
            let created = try fs.createFile(atPath: path(.log(logNumber)))
            try created.append(LogRecord.fileHeader(databaseID: manifest.databaseID))
            // Sync points 11-12 (Recovery.md, "Sync points").
            try created.sync(.ordered)
            try fs.syncDirectory(atPath: directory, .durable)
            if sharing != nil {
                // Every instance appends at the end, wherever the others left it (O_APPEND).
                created.close()
                logFile = try fs.openForAppending(atPath: path(.log(logNumber)))
            } else {
                logFile = created
            }
        }

        let version = Version(sequence: sequence, partitions: builder.partitions)
        let db = Database(
            directory: directory, fileSystem: fs, options: options, fileLock: lock, version: version,
            log: LogState(file: logFile, number: logNumber), manifest: manifest, manifestNumber: manifestNumber,
            nextIncarnation: builder.nextIncarnation, blockCache: blockCache,
            shared: sharing.map {
                SharedState(
                    writerLock: $0.writerLock, maintenanceLock: $0.maintenanceLock, session: $0.session,
                    tail: .init(log: logNumber, offset: tailOffset))
            })

        do {
            // Replayed commits go to segments now, so that the old logs can go and the next open is quick.
            if !mayRewrite {
                if let inheritedFlushTarget { db.published.withLock { $0.flushTarget = inheritedFlushTarget } }
                return db
            }
            if recovery.replayedCommits > 0 {
                db.published.withLock { p in
                    var parts = p.version.partitions
                    for (id, ps) in parts where !ps.active.isEmpty { parts[id] = ps.with(active: [], frozen: ps.active) }
                    p.version = Version(sequence: p.version.sequence, partitions: parts)
                    p.flushTarget = (sequence, logNumber)
                }
                try db.runFlush()
                // The session that wrote them ended without a close (its process exited or was killed): do the
                // small merges its close would have done, or sessions that end that way pile up segments.
                if options.backgroundMaintenance { try db.mergeSmallSegmentsNow() }
            } else if manifest.logNumber < logNumber {
                // Nothing to replay: point the manifest at the new log so the old ones can go.
                try db.manifestState.withLock { ms in
                    try db.writeManifest(for: version, lastFlushedSequence: sequence, logNumber: logNumber, state: &ms)
                }
                try db.removeLogs(before: logNumber)
            }
            // Without a replay, the listing made at the start names every file there is to remove (the open
            // made only files the manifest names); after one, the directory is listed again.
            db.removeOrphans(listing: recovery.replayedCommits == 0 ? names : nil)
            // Segments left by earlier sessions (every close flushes one) are merged in the background as any
            // flush's would be: an app that writes a little at each launch keeps a bounded number of segments.
            // (A shared open schedules it once it released LOCK.writer: the job shares this instance's lock descriptor,
            // so the open's release would release the job's hold too.)
        } catch {
            // A failed open writes nothing more and takes no lock on its way out (a shared open holds LOCK.writer
            // here, which a close would wait for): the next open recovers again.
            db.abandonAfterFailedOpen()
            throw error
        }
        if options.backgroundMaintenance && sharing == nil { db.scheduleCompaction() }
        return db
    }

    /// Deletes files no durable manifest needs: segments of failed flushes, old manifests, temporary files.
    func removeOrphans(listing: [String]? = nil) {
        let live = manifestState.withLock { ms in
            (Set(ms.manifest.partitions.values.flatMap { $0.map(\.fileNumber) } + ms.manifest.pendingMerges.map(\.output)), ms.manifestNumber,
             Set(ms.manifest.pendingMerges.map(\.state)))
        }
        guard let names = listing ?? (try? fileSystem.listDirectory(atPath: directory)) else { return }
        for name in names {
            switch FileName(parsing: name) {
            case .segment(let n)? where !live.0.contains(n): try? fileSystem.removeFile(atPath: directory + "/" + name)
            case .manifest(let n)? where n != live.1: try? fileSystem.removeFile(atPath: directory + "/" + name)
            case .mergeState(let n)? where !live.2.contains(n): try? fileSystem.removeFile(atPath: directory + "/" + name)
            case .currentTemporary?: try? fileSystem.removeFile(atPath: directory + "/" + name)
            default: break
            }
        }
    }
}

/// Receives the recovery report of an `open` (tests and tools).
package final class UnsafeReportBox: @unchecked Sendable {
    package var report = Database.RecoveryReport()
    package init() {}
}

/// Rebuilds the memtable from replayed log records, applying drops in order.
struct ReplayBuilder {
    var partitions: [UInt32: PartitionState]
    var nextIncarnation: UInt64

    mutating func apply(_ ops: [UInt32: PartitionBatch], arena: MappedRegion, sequence: UInt64) {
        for (id, pb) in ops {
            var current = pb.drop ? nil : partitions[id]
            let metadata = pb.userMetadata ?? current?.userMetadata ?? 0
            if current == nil {
                current = PartitionState(id: id, incarnation: nextIncarnation, userMetadata: metadata)
                nextIncarnation += 1
            }
            var active = current!.active
            if !pb.slots.isEmpty {
                active.insert(MemRun.build(arena: arena, operations: pb.slots, sequence: sequence, userMetadata: metadata), at: 0)
                while active.count >= 2, active[0].count * 2 >= active[1].count || active.count > 12 {
                    active.replaceSubrange(0...1, with: [MemRun.merge(newer: active[0], older: active[1])])
                }
            }
            let next = current!.with(active: active, userMetadata: metadata)
            partitions[id] = next.isEmpty && pb.userMetadata == nil ? nil : next
        }
    }
}


/// The log of a read-only database: every write is refused.
final class RefusingFile: WritableFile, @unchecked Sendable {
    let directory: String
    init(directory: String) { self.directory = directory }
    func append(_ bytes: UnsafeRawBufferPointer) throws {
        throw StorageError(.invalidArgument, "the database was opened read-only", file: directory)
    }
    func sync(_ kind: SyncKind) throws {}
    func close() {}
    var size: Int { 0 }
}

/// A random, nonzero database identity.
func newDatabaseID() -> UInt64 {
    var g = SystemRandomNumberGenerator()
    var id: UInt64 = 0
    while id == 0 { id = g.next() }
    return id
}
