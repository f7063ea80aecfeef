import CLMDB
import CSQLite
import Engine
import Foundation

// Issue 38's rows: what sharing a database between processes costs a commit and a refresh, with real second
// processes. The Bench starts itself as the other process (`Bench sharing-child KIND PATH`, `SharingChild`),
// which opens the same database and answers one command per line. Strata's engine in its exclusive and shared
// modes; the peers are SQLite in WAL mode with synchronous=FULL (a durable commit, as Strata's) and LMDB with its
// default, durable flags.
//
// Each figure is timed where the work happens: a commit of the other process is timed by that process, so the
// pipe between the two is never in a figure.

/// One database as a sharing row uses it: commits of one small record, and a read of the latest one after
/// catching up with other processes.
protocol SharingStore: AnyObject {
    /// Commits `value` under `key`, durably.
    func commit(_ key: Int, _ value: [UInt8]) throws
    /// Whether `key` is there, reading what other processes committed (Strata refreshes, SQLite and LMDB begin a
    /// read transaction).
    func sees(_ key: Int) throws -> Bool
    func close() throws
}

enum SharingKind: String, CaseIterable {
    case strata, sqlite, lmdb

    func open(_ path: String) throws -> any SharingStore {
        switch self {
        case .strata: try StrataSharingStore(path, sharing: .shared)
        case .sqlite: try SQLiteSharingStore(path)
        case .lmdb: try LMDBSharingStore(path)
        }
    }
}

private func bigEndianKey(_ i: Int) -> [UInt8] { withUnsafeBytes(of: UInt64(i).bigEndian) { Array($0) } }

final class StrataSharingStore: SharingStore {
    let db: Database

    init(_ path: String, sharing: Database.Sharing, durability: Database.Durability = .full) throws {
        var options = Database.Options()
        options.sharing = sharing
        options.durability = durability
        db = try Database.open(at: path, options: options)
    }

    func commit(_ key: Int, _ value: [UInt8]) throws { try db.write { try $0.put(bigEndianKey(key), value, in: 1) } }

    func sees(_ key: Int) throws -> Bool {
        try db.refresh()
        let snapshot = try db.snapshot()
        defer { snapshot.close() }
        return try snapshot.get(bigEndianKey(key), in: 1) != nil
    }

    func close() throws { try db.close() }
}

final class SQLiteSharingStore: SharingStore {
    var db: OpaquePointer?
    var insert: OpaquePointer?
    var select: OpaquePointer?

    init(_ path: String) throws {
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil) == SQLITE_OK else {
            throw BenchFailure("SQLite: cannot open \(path)")
        }
        sqlite3_busy_timeout(db, 10_000)
        for sql in ["PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL", "CREATE TABLE IF NOT EXISTS kv(k INTEGER PRIMARY KEY, v BLOB)"] {
            guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else { throw BenchFailure("SQLite: \(sql) failed") }
        }
        sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO kv(k, v) VALUES (?, ?)", -1, &insert, nil)
        sqlite3_prepare_v2(db, "SELECT length(v) FROM kv WHERE k = ?", -1, &select, nil)
    }

    func commit(_ key: Int, _ value: [UInt8]) throws {
        sqlite3_bind_int64(insert, 1, Int64(key))
        value.withUnsafeBytes { _ = sqlite3_bind_blob(insert, 2, $0.baseAddress, Int32($0.count), nil) }
        let rc = sqlite3_step(insert)
        sqlite3_reset(insert)
        guard rc == SQLITE_DONE else { throw BenchFailure("SQLite: insert failed (\(rc))") }
    }

    func sees(_ key: Int) throws -> Bool {
        sqlite3_bind_int64(select, 1, Int64(key))
        defer { sqlite3_reset(select) }
        return sqlite3_step(select) == SQLITE_ROW
    }

    func close() throws {
        sqlite3_finalize(insert)
        sqlite3_finalize(select)
        sqlite3_close_v2(db)
    }
}

final class LMDBSharingStore: SharingStore {
    var env: OpaquePointer?
    var dbi: MDB_dbi = 0

