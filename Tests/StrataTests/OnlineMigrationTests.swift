import Engine
import Foundation
@testable import Strata
import Testing
import TestSupport

/// Versions of one model: v2 combines the names into `fullName` (a transform) and renames `age`;
/// v3 marks `fullName` (a transform whose effect shows if it ran twice) and replaces `city` by its length.
enum O1 {
    final class Person: Object {
        @Persisted(primaryKey: true) var id: Int
        @Persisted var firstName = ""
        @Persisted var lastName = ""
        @Persisted var age = 0
        @Persisted var city = ""
    }
}

enum O2 {
    final class Person: Object {
        @Persisted(primaryKey: true) var id: Int
        @Persisted var fullName = ""
        @Persisted var years = 0
        @Persisted var city = ""
    }
}

enum O3 {
    final class Person: Object {
        @Persisted(primaryKey: true) var id: Int
        @Persisted var fullName = ""
        @Persisted var years = 0
        @Persisted var cityLength = -1
    }
}

/// v4 adds `ageText`, computed from `years` (read from the new object, as the property was renamed at v2),
/// and `email` with a declared default.
enum O4 {
    final class Person: Object {
        @Persisted(primaryKey: true) var id: Int
        @Persisted var fullName = ""
        @Persisted var years = 0
        @Persisted var cityLength = -1
        @Persisted var ageText = ""
        @Persisted var email = "none"
    }
}

/// v5 removes `cityLength` and adds an optional `nickname`, the first word of `fullName`.
enum O5 {
    final class Person: Object {
        @Persisted(primaryKey: true) var id: Int
        @Persisted var fullName = ""
        @Persisted var years = 0
        @Persisted var ageText = ""
        @Persisted var email = "none"
        @Persisted var nickname: String?
    }
}

/// A pet that no migration touches: it stays readable and writable while people migrate.
final class OPet: Object {
    @Persisted(primaryKey: true) var name = ""
    @Persisted var legs = 4
}

/// The migration block of the code at `version`, written as Realm asks (cumulative: every step from `old` on).
func onlineBlock(_ m: Migration, _ old: UInt64, version: UInt64) {
    if old < 2 {
        m.renameProperty(onType: "Person", from: "age", to: "years")
        m.transformObjects(ofType: "Person") { o, n in
            n["fullName"] = "\(o["firstName"] as? String ?? "?") \(o["lastName"] as? String ?? "?")"
        }
    }
    if old < 3 && version >= 3 {
        m.transformObjects(ofType: "Person") { o, n in
            n["fullName"] = (n["fullName"] as? String ?? "") + "*"
            if version < 5 { n["cityLength"] = (o["city"] as? String ?? "").count }
        }
    }
    if old < 4 && version >= 4 {
        m.transformObjects(ofType: "Person") { _, n in n["ageText"] = "\(n["years"] as? Int ?? -1) years" }
    }
    if old < 5 && version >= 5 {
        m.transformObjects(ofType: "Person") { _, n in
            let name = n["fullName"] as? String ?? ""
            n["nickname"] = name.contains(" ") ? String(name.prefix { $0 != " " }) : nil
        }
    }
}

/// One object as a tuple that compares across versions and files.
struct Row: Equatable, CustomStringConvertible {
    var id: Int
    var fullName: String
    var years: Int
    var extra: String
    var description: String { "\(id): \(fullName), \(years), \(extra)" }
}

func onlineConfig(_ url: URL, version: UInt64, mode: Realm.Configuration.MigrationMode, background: Bool = false) -> Realm.Configuration {
    let types: [Object.Type] = switch version {
    case 1: [O1.Person.self, OPet.self]
    case 2: [O2.Person.self, OPet.self]
    case 3: [O3.Person.self, OPet.self]
    case 4: [O4.Person.self, OPet.self]
    default: [O5.Person.self, OPet.self]
    }
    var config = Realm.Configuration(fileURL: url, schemaVersion: version, migrationBlock: { m, old in onlineBlock(m, old, version: version) }, objectTypes: types)
    config.migrationMode = mode
    config.backgroundMigration = background
    // Migrations inside open spill their transaction every few objects: each spans several batches.
    config.migrationSpillBytes = 700
    return config
}

