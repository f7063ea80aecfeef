import Engine
import Foundation
import RealmFile
import RealmFileTesting
import Testing
import TestSupport
@testable import Strata

/// The models of RealmSwift's Migration example at schema version 5 (realm-swift
/// `examples/ios/swift/Migration/Examples/Example_v5.swift`).
enum MigrationExampleV5 {
    final class Person: Object {
        @Persisted var fullName = ""
        @Persisted var age = 0
        @Persisted var address: Address?
        @Persisted var pets: List<Pet>
        override class func className() -> String { "Person" }
    }
    final class Pet: Object {
        enum Kind: Int, PersistableEnum {
            case unspecified = 0, dog, chicken, cow
        }
        @Persisted var name = ""
        @Persisted var kind = Kind.unspecified
        override class func className() -> String { "Pet" }
    }
    final class Address: EmbeddedObject {
        @Persisted var street = ""
        @Persisted var city = ""
        override class func className() -> String { "Address" }
    }

    static let types: [ObjectBase.Type] = [Person.self, Pet.self, Address.self]

    /// The example's migration block, step for step (`Example_v5.swift`).
    static let migrationBlock: MigrationBlock = { migration, oldSchemaVersion in
        if oldSchemaVersion < 1 {
            migration.enumerateObjects(ofType: "Person") { oldObject, newObject in
                let firstName = oldObject!["firstName"] as! String
                let lastName = oldObject!["lastName"] as! String
                newObject!["fullName"] = "\(firstName) \(lastName)"
            }
        }
        if oldSchemaVersion < 2 {
            migration.enumerateObjects(ofType: "Person") { _, newObject in
                if newObject!["fullName"] as! String == "John Doe" {
                    let pets = newObject!["pets"] as! List<MigrationObject>
                    pets.append(migration.create("Pet", value: ["Marley", Pet.Kind.dog.rawValue]))
                    pets.append(migration.create("Pet", value: ["Lassie", Pet.Kind.dog.rawValue]))
                } else if newObject!["fullName"] as! String == "Jane Doe" {
                    let pets = newObject!["pets"] as! List<MigrationObject>
                    pets.append(migration.create("Pet", value: ["Toto", Pet.Kind.dog.rawValue]))
                }
            }
            migration.create("Pet", value: ["Slinkey", Pet.Kind.dog.rawValue])
        }
        if oldSchemaVersion == 2 {
            migration.enumerateObjects(ofType: "Person") { oldObject, newObject in
                let pets = newObject!["pets"] as! List<MigrationObject>
                for dog in oldObject!["dogs"] as! List<DynamicObject> {
                    pets.append(migration.create("Pet", value: [dog["name"] as! String, Pet.Kind.dog.rawValue]))
                }
            }
            migration.enumerateObjects(ofType: "Dog") { oldDog, _ in
                var found = false
                migration.enumerateObjects(ofType: "Person") { _, newObject in
                    for pet in newObject!["pets"] as! List<DynamicObject> where pet["name"] as! String == oldDog!["name"] as! String {
                        found = true
                        break
                    }
                }
                if !found { migration.create("Pet", value: [oldDog!["name"] as! String, Pet.Kind.dog.rawValue]) }
            }
        }
        if oldSchemaVersion < 4 {
            migration.enumerateObjects(ofType: "Person") { _, newObject in
                if newObject!["fullName"] as! String == "John Doe" {
                    newObject!["address"] = Address(value: ["Broadway", "New York"])
                }
            }
        }
    }
}

