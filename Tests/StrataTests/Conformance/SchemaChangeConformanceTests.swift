import Foundation
import Strata
import Testing
import TestSupport

// Catalogue section 1.2: which model changes need a migration, and how a mismatch is reported.

enum SC0 {
    final class Pair: Object {
        @Persisted var col1 = 0
        @Persisted var col2 = 0
    }
    final class Mixed: Object {
        @Persisted var a = 0
        @Persisted var b = ""
        @Persisted var c: Date?
    }
    final class Dog: Object { @Persisted var name = "" }
    final class Cat: Object { @Persisted var name = "" }
    final class Owner: Object {
        @Persisted var pet: Dog?
        @Persisted var pets: List<Dog>
        @Persisted var value = 0
        @Persisted var keyed = ""
    }
    final class Employee: Object { @Persisted var name = "" }
    final class Place: Object { @Persisted var city = "" }
}

/// The same types with their properties in another order.
enum SC1 {
    final class Pair: Object {
        @Persisted var col2 = 0
        @Persisted var col1 = 0
    }
    final class Mixed: Object {
        @Persisted var c: Date?
        @Persisted var b = ""
        @Persisted var a = 0
    }
}

/// Owner's link retargeted, its List made a MutableSet, `value` a Float, `keyed` the primary key.
enum SC2 {
    final class Owner: Object {
        @Persisted var pet: SC0.Cat?
        @Persisted var pets: MutableSet<SC0.Dog>
        @Persisted var value: Float = 0
        @Persisted(primaryKey: true) var keyed = ""
    }
    final class Employee: Object {
        @Persisted var name = ""
        @Persisted var age = 0
        @Persisted var hired = false
    }
    final class Place: EmbeddedObject { @Persisted var city = "" }
}

enum SC3 {
    final class Owner: Object {
        @Persisted var pet: SC0.Dog?
        @Persisted var pets: List<SC0.Dog>
        @Persisted var value: Int?
        @Persisted var keyed = ""
    }
}

@Suite struct SchemaChangeConformanceTests {
    @Test func M034_reorderingPropertiesNeedsNoMigrationAndKeepsEveryValueWithItsName() throws {
        let dir = try TemporaryDirectory()
        let url = Conformance.url(dir)
        let date = Date(timeIntervalSince1970: 1_000)
        do {
            let realm = try Conformance.open(url, [SC0.Pair.self, SC0.Mixed.self])
            try realm.write {
                realm.create(SC0.Pair.self, value: ["col1": 1, "col2": 2])
                realm.create(SC0.Mixed.self, value: [5, "x", date])
            }
        }
        // Reordered: same names, same types, same version.
        do {
            let realm = try Conformance.open(url, [SC1.Pair.self, SC1.Mixed.self])
            let pair = try #require(realm.objects(SC1.Pair.self).first)
            #expect(pair.col1 == 1)
            #expect(pair.col2 == 2)
            let mixed = try #require(realm.objects(SC1.Mixed.self).first)
            #expect(mixed.a == 5)
            #expect(mixed.b == "x")
            #expect(mixed.c == date)
            // A positional create follows the order of the model that is open now.
            try realm.write {
                realm.create(SC1.Pair.self, value: [20, 10])
                realm.create(SC1.Mixed.self, value: [nil, "y", 6] as [Any?])
            }
            #expect(realm.objects(SC1.Pair.self).where { $0.col1 == 10 && $0.col2 == 20 }.count == 1)
            #expect(realm.objects(SC1.Pair.self).filter("col1 == 1 AND col2 == 2").count == 1)
            #expect(realm.objects(SC1.Mixed.self).where { $0.a == 6 }.first?.b == "y")
            #expect(realm.objects(SC1.Mixed.self).sorted(byKeyPath: "a").map(\.b) == ["x", "y"])
        }
        // And back: records written under either order read by name.
        let realm = try Conformance.open(url, [SC0.Pair.self, SC0.Mixed.self])
        let pairs = realm.objects(SC0.Pair.self).sorted(byKeyPath: "col1").map { [$0.col1, $0.col2] }
        #expect(pairs == [[1, 2], [10, 20]])
        #expect(realm.objects(SC0.Mixed.self).sorted(byKeyPath: "a").map(\.c) == [date, nil])
        // The dynamic API and a migration see the same values by name.
        #expect(realm.dynamicObjects("Pair").filter("col1 == 10").first?["col2"] as? Int == 20)
    }

    @Test(arguments: Conformance.modes)
    func M034_reorderedPropertiesMigrateByName(mode: Realm.Configuration.MigrationMode) throws {
        let dir = try TemporaryDirectory()
        let url = Conformance.url(dir)
        do {
            let realm = try Conformance.open(url, [SC0.Pair.self])
            try realm.write { realm.create(SC0.Pair.self, value: [1, 2]) }
        }
        let realm = try Conformance.open(url, [SC1.Pair.self], version: 1, mode: mode) { migration, _ in
            migration.enumerateObjects(ofType: "Pair") { old, new in
                #expect(old?["col1"] as? Int == 1)
                #expect(old?["col2"] as? Int == 2)
                new?["col1"] = (old?["col1"] as? Int ?? 0) + 100
            }
        }
        let pair = try #require(realm.objects(SC1.Pair.self).first)
        #expect(pair.col1 == 101)
        #expect(pair.col2 == 2)
    }