    func check(_ rc: Int32, _ what: String) throws {
        guard rc == 0 else { throw BenchFailure("LMDB \(what): \(String(cString: mdb_strerror(rc)))") }
    }

    init(_ path: String) throws {
        try check(mdb_env_create(&env), "env_create")
        try check(mdb_env_set_mapsize(env, 1 << 30), "set_mapsize")
        try check(mdb_env_open(env, path, UInt32(MDB_NOSUBDIR), 0o644), "env_open")
        var txn: OpaquePointer?
        try check(mdb_txn_begin(env, nil, 0, &txn), "txn_begin")
        try check(mdb_dbi_open(txn, nil, 0, &dbi), "dbi_open")
        try check(mdb_txn_commit(txn), "txn_commit")
    }

    func commit(_ key: Int, _ value: [UInt8]) throws {
        var txn: OpaquePointer?
        try check(mdb_txn_begin(env, nil, 0, &txn), "txn_begin")
        let rc = bigEndianKey(key).withUnsafeBytes { kb in
            value.withUnsafeBytes { vb in
                var k = MDB_val(mv_size: kb.count, mv_data: UnsafeMutableRawPointer(mutating: kb.baseAddress))
                var v = MDB_val(mv_size: vb.count, mv_data: UnsafeMutableRawPointer(mutating: vb.baseAddress))
                return mdb_put(txn, dbi, &k, &v, 0)
            }
        }
        guard rc == 0 else {
            mdb_txn_abort(txn)
            try check(rc, "put")
            return
        }
        try check(mdb_txn_commit(txn), "txn_commit")
    }

    func sees(_ key: Int) throws -> Bool {
        var txn: OpaquePointer?
        try check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn), "txn_begin")
        defer { mdb_txn_abort(txn) }
        return bigEndianKey(key).withUnsafeBytes { kb in
            var k = MDB_val(mv_size: kb.count, mv_data: UnsafeMutableRawPointer(mutating: kb.baseAddress))
            var v = MDB_val()
            return mdb_get(txn, dbi, &k, &v) == 0
        }
    }

    func close() throws {
        if let env { mdb_env_close(env) }
        env = nil
    }
}

/// The other process of the sharing rows: `Bench sharing-child KIND PATH` opens the database and answers, one
/// line each: "ready" once open; to "commit K", "ok SECONDS" (the time of its commit of K); to "sees K",
/// "yes" or "no"; it closes at "quit" or the end of its input.
public enum SharingChild {
    public static let command = "sharing-child"

    public static func main(_ arguments: [String]) -> Never {
        do {
            guard arguments.count == 2, let kind = SharingKind(rawValue: arguments[0]) else {
                throw BenchFailure("usage: Bench \(command) strata|sqlite|lmdb PATH")
            }
            let store = try kind.open(arguments[1])
            let value = [UInt8](repeating: 0xA5, count: 64)
            answer("ready")
            while let line = readLine() {
                let parts = line.split(separator: " ")
                guard parts.count == 2, let key = Int(parts[1]) else { break }
                switch parts[0] {
                case "commit":
                    let start = now()
                    try store.commit(key, value)
                    answer("ok \(now() - start)")
                case "sees":
                    answer(try store.sees(key) ? "yes" : "no")
                default:
                    throw BenchFailure("\(command): unknown command \(line)")
                }
            }
            try store.close()
            exit(0)
        } catch {
            FileHandle.standardError.write(Data("Bench \(command): \(error)\n".utf8))
            exit(1)
        }
    }

    private static func answer(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}

/// The parent's end of a `SharingChild`.
final class SharingPeerProcess: @unchecked Sendable {  // used by one thread at a time
    let process = Process()
    let input = Pipe()
    let output = Pipe()
    private var buffered: [UInt8] = []

    init(_ kind: SharingKind, _ path: String, executable: String?) throws {
        let executable = executable ?? Bundle.main.executablePath ?? CommandLine.arguments[0]
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = [SharingChild.command, kind.rawValue, path]
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        let first = try line()
        guard first == "ready" else { throw BenchFailure("the second \(kind.rawValue) process did not open \(path): \(first)") }
    }

