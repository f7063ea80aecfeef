import Engine
import Foundation
import RealmFile
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
            let process = Process()
            process.executableURL = URL(fileURLWithPath: child)
            process.arguments = ["convert", url.path]
            let pipe = Pipe()
            process.standardOutput = pipe
            try process.run()
            SystemProcess.sleep(microseconds: UInt32(Double(rng.next() % 1000) / 1000 * full * 1.1 * 1_000_000))
            SystemProcess.killHard(process.processIdentifier)
            process.waitUntilExit()
            let said = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
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