    @Test func M004_M005_aSchemaChangeAtTheSameVersionListsEveryDifferenceInRealmsWords() throws {
        let dir = try TemporaryDirectory()
        let url = Conformance.url(dir)
        do {
            let realm = try Conformance.open(url, [SC0.Owner.self, SC0.Dog.self, SC0.Cat.self, SC0.Employee.self, SC0.Place.self])
            try realm.write { realm.create(SC0.Employee.self, value: ["name": "Ada"]) }
        }
        let error = try #require(Conformance.openError(url, [SC2.Owner.self, SC0.Dog.self, SC0.Cat.self, SC2.Employee.self, SC2.Place.self]))
        #expect(error.code == .schemaMismatch)
        let expected = """
            Migration is required due to the following errors:
            - Property 'Employee.age' has been added.
            - Property 'Employee.hired' has been added.
            - Property 'Owner.pet' has been changed from '<Dog>' to '<Cat>'.
            - Property 'Owner.pets' has been changed from 'array<Dog>' to 'set<Dog>'.
            - Property 'Owner.value' has been changed from 'int' to 'float'.
            - Primary Key for class 'Owner' has been added.
            - Class 'Place' has been changed from TopLevel to Embedded.
            """
        #expect(error.message == expected)
        // The block is not called and the file is unchanged: the old model still opens at v0.
        let realm = try Conformance.open(url, [SC0.Owner.self, SC0.Dog.self, SC0.Cat.self, SC0.Employee.self, SC0.Place.self])
        #expect(realm.objects(SC0.Employee.self).first?.name == "Ada")
        #expect(try schemaVersionAtURL(url) == 0)
    }

    @Test func M005_M031_aTypeChangeHidesANullabilityChangeAndARemovedPrimaryKeyIsReported() throws {
        let dir = try TemporaryDirectory()
        let url = Conformance.url(dir)
        _ = try Conformance.open(url, [SC2.Owner.self, SC0.Dog.self, SC0.Cat.self])
        let error = try #require(Conformance.openError(url, [SC3.Owner.self, SC0.Dog.self, SC0.Cat.self]))
        #expect(error.code == .schemaMismatch)
        #expect(error.message.contains("- Property 'Owner.value' has been changed from 'float' to 'int'."))
        #expect(error.message.contains("- Primary Key for class 'Owner' has been removed."))
        // A type change that also changes nullability is reported as a type change only.
        #expect(!error.message.contains("made optional"))
    }

    @Test func M029_M030_makingAPropertyOptionalOrRequiredNeedsAMigration() throws {
        let dir = try TemporaryDirectory()
        let url = Conformance.url(dir)
        _ = try Conformance.open(url, [SC0.Owner.self, SC0.Dog.self])
        let error = try #require(Conformance.openError(url, [SC3.Owner.self, SC0.Dog.self]))
        #expect(error.message == "Migration is required due to the following errors:\n- Property 'Owner.value' has been made optional.")
        let dir2 = try TemporaryDirectory()
        let url2 = Conformance.url(dir2)
        _ = try Conformance.open(url2, [SC3.Owner.self, SC0.Dog.self])
        let back = try #require(Conformance.openError(url2, [SC0.Owner.self, SC0.Dog.self]))
        #expect(back.message == "Migration is required due to the following errors:\n- Property 'Owner.value' has been made required.")
    }

    @Test(arguments: Conformance.modes)
    func M044_M028_aRetargetedLinkAndAListMadeASetAreClearedByAMigration(mode: Realm.Configuration.MigrationMode) throws {
        let dir = try TemporaryDirectory()
        let url = Conformance.url(dir)
        do {
            let realm = try Conformance.open(url, [SC0.Owner.self, SC0.Dog.self, SC0.Cat.self])
            try realm.write {
                let dog = realm.create(SC0.Dog.self, value: ["name": "Rex"])
                realm.create(SC0.Owner.self, value: ["pet": dog, "pets": [dog], "value": 3, "keyed": "a"])
            }
        }
        let realm = try Conformance.open(url, [SC2.Owner.self, SC0.Dog.self, SC0.Cat.self], version: 1, mode: mode) { migration, _ in
            migration.enumerateObjects(ofType: "Owner") { old, new in
                // The old object still shows the old link; the new one has none.
                #expect((old?["pet"] as? MigrationObject)?["name"] as? String == "Rex")
                #expect(new?["pet"] == nil)
            }
        }
        let owner = try #require(realm.objects(SC2.Owner.self).first)
        #expect(owner.pet == nil)
        #expect(owner.pets.isEmpty)
        #expect(owner.keyed == "a")
        // The target objects themselves are untouched.
        #expect(realm.objects(SC0.Dog.self).count == 1)
    }

    @Test func M033_M036_indexesAndDefaultsNeedNoMigration() throws {
        let dir = try TemporaryDirectory()
        let url = Conformance.url(dir)
        do {
            let realm = try Conformance.open(url, [SC0.Pair.self])
            try realm.write { realm.create(SC0.Pair.self, value: [1, 2]) }
        }
        #expect(Conformance.openError(url, [SC0.Pair.self]) == nil)
        #expect(try schemaVersionAtURL(url) == 0)
    }
}