/// RealmSwift files opened through `Realm(configuration:)`: converted into a Strata database beside them at the
/// first open, then migrated by the app's block as a Strata file of the same version would be.
@Suite(.enabled(if: SharedFixtures.realmFixturesPresent, "../shared/realm-fixtures is absent: the Realm file conversion tests are skipped"))
struct RealmFileConversionTests {
    /// A copy of a fixture in a new temporary directory, named as an app names its file.
    static func copy(_ fixture: String, as name: String = "default.realm") throws -> (TemporaryDirectory, URL) {
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child(name))
        try FileManager.default.copyItem(atPath: SharedFixtures.realmFixture(fixture), toPath: url.path)
        return (dir, url)
    }

    /// RealmSwift's Migration example: each of its v0-v5 template files, opened with the example's v5 models and
    /// migration block, comes out as the example's `migrationCheck` says.
    @Test(arguments: 0...5)
    func migrationExampleTemplatesMigrateToVersion5(version: Int) throws {
        let (dir, url) = try Self.copy("realm-swift/migration-example-default-v\(version).realm")
        _ = dir
        let original = try Data(contentsOf: url)
        let config = Realm.Configuration(
            fileURL: url, schemaVersion: 5, migrationBlock: MigrationExampleV5.migrationBlock, objectTypes: MigrationExampleV5.types)
        do {
            let realm = try Realm(configuration: config)
            let people = realm.objects(MigrationExampleV5.Person.self)
            #expect(people.map(\.fullName) == ["John Doe", "Jane Doe", "John Smith"])
            #expect(people.map(\.age) == [42, 43, 44])
            #expect(people[0].address?.street == "Broadway")
            #expect(people[0].address?.city == "New York")
            #expect(people[1].address == nil && people[2].address == nil)
            #expect(people[0].pets.map(\.name) == ["Marley", "Lassie"])
            #expect(people[1].pets.map(\.name) == ["Toto"])
            #expect(people[2].pets.isEmpty)
            let pets = realm.objects(MigrationExampleV5.Pet.self)
            #expect(pets.count == 4)
            #expect(pets.allSatisfy { $0.kind == .dog })
            #expect(pets.filter("name == 'Slinkey'").count == 1)
        }
        // The Realm file is read, never written; the converted database is used from now on.
        #expect(try Data(contentsOf: url) == original)
        #expect(FileManager.default.fileExists(atPath: url.path + ".strata/CURRENT"))
        #expect(!FileManager.default.fileExists(atPath: url.path + ".strata.converting"))
        let again = try Realm(configuration: config)
        #expect(again.objects(MigrationExampleV5.Person.self).count == 3)
        #expect(try Realm.schemaVersion(at: url) == 5)
    }
}

/// The model of the files `RealmFileKillTests` converts.
enum ConvertedKill {
    final class Thing: Object {
        @Persisted var n = 0
        @Persisted var text = ""
        @Persisted var numbers: List<Int>
        @Persisted var next: Thing?
        override class func className() -> String { "Thing" }
    }
}

/// A conversion killed (SIGKILL, a real child process) at random instants: the Realm file is as it was, and the
/// next open finishes the conversion with every object present once.
@Suite struct RealmFileKillTests {
    static let count = 30_000

    /// A Realm file of `count` things, written by this project's writer of the Realm format.
    static func realmFile(at path: String) throws {
        typealias P = RealmFileWriter.Property
        let rows: [(key: Int64, values: [RealmFileValue])] = (0..<Int64(count)).map { i in
            (i, [.int(i), .string("thing \(i) " + String(repeating: "x", count: Int(i % 40))), .list((0..<(i % 5)).map(RealmFileValue.int)),
                 .link(RealmFileLink(table: 1, key: (i + 1) % Int64(count)))])
        }
        var writer = RealmFileWriter()
        writer.schemaVersion = 0
        let bytes = writer.write([RealmFileWriter.Table(
            name: "Thing", properties: [P("n", .int), P("text", .string), P("numbers", .int, collection: .list), P("next", .object, optional: true, target: 1)],
            objects: rows)])
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    func expectComplete(_ url: URL, _ label: String) throws {
        let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [ConvertedKill.Thing.self]))
        let things = realm.objects(ConvertedKill.Thing.self)
        #expect(things.count == Self.count, "\(label)")
        var seen = Set<Int>()
        for thing in things {
            seen.insert(thing.n)
            if thing.next?.n != (thing.n + 1) % Self.count || thing.numbers.count != thing.n % 5 {
                Issue.record("\(label): thing \(thing.n) converted wrongly")
                break
            }
        }
        #expect(seen.count == Self.count, "\(label): every object once")
    }

    @Test(arguments: Seeds.environmentOr([35]))
    func aKilledConversionLeavesTheRealmFileAndStartsAgain(seed: UInt64) throws {
        let child = try #require(BuildProducts.executable("StrataCrashChild"), "StrataCrashChild was not built beside the tests")
        let temp = try TemporaryDirectory()
        let url = URL(fileURLWithPath: temp.child("default.realm"))
        try Self.realmFile(at: url.path)
        let original = try Data(contentsOf: url)
        // Calibration: one conversion left to finish.
        let started = Date()
        let calibration = try runChild("StrataCrashChild", ["convert", url.path])
        let full = Date().timeIntervalSince(started)
        #expect(calibration.status == 0 && calibration.output.contains("converted"))
        try expectComplete(url, "calibration")
        var rng = SplitMix64(seed: seed)
        var outcomes = (none: 0, complete: 0)
        for round in 0..<(12 * Seeds.scale) {
            try FileManager.default.removeItem(atPath: url.path + ".strata")
            let said = try runChildKilled(
                child, ["convert", url.path], afterMicroseconds: UInt32(Double(rng.next() % 1000) / 1000 * full * 1.1 * 1_000_000))
            #expect(try Data(contentsOf: url) == original, "round \(round): the Realm file changed")
            let converted = FileManager.default.fileExists(atPath: url.path + ".strata/CURRENT")
            if said.contains("converted") { #expect(converted, "round \(round): reported converted") }
            if converted { outcomes.complete += 1 } else { outcomes.none += 1 }
            // The next open finishes (or reuses) the conversion.
            try expectComplete(url, "round \(round)")
            #expect(!FileManager.default.fileExists(atPath: url.path + ".strata.converting"), "round \(round)")
        }
        print("RealmFileKillTests: \(outcomes.none) kills before the rename, \(outcomes.complete) after (conversion \(full) s)")
    }
}

