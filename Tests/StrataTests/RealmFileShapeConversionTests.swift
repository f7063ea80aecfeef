import Foundation
import RealmFile
import RealmFileTesting
@testable import Strata
import Testing
import TestSupport

enum UpgradedFileModels {
    final class Owner: Object {
        @Persisted var name = ""
        @Persisted var dogs: List<Dog>
        @Persisted var favorites: MutableSet<Dog>
        @Persisted var byName: Map<String, Dog?>
        @Persisted var best: Dog?
        override class func className() -> String { "Owner" }
    }
    final class Dog: Object {
        @Persisted var name = ""
        @Persisted var age: Int?
        @Persisted(originProperty: "dogs") var owners: LinkingObjects<Owner>
        override class func className() -> String { "Dog" }
    }

    final class Optionals: Object {
        @Persisted var ints: List<Int?>
        @Persisted var strings: MutableSet<String?>
        @Persisted var doubles: Map<String, Double?>
        @Persisted var dates: List<Date?>
        @Persisted var required: List<Int>
        override class func className() -> String { "Optionals" }
    }
    final class RequiredInts: Object {
        @Persisted var ints: List<Int>
        @Persisted var strings: MutableSet<String?>
        @Persisted var doubles: Map<String, Double?>
        @Persisted var dates: List<Date?>
        @Persisted var required: List<Int>
        override class func className() -> String { "Optionals" }
    }
    final class Stamp: Object {
        @Persisted var n = 0
        @Persisted var when = Date(timeIntervalSinceReferenceDate: 0)
        @Persisted var maybe: Date?
        override class func className() -> String { "Stamp" }
    }
}

/// Conversions of the shapes real users' files have, each verified and its full dump compared with the Realm
/// file (`RealmFileConversionCheck`): files realm-core upgraded across formats (link lists with spec type 13 and
/// key type 12, nodes without `AAAA`, short table tops), optional collections, extreme dates, random whole files,
/// and every Realm-written fixture in `../shared/realm-fixtures`.
@Suite struct RealmFileShapeConversionTests {
    /// `TEST_SEED` picks one seed; `STRATA_TEST_SCALE=N` converts N times as many files per seed.
    @Test(arguments: Seeds.environmentOr([11, 12]))
    func generatedFilesConvertVerifyAndDumpWhatTheyHold(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        for n in 0..<(4 * Seeds.scale) {
            let file = RealmFileGenerator.make(&rng, objects: 20)
            try RealmFileConversionCheck.convertAndCheck(file.bytes, "seed \(seed), file \(n) (\(file.writer.linkListShape), \(file.writer.nodeSignature))")
        }
    }