    /// The next line the child wrote.
    func line() throws -> String {
        while true {
            if let end = buffered.firstIndex(of: UInt8(ascii: "\n")) {
                let text = String(decoding: buffered[..<end], as: UTF8.self)
                buffered.removeSubrange(...end)
                return text
            }
            let data = output.fileHandleForReading.availableData
            if data.isEmpty { throw BenchFailure("the second process ended (status \(process.isRunning ? -1 : process.terminationStatus))") }
            buffered += data
        }
    }

    /// Has the child commit `key`; returns the seconds its commit took.
    func commit(_ key: Int) throws -> Double {
        input.fileHandleForWriting.write(Data("commit \(key)\n".utf8))
        let reply = try line()
        guard reply.hasPrefix("ok "), let seconds = Double(reply.dropFirst(3)) else { throw BenchFailure("the second process: \(reply)") }
        return seconds
    }

    func sees(_ key: Int) throws -> Bool {
        input.fileHandleForWriting.write(Data("sees \(key)\n".utf8))
        return try line() == "yes"
    }

    func end() {
        // try?: the child may have ended already; its status is what matters.
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }
}

extension Runner {
    /// The median milliseconds of a durable one-record commit, and of a refresh after another process's commit.
    struct SharingFigures {
        var exclusive = 0.0
        var alone = 0.0
        var idleSecond = 0.0
        var alternating = 0.0
        var refresh = 0.0
        var deferredExclusive = 0.0
        var deferredShared = 0.0
    }

    func sharingFigures(in directory: String, commits: Int, kinds: [SharingKind]) throws -> [SharingKind: SharingFigures] {
        let value = [UInt8](repeating: 0x5A, count: 64)
        func latency(_ store: any SharingStore, from first: Int = 0) throws -> Double {
            var times: [Double] = []
            for i in first..<(first + commits) {
                let start = now()
                try store.commit(i, value)
                times.append(now() - start)
            }
            return Measurement.median(times) * 1000
        }
        func path(_ kind: SharingKind, _ name: String) -> String {
            directory + "/" + name + (kind == .strata ? "" : kind == .sqlite ? ".sqlite" : ".mdb")
        }
        var figures: [SharingKind: SharingFigures] = [:]
        for kind in kinds {
            progress("\(kind.rawValue): sharing between processes")
            var f = SharingFigures()
            do {
                let store = try kind.open(path(kind, "alone"))
                f.alone = try latency(store)
                try store.close()
            }
            do {
                let p = path(kind, "idle")
                let store = try kind.open(p)
                let other = try SharingPeerProcess(kind, p, executable: config.secondProcess)
                f.idleSecond = try latency(store)
                guard try other.sees(commits - 1) else { throw BenchFailure("\(kind.rawValue): the second process did not see the commits") }
                other.end()
                try store.close()
            }
            do {
                let p = path(kind, "alternating")
                let store = try kind.open(p)
                let other = try SharingPeerProcess(kind, p, executable: config.secondProcess)
                var times: [Double] = []
                for i in 0..<commits {
                    if i % 2 == 0 {
                        let start = now()
                        try store.commit(i, value)
                        times.append(now() - start)
                    } else {
                        times.append(try other.commit(i))
                    }
                }
                f.alternating = Measurement.median(times) * 1000
                times = []
                for i in commits..<(2 * commits) {
                    _ = try other.commit(i)
                    let start = now()
                    let seen = try store.sees(i)
                    times.append(now() - start)
                    guard seen else { throw BenchFailure("\(kind.rawValue): this process did not see the other's commit \(i)") }
                }
                f.refresh = Measurement.median(times) * 1000
                other.end()
                try store.close()
            }
            if kind == .strata {
                let exclusive = try StrataSharingStore(directory + "/exclusive", sharing: .exclusive)
                f.exclusive = try latency(exclusive)
                try exclusive.close()
                // Without the disk: what the coordination itself costs a commit (no fdatasync).
                for sharing in [Database.Sharing.exclusive, .shared] {
                    let store = try StrataSharingStore(directory + "/deferred-\(sharing)", sharing: sharing, durability: .deferred)
                    let ms = try latency(store)
                    if sharing == .shared { f.deferredShared = ms } else { f.deferredExclusive = ms }
                    try store.close()
                }
            }
            figures[kind] = f
        }
        return figures
    }
}

extension Runner {
    /// One-record commits while a background merge of `entries` records runs (Strata's engine, shared mode):
    /// their median and 99th percentile in milliseconds, made by this process and by a second one.
    struct MergeCommitFigures {
        var median = 0.0
        var p99 = 0.0
        var commits = 0
        var otherMedian = 0.0
        var otherP99 = 0.0
        var otherCommits = 0

