import Foundation
import Strata
import Testing
import TestSupport

// Catalogue section 1.4: migration objects, their collections and links (M063-M070), and Realm's own
// Migration example (examples/ios/swift/Migration, v0 to v5) with its models declared with @Persisted.

enum MO0 {
    final class Bool0: Object { @Persisted var boolCol = false }
    final class Holder: Object {
        @Persisted var objectCol: MO0.Bool0?
        @Persisted var arrayCol: List<MO0.Bool0>
        @Persisted var setCol: MutableSet<MO0.Bool0>
        @Persisted var mapCol: Map<String, MO0.Bool0?>
        @Persisted var ints: List<Int>
        @Persisted var tags: MutableSet<String>
        @Persisted var scores: Map<String, Double>
        @Persisted var any: AnyRealmValue
    }
}

/// Realm's Migration example at version 0 (`Person` with first and last names).
enum ExampleV0 {
    final class Person: Object {
        @Persisted var firstName = ""
        @Persisted var lastName = ""
        @Persisted var age = 0
    }
}

/// Realm's Migration example at version 5.
enum ExampleV5 {
    enum Kind: Int, PersistableEnum {
        case unspecified, dog, chicken, cow
    }
    final class Pet: Object {
        @Persisted var name = ""
        @Persisted var kind = Kind.unspecified
    }
    final class Person: Object {
        @Persisted var fullName = ""
        @Persisted var age = 0
        @Persisted var address: Address?
        @Persisted var pets: List<Pet>
    }
    final class Address: EmbeddedObject {
        @Persisted var street = ""
        @Persisted var city = ""
        @Persisted(originProperty: "address") var residents: LinkingObjects<Person>
    }
}

@Suite struct MigrationObjectConformanceTests {
    func holderFile(_ dir: TemporaryDirectory) throws -> URL {
        let url = Conformance.url(dir)
        let realm = try Conformance.open(url, [MO0.Bool0.self, MO0.Holder.self])
        try realm.write {
            let a = realm.create(MO0.Bool0.self, value: [true])
            let b = realm.create(MO0.Bool0.self, value: [false])
            let holder = realm.create(MO0.Holder.self, value: [
                "objectCol": a, "arrayCol": [a, b], "setCol": [b], "mapCol": ["key": a, "nulledObj": b],
                "ints": [1, 2, 3], "tags": ["x"], "scores": ["m": 1.5],
            ])
            holder.any = .object(a)
            realm.delete(b)
        }
        return url
    }

    @Test(arguments: Conformance.modes)
    func M064_M069_M070_collectionsOfMigrationObjectsAreLiveAndWritable(mode: Realm.Configuration.MigrationMode) throws {
        let dir = try TemporaryDirectory()
        let url = try holderFile(dir)
        let realm = try Conformance.open(url, [MO0.Bool0.self, MO0.Holder.self], version: 1, mode: mode) { m, _ in
            m.enumerateObjects(ofType: "Holder") { old, new in
                guard let old, let new else { return }
                let oldArray = try! #require(old["arrayCol"] as? List<MigrationObject>)
                #expect(oldArray.count == 1)
                #expect(oldArray[0]["boolCol"] as? Bool == true)
                #expect((old["setCol"] as? MutableSet<MigrationObject>)?.count == 0)
                // A map entry whose object was deleted reads nil and still counts.
                let map = try! #require(old["mapCol"] as? Map<String, MigrationObject?>)
                #expect(map.count == 2)
                if case .some(.none) = map["nulledObj"] {} else { Issue.record("nulledObj should read Optional(nil)") }
                #expect((old["ints"] as? List<Int>).map(Array.init) == [1, 2, 3])
                #expect((old["tags"] as? MutableSet<String>)?.contains("x") == true)
                #expect((old["scores"] as? Map<String, Double>)?["m"] == 1.5)
                #expect((old["any"] as? MigrationObject)?["boolCol"] as? Bool == true)
                // The new object's list is live: appends of created and existing objects, changes in place.
                let list = try! #require(new["arrayCol"] as? List<MigrationObject>)
                let created = m.create("Bool0", value: [false])
                list.append(created)
                list[0]["boolCol"] = false
                #expect(list.count == 2)
                (new["ints"] as? List<Int>)?.append(4)
                (new["tags"] as? MutableSet<String>)?.insert("y")
                (new["tags"] as? MutableSet<String>)?.insert("y")
                // Assigning a whole array replaces the contents; a list taken before sees them.
                let set = try! #require(new["setCol"] as? MutableSet<MigrationObject>)
                new["setCol"] = [created, created]
                #expect(set.count == 1)
                new["mapCol"] = ["key": created]
                // M068: an unmanaged model object assigned to a link is added.
                new["objectCol"] = MO0.Bool0(value: [true])
            }
        }
        let holder = try #require(realm.objects(MO0.Holder.self).first)
        #expect(holder.arrayCol.map(\.boolCol) == [false, false])
        #expect(Array(holder.ints) == [1, 2, 3, 4])
        #expect(Set(holder.tags) == ["x", "y"])
        #expect(holder.setCol.count == 1)
        #expect(holder.mapCol.count == 1)
        #expect(holder.objectCol?.boolCol == true)
        #expect(realm.objects(MO0.Bool0.self).count == 3)
    }

