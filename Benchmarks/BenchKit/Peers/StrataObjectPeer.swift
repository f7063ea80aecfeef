import Engine
import Foundation
import Strata

/// The Bench's model, version 1.
public final class BenchPerson: Object {
    @Persisted(primaryKey: true) public var id: Int
    @Persisted public var firstName = ""
    @Persisted public var lastName = ""
    @Persisted public var age = 0

    public override class func className() -> String { "Person" }

    /// An unmanaged object of the Bench's person.
    convenience init(_ p: Person) {
        self.init()
        id = p.id
        firstName = String(decoding: p.firstName, as: UTF8.self)
        lastName = String(decoding: p.lastName, as: UTF8.self)
        age = p.age
    }
}

/// Strata through its object API, as an app would use it.
public final class StrataObjectPeer: WaitReportingBenchEngine {
    public let name: String
    /// Set for the encrypted variant (`encryptionKey`, issue 23's rows).
    let encryptionKey: Data?
    var realm: Realm?
    var configuration: Realm.Configuration?

    /// `encrypted`: the same workloads on a file encrypted with a 64-byte key.
    public init(encrypted: Bool = false) {
        name = encrypted ? Runner.strataEncrypted : Runner.strata
        encryptionKey = encrypted ? Data((0..<64).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }) : nil
    }

    /// Whether every Realm the Bench opens from now on is `.exclusive` rather than shared between processes (the
    /// default): `Bench --process-sharing exclusive` measures what sharing costs the object API rows.
    public static func useExclusiveFiles(_ exclusive: Bool) {
        Realm.Configuration.initialProcessSharing.withLock { $0 = exclusive ? .exclusive : .shared }
    }

    /// Whether the Realms the object peers open from now on have `observationTracking` on: `Bench
    /// --observation-tracking` measures what recording reads for Swift's Observation costs the object API rows.
    public static func trackObservation(_ on: Bool) { tracksObservation.withLock { $0 = on } }
    static let tracksObservation = Locked(false)

    /// A variant of the plain peer under another name (the runner sets what differs, such as the codecs).
    public init(name: String) {
        self.name = name
        encryptionKey = nil
    }

    public func create(in directory: String) throws { try open(in: directory) }

    public func open(in directory: String) throws {
        var config = Realm.Configuration(
            fileURL: URL(fileURLWithPath: directory + "/strata.realm"), encryptionKey: encryptionKey, objectTypes: [BenchPerson.self])
        config.observationTracking = Self.tracksObservation.withLock { $0 }
        configuration = config
        realm = try Realm(configuration: config)
    }

    public func close() throws { realm = nil }

    public func waits() -> EngineWaits? {
        guard let realm else { return nil }
        let s = realm.engineStatistics
        return EngineWaits(writer: s.writerWaitSeconds, maintenance: s.maintenanceWaitSeconds, segmentsPerPartition: realm.engineSegmentsPerPartition)
    }

    func open() throws -> Realm {
        guard let realm else { throw BenchFailure("Strata: not open") }
        return realm
    }

    public func insertAll(_ people: [Person]) throws {
        let realm = try open()
        try realm.write { for p in people { realm.add(BenchPerson(p)) } }
    }

    public func updateAllAges() throws -> Int {
        let realm = try open()
        var n = 0
        try realm.write {
            for p in realm.objects(BenchPerson.self) {
                p.age += 1
                n += 1
            }
        }
        return n
    }

    public func deleteHalf() throws -> Int {
        let realm = try open()
        var n = 0
        try realm.write {
            let even = realm.objects(BenchPerson.self).filter { $0.id % 2 == 0 }
            n = even.count
            realm.delete(even)
        }
        return n
    }

    public func sumAges() throws -> Int {
        var sum = 0
        for p in try open().objects(BenchPerson.self) { sum &+= p.age }
        return sum
    }

    public func sumAllFields() throws -> Int {
        var sum = 0
        for p in try open().objects(BenchPerson.self) {
            sum &+= p.id &+ p.firstName.utf8.count &+ p.lastName.utf8.count &+ p.age
        }
        return sum
    }

    public func lookupAges(_ ids: [Int]) throws -> Int {
        let realm = try open()
        var sum = 0
        for id in ids { sum &+= realm.object(ofType: BenchPerson.self, forPrimaryKey: id)?.age ?? 0 }
        return sum
    }

    public func queryAgesByID(_ ids: [Int]) throws -> Int {
        let people = try open().objects(BenchPerson.self)
        var sum = 0
        for id in ids { sum &+= people.where { $0.id == id }.first?.age ?? 0 }
        return sum
    }

    public func countAgeOver50() throws -> Int { try open().objects(BenchPerson.self).where { $0.age > 50 }.count }

    public func countFirstNameAB() throws -> Int { try open().objects(BenchPerson.self).filter("firstName BEGINSWITH 'ab'").count }

    public func readOne(_ id: Int) throws -> Int { try open().object(ofType: BenchPerson.self, forPrimaryKey: id)?.age ?? -1 }

    public func sizeOnDisk(in directory: String) throws -> Int { DirectorySize.bytes(directory + "/strata.realm") }
}