func rows(_ realm: Realm, version: UInt64) -> [Row] {
    switch version {
    case 1: realm.objects(O1.Person.self).sorted(byKeyPath: "id").map { Row(id: $0.id, fullName: "\($0.firstName) \($0.lastName)", years: $0.age, extra: $0.city) }
    case 2: realm.objects(O2.Person.self).sorted(byKeyPath: "id").map { Row(id: $0.id, fullName: $0.fullName, years: $0.years, extra: $0.city) }
    case 3: realm.objects(O3.Person.self).sorted(byKeyPath: "id").map { Row(id: $0.id, fullName: $0.fullName, years: $0.years, extra: "\($0.cityLength)") }
    case 4:
        realm.objects(O4.Person.self).sorted(byKeyPath: "id").map {
            Row(id: $0.id, fullName: $0.fullName, years: $0.years, extra: "\($0.cityLength)|\($0.ageText)|\($0.email)")
        }
    default:
        realm.objects(O5.Person.self).sorted(byKeyPath: "id").map {
            Row(id: $0.id, fullName: $0.fullName, years: $0.years, extra: "\($0.ageText)|\($0.email)|\($0.nickname ?? "nil")")
        }
    }
}

/// What queries, sorts and aggregates say about the people of a version: compared between the two modes.
func queryFacts(_ realm: Realm, version: UInt64) -> [String] {
    switch version {
    case 2:
        let people = realm.objects(O2.Person.self)
        return [
            "\(people.filter("years > 50").count)",
            "\(people.where { $0.fullName.starts(with: "a") }.count)",
            people.sorted(byKeyPath: "fullName").prefix(5).map(\.fullName).joined(separator: ","),
            "\(people.sum(ofProperty: "years") as Int)",
            "\(people.max(ofProperty: "years") as Int? ?? -1)",
        ]
    case 3:
        let people = realm.objects(O3.Person.self)
        return [
            "\(people.filter("cityLength >= 5 AND years < 30").count)",
            "\(people.filter("fullName ENDSWITH '*'").count)",
            people.sorted(byKeyPath: "cityLength", ascending: false).prefix(5).map { "\($0.id)" }.joined(separator: ","),
            "\(people.sum(ofProperty: "cityLength") as Int)",
        ]
    case 4:
        let people = realm.objects(O4.Person.self)
        return [
            "\(people.filter("ageText BEGINSWITH '1'").count)",
            people.sorted(by: [SortDescriptor(keyPath: "ageText"), SortDescriptor(keyPath: "id", ascending: false)]).prefix(5).map { "\($0.id)" }.joined(separator: ","),
            "\(people.max(ofProperty: "cityLength") as Int? ?? -1)",
        ]
    case 5:
        let people = realm.objects(O5.Person.self)
        return [
            "\(people.filter("nickname == nil").count)",
            "\(people.where { $0.nickname.contains("a") }.count)",
            people.distinct(by: ["email"]).map(\.email).joined(separator: ","),
            "\(people.average(ofProperty: "years") as Double? ?? -1)",
        ]
    default:
        return []
    }
}

/// Compares two files' objects, naming the first difference only.
func expectSameRows(_ a: [Row], _ b: [Row], _ context: String, sourceLocation: SourceLocation = #_sourceLocation) {
    guard a != b else { return }
    let i = (0..<min(a.count, b.count)).first { a[$0] != b[$0] } ?? min(a.count, b.count)
    let left = i < a.count ? "\(a[i])" : "nothing"
    let right = i < b.count ? "\(b[i])" : "nothing"
    Issue.record("\(context): \(a.count) vs \(b.count) objects; first difference at \(i): online \(left), blocking \(right)", sourceLocation: sourceLocation)
}