/// The conversion's record, the deletion of the Realm file, a Realm file another process holds, and the `strata`
/// tool's `import`, `info` and `schema` of Realm files.
@Suite(.serialized, .enabled(if: SharedFixtures.realmFixturesPresent, "../shared/realm-fixtures is absent: the Realm file conversion tests are skipped"))
struct RealmFileConversionAPITests {
    @Test func theConversionIsRecordedAndTheRealmFileCanBeDeleted() throws {
        let (dir, url) = try RealmFileConversionTests.copy("realm-swift/migration-example-default-v5.realm")
        _ = dir
        try Data().write(to: URL(fileURLWithPath: url.path + ".lock"))
        try FileManager.default.createDirectory(atPath: url.path + ".management", withIntermediateDirectories: false)
        let config = Realm.Configuration(fileURL: url, schemaVersion: 5, objectTypes: MigrationExampleV5.types)
        #expect(try Realm.realmFileConversion(for: config) == nil)
        #expect(Realm.fileExists(for: config))
        #expect(try Realm.schemaVersion(at: url) == 5)
        let report = try #require(try Realm.convertRealmFile(configuration: config))
        #expect(report.formatVersion == 20 && report.schemaVersion == 5)
        #expect(report.objectCounts == ["Person": 3, "Pet": 4, "Address": 1])
        #expect(report.narrowedValues.isEmpty)
        #expect(report.databasePath == url.path + ".strata")
        #expect(try Realm.convertRealmFile(configuration: config) == nil, "converted once")
        do {
            let realm = try Realm(configuration: config)
            #expect(realm.objects(MigrationExampleV5.Person.self).count == 3)
            #expect(try Realm.realmFileConversion(for: config) == report)
        }
        #expect(try Realm.deleteConvertedRealmFile(configuration: config))
        for suffix in ["", ".lock", ".management"] { #expect(!FileManager.default.fileExists(atPath: url.path + suffix), "\(suffix)") }
        // The converted database is what the configuration opens from now on.
        let realm = try Realm(configuration: config)
        #expect(realm.objects(MigrationExampleV5.Pet.self).count == 4)
        #expect(try Realm.deleteConvertedRealmFile(configuration: config) == false)
    }

    /// `Realm.deleteFiles(for:)` of a configuration whose file was converted deletes the converted database too:
    /// an app that wipes its data (a logout) must not keep it beside the Realm file.
    @Test func deleteFilesRemovesTheConvertedDatabase() throws {
        let (dir, url) = try RealmFileConversionTests.copy("realm-swift/migration-example-default-v5.realm")
        _ = dir
        let config = Realm.Configuration(fileURL: url, schemaVersion: 5, objectTypes: MigrationExampleV5.types)
        do { _ = try Realm(configuration: config) }
        #expect(FileManager.default.fileExists(atPath: url.path + ".strata"))
        #expect(try Realm.deleteFiles(for: config))
        #expect(!FileManager.default.fileExists(atPath: url.path) && !FileManager.default.fileExists(atPath: url.path + ".strata"))
        let realm = try Realm(configuration: config)
        #expect(realm.objects(MigrationExampleV5.Person.self).isEmpty)
    }

    /// RealmSwift holds its lock file (shared) while a process has the Realm open: conversion then refuses rather
    /// than read a file being written, and leaves everything as it was.
    @Test func aRealmFileOpenInRealmSwiftIsNotConverted() throws {
        let (dir, url) = try RealmFileConversionTests.copy("realm-swift/migration-example-default-v5.realm")
        _ = dir
        try Data().write(to: URL(fileURLWithPath: url.path + ".lock"))
        let held = try PosixFileSystem().lock(atPath: url.path + ".lock")
        defer { held.unlock() }
        let config = Realm.Configuration(fileURL: url, schemaVersion: 5, objectTypes: MigrationExampleV5.types)
        #expect { try Realm(configuration: config) } throws: { error in
            (error as? Realm.Error)?.code == .alreadyOpen && "\(error)".contains("another process")
        }
        #expect(!FileManager.default.fileExists(atPath: url.path + ".strata"))
    }