    @Test func M060_anOldObjectsCollectionsAreReadOnly() throws {
        let dir = try TemporaryDirectory()
        let url = try holderFile(dir)
        let error = try #require(Conformance.openError(url, [MO0.Bool0.self, MO0.Holder.self], version: 1) { m, _ in
            m.enumerateObjects(ofType: "Holder") { old, _ in (old?["ints"] as? List<Int>)?.append(9) }
        })
        #expect(error.message.contains("old objects are read-only"))
        #expect(try schemaVersionAtURL(url) == 0)
    }

    /// Realm's Migration example: a version-0 file brought to version 5 by the example's own block (names
    /// combined, pets created and appended to live lists, an unmanaged Address assigned, Address made embedded).
    @Test(arguments: Conformance.modes)
    func realmsMigrationExampleRunsFromVersion0To5(mode: Realm.Configuration.MigrationMode) throws {
        let dir = try TemporaryDirectory()
        let url = Conformance.url(dir)
        do {
            let realm = try Conformance.open(url, [ExampleV0.Person.self])
            try realm.write {
                realm.create(ExampleV0.Person.self, value: ["John", "Doe", 42])
                realm.create(ExampleV0.Person.self, value: ["Jane", "Doe", 43])
                realm.create(ExampleV0.Person.self, value: ["John", "Smith", 44])
            }
        }
        typealias Pet = ExampleV5.Pet
        typealias Person = ExampleV5.Person
        let block: MigrationBlock = { migration, oldSchemaVersion in
            if oldSchemaVersion < 1 {
                migration.enumerateObjects(ofType: Person.className()) { oldObject, newObject in
                    let firstName = oldObject!["firstName"] as! String
                    let lastName = oldObject!["lastName"] as! String
                    newObject!["fullName"] = "\(firstName) \(lastName)"
                }
            }
            if oldSchemaVersion < 2 {
                migration.enumerateObjects(ofType: Person.className()) { _, newObject in
                    if newObject!["fullName"] as! String == "John Doe" {
                        let dogs = newObject!["pets"] as! List<MigrationObject>
                        let marley = migration.create(Pet.className(), value: ["Marley", ExampleV5.Kind.dog.rawValue])
                        let lassie = migration.create(Pet.className(), value: ["Lassie", ExampleV5.Kind.dog.rawValue])
                        dogs.append(marley)
                        dogs.append(lassie)
                    } else if newObject!["fullName"] as! String == "Jane Doe" {
                        let dogs = newObject!["pets"] as! List<MigrationObject>
                        let toto = migration.create(Pet.className(), value: ["Toto", ExampleV5.Kind.dog.rawValue])
                        dogs.append(toto)
                    }
                }
                _ = migration.create(Pet.className(), value: ["Slinkey", ExampleV5.Kind.dog.rawValue])
            }
            if oldSchemaVersion < 4 {
                migration.enumerateObjects(ofType: Person.className()) { _, newObject in
                    if newObject!["fullName"] as! String == "John Doe" {
                        let address = ExampleV5.Address(value: ["Broadway", "New York"])
                        newObject!["address"] = address
                    }
                }
            }
        }
        let realm = try Conformance.open(url, [Pet.self, Person.self, ExampleV5.Address.self], version: 5, mode: mode, block: block)
        // The example's own check.
        let persons = realm.objects(Person.self)
        #expect(persons.count == 3)
        #expect(persons[0].fullName == "John Doe")
        #expect(persons[0].age == 42)
        #expect(persons[0].address?.city == "New York")
        #expect(persons[0].address?.street == "Broadway")
        #expect(persons[0].pets.map(\.name) == ["Marley", "Lassie"])
        #expect(persons[0].pets.allSatisfy { $0.kind == .dog })
        #expect(persons[1].fullName == "Jane Doe")
        #expect(persons[1].address == nil)
        #expect(persons[1].pets.map(\.name) == ["Toto"])
        #expect(persons[2].fullName == "John Smith")
        #expect(persons[2].address == nil)
        let pets = realm.objects(Pet.self)
        #expect(pets.count == 4)
        #expect(pets.contains { $0.name == "Slinkey" && $0.kind == .dog })
        #expect(persons[0].address?.residents.first?.fullName == "John Doe")
    }
}

enum CN0 {
    final class Custom: Object {
        @Persisted var intCol = 0
        override class func propertiesMapping() -> [String: String] { ["intCol": "custom_intCol"] }
    }
}
