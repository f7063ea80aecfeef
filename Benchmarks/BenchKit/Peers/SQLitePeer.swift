import CSQLite

/// SQLite through its C library: WAL mode, synchronous=NORMAL, prepared statements,
/// `person(id INTEGER PRIMARY KEY, firstName TEXT, lastName TEXT, age INTEGER)`.
public final class SQLitePeer: BenchEngine {
    public let name = "SQLite"
    var db: OpaquePointer?

    public init() {}

    func check(_ rc: Int32, _ what: String) throws {
        guard rc == SQLITE_OK || rc == SQLITE_DONE || rc == SQLITE_ROW else {
            let message = db.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) } ?? "code \(rc)"
            throw BenchFailure("SQLite \(what): \(message)")
        }
    }

    func exec(_ sql: String) throws { try check(sqlite3_exec(db, sql, nil, nil, nil), sql) }

    func prepare(_ sql: String) throws -> OpaquePointer? {
        var stmt: OpaquePointer?
        try check(sqlite3_prepare_v2(db, sql, -1, &stmt, nil), sql)
        return stmt
    }

    public func open(in directory: String) throws {
        try check(sqlite3_open_v2(directory + "/sqlite.db", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil), "open")
        try exec("PRAGMA journal_mode=WAL")
        try exec("PRAGMA synchronous=NORMAL")
    }

    public func create(in directory: String) throws {
        try open(in: directory)
        try exec("CREATE TABLE person(id INTEGER PRIMARY KEY, firstName TEXT NOT NULL, lastName TEXT NOT NULL, age INTEGER NOT NULL)")
    }

    public func close() throws {
        if let db { sqlite3_close_v2(db) }
        db = nil
    }

    public func insertAll(_ people: [Person]) throws {
        try exec("BEGIN")
        let stmt = try prepare("INSERT INTO person(id, firstName, lastName, age) VALUES (?, ?, ?, ?)")
        defer { sqlite3_finalize(stmt) }
        for p in people {
            sqlite3_bind_int64(stmt, 1, Int64(p.id))
            p.firstName.withUnsafeBytes { _ = sqlite3_bind_text(stmt, 2, $0.baseAddress, Int32($0.count), nil) }
            p.lastName.withUnsafeBytes { _ = sqlite3_bind_text(stmt, 3, $0.baseAddress, Int32($0.count), nil) }
            sqlite3_bind_int64(stmt, 4, Int64(p.age))
            try check(sqlite3_step(stmt), "insert")
            sqlite3_reset(stmt)
        }
        try exec("COMMIT")
    }

    func sumQuery(_ sql: String, _ row: (OpaquePointer?) -> Int) throws -> Int {
        let stmt = try prepare(sql)
        defer { sqlite3_finalize(stmt) }
        var sum = 0
        while true {
            let rc = sqlite3_step(stmt)
            if rc == SQLITE_DONE { break }
            try check(rc, sql)
            sum &+= row(stmt)
        }
        return sum
    }

    public func sumAges() throws -> Int {
        try sumQuery("SELECT age FROM person") { Int(sqlite3_column_int64($0, 0)) }
    }

    public func sumAllFields() throws -> Int {
        try sumQuery("SELECT id, firstName, lastName, age FROM person") { s in
            _ = sqlite3_column_text(s, 1)
            let first = Int(sqlite3_column_bytes(s, 1))
            _ = sqlite3_column_text(s, 2)
            let last = Int(sqlite3_column_bytes(s, 2))
            return Int(sqlite3_column_int64(s, 0)) + first + last + Int(sqlite3_column_int64(s, 3))
        }
    }

    public func lookupAges(_ ids: [Int]) throws -> Int {
        let stmt = try prepare("SELECT age FROM person WHERE id = ?")
        defer { sqlite3_finalize(stmt) }
        var sum = 0
        for id in ids {
            sqlite3_bind_int64(stmt, 1, Int64(id))
            if sqlite3_step(stmt) == SQLITE_ROW { sum &+= Int(sqlite3_column_int64(stmt, 0)) }
            sqlite3_reset(stmt)
        }
        return sum
    }

    public func countAgeOver50() throws -> Int {
        try sumQuery("SELECT count(*) FROM person WHERE age > 50") { Int(sqlite3_column_int64($0, 0)) }
    }

    public func countFirstNameAB() throws -> Int {
        // GLOB is case-sensitive like BEGINSWITH; there is no index, so this is a scan, as for the others.
        try sumQuery("SELECT count(*) FROM person WHERE firstName GLOB 'ab*'") { Int(sqlite3_column_int64($0, 0)) }
    }

    public func readOne(_ id: Int) throws -> Int { try lookupAges([id]) }

    public func sizeOnDisk(in directory: String) throws -> Int {
        ["sqlite.db", "sqlite.db-wal", "sqlite.db-shm"].reduce(0) { $0 + DirectorySize.fileBytes(directory + "/" + $1) }
    }
}