    @Test func wrongOrMissingKeysAndOldFormatsAreRefusedWithRealmSwiftsCodes() throws {
        let (dir, url) = try RealmFileConversionTests.copy("format-24/all-types-encrypted.realm")
        _ = dir
        #expect { try Realm(configuration: .init(fileURL: url, encryptionKey: Data(repeating: 7, count: 64), objectTypes: AllTypesV8.types)) } throws: { error in
            (error as? Realm.Error)?.code == .fileAccess && "\(error)".contains("decryption failed")
        }
        let (dir2, old) = try RealmFileConversionTests.copy("realm-core/test_shared_decrypt_4k_page.realm")
        _ = dir2
        let oldKey = Data("1234567890123456789012345678901123456789012345678901234567890123".utf8)
        #expect { try Realm(configuration: .init(fileURL: old, encryptionKey: oldKey, objectTypes: AllTypesV8.types)) } throws: { error in
            (error as? Realm.Error)?.code == .unsupportedFileFormatVersion && "\(error)".contains("format 9")
        }
        #expect(!FileManager.default.fileExists(atPath: url.path + ".strata") && !FileManager.default.fileExists(atPath: old.path + ".strata"))
    }

    @Test func strataToolImportsAndDescribesRealmFiles() throws {
        let (dir, url) = try RealmFileConversionTests.copy("format-24/all-types-encrypted.realm")
        let keyFile = dir.child("key.hex")
        try Data((0..<64).map { String(format: "%02x", 0x10 + 3 * $0) }.joined().utf8).write(to: URL(fileURLWithPath: keyFile))
        let info = try StrataToolTests.strata("info", url.path, "--key-file", keyFile)
        #expect(info.status == 0, "\(info.err)")
        #expect(info.out.contains("file format: 24, encrypted") && info.out.contains("schema version: 7"))
        #expect(info.out.contains("AllTypes: 303 objects") && info.out.contains("EmbeddedThing (embedded): 900 objects"))
        #expect(info.out.contains("- linkMap: Map<String, Owner?>") && info.out.contains("- _id: objectId (primary key)"))
        let schema = try StrataToolTests.strata("schema", url.path, "--key-file", keyFile)
        #expect(schema.status == 0 && schema.out.contains("- anyList: List<mixed?>"))
        let destination = dir.child("converted")
        let imported = try StrataToolTests.strata("import", url.path, destination, "--key-file", keyFile)
        #expect(imported.status == 0, "\(imported.err)")
        #expect(imported.out.contains("AllTypes: 303 objects") && imported.out.contains("Tag: 57 objects"))
        #expect(!imported.out.contains("narrowed"), "the fixture's Decimal128 NaNs, infinities and wide exponents are held exactly")
        #expect(imported.out.contains("the database passed `strata verify` before it was put in place"))
        let converted = try StrataToolTests.strata("info", destination, "--key-file", keyFile)
        #expect(converted.status == 0 && converted.out.contains("schema version: 7"))
        // Collections of optionals stay optional (before, `verify` found about 1,500 nulls in required collections).
        #expect(converted.out.contains("optIntList: List<Int?>") && converted.out.contains("intList: List<Int>"), "\(converted.out)")
        let verified = try StrataToolTests.strata("verify", destination, "--key-file", keyFile)
        #expect(verified.status == 0 && verified.out.contains("no problem found"), "\(verified.out)\(verified.err)")
        let again = try StrataToolTests.strata("import", url.path, destination, "--key-file", keyFile)
        #expect(again.status == 1 && again.err.contains("already exists"))
        let noKey = try StrataToolTests.strata("info", url.path)
        #expect(noKey.status == 1 && noKey.err.contains("encrypted"))
    }
}
