import CSQLite
import Engine
import Foundation

// Issue 38's rows: what sharing a database between processes costs a commit and a refresh. Strata's engine in
// its exclusive and shared modes; SQLite in WAL mode with synchronous=FULL (a durable commit, as Strata's) as
// the peer. The second "process" is a second instance in this process: for Strata's engine a second
// `Database` has its own lock descriptor, session, memtable and log position, exactly what a second process
// has; for SQLite a second connection. (LMDB refuses a second environment on one file in a process; it has no
// row here.)

extension Runner {
    /// The median milliseconds of a durable one-record commit, and of a refresh after another instance's commit.
    struct SharingFigures {
        var exclusive = 0.0
        var alone = 0.0
        var idleSecond = 0.0
        var alternating = 0.0
        var refresh = 0.0
        var deferredExclusive = 0.0
        var deferredShared = 0.0
    }

    func sharingFigures(in directory: String, commits: Int) throws -> (strata: SharingFigures, sqlite: SharingFigures) {
        let value = [UInt8](repeating: 0x5A, count: 64)
        func key(_ i: Int) -> [UInt8] { withUnsafeBytes(of: UInt64(i).bigEndian) { Array($0) } }
        func open(_ name: String, shared: Bool) throws -> Database {
            var options = Database.Options()
            options.sharing = shared ? .shared : .exclusive
            return try Database.open(at: directory + "/" + name, options: options)
        }
        func commitLatency(_ dbs: [Database]) throws -> Double {
            var times: [Double] = []
            for i in 0..<commits {
                let db = dbs[i % dbs.count]
                let start = now()
                try db.write { try $0.put(key(i), value, in: 1) }
                times.append(now() - start)
            }
            return Measurement.median(times) * 1000
        }
        var strata = SharingFigures()
        progress("Strata engine: sharing")
        do {
            let db = try open("exclusive", shared: false)
            strata.exclusive = try commitLatency([db])
            try db.close()
        }
        do {
            let db = try open("alone", shared: true)
            strata.alone = try commitLatency([db])
            try db.close()
        }
        do {
            let a = try open("idle", shared: true)
            let b = try open("idle", shared: true)
            strata.idleSecond = try commitLatency([a])
            try b.refresh()
            try a.close()
            try b.close()
        }
        do {
            let a = try open("alternating", shared: true)
            let b = try open("alternating", shared: true)
            strata.alternating = try commitLatency([a, b])
            var times: [Double] = []
            for i in 0..<commits {
                try a.write { try $0.put(key(i), value, in: 2) }
                let start = now()
                try b.refresh()
                times.append(now() - start)
            }
            strata.refresh = Measurement.median(times) * 1000
            guard b.lastSequence == a.lastSequence else { throw BenchFailure("Strata: the second instance did not catch up") }
            try a.close()
            try b.close()
        }

        // Without the disk: what the coordination itself costs a commit (deferred durability, no fdatasync).
        for shared in [false, true] {
            var options = Database.Options()
            options.sharing = shared ? .shared : .exclusive
            options.durability = .deferred
            let db = try Database.open(at: directory + (shared ? "/deferred-shared" : "/deferred-exclusive"), options: options)
            let ms = try commitLatency([db])
            if shared { strata.deferredShared = ms } else { strata.deferredExclusive = ms }
            try db.close()
        }
        progress("SQLite: sharing")
        var sqlite = SharingFigures()
        final class Connection {
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
            func put(_ k: Int, _ v: [UInt8]) throws {
                sqlite3_bind_int64(insert, 1, Int64(k))
                v.withUnsafeBytes { _ = sqlite3_bind_blob(insert, 2, $0.baseAddress, Int32($0.count), nil) }
                let rc = sqlite3_step(insert)
                sqlite3_reset(insert)
                guard rc == SQLITE_DONE else { throw BenchFailure("SQLite: insert failed (\(rc))") }
            }
            func get(_ k: Int) -> Int {
                sqlite3_bind_int64(select, 1, Int64(k))
                defer { sqlite3_reset(select) }
                return sqlite3_step(select) == SQLITE_ROW ? Int(sqlite3_column_int64(select, 0)) : -1
            }
            func close() {
                sqlite3_finalize(insert)
                sqlite3_finalize(select)
                sqlite3_close_v2(db)
            }
        }
        func sqliteLatency(_ connections: [Connection]) throws -> Double {
            var times: [Double] = []
            for i in 0..<commits {
                let start = now()
                try connections[i % connections.count].put(i, value)
                times.append(now() - start)
            }
            return Measurement.median(times) * 1000
        }
        do {
            let c = try Connection(directory + "/sqlite-alone.db")
            sqlite.alone = try sqliteLatency([c])
            c.close()
        }
        do {
            let a = try Connection(directory + "/sqlite-idle.db")
            let b = try Connection(directory + "/sqlite-idle.db")
            sqlite.idleSecond = try sqliteLatency([a])
            a.close()
            b.close()
        }
        do {
            let a = try Connection(directory + "/sqlite-alternating.db")
            let b = try Connection(directory + "/sqlite-alternating.db")
            sqlite.alternating = try sqliteLatency([a, b])
            var times: [Double] = []
            for i in 0..<commits {
                try a.put(commits + i, value)
                let start = now()
                let found = b.get(commits + i)
                times.append(now() - start)
                guard found == value.count else { throw BenchFailure("SQLite: the second connection did not see the first's commit") }
            }
            sqlite.refresh = Measurement.median(times) * 1000
            a.close()
            b.close()
        }
        return (strata, sqlite)
    }
}