extension SQLitePeer: QueryDeletingBenchEngine {
    public func deleteIDsAbove(_ id: Int) throws -> Int {
        try exec("BEGIN")
        try exec("DELETE FROM person WHERE id > \(id)")
        let n = Int(sqlite3_changes(db))
        try exec("COMMIT")
        return n
    }
}

extension SQLitePeer: MigratingBenchEngine {
    public func compactedSize(in directory: String) throws -> Int {
        try open(in: directory)
        try exec("VACUUM")
        try exec("PRAGMA wal_checkpoint(TRUNCATE)")
        try close()
        return try sizeOnDisk(in: directory)
    }

    public func migrateCombine(in directory: String) throws -> () throws -> Int {
        try open(in: directory)
        try exec("BEGIN")
        try exec("ALTER TABLE person ADD COLUMN fullName TEXT NOT NULL DEFAULT ''")
        try exec("UPDATE person SET fullName = firstName || ' ' || lastName")
        try exec("ALTER TABLE person DROP COLUMN firstName")
        try exec("ALTER TABLE person DROP COLUMN lastName")
        try exec("COMMIT")
        return { defer { try? self.close() }; return try self.sumQuery("SELECT sum(length(fullName)) FROM person") { Int(sqlite3_column_int64($0, 0)) } }
    }

    public func migrateRename(in directory: String) throws -> () throws -> Int {
        try open(in: directory)
        try exec("ALTER TABLE person RENAME COLUMN age TO yearsSinceBirth")
        return { defer { try? self.close() }; return try self.sumQuery("SELECT sum(yearsSinceBirth) FROM person") { Int(sqlite3_column_int64($0, 0)) } }
    }

    public func migrateRetype(in directory: String) throws -> () throws -> Int {
        try open(in: directory)
        try exec("BEGIN")
        try exec("CREATE TABLE person_new(id INTEGER PRIMARY KEY, fullName TEXT NOT NULL, yearsSinceBirth TEXT NOT NULL)")
        try exec("INSERT INTO person_new SELECT id, fullName, CAST(yearsSinceBirth AS TEXT) FROM person")
        try exec("DROP TABLE person")
        try exec("ALTER TABLE person_new RENAME TO person")
        try exec("COMMIT")
        return { defer { try? self.close() }; return try self.sumQuery("SELECT sum(length(yearsSinceBirth)) FROM person") { Int(sqlite3_column_int64($0, 0)) } }
    }
}

extension SQLitePeer: IndexingBenchEngine {
    public func addLastNameIndex(in directory: String, from original: String) throws -> Double {
        try copyDatabase(from: original, to: directory)
        let start = now()
        try open(in: directory)
        try exec("CREATE INDEX person_lastName ON person(lastName)")
        return now() - start
    }

    public func queryAgesByLastName(_ names: [[UInt8]]) throws -> Int {
        let stmt = try prepare("SELECT age FROM person WHERE lastName = ?")
        defer { sqlite3_finalize(stmt) }
        var sum = 0
        for name in names {
            // SQLITE_STATIC binding: the bytes must outlive the step, so it runs inside.
            name.withUnsafeBytes { b in
                _ = sqlite3_bind_text(stmt, 1, b.baseAddress, Int32(b.count), nil)
                while sqlite3_step(stmt) == SQLITE_ROW { sum &+= Int(sqlite3_column_int64(stmt, 0)) }
                sqlite3_reset(stmt)
            }
        }
        return sum
    }

    public func updateAllAges() throws -> Int {
        try exec("BEGIN")
        try exec("UPDATE person SET age = age + 1")
        let n = Int(sqlite3_changes(db))
        try exec("COMMIT")
        return n
    }

    public func deleteHalf() throws -> Int {
        try exec("BEGIN")
        try exec("DELETE FROM person WHERE id % 2 = 0")
        let n = Int(sqlite3_changes(db))
        try exec("COMMIT")
        return n
    }
}