extension StrataObjectPeer: QueryDeletingBenchEngine {
    public func deleteIDsAbove(_ id: Int) throws -> Int {
        let realm = try open()
        var n = 0
        try realm.write {
            let above = realm.objects(BenchPerson.self).where { $0.id > id }
            n = above.count
            realm.delete(above)
        }
        return n
    }
}

extension StrataObjectPeer: SnapshotReadingBenchEngine {
    public func enumerateWhileWriting() throws -> (seconds: Double, ageSum: Int, commits: Int) {
        let realm = try open()
        guard let config = configuration else { throw BenchFailure("Strata: not open") }
        let stop = Locked(false)
        let commits = Locked(0)
        let started = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        let failure = Locked<(any Error)?>(nil)
        Thread.detachNewThread {
            defer { finished.signal() }
            do {
                // Another Realm instance of the same file, on its own thread: its commits publish new versions
                // while the reader walks the snapshot it started with.
                let writer = try Realm(configuration: config)
                var id = 0
                started.signal()
                while !stop.withLock({ $0 }) {
                    try writer.write {
                        if let p = writer.object(ofType: BenchPerson.self, forPrimaryKey: id) { p.lastName = p.lastName }
                    }
                    id = (id + 7919) % 1000
                    commits.withLock { $0 += 1 }
                }
            } catch {
                failure.withLock { $0 = error }
                started.signal()
            }
        }
        started.wait()
        let t = now()
        var sum = 0
        for p in realm.objects(BenchPerson.self) { sum &+= p.age }
        let seconds = now() - t
        stop.withLock { $0 = true }
        finished.wait()
        if let error = failure.withLock({ $0 }) { throw error }
        return (seconds, sum, commits.withLock { $0 })
    }
}

extension StrataObjectPeer: NotifyingBenchEngine {
    public func notifyLatencies(_ count: Int) throws -> [Double] {
        let realm = try open()
        let people = realm.objects(BenchPerson.self)
        var delivered = 0.0
        var modified = 0
        let token = people.observe { change in
            if case .update(_, _, _, let modifications) = change {
                delivered = now()
                modified += modifications.count
            }
        }
        defer { token.invalidate() }
        var out: [Double] = []
        for i in 0..<count {
            // +1 then -1 on the same object, so that the data is as it was for the workloads that follow.
            let id = i / 2
            let start = now()
            try realm.write { realm.object(ofType: BenchPerson.self, forPrimaryKey: id)?.age += i % 2 == 0 ? 1 : -1 }
            out.append((delivered - start) * 1000)
        }
        guard modified == count else { throw BenchFailure("Strata: \(modified) modifications notified for \(count) writes") }
        return out
    }
}

/// Version 2 of the Bench's model: names combined.
public final class BenchPersonV2: Object {
    @Persisted(primaryKey: true) public var id: Int
    @Persisted public var fullName = ""
    @Persisted public var age = 0
    public override class func className() -> String { "Person" }
}

/// Version 3: age renamed yearsSinceBirth.
public final class BenchPersonV3: Object {
    @Persisted(primaryKey: true) public var id: Int
    @Persisted public var fullName = ""
    @Persisted public var yearsSinceBirth = 0
    public override class func className() -> String { "Person" }
}

/// Version 4: yearsSinceBirth is a String.
public final class BenchPersonV4: Object {
    @Persisted(primaryKey: true) public var id: Int
    @Persisted public var fullName = ""
    @Persisted public var yearsSinceBirth = ""
    public override class func className() -> String { "Person" }
}

extension StrataObjectPeer: MigratingBenchEngine, OnlineMigratingBenchEngine {
    func url(_ directory: String) -> URL { URL(fileURLWithPath: directory + "/strata.realm") }

    /// Strata compacts at open when `shouldCompactOnLaunch` says so (every partition's segments merged).
    public func compactedSize(in directory: String) throws -> Int {
        do {
            _ = try Realm(configuration: .init(
                fileURL: url(directory), schemaVersion: 3, shouldCompactOnLaunch: { _, _ in true }, objectTypes: [BenchPersonV4.self]))
        }
        return try sizeOnDisk(in: directory)
    }