        /// Times one-record commits of keys from `firstKey` on, made by `other` or by `commit` here, until
        /// `finished` says so (or 30 s, or 20,000 commits), and keeps their figures as this process's or the
        /// other's.
        mutating func time(
            from firstKey: Int, by other: SharingPeerProcess?, until finished: () -> Bool, _ commit: (Int) throws -> Void
        ) throws {
            var times: [Double] = []
            let start = now()
            var key = firstKey
            while !finished(), now() - start < 30, times.count < 20_000 {
                if let other {
                    times.append(try other.commit(key))
                } else {
                    let t = now()
                    try commit(key)
                    times.append(now() - t)
                }
                key += 1
            }
            let sorted = times.sorted()
            let p99 = sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * 0.99))]
            if other != nil {
                (otherMedian, otherP99, otherCommits) = (Measurement.median(times) * 1000, p99 * 1000, times.count)
            } else {
                (median, self.p99, commits) = (Measurement.median(times) * 1000, p99 * 1000, times.count)
            }
        }
    }

    func commitsDuringAMerge(in directory: String, entries: Int) throws -> MergeCommitFigures {
        var f = MergeCommitFigures()
        let value = [UInt8](repeating: 0x5A, count: 64)
        for fromOtherProcess in [false, true] {
            let path = directory + "/merging-\(fromOtherProcess ? "other" : "same")"
            let store = try StrataSharingStore(path, sharing: .shared)
            let other = fromOtherProcess ? try SharingPeerProcess(.strata, path, executable: config.secondProcess) : nil
            // Four segments of `entries / 4` records: the fourth flush starts a merge of all of them (the trigger is 4).
            let quarter = max(1, entries / 4)
            for s in 0..<4 {
                try store.db.write { tx in
                    for i in 0..<quarter { try tx.put(withUnsafeBytes(of: UInt64(s * quarter + i).bigEndian) { Array($0) }, value, in: 2) }
                }
                try store.db.flush()
            }
            let before = store.db.statistics().compactions
            // Commits until the merge is installed.
            try f.time(from: 0, by: other, until: { store.db.statistics().compactions != before }) { try store.commit($0, value) }
            other?.end()
            try store.close()
        }
        return f
    }
}

