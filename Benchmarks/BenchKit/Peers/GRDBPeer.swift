import Foundation
import GRDB

/// A person as a GRDB user writes it: a Codable record.
struct GRDBPerson: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "person"
    var id: Int
    var firstName: String
    var lastName: String
    var age: Int
}

/// GRDB 7, what a Swift developer on Linux picks instead of Realm: Codable records through
/// `FetchableRecord`/`PersistableRecord`, a `DatabasePool` (WAL mode) with synchronous=NORMAL as for the SQLite
/// peer, queries through GRDB's query interface.
public final class GRDBPeer: BenchEngine {
    public let name = "GRDB"
    var pool: DatabasePool?

    public init() {}

    private func database() throws -> DatabasePool {
        guard let pool else { throw BenchFailure("GRDB: the database is not open") }
        return pool
    }

    public func open(in directory: String) throws {
        var configuration = Configuration()
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous=NORMAL") }
        pool = try DatabasePool(path: directory + "/grdb.sqlite", configuration: configuration)
    }

    public func create(in directory: String) throws {
        try open(in: directory)
        try database().write { db in
            try db.create(table: "person") { t in
                t.column("id", .integer).primaryKey()
                t.column("firstName", .text).notNull()
                t.column("lastName", .text).notNull()
                t.column("age", .integer).notNull()
            }
        }
    }

    public func close() throws {
        try pool?.close()
        pool = nil
    }

    public func insertAll(_ people: [Person]) throws {
        try database().write { db in
            for p in people {
                try GRDBPerson(
                    id: p.id, firstName: String(decoding: p.firstName, as: UTF8.self),
                    lastName: String(decoding: p.lastName, as: UTF8.self), age: p.age
                ).insert(db)
            }
        }
    }

    public func sumAges() throws -> Int {
        try database().read { db in
            var sum = 0
            let people = try GRDBPerson.fetchCursor(db)
            while let p = try people.next() { sum &+= p.age }
            return sum
        }
    }

    public func sumAllFields() throws -> Int {
        try database().read { db in
            var sum = 0
            let people = try GRDBPerson.fetchCursor(db)
            while let p = try people.next() { sum &+= p.id &+ p.firstName.utf8.count &+ p.lastName.utf8.count &+ p.age }
            return sum
        }
    }

    public func lookupAges(_ ids: [Int]) throws -> Int {
        try database().read { db in
            var sum = 0
            for id in ids { sum &+= try GRDBPerson.fetchOne(db, key: id)?.age ?? 0 }
            return sum
        }
    }

    public func queryAgesByID(_ ids: [Int]) throws -> Int {
        try database().read { db in
            var sum = 0
            for id in ids { sum &+= try GRDBPerson.filter(Column("id") == id).fetchOne(db)?.age ?? 0 }
            return sum
        }
    }

    public func countAgeOver50() throws -> Int {
        try database().read { db in try GRDBPerson.filter(Column("age") > 50).fetchCount(db) }
    }

    public func countFirstNameAB() throws -> Int {
        // GLOB is case-sensitive like BEGINSWITH (LIKE is not).
        try database().read { db in try GRDBPerson.filter(sql: "firstName GLOB 'ab*'").fetchCount(db) }
    }

    public func readOne(_ id: Int) throws -> Int { try lookupAges([id]) }

    public func sizeOnDisk(in directory: String) throws -> Int {
        ["grdb.sqlite", "grdb.sqlite-wal", "grdb.sqlite-shm"].reduce(0) { $0 + DirectorySize.fileBytes(directory + "/" + $1) }
    }
}

extension GRDBPeer: IndexingBenchEngine {
    public func addLastNameIndex(in directory: String, from original: String) throws -> Double {
        try copyDatabase(from: original, to: directory)
        let start = now()
        try open(in: directory)
        try database().write { db in try db.create(index: "person_lastName", on: "person", columns: ["lastName"]) }
        return now() - start
    }

    public func queryAgesByLastName(_ names: [[UInt8]]) throws -> Int {
        try database().read { db in
            var sum = 0
            for name in names {
                let people = try GRDBPerson.filter(Column("lastName") == String(decoding: name, as: UTF8.self)).fetchCursor(db)
                while let p = try people.next() { sum &+= p.age }
            }
            return sum
        }
    }

    public func updateAllAges() throws -> Int {
        try database().write { db in try GRDBPerson.updateAll(db, Column("age").set(to: Column("age") + 1)) }
    }

    public func deleteHalf() throws -> Int {
        try database().write { db in try GRDBPerson.filter(sql: "id % 2 = 0").deleteAll(db) }
    }
}