    public func migrateCombineOnline(in directory: String, from original: String) throws -> OnlineMigrationFigures {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: url(original), to: url(directory))
        var config = Realm.Configuration(fileURL: url(directory), schemaVersion: 1, migrationBlock: { m, _ in
            m.transformObjects(ofType: "Person") { old, new in
                guard let first = old["firstName"] as? String, let last = old["lastName"] as? String else { return }
                new["fullName"] = first + " " + last
            }
        }, objectTypes: [BenchPersonV2.self])
        config.migrationMode = .online
        // The rewrite is timed on its own below; enumerating while it runs would measure both at once.
        config.backgroundMigration = false
        var t = now()
        let realm = try Realm(configuration: config)
        let open = (now() - t) * 1000
        t = now()
        let one = realm.object(ofType: BenchPersonV2.self, forPrimaryKey: 0)?.fullName.utf8.count ?? -1
        let firstRead = (now() - t) * 1000
        guard one > 0 else { throw BenchFailure("Strata: the first migrated object has no fullName") }
        t = now()
        var ages = 0
        for p in realm.objects(BenchPersonV2.self) { ages &+= p.age }
        let pending = now() - t
        t = now()
        try realm.finishMigrations()
        let rewrite = now() - t
        let lengths = realm.objects(BenchPersonV2.self).reduce(0) { $0 + $1.fullName.utf8.count }
        return OnlineMigrationFigures(
            openMilliseconds: open, firstReadMilliseconds: firstRead, pendingEnumerateSeconds: pending, rewriteSeconds: rewrite,
            pendingAgeSum: ages, fullNameLengths: lengths)
    }

    public func migrateCombine(in directory: String) throws -> () throws -> Int {
        let realm = try Realm(configuration: .init(fileURL: url(directory), schemaVersion: 1, migrationBlock: { m, _ in
            m.enumerateObjects(ofType: "Person") { old, new in
                guard let old, let new, let first = old["firstName"] as? String, let last = old["lastName"] as? String else { return }
                new["fullName"] = first + " " + last
            }
        }, objectTypes: [BenchPersonV2.self]))
        return { realm.objects(BenchPersonV2.self).reduce(0) { $0 + $1.fullName.utf8.count } }
    }

    public func migrateRename(in directory: String) throws -> () throws -> Int {
        let realm = try Realm(configuration: .init(fileURL: url(directory), schemaVersion: 2, migrationBlock: { m, _ in
            m.renameProperty(onType: "Person", from: "age", to: "yearsSinceBirth")
        }, objectTypes: [BenchPersonV3.self]))
        return { realm.objects(BenchPersonV3.self).sum(ofProperty: "yearsSinceBirth") }
    }

    public func migrateRetype(in directory: String) throws -> () throws -> Int {
        let realm = try Realm(configuration: .init(fileURL: url(directory), schemaVersion: 3, migrationBlock: { m, _ in
            m.enumerateObjects(ofType: "Person") { old, new in
                guard let old, let new, let years = old["yearsSinceBirth"] as? Int else { return }
                new["yearsSinceBirth"] = String(years)
            }
        }, objectTypes: [BenchPersonV4.self]))
        return { realm.objects(BenchPersonV4.self).reduce(0) { $0 + $1.yearsSinceBirth.utf8.count } }
    }
}

/// The Bench's model with lastName indexed (the same schema type, so opening builds the index).
public final class BenchPersonIndexed: Object {
    @Persisted(primaryKey: true) public var id: Int
    @Persisted public var firstName = ""
    @Persisted(indexed: true) public var lastName = ""
    @Persisted public var age = 0

    public override class func className() -> String { "Person" }
}

extension StrataObjectPeer: IndexingBenchEngine {
    public func addLastNameIndex(in directory: String, from original: String) throws -> Double {
        try copyDatabase(from: original, to: directory)
        let start = now()
        let config = Realm.Configuration(fileURL: URL(fileURLWithPath: directory + "/strata.realm"), objectTypes: [BenchPersonIndexed.self])
        configuration = config
        realm = try Realm(configuration: config)
        return now() - start
    }

    public func queryAgesByLastName(_ names: [[UInt8]]) throws -> Int {
        let people = try open().objects(BenchPersonIndexed.self)
        var sum = 0
        for name in names {
            let s = String(decoding: name, as: UTF8.self)
            for p in people.where({ $0.lastName == s }) { sum &+= p.age }
        }
        return sum
    }
}