func randomWord(_ rng: inout SplitMix64, _ length: Int) -> String {
    String((0..<length).map { _ in Character(UnicodeScalar(UInt8(97 + rng.next() % 26))) })
}

@Suite struct OnlineMigrationTests {
    func populate(_ url: URL, count: Int, seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let realm = try Realm(configuration: onlineConfig(url, version: 1, mode: .online))
        try realm.write {
            for i in 0..<count {
                realm.create(O1.Person.self, value: [
                    "id": i, "firstName": randomWord(&rng, 1 + Int(rng.next() % 6)), "lastName": randomWord(&rng, 1 + Int(rng.next() % 8)),
                    "age": Int(rng.next() % 100), "city": randomWord(&rng, Int(rng.next() % 9)),
                ])
            }
            realm.create(OPet.self, value: ["name": "Rex", "legs": 3])
        }
    }

    func storedPending(_ realm: Realm) -> [StoredSchema.PendingMigration] {
        realm.core.shared.storedSchema.withLock { $0?.pending } ?? []
    }

    @Test func openReturnsAtOnceAndReadsPassThroughTheTransforms() throws {
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("people.realm"))
        try populate(url, count: 500, seed: 1)
        let expected: [Row]
        do {
            let blockingURL = URL(fileURLWithPath: dir.child("blocking.realm"))
            try populate(blockingURL, count: 500, seed: 1)
            let blocking = try Realm(configuration: onlineConfig(blockingURL, version: 2, mode: .blocking))
            expected = rows(blocking, version: 2)
            #expect(blocking.migrationProgress.isEmpty)
        }
        let realm = try Realm(configuration: onlineConfig(url, version: 2, mode: .online))
        // Nothing was rewritten inside open: the type is pending and every record still has version 1.
        #expect(storedPending(realm).map(\.typeName) == ["Person"])
        #expect(realm.migrationProgress.map(\.isFinished) == [false])
        let first = try #require(realm.object(ofType: O2.Person.self, forPrimaryKey: 0))
        #expect(first.fullName == expected[0].fullName)
        #expect(rows(realm, version: 2) == expected)
        #expect(realm.objects(OPet.self).first?.legs == 3)
        // Writes to a pending object start from its transformed values.
        try realm.write { first.years += 1 }
        #expect(first.fullName == expected[0].fullName)
        #expect(first.years == expected[0].years + 1)
        try realm.finishMigrations()
        #expect(storedPending(realm).isEmpty)
        #expect(realm.migrationProgress.allSatisfy { $0.isFinished })
        #expect(realm.migrationProgress.first?.objectsTotal == 500)
        var after = expected
        after[0].years += 1
        #expect(rows(realm, version: 2) == after)
    }

    @Test func performMigrationLeavesNothingPending() throws {
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("people.realm"))
        try populate(url, count: 300, seed: 4)
        try Realm.performMigration(for: onlineConfig(url, version: 2, mode: .online))
        #expect(try schemaVersionAtURL(url) == 2)
        let realm = try Realm(configuration: onlineConfig(url, version: 2, mode: .online))
        #expect(storedPending(realm).isEmpty)
        #expect(realm.objects(O2.Person.self).count == 300)
    }

    @Test func theBackgroundMigratorFinishesAndReportsProgress() async throws {
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("people.realm"))
        try populate(url, count: 3000, seed: 2)
        let realm = try Realm(configuration: onlineConfig(url, version: 2, mode: .online, background: true))
        realm.core.shared.migrator.batchRecords = 100
        var seen: [[MigrationProgress]] = []
        for await p in realm.migrationProgressUpdates { seen.append(p) }
        try await realm.waitForMigrations()
        #expect(seen.last?.first?.isFinished == true)
        #expect(seen.last?.first?.objectsMigrated == 3000)
        #expect(storedPending(realm).isEmpty)
        #expect(rows(realm, version: 2).allSatisfy { !$0.fullName.isEmpty && $0.fullName.contains(" ") })
    }

    /// The rewrite flushes the memtable between batches once it holds `flushBytes`: a large type's rewrite
    /// holds about a batch in memory, not a memtable full of batches. Every object reads migrated after.
    @Test func theRewriteFlushesBetweenBatches() throws {
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("people.realm"))
        try populate(url, count: 2000, seed: 5)
        let realm = try Realm(configuration: onlineConfig(url, version: 2, mode: .online))
        let migrator = realm.core.shared.migrator
        let database = realm.core.shared.database
        migrator.batchRecords = 200
        migrator.flushBytes = 4096
        let flushes = database.statistics().flushes
        while try !migrator.step(realm.core.shared, "Person") {
            #expect(database.statistics().memtableBytes < 4096, "flushed after the batch")
        }
        #expect(database.statistics().flushes >= flushes + 9)
        #expect(storedPending(realm).isEmpty)
        #expect(rows(realm, version: 2).count == 2000)
        #expect(rows(realm, version: 2).allSatisfy { $0.fullName.contains(" ") })
    }

    @Test func aReopenResumesAndTransformsEveryObjectExactlyOnce() throws {
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("people.realm"))
        try populate(url, count: 400, seed: 3)
        do {
            let realm = try Realm(configuration: onlineConfig(url, version: 3, mode: .online))
            realm.core.shared.migrator.batchRecords = 50
            try realm.core.shared.migrator.step(realm.core.shared, "Person")
            try realm.core.shared.migrator.step(realm.core.shared, "Person")
        }
        // A new "process": the file's SharedFile was released, so the transforms come from the block again.
        let realm = try Realm(configuration: onlineConfig(url, version: 3, mode: .online))
        #expect(storedPending(realm).map(\.fromVersion) == [1])
        #expect(rows(realm, version: 3).allSatisfy { $0.fullName.hasSuffix("*") && !$0.fullName.hasSuffix("**") })
        try realm.finishMigrations()
        #expect(rows(realm, version: 3).allSatisfy { $0.fullName.hasSuffix("*") && !$0.fullName.hasSuffix("**") })
        #expect(storedPending(realm).isEmpty)
    }

    @Test func aMistakeInATransformIsReportedAtOpenAndNothingIsWritten() throws {
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("people.realm"))
        try populate(url, count: 10, seed: 4)
        var config = onlineConfig(url, version: 2, mode: .online)
        config.migrationBlock = { m, _ in
            m.renameProperty(onType: "Person", from: "age", to: "years")
            m.transformObjects(ofType: "Person") { _, n in n["fullNam"] = "x" }
        }
        #expect {
            _ = try Realm(configuration: config)
        } throws: { error in
            "\(error)".contains("fullNam") && "\(error)".contains("Person") && "\(error)".contains("nothing was written")
        }
        #expect(try schemaVersionAtURL(url) == 1)
    }

    @Test func aPendingMigrationNeedsItsTransformsOnTheNextOpen() throws {
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("people.realm"))
        try populate(url, count: 10, seed: 5)
        do { _ = try Realm(configuration: onlineConfig(url, version: 2, mode: .online)) }
        var config = onlineConfig(url, version: 2, mode: .online)
        config.migrationBlock = nil
        #expect {
            _ = try Realm(configuration: config)
        } throws: { error in
            "\(error)".contains("transformObjects(ofType: \"Person\")") && "\(error)".contains("schema version 1")
        }
    }

    @Test func enumerateObjectsOnAPendingTypeRunsInsideOpenOnTopOfTheTransforms() throws {
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("people.realm"))
        try populate(url, count: 50, seed: 6)
        do { _ = try Realm(configuration: onlineConfig(url, version: 2, mode: .online)) }
        var config = onlineConfig(url, version: 3, mode: .online)
        config.migrationBlock = { m, old in
            if old < 2 {
                m.renameProperty(onType: "Person", from: "age", to: "years")
                m.transformObjects(ofType: "Person") { o, n in
                    n["fullName"] = "\(o["firstName"] as? String ?? "?") \(o["lastName"] as? String ?? "?")"
                }
            }
            if old < 3 {
                m.enumerateObjects(ofType: "Person") { _, n in
                    n?["cityLength"] = 7
                    n?["fullName"] = (n?["fullName"] as? String ?? "") + "*"
                }
            }
        }
        let realm = try Realm(configuration: config)
        #expect(storedPending(realm).isEmpty)
        let all = rows(realm, version: 3)
        #expect(all.count == 50)
        #expect(all.allSatisfy { $0.extra == "7" && $0.fullName.hasSuffix("*") && $0.fullName.contains(" ") })
    }

    @Test func aFullDiskStopsTheMigratorWithAClearErrorAndTheNextOpenResumes() throws {
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("people.realm"))
        try populate(url, count: 2000, seed: 7)
        let faulty = FaultyFileSystem(base: PosixFileSystem())
        var config = onlineConfig(url, version: 3, mode: .online)
        config.fileSystem = faulty
        let expected: [Row]
        do {
            let realm = try Realm(configuration: config)
            expected = rows(realm, version: 3)
            realm.core.shared.migrator.batchRecords = 300
            faulty.addFault(.failAppend(at: faulty.appendCount + 3, errno: ENOSPC))
            #expect {
                try realm.finishMigrations()
            } throws: { error in
                "\(error)".contains("No space left on device")
            }
            // Reads go on through the transforms, and agree with what they said before.
            #expect(rows(realm, version: 3) == expected)
            #expect(realm.migrationProgress.first.map { !$0.isFinished && $0.objectsMigrated > 0 } == true)
        }
        faulty.clearFaults()
        let realm = try Realm(configuration: config)
        #expect(rows(realm, version: 3) == expected)
        try realm.finishMigrations()
        #expect(storedPending(realm).isEmpty)
        #expect(rows(realm, version: 3) == expected)
        #expect(expected.allSatisfy { $0.fullName.hasSuffix("*") && !$0.fullName.hasSuffix("**") })
    }

    /// Random data and writes, through a random chain of versions up to 5, in `.online` mode (now and then
    /// `.blocking`) with the migrator paused at
    /// random points (and the file sometimes closed and reopened mid-migration) and in `.blocking` mode:
    /// after every step, every object and every query agree.
    @Test(arguments: Seeds.environmentOr([11, 12, 13, 14, 15, 16]))
    func onlineAgreesWithBlocking(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let dir = try TemporaryDirectory()
        let onlineURL = URL(fileURLWithPath: dir.child("online.realm"))
        let blockingURL = URL(fileURLWithPath: dir.child("blocking.realm"))
        let count = 50 + Int(rng.next() % UInt64(200 * Seeds.scale))
        try populate(onlineURL, count: count, seed: seed)
        try populate(blockingURL, count: count, seed: seed)
        var nextId = count
        // A random chain of versions from 2...5 for the online file (jumps skip versions; pending generations
        // pile up when a version opens before the previous migration finished), ending at 5. The blocking
        // file walks every version one by one: jumping and stepping must give the same data.
        var versions: [UInt64] = (2...4).filter { _ in rng.next() % 2 == 0 }
        versions.append(5)
        var blockingVersion: UInt64 = 1
        var onlineRealm: Realm? = nil
        for version in versions {
            onlineRealm = nil
            // The blocking file walks every version, as the online one's data must match at each.
            var blocking: Realm? = nil
            for v in (blockingVersion + 1)...version { blocking = try Realm(configuration: onlineConfig(blockingURL, version: v, mode: .blocking)) }
            blockingVersion = version
            let reference = try #require(blocking)
            // Now and then a step of the "online" file is blocking too: it must absorb pending generations.
            let mode: Realm.Configuration.MigrationMode = rng.next() % 5 == 0 ? .blocking : .online
            var online: Realm? = try Realm(configuration: onlineConfig(onlineURL, version: version, mode: mode))
            for round in 0..<4 {
                try onlineRound(online!, reference, version: version, rng: &rng, nextId: &nextId, context: "seed \(seed) v\(version) round \(round)")
                if rng.next() % 4 == 0 {
                    // Close mid-migration and reopen: a new process reading the same file (the SharedFile goes
                    // when its last Realm does).
                    let weakFile = WeakBox(online!.core.shared)
                    online = nil
                    #expect(weakFile.value == nil, "the file stayed open")
                    online = try Realm(configuration: onlineConfig(onlineURL, version: version, mode: .online))
                }
            }
            expectSameRows(rows(online!, version: version), rows(reference, version: version), "seed \(seed) v\(version) end")
            onlineRealm = online
            online = nil
        }
        let online = try #require(onlineRealm)
        try online.finishMigrations()
        #expect(storedPending(online).isEmpty)
        expectSameRows(rows(online, version: 5), rows(try Realm(configuration: onlineConfig(blockingURL, version: 5, mode: .blocking)), version: 5), "seed \(seed) after finishing")
        #expect(rows(online, version: 5).allSatisfy { !$0.fullName.hasSuffix("**") })
    }

    /// Some migrator batches, a comparison of every object and query, and the same random writes to both.
    func onlineRound(_ online: Realm, _ reference: Realm, version: UInt64, rng: inout SplitMix64, nextId: inout Int, context: String) throws {
        let migrator = online.core.shared.migrator
        migrator.batchRecords = 1 + Int(rng.next() % 12)
        for _ in 0..<Int(rng.next() % 3) { try migrator.step(online.core.shared, "Person") }
        expectSameRows(rows(online, version: version), rows(reference, version: version), context)
        #expect(queryFacts(online, version: version) == queryFacts(reference, version: version), "\(context)")
        let ops = (0..<Int(rng.next() % 6)).map { _ in (kind: rng.next() % 3, id: Int(rng.next() % UInt64(nextId + 1)), n: Int(rng.next() % 90)) }
        let newId = nextId
        for realm in [online, reference] {
            try realm.write {
                for op in ops { apply(op, realm, version: version, newId: newId) }
            }
        }
        nextId += ops.filter { $0.kind == 2 }.count
    }

    /// One random write: update an object's years, delete one, or add a new one (ids beyond the first set).
    func apply(_ op: (kind: UInt64, id: Int, n: Int), _ realm: Realm, version: UInt64, newId: Int) {
        let person: Object? = switch version {
        case 2: realm.object(ofType: O2.Person.self, forPrimaryKey: op.id)
        case 3: realm.object(ofType: O3.Person.self, forPrimaryKey: op.id)
        case 4: realm.object(ofType: O4.Person.self, forPrimaryKey: op.id)
        default: realm.object(ofType: O5.Person.self, forPrimaryKey: op.id)
        }
        switch op.kind {
        case 0: person?.setValue(op.n, forKey: "years")
        case 1: if let person { realm.delete(person) }
        default:
            var value: [String: Any] = ["id": newId, "fullName": "new \(op.n)", "years": op.n]
            switch version {
            case 2:
                value["city"] = "c\(op.n)"
                realm.create(O2.Person.self, value: value, update: .all)
            case 3:
                value["cityLength"] = op.n % 7
                realm.create(O3.Person.self, value: value, update: .all)
            case 4:
                value["cityLength"] = op.n % 7
                value["ageText"] = "\(op.n)"
                realm.create(O4.Person.self, value: value, update: .all)
            default:
                value["ageText"] = "\(op.n)"
                value["nickname"] = op.n % 2 == 0 ? "n\(op.n)" : nil
                realm.create(O5.Person.self, value: value, update: .all)
            }
        }
    }
}

final class WeakBox<T: AnyObject> {
    weak var value: T?
    init(_ value: T) { self.value = value }
}
