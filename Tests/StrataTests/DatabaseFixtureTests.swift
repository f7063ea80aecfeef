import Engine
import Foundation
import Testing
import TestSupport

@testable import Strata

/// The models of `Tests/Fixtures/database-v1`: every kind of value, optionals, a link and lists.
final class FixtureItem: Object {
    @Persisted(primaryKey: true) var id: Int
    @Persisted var name = ""
    @Persisted var count: Int?
    @Persisted var flag = false
    @Persisted var ratio = 0.0
    @Persisted var small: Float = 0
    @Persisted var when = Date(timeIntervalSince1970: 0)
    @Persisted var blob = Data()
    @Persisted var uuid: UUID?
    @Persisted var oid: ObjectId?
    @Persisted var price: Decimal128?
    @Persisted var note: String?
    @Persisted var scores: List<Int>
    @Persisted var any: AnyRealmValue
    @Persisted var tag: FixtureTag?
}

final class FixtureTag: Object {
    @Persisted var label = ""
}

/// A database written by a release before record format 2 (every record in format 1, types without
/// `recordFormat`) opens, reads as it was written, and has its records upgraded to format 2 by the background
/// migrator. `Tests/Fixtures/database-v1` holds the files byte for byte; `writeFixture` made them.
@Suite struct DatabaseFixtureTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures")

    static func expected(_ i: Int) -> (name: String, count: Int?, flag: Bool, ratio: Double, small: Float, when: Date, blob: Data, note: String?) {
        let name = i == 3 ? "" : "item \(i) ✓"
        let count: Int? = i % 3 == 0 ? nil : i * 1_000_003
        let when = Date(timeIntervalSince1970: 1_700_000_000 + Double(i))
        let blob = Data((0..<UInt8(i % 7)).map { $0 &* 31 })
        let note: String? = i % 4 == 0 ? nil : String(repeating: "n", count: i * 13)
        return (name, count, i % 2 == 0, Double(i) / 4, Float(i) / 2, when, blob, note)
    }
    static let count = 40

    static func configuration(_ dir: String) -> Realm.Configuration {
        var c = Realm.Configuration(fileURL: URL(fileURLWithPath: dir), objectTypes: [FixtureItem.self, FixtureTag.self])
        c.backgroundMigration = false
        return c
    }

    /// The fixtures' objects: three tags and `count` items of every kind of value.
    static func fill(_ realm: Realm) throws {
    try realm.write {
        let tags = (0..<3).map { i in realm.create(FixtureTag.self, value: ["label": "tag \(i)"]) }
        for i in 0..<Self.count {
            let e = Self.expected(i)
            let item = FixtureItem()
            item.id = i
            item.name = e.name
            item.count = e.count
            item.flag = e.flag
            item.ratio = e.ratio
            item.small = e.small
            item.when = e.when
            item.blob = e.blob
            item.uuid = i % 5 == 0 ? nil : UUID(uuid: (UInt8(i), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))
            item.oid = i % 5 == 1 ? nil : try ObjectId(string: String(format: "%024x", i))
            item.price = i % 2 == 0 ? nil : try Decimal128(string: "\(i).25")
            item.note = e.note
            item.scores.append(objectsIn: (0..<(i % 4)).map { $0 * i })
            item.any = i % 3 == 0 ? .string("any \(i)") : i % 3 == 1 ? .int(i) : .none
            item.tag = i % 4 == 3 ? nil : tags[i % 3]
            realm.add(item)
        }
    }
    }

    /// Writes the fixture: objects through this release, then every record rewritten in format 1 and the types'
    /// `recordFormat` removed, as an earlier release left them. Run with STRATA_WRITE_FIXTURES=1.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["STRATA_WRITE_FIXTURES"] == "1"))
    func writeFixture() throws {
        let target = Self.fixtures.appendingPathComponent("database-v1").path
        TemporaryDirectory.remove(target)
        do {
            let realm = try Realm(configuration: Self.configuration(target))
            try Self.fill(realm)
            let shared = realm.core.shared
            let tx = try shared.database.beginWrite()
            var schema = try #require(shared.storedSchema.withLock { $0 })
            for (i, t) in schema.types.enumerated() {
                let layouts = RecordLayouts(partition: t.partition, in: schema)
                var rewrites: [([UInt8], [UInt8])] = []
                try tx.snapshot.scan(t.partition) { k, v in
                    let record = try ObjectRecord.decodeAll(v, layouts: layouts)
                    rewrites.append(([UInt8](k), ObjectRecord.encode(schemaVersion: record.schemaVersion, fields: record.fields.map { ($0.id, $0.value) })))
                    return true
                }
                for (k, v) in rewrites { try tx.put(k, v, in: t.partition) }
                schema.types[i].recordFormat = nil
            }
            try tx.put(StoredSchema.schemaKey, schema.encoded(), in: StoredSchema.metadataPartition)
            try tx.commit()
        }
    }

    /// Writes `database-v3`: the same objects in this release's formats (segment format 2 with key filters,
    /// manifest format 3 with the database's identity, record format 3, a log with the identity and one commit
    /// to replay). Run with STRATA_WRITE_FIXTURES=1 when a format version changes on purpose (`database-v2` is
    /// the same written by the release before record format 3).
    @Test(.enabled(if: ProcessInfo.processInfo.environment["STRATA_WRITE_FIXTURES"] == "1"))
    func writeCurrentFixture() throws {
        let target = Self.fixtures.appendingPathComponent("database-v3").path
        TemporaryDirectory.remove(target)
        let dir = try TemporaryDirectory()
        let path = dir.child("db")
        let realm = try Realm(configuration: Self.configuration(path))
        try Self.fill(realm)
        // The segments hold item 1 with another name; a last commit that only the log holds gives its name back
        // (the files are copied while the database is open, as after a crash): a fixture that did not replay
        // its log would read the wrong name.
        try realm.write { realm.object(ofType: FixtureItem.self, forPrimaryKey: 1)!.name = "only in the segments" }
        try realm.core.shared.database.flush()
        try realm.write { realm.object(ofType: FixtureItem.self, forPrimaryKey: 1)!.name = Self.expected(1).name }
        try FileManager.default.copyItem(atPath: path, toPath: target)
    }

    /// Copies the fixture into a temporary directory (the test must not change the committed files).
    static func copy(_ name: String, to dir: TemporaryDirectory) throws -> String {
        let target = dir.child(name)
        try FileManager.default.copyItem(atPath: fixtures.appendingPathComponent(name).path, toPath: target)
        return target
    }

    func rawFormats(_ realm: Realm, _ type: String) throws -> [UInt8] {
        let shared = realm.core.shared
        let t = try #require(shared.storedSchema.withLock { $0?.type(named: type) })
        var formats: [UInt8] = []
        try shared.database.snapshot().scan(t.partition) { _, v in
            formats.append(v.first ?? 0)
            return true
        }
        return formats
    }

    func checkValues(_ realm: Realm) throws {
        let items = realm.objects(FixtureItem.self).sorted(by: \.id)
        #expect(items.count == Self.count)
        for (i, item) in items.enumerated() {
            let e = Self.expected(i)
            #expect(item.id == i)
            #expect(item.name == e.name, "item \(i)")
            #expect(item.count == e.count, "item \(i)")
            #expect(item.flag == e.flag, "item \(i)")
            #expect(item.ratio == e.ratio, "item \(i)")
            #expect(item.small == e.small, "item \(i)")
            #expect(item.when == e.when, "item \(i)")
            #expect(item.blob == e.blob, "item \(i)")
            #expect(item.uuid == (i % 5 == 0 ? nil : UUID(uuid: (UInt8(i), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))), "item \(i)")
            #expect(item.oid == (i % 5 == 1 ? nil : try ObjectId(string: String(format: "%024x", i))), "item \(i)")
            #expect(item.price == (i % 2 == 0 ? nil : try Decimal128(string: "\(i).25")), "item \(i)")
            #expect(item.note == e.note, "item \(i)")
            #expect(Array(item.scores) == (0..<(i % 4)).map { $0 * i }, "item \(i)")
            #expect(item.any == (i % 3 == 0 ? .string("any \(i)") : i % 3 == 1 ? .int(i) : .none), "item \(i)")
            #expect(item.tag?.label == (i % 4 == 3 ? nil : "tag \(i % 3)"), "item \(i)")
        }
        let flagged = realm.objects(FixtureItem.self).where { $0.flag == true && $0.ratio > 2.0 }.count
        let flaggedExpected = (0..<Self.count).filter { (i: Int) -> Bool in i % 2 == 0 && Double(i) / 4 > 2 }.count
        #expect(flagged == flaggedExpected)
        #expect(realm.objects(FixtureItem.self).filter("name BEGINSWITH 'item 1'").count == (0..<Self.count).filter { "item \($0) ✓".hasPrefix("item 1") }.count)
        #expect(realm.object(ofType: FixtureItem.self, forPrimaryKey: 17)?.name == "item 17 ✓")
    }

    @Test func aFormat1DatabaseOpensReadsAndIsUpgradedByTheMigrator() throws {
        let dir = try TemporaryDirectory()
        let path = try Self.copy("database-v1", to: dir)
        do {
            let realm = try Realm(configuration: Self.configuration(path))
            // As the earlier release wrote it: every record in format 1, read as written.
            #expect(try rawFormats(realm, "FixtureItem").allSatisfy { $0 == ObjectRecord.format })
            #expect(try rawFormats(realm, "FixtureItem").count == Self.count)
            try checkValues(realm)
            #expect(Set(realm.migrationProgress.map { $0.objectType }) == ["FixtureItem", "FixtureTag"])
            try realm.finishMigrations()
            #expect(realm.migrationProgress.allSatisfy { $0.isFinished })
            for type in ["FixtureItem", "FixtureTag"] {
                #expect(try rawFormats(realm, type).allSatisfy { $0 == RecordLayout.format }, "\(type)")
                #expect(realm.core.shared.storedSchema.withLock { $0?.type(named: type)?.recordFormat } == RecordLayout.storedFormat)
            }
            try checkValues(realm)
            try realm.write { realm.object(ofType: FixtureItem.self, forPrimaryKey: 5)!.name = "changed" }
        }
        // Reopened: nothing left to upgrade, the same values.
        let realm = try Realm(configuration: Self.configuration(path))
        #expect(realm.migrationProgress.isEmpty)
        #expect(realm.object(ofType: FixtureItem.self, forPrimaryKey: 5)?.name == "changed")
        try realm.write { realm.object(ofType: FixtureItem.self, forPrimaryKey: 5)!.name = Self.expected(5).name }
        try checkValues(realm)
    }

    /// Files this release writes, kept byte for byte: they must open and read as written by every later
    /// release (a format change that breaks them fails here), and they are in the formats named.
    @Test(arguments: ["database-v2", "database-v3"])
    func aFixtureOfTheCurrentFilesOpensAndReads(_ name: String) throws {
        let source = Self.fixtures.appendingPathComponent(name)
        let names = try FileManager.default.contentsOfDirectory(atPath: source.path)
        let segments = names.filter { $0.hasSuffix(".seg") }
        #expect(!segments.isEmpty && names.contains { $0.hasPrefix("MANIFEST-") })
        // The log holds a commit to replay, not only its 16-byte header.
        let logs = try names.filter { $0.hasSuffix(".log") }.map { try Data(contentsOf: source.appendingPathComponent($0)).count }
        #expect(logs.contains { $0 > 16 }, "\(logs)")
        for name in segments {
            // The segment header's format version (u16 after the 8-byte magic) is 2: blocks, index and key filter.
            let bytes = try Data(contentsOf: source.appendingPathComponent(name))
            #expect(bytes.count > 10 && bytes[8] == 2 && bytes[9] == 0, "\(name)")
        }
        let dir = try TemporaryDirectory()
        let path = try Self.copy(name, to: dir)
        let realm = try Realm(configuration: Self.configuration(path))
        if name == "database-v2" {
            // Record format 2 (dates as seconds since 1970) is read as it is and rewritten in format 3 by the
            // background migrator.
            #expect(try rawFormats(realm, "FixtureItem").allSatisfy { $0 == RecordLayout.legacyFormat })
            try checkValues(realm)
            #expect(Set(realm.migrationProgress.map { $0.objectType }) == ["FixtureItem", "FixtureTag"])
            try realm.finishMigrations()
            #expect(realm.migrationProgress.allSatisfy { $0.isFinished })
        } else {
            #expect(realm.migrationProgress.isEmpty)
        }
        #expect(try rawFormats(realm, "FixtureItem").allSatisfy { $0 == RecordLayout.format })
        try checkValues(realm)
    }
}