extension Runner {
    /// SQLite's side of `commitsDuringAMerge`: durable one-record commits (WAL, synchronous=FULL) made while another
    /// connection of this process checkpoints a WAL holding the same `entries` records (written in four
    /// transactions with automatic checkpoints off), until the checkpoint returns; then the same commits from a
    /// second process. `PASSIVE`, SQLite's own automatic kind: it never waits for a writer, and a writer waits for
    /// it only for the WAL index's locks. The figures fill the same rows.
    func sqliteCommitsDuringACheckpoint(in directory: String, entries: Int) throws -> MergeCommitFigures {
        var f = MergeCommitFigures()
        let value = [UInt8](repeating: 0x5A, count: 64)
        for fromOtherProcess in [false, true] {
            let path = directory + "/checkpointing-\(fromOtherProcess ? "other" : "same").db"
            let store = try SQLiteSharingStore(path)
            guard sqlite3_exec(store.db, "PRAGMA wal_autocheckpoint=0", nil, nil, nil) == SQLITE_OK else {
                throw BenchFailure("SQLite: PRAGMA wal_autocheckpoint=0 failed")
            }
            let quarter = max(1, entries / 4)
            for s in 0..<4 {
                guard sqlite3_exec(store.db, "BEGIN", nil, nil, nil) == SQLITE_OK else { throw BenchFailure("SQLite: BEGIN failed") }
                for i in 0..<quarter { try store.commit(s * quarter + i, value) }
                guard sqlite3_exec(store.db, "COMMIT", nil, nil, nil) == SQLITE_OK else { throw BenchFailure("SQLite: COMMIT failed") }
            }
            let other = fromOtherProcess ? try SharingPeerProcess(.sqlite, path, executable: config.secondProcess) : nil
            // The checkpoint, on a connection of its own, on a thread of its own.
            let checkpointer = try SQLiteSharingStore(path)
            // Used by the checkpoint's thread alone until it says it is done.
            nonisolated(unsafe) let connection = checkpointer.db
            let done = Locked(false)
            let result = Locked<Int32>(SQLITE_OK)
            let thread = Thread {
                let rc = sqlite3_wal_checkpoint_v2(connection, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
                result.withLock { $0 = rc }
                done.withLock { $0 = true }
            }
            thread.start()
            try f.time(from: entries, by: other, until: { done.withLock { $0 } }) { try store.commit($0, value) }
            while !done.withLock({ $0 }) { Thread.sleep(forTimeInterval: 0.001) }
            guard result.withLock({ $0 }) == SQLITE_OK else { throw BenchFailure("SQLite: the checkpoint failed (\(result.withLock { $0 }))") }
            other?.end()
            try checkpointer.close()
            try store.close()
        }
        return f
    }

    /// A second process's one-record commits while this process makes ten write transactions of `entries / 10`
    /// records back to back (Strata's engine, shared mode). A commit that waits for one of those writes is
    /// inherent; one that waits through several is starvation (the writer lock went straight back to the process
    /// that released it). The figures: the most of those writes that ended while one commit waited, the
    /// longest commit, and the longest write (milliseconds).
    struct LargeWriteCommitFigures {
        var writesWaitedThrough = 0
        var longestCommit = 0.0
        var write = 0.0
        var commits = 0
    }

    func commitsDuringLargeWrites(in directory: String, entries: Int) throws -> LargeWriteCommitFigures {
        let writeCount = 10
        let path = directory + "/large-writes"
        let store = try StrataSharingStore(path, sharing: .shared)
        defer { try? store.close() }  // try?: the figures are taken; a failed close of a scratch database changes none
        let other = try SharingPeerProcess(.strata, path, executable: config.secondProcess)
        let value = [UInt8](repeating: 0x5A, count: 64)
        /// Each of the second process's commits, from the request to the answer, on this process's clock.
        let commits = Locked<[(start: Double, end: Double)]>([])
        let stop = Locked(false)
        let failure = Locked<(any Error)?>(nil)
        let finished = DispatchSemaphore(value: 0)
        let committer = Thread {
            var key = 0
            while !stop.withLock({ $0 }) {
                do {
                    let start = now()
                    _ = try other.commit(key)
                    let end = now()
                    commits.withLock { $0.append((start, end)) }
                } catch {
                    failure.withLock { $0 = error }
                    break
                }
                key += 1
            }
            finished.signal()
        }
        committer.start()
        // The second process is committing before the first write begins.
        while commits.withLock({ $0.count }) < 20, failure.withLock({ $0 }) == nil { usleep(1000) }
        var writes: [(start: Double, end: Double)] = []
        for round in 0..<writeCount {
            let start = now()
            try store.db.write { tx in
                for i in 0..<max(1, entries / writeCount) {
                    try tx.put(withUnsafeBytes(of: UInt64(1_000_000_000 + round * entries + i).bigEndian) { Array($0) }, value, in: 3)
                }
            }
            writes.append((start, now()))
        }
        stop.withLock { $0 = true }
        finished.wait()
        other.end()
        if let error = failure.withLock({ $0 }) { throw error }
        let all = commits.withLock { $0 }
        return LargeWriteCommitFigures(
            writesWaitedThrough: all.map { c in writes.filter { $0.end > c.start && $0.end < c.end }.count }.max() ?? 0,
            longestCommit: (all.map { $0.end - $0.start }.max() ?? 0) * 1000,
            write: (writes.map { $0.end - $0.start }.max() ?? 0) * 1000,
            commits: all.count)
    }
}