    /// An app that created its file before RealmSwift 10.49 and updated since: its `List<Dog>` has spec type 13 and
    /// key type 12. It converts, verifies, and reads through the app's own models, backlinks included.
    @Test(arguments: RealmFileWriter.LinkListShape.allCases)
    func aFileRealmCoreUpgradedWithListsOfObjectsOpensWithTheAppsModels(shape: RealmFileWriter.LinkListShape) throws {
        var writer = RealmFileWriter()
        writer.linkListShape = shape
        writer.formatVersion = shape == .legacy ? 23 : 24
        writer.nodeSignature = .capacity
        writer.schemaVersion = 3
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("default.realm"))
        try Data(writer.write(Self.ownersAndDogs())).write(to: url)
        try RealmFileConversionCheck.convertAndCheck(path: url.path, into: dir.child("checked.strata"), "\(shape)")
        let realm = try Realm(configuration: .init(fileURL: url, schemaVersion: 3, objectTypes: [UpgradedFileModels.Owner.self, UpgradedFileModels.Dog.self]))
        let owners = realm.objects(UpgradedFileModels.Owner.self).sorted(by: \.name)
        #expect(owners.count == 3)
        let rex = try #require(owners.first)
        #expect(rex.name == "Ann" && rex.dogs.map(\.name) == ["Rex", "Fido", "Rex"] && rex.favorites.count == 1)
        #expect(rex.byName["first"]??.name == "Rex" && rex.byName.keys.contains("none") && rex.best?.name == "Fido")
        let fido = try #require(realm.objects(UpgradedFileModels.Dog.self).where { $0.name == "Fido" }.first)
        #expect(fido.age == nil && Set(fido.owners.map(\.name)) == ["Ann", "Bob"])
    }

    static func ownersAndDogs() -> [RealmFileWriter.Table] {
        typealias P = RealmFileWriter.Property
        let dog = { (k: Int64) in RealmFileValue.link(RealmFileLink(table: 2, key: k)) }
        return [
            RealmFileWriter.Table(name: "Owner", properties: [
                P("name", .string), P("dogs", .object, collection: .list, target: 2), P("favorites", .object, collection: .set, target: 2),
                P("byName", .object, optional: true, collection: .map, target: 2), P("best", .object, optional: true, target: 2),
            ], objects: [
                (0, [.string("Ann"), .list([dog(0), dog(1), dog(0)]), .set([dog(0)]), .map([RealmFileMapEntry(key: "first", value: dog(0)), RealmFileMapEntry(key: "none", value: .null)]), dog(1)]),
                (1, [.string("Bob"), .list([dog(1)]), .set([]), .map([]), .null]),
                (5, [.string("Cy"), .list([]), .set([dog(0), dog(1)]), .map([]), dog(0)]),
            ]),
            RealmFileWriter.Table(name: "Dog", properties: [P("name", .string), P("age", .int, optional: true)], objects: [
                (0, [.string("Rex"), .int(3)]), (1, [.string("Fido"), .null]),
            ]),
        ]
    }

    static func optionals() -> [RealmFileWriter.Table] {
        typealias P = RealmFileWriter.Property
        let stamp = RealmFileTimestamp(seconds: 1_700_000_000, nanoseconds: 5)
        return [RealmFileWriter.Table(name: "Optionals", properties: [
            P("ints", .int, optional: true, collection: .list), P("strings", .string, optional: true, collection: .set),
            P("doubles", .double, optional: true, collection: .map), P("dates", .date, optional: true, collection: .list),
            P("required", .int, collection: .list),
        ], objects: [
            (0, [.list([.int(1), .null, .int(3)]), .set([.null, .string("a")]),
                 .map([RealmFileMapEntry(key: "x", value: .null), RealmFileMapEntry(key: "y", value: .double(2.5))]),
                 .list([.null, .timestamp(stamp)]), .list([.int(7)])]),
        ])]
    }

    /// `List<Int?>`, `MutableSet<String?>`, `Map<String, Double?>` and `List<Date?>` convert as optional
    /// collections: their nulls read as nil, the database verifies, and models declaring them open it as it is.
    @Test func M030_optionalCollectionsConvertAsOptionalAndMakingThemRequiredNeedsAMigration() throws {
        var writer = RealmFileWriter()
        writer.schemaVersion = 1
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("default.realm"))
        try Data(writer.write(Self.optionals())).write(to: url)
        try RealmFileConversionCheck.convertAndCheck(path: url.path, into: dir.child("checked.strata"), "optionals")
        let realm = try Realm(configuration: .init(fileURL: url, schemaVersion: 1, objectTypes: [UpgradedFileModels.Optionals.self]))
        let o = try #require(realm.objects(UpgradedFileModels.Optionals.self).first)
        #expect(Array(o.ints) == [1, nil, 3])
        #expect(Set(o.strings) == [nil, "a"])
        #expect(o.doubles["x"] == .some(nil) && o.doubles["y"] == 2.5)
        #expect(o.dates.first == .some(nil) && o.dates.count == 2 && Array(o.required) == [7])
        // Declared otherwise at the same version, RealmSwift asks for a migration: so does Strata.
        #expect { try Realm(configuration: .init(fileURL: url, schemaVersion: 1, objectTypes: [UpgradedFileModels.RequiredInts.self])) } throws: { error in
            (error as? Realm.Error)?.code == .schemaMismatch && "\(error)".contains("Property 'Optionals.ints' has been made required.")
        }
    }

    /// A Strata database's own `List<Int?>` holding nil verifies clean (before element optionality was recorded,
    /// `strata verify` called every such nil a problem).
    @Test func aNativeOptionalCollectionHoldingNilVerifies() throws {
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("native.strata"))
        do {
            let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [UpgradedFileModels.Optionals.self]))
            try realm.write {
                let o = UpgradedFileModels.Optionals()
                o.ints.append(objectsIn: [nil, 1])
                o.strings.insert(nil)
                o.doubles["none"] = .some(nil)
                o.dates.append(nil)
                realm.add(o)
            }
        }
        let inspector = try DatabaseInspector(path: url.path)
        defer { _ = try? inspector.close() }  // try?: a read-only inspector's close loses nothing.
        #expect(inspector.verify().isEmpty)
        let stored = try #require(inspector.schema?.type(named: "Optionals"))
        #expect(stored.properties.map(\.hasOptionalElements) == [true, true, true, true, false])
    }

    /// Element optionality through migrations: made required, a collection starts again empty (as realm-core's
    /// `make_property_required` re-creates the column) and the block copies what it keeps; made optional again, the
    /// block can write nils into it.
    @Test func M043_M042_collectionsMadeRequiredStartEmptyAndMadeOptionalTakeNil() throws {
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("optional.strata"))
        do {
            let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [UpgradedFileModels.Optionals.self]))
            try realm.write {
                let o = UpgradedFileModels.Optionals()
                o.ints.append(objectsIn: [1, nil, 3])
                realm.add(o)
            }
        }
        do {
            let realm = try Realm(configuration: .init(fileURL: url, schemaVersion: 1, migrationBlock: { migration, _ in
                migration.enumerateObjects(ofType: "Optionals") { old, new in
                    let kept = (old!["ints"] as! List<Int?>).compactMap { $0 }
                    #expect((new!["ints"] as! List<Int>).isEmpty, "the required list starts empty")
                    new!["ints"] = kept
                }
            }, objectTypes: [UpgradedFileModels.RequiredInts.self]))
            #expect(Array(try #require(realm.objects(UpgradedFileModels.RequiredInts.self).first).ints) == [1, 3])
        }
        do {
            let realm = try Realm(configuration: .init(fileURL: url, schemaVersion: 2, migrationBlock: { migration, _ in
                migration.enumerateObjects(ofType: "Optionals") { _, new in
                    new!["ints"] = [4, nil] as [Int?]
                    new!["doubles"] = ["none": nil, "one": 1.5] as [String: Double?]
                }
            }, objectTypes: [UpgradedFileModels.Optionals.self]))
            let o = try #require(realm.objects(UpgradedFileModels.Optionals.self).first)
            #expect(Array(o.ints) == [4, nil] && o.doubles["none"] == .some(nil) && o.doubles["one"] == 1.5)
        }
        let inspector = try DatabaseInspector(path: url.path)
        defer { _ = try? inspector.close() }  // try?: a read-only inspector's close loses nothing.
        #expect(inspector.verify().isEmpty)
    }

    /// A Realm file whose conversion would not verify (here a link to an object the file lacks, which no file
    /// realm-core wrote holds) is refused: nothing is put in place, the Realm file is as it was, and the error
    /// names what disagreed.
    @Test func aConversionThatFailsItsCheckLeavesNothingBehind() throws {
        var tables = Self.ownersAndDogs()
        tables[0].objects[1].values[4] = .link(RealmFileLink(table: 2, key: 99))
        var writer = RealmFileWriter()
        let bytes = writer.write(tables)
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("default.realm"))
        try Data(bytes).write(to: url)
        #expect { try Realm(configuration: .init(fileURL: url, objectTypes: [UpgradedFileModels.Owner.self, UpgradedFileModels.Dog.self])) } throws: { error in
            (error as? Realm.Error)?.code == .invalidDatabase && "\(error)".contains("best links to Dog 99, which does not exist")
                && "\(error)".contains("The Realm file was not changed")
        }
        #expect(!FileManager.default.fileExists(atPath: url.path + ".strata"))
        #expect(!FileManager.default.fileExists(atPath: url.path + ".strata.converting"))
        #expect(try Data(contentsOf: url) == Data(bytes))
    }

    /// The extreme timestamps (realm-core's own limits; Java's `Long.MIN_VALUE` and `Long.MAX_VALUE` milliseconds,
    /// which Realm's Java SDK writes for its extremes) convert to the `Date` RealmSwift's `RLMTimestampToNSDate`
    /// gives for them, bit for bit: nothing is clamped, so the record lists nothing.
    @Test func extremeTimestampsAreTheDatesRealmSwiftGives() throws {
        let stamps = RealmFileGenerator.Values.edgeTimestamps
        var writer = RealmFileWriter()
        let bytes = writer.write([RealmFileWriter.Table(
            name: "Stamp", properties: [.init("n", .int), .init("when", .date), .init("maybe", .date, optional: true)],
            objects: stamps.enumerated().map { (Int64($0.offset), [.int(Int64($0.offset)), .timestamp($0.element), .timestamp($0.element)]) })])
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("default.realm"))
        try Data(bytes).write(to: url)
        let report = try #require(try Realm.convertRealmFile(configuration: .init(fileURL: url, objectTypes: [UpgradedFileModels.Stamp.self])))
        #expect(report.narrowedValues.isEmpty)
        let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [UpgradedFileModels.Stamp.self]))
        for stamp in realm.objects(UpgradedFileModels.Stamp.self) {
            let t = stamps[stamp.n]
            let expected = Date(timeIntervalSinceReferenceDate: Double(t.seconds) - 978_307_200 + Double(t.nanoseconds) / 1_000_000_000)
            #expect(stamp.when.timeIntervalSinceReferenceDate.bitPattern == expected.timeIntervalSinceReferenceDate.bitPattern, "\(t)")
            #expect(stamp.maybe?.timeIntervalSinceReferenceDate.bitPattern == expected.timeIntervalSinceReferenceDate.bitPattern, "\(t)")
        }
        #expect(realm.objects(UpgradedFileModels.Stamp.self).count == stamps.count)
    }
}

