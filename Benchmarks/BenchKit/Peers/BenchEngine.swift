import Foundation
/// One engine under measurement. Every method works on the Person data set; each returns a checksum-like
/// result so the Bench can check that all engines computed the same thing.
public protocol BenchEngine: AnyObject {
    var name: String { get }
    /// Creates an empty database in `directory` and opens it.
    func create(in directory: String) throws
    /// Inserts every person in one durable write transaction (the timed part).
    func insertAll(_ people: [Person]) throws
    func close() throws
    /// Opens the existing database in `directory`.
    func open(in directory: String) throws
    /// Sum of ages over a full scan.
    func sumAges() throws -> Int
    /// Sum of id, both names' lengths and age over a full scan.
    func sumAllFields() throws -> Int
    /// Sum of the ages of the given ids, each looked up by primary key.
    func lookupAges(_ ids: [Int]) throws -> Int
    /// Sum of the ages of the given ids, each found by a query `id == x` (peers without a query language
    /// look the id up, as `lookupAges` does).
    func queryAgesByID(_ ids: [Int]) throws -> Int
    /// Number of people with age > 50.
    func countAgeOver50() throws -> Int
    /// Number of people whose firstName begins with "ab".
    func countFirstNameAB() throws -> Int
    /// The age of one person (after open).
    func readOne(_ id: Int) throws -> Int
    /// Bytes on disk of the database's files.
    func sizeOnDisk(in directory: String) throws -> Int
    /// Adds one to every person's age in one durable write transaction (the timed part); returns the number
    /// of people changed.
    func updateAllAges() throws -> Int
    /// Deletes every person with an even id in one durable write transaction (the timed part); returns the
    /// number deleted.
    func deleteHalf() throws -> Int
}

extension BenchEngine {
    public func queryAgesByID(_ ids: [Int]) throws -> Int { try lookupAges(ids) }
}

/// What an engine that says where its writes wait reports: seconds waited since its open, to begin a write
/// (another write, a merge holding the writer gate, another process's LOCK.writer) and inside a write for
/// background maintenance; and the most segments any partition has now.
public struct EngineWaits: Sendable {
    public var writer: Double
    public var maintenance: Double
    public var segmentsPerPartition: Int
}

public protocol WaitReportingBenchEngine: BenchEngine {
    func waits() -> EngineWaits?
}

public struct BenchFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ d: String) { description = d }
}

/// The migration workloads: v1 -> v2 combines firstName and lastName into fullName, v2 -> v3 renames age to
/// yearsSinceBirth, v3 -> v4 changes yearsSinceBirth from Int to String. Each opens the closed database,
/// migrates and commits durably (the timed part), and returns a function that computes a checksum of the
/// migrated data (untimed) and closes the database.
/// What an online migration of migrate-combine measured: open, the first read of a migrated object, a full
/// enumeration while every object is still pending, and the rewrite of every object.
public struct OnlineMigrationFigures: Sendable {
    public var openMilliseconds: Double
    public var firstReadMilliseconds: Double
    public var pendingEnumerateSeconds: Double
    public var rewriteSeconds: Double
    /// Checksums: the sum of ages read while pending, and of fullName lengths after the rewrite.
    public var pendingAgeSum: Int
    public var fullNameLengths: Int
}

/// An engine that deletes what a query matches, as its users write it (Strata: `realm.delete` of a `Results`
/// of a query; SQLite: DELETE ... WHERE): `delete-half`'s filter through `%` is not something a Realm query can say.
public protocol QueryDeletingBenchEngine: BenchEngine {
    /// Deletes every person with an id above `id` in one durable write transaction (the timed part); returns the
    /// number deleted.
    func deleteIDsAbove(_ id: Int) throws -> Int
}

/// An engine with change notifications (Strata).
public protocol NotifyingBenchEngine: BenchEngine {
    /// Milliseconds from the start of a one-object write to the delivery of its change set to an observer of
    /// every object; one figure per write.
    func notifyLatencies(_ count: Int) throws -> [Double]
}

/// An engine whose readers enumerate a snapshot while a writer commits (Strata).
public protocol SnapshotReadingBenchEngine: BenchEngine {
    /// Enumerates every object reading age while another thread commits one-object writes without pause.
    /// Returns the seconds the enumeration took, the sum of ages it read, and the commits made meanwhile.
    func enumerateWhileWriting() throws -> (seconds: Double, ageSum: Int, commits: Int)
}

/// An engine with online migrations (Strata).
public protocol OnlineMigratingBenchEngine: BenchEngine {
    /// Copies the v1 database in `original` to `directory` (not timed), then migrates the copy online.
    func migrateCombineOnline(in directory: String, from original: String) throws -> OnlineMigrationFigures
}

public protocol MigratingBenchEngine: BenchEngine {
    /// Checksum: the sum of fullName lengths.
    func migrateCombine(in directory: String) throws -> () throws -> Int
    /// Checksum: the sum of yearsSinceBirth.
    func migrateRename(in directory: String) throws -> () throws -> Int
    /// Checksum: the sum of the new strings' lengths.
    func migrateRetype(in directory: String) throws -> () throws -> Int
    /// Compacts the closed database with the engine's own tool and returns its size on disk in bytes.
    func compactedSize(in directory: String) throws -> Int
}

/// An engine that can index `lastName` (Strata: `@Persisted(indexed: true)`; SQLite: CREATE INDEX; LMDB: a
/// second database from lastName + id to nothing, built and read by hand, as LMDB users do).
public protocol IndexingBenchEngine: BenchEngine {
    /// Copies the closed database in `original` to `directory` (not timed), then opens the copy and adds an
    /// index on lastName (timed by the caller from the call's start minus the copy: see `indexBuildSeconds`).
    /// Leaves the copy open with the index; returns the seconds the open and the index build took.
    func addLastNameIndex(in directory: String, from original: String) throws -> Double
    /// For each name, the people whose lastName equals it, through the index: the sum of their ages.
    func queryAgesByLastName(_ names: [[UInt8]]) throws -> Int
}

extension BenchEngine {
    /// Copies the files of a closed database directory (not timed by the callers).
    func copyDatabase(from original: String, to directory: String) throws {
        let fm = FileManager.default
        try? fm.removeItem(atPath: directory)
        try fm.copyItem(atPath: original, toPath: directory)
    }
}