/// Every Realm-written file in `../shared/realm-fixtures` that holds a readable format converts, passes
/// `strata verify`, and dumps what the reader reads from it.
@Suite(.enabled(if: SharedFixtures.realmFixturesPresent, "../shared/realm-fixtures is absent: the fixture conversions are skipped"))
struct RealmFixtureConversionTests {
    static let fixtures = [
        "format-24/all-types.realm", "format-24/all-types-compacted.realm", "format-24/all-types-encrypted.realm", "format-24/empty-v0.realm",
        "realm-core/test_upgrade_database_11.realm", "realm-core/test_upgrade_database_20.realm",
        "realm-core/test_upgrade_database_1000_22.realm", "realm-core/test_upgrade_database_4_22.realm",
        "realm-core/test_upgrade_database_1000_23.realm", "realm-core/test_upgrade_database_4_23.realm", "realm-core/sync-metadata-v6.realm",
        "realm-swift/file-format-version-21.realm",
    ] + (0...5).map { "realm-swift/migration-example-default-v\($0).realm" }

    @Test(arguments: fixtures)
    func everyFixtureConvertsVerifiesAndDumpsWhatItHolds(name: String) throws {
        let dir = try TemporaryDirectory()
        let key: [UInt8]? = name.hasSuffix("encrypted.realm") ? (0..<64).map { UInt8(0x10 + 3 * $0) } : nil
        let report = try RealmFileConversionCheck.convertAndCheck(
            path: SharedFixtures.realmFixture(name), encryptionKey: key, into: dir.child("converted.strata"), name)
        #expect(report.narrowedValues.isEmpty, "\(name): \(report.narrowedValues.prefix(3))")
        if name.hasPrefix("realm-core/test_upgrade") {
            // realm-core's own tables (no `class_` prefix) are not RealmSwift classes: the record names them.
            #expect(!(report.tablesLeftOut ?? [:]).isEmpty, "\(name)")
        }
    }
}
