import Foundation
import Strata
import Testing
import TestSupport

final class LDog: Object {
    @Persisted(primaryKey: true) var id: Int
    @Persisted var name = ""
    /// A link to the same type, for cycles.
    @Persisted var buddy: LDog?
}

final class LOwner: Object {
    @Persisted(primaryKey: true) var id: Int
    @Persisted var name = ""
    @Persisted var dog: LDog?
}

/// A required link, which Realm does not allow.
enum BadLink {
    final class Owner: Object {
        @Persisted var name = ""
        @Persisted var dog: LDog
    }
}

@Suite struct LinkTests {
    func config(_ dir: TemporaryDirectory) -> Realm.Configuration {
        .init(fileURL: URL(fileURLWithPath: dir.child("links.realm")), objectTypes: [LOwner.self, LDog.self])
    }

    @Test func aLinkSetToAnUnmanagedObjectAddsItAndSurvivesReopening() throws {
        let dir = try TemporaryDirectory()
        do {
            let realm = try Realm(configuration: config(dir))
            let owner = LOwner()
            owner.id = 1
            owner.name = "Ada"
            let rex = LDog()
            rex.id = 10
            rex.name = "Rex"
            owner.dog = rex
            // Unmanaged: the link is the object itself.
            #expect(owner.dog === rex)
            try realm.write { realm.add(owner) }
            #expect(rex.realm != nil)
            #expect(owner.dog?.name == "Rex")
            #expect(realm.objects(LDog.self).count == 1)
            try realm.write {
                let fido = LDog()
                fido.id = 11
                fido.name = "Fido"
                owner.dog = fido
            }
            #expect(owner.dog?.name == "Fido")
            #expect(realm.objects(LDog.self).count == 2)
        }
        let realm = try Realm(configuration: config(dir))
        let owner = try #require(realm.object(ofType: LOwner.self, forPrimaryKey: 1))
        #expect(owner.dog?.id == 11)
        #expect(owner.dog?.name == "Fido")
        #expect(owner.value(forKey: "dog") as? LDog != nil)
    }

    @Test func nestedValuesCreateLinkedObjectsAndNilClearsALink() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: config(dir))
        try realm.write {
            realm.create(LOwner.self, value: ["id": 1, "name": "Ada", "dog": ["id": 5, "name": "Rex"]])
            realm.create(LOwner.self, value: [2, "Alan", [6, "Fido"]])
        }
        let ada = try #require(realm.object(ofType: LOwner.self, forPrimaryKey: 1))
        #expect(ada.dog?.name == "Rex")
        #expect(realm.object(ofType: LOwner.self, forPrimaryKey: 2)?.dog?.name == "Fido")
        #expect(realm.objects(LOwner.self).filter("dog == nil").count == 0)
        try realm.write { ada.dog = nil }
        #expect(ada.dog == nil)
        #expect(realm.objects(LOwner.self).filter("dog == nil").count == 1)
        // The dog itself stays.
        #expect(realm.object(ofType: LDog.self, forPrimaryKey: 5)?.name == "Rex")
        // Setting by name works too, with an existing object.
        try realm.write { ada.setValue(realm.object(ofType: LDog.self, forPrimaryKey: 6), forKey: "dog") }
        #expect(ada.dog?.id == 6)
    }

    @Test func deletingAnObjectNilsTheLinksToIt() throws {
        let dir = try TemporaryDirectory()
        do {
            let realm = try Realm(configuration: config(dir))
            try realm.write {
                realm.create(LOwner.self, value: ["id": 1, "dog": ["id": 5, "name": "Rex"]])
                realm.create(LOwner.self, value: ["id": 2, "dog": realm.object(ofType: LDog.self, forPrimaryKey: 5) as Any])
                realm.create(LOwner.self, value: ["id": 3, "dog": ["id": 6, "name": "Fido"]])
            }
            #expect(realm.objects(LOwner.self).filter("dog == nil").count == 0)
            try realm.write { realm.delete(realm.object(ofType: LDog.self, forPrimaryKey: 5)!) }
            #expect(realm.object(ofType: LOwner.self, forPrimaryKey: 1)?.dog == nil)
            #expect(realm.object(ofType: LOwner.self, forPrimaryKey: 2)?.dog == nil)
            #expect(realm.object(ofType: LOwner.self, forPrimaryKey: 3)?.dog?.name == "Fido")
            // Queries see the nulled links, not only the getters.
            #expect(realm.objects(LOwner.self).filter("dog == nil").count == 2)
        }
        // And so does a reopened file.
        let realm = try Realm(configuration: config(dir))
        #expect(realm.objects(LOwner.self).filter("dog == nil").count == 2)
    }

    @Test func aCycleOfUnmanagedObjectsIsAddedOnce() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: config(dir))
        let a = LDog(value: ["id": 1, "name": "a"])
        let b = LDog(value: ["id": 2, "name": "b"])
        a.buddy = b
        b.buddy = a
        try realm.write { realm.add(a) }
        #expect(realm.objects(LDog.self).count == 2)
        #expect(a.buddy?.name == "b")
        #expect(a.buddy?.buddy?.name == "a")
        #expect(a.buddy?.buddy?.isSameObject(as: a) == true)
    }

    @Test func modelsWithBadLinksAreRefusedNamingTypeAndProperty() async throws {
        let dir = try TemporaryDirectory()
        #expect {
            _ = try Realm(configuration: .init(fileURL: URL(fileURLWithPath: dir.child("a.realm")), objectTypes: [BadLink.Owner.self, LDog.self]))
        } throws: { "\($0)".contains("Object property 'dog' must be marked as optional.") }
        // M139: a class subset without a link's target is RealmSwift's programmer error.
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = try TemporaryDirectory()
            _ = try Realm(configuration: .init(fileURL: URL(fileURLWithPath: dir.child("b.realm")), objectTypes: [LOwner.self]))
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("Invalid class subset list:\n- 'LOwner.dog' links to class 'LDog', which is missing from the list of classes managed by the Realm"))
    }
}

final class LKennel: Object {
    @Persisted(primaryKey: true) var id: Int
    @Persisted var name = ""
    @Persisted var dogs: List<LDog>
    @Persisted var tags: List<String>
    @Persisted var scores: List<Int>
}

@Suite struct ListTests {
    func config(_ dir: TemporaryDirectory) -> Realm.Configuration {
        .init(fileURL: URL(fileURLWithPath: dir.child("lists.realm")), objectTypes: [LKennel.self, LDog.self, LOwner.self])
    }

    @Test func listsOfValuesAndObjectsRoundTripThroughReopen() throws {
        let dir = try TemporaryDirectory()
        do {
            let realm = try Realm(configuration: config(dir))
            let kennel = LKennel()
            kennel.id = 1
            kennel.tags.append("quiet")
            kennel.tags.append(contentsOf: ["green", "big"])
            kennel.scores.append(3)
            kennel.dogs.append(LDog(value: ["id": 1, "name": "Rex"]))
            #expect(Array(kennel.tags) == ["quiet", "green", "big"])
            try realm.write { realm.add(kennel) }
            #expect(realm.objects(LDog.self).count == 1)
            try realm.write {
                kennel.dogs.append(LDog(value: ["id": 2, "name": "Fido"]))
                kennel.tags.remove(at: 0)
                kennel.tags.insert("first", at: 0)
                kennel.scores.append(contentsOf: [5, 8])
                kennel.scores.swapAt(0, 2)
            }
            #expect(kennel.dogs.map(\.name) == ["Rex", "Fido"])
            #expect(Array(kennel.tags) == ["first", "green", "big"])
            #expect(Array(kennel.scores) == [8, 5, 3])
        }
        let realm = try Realm(configuration: config(dir))
        let kennel = try #require(realm.object(ofType: LKennel.self, forPrimaryKey: 1))
        #expect(kennel.dogs.map(\.name) == ["Rex", "Fido"])
        #expect(Array(kennel.tags) == ["first", "green", "big"])
        #expect(Array(kennel.scores) == [8, 5, 3])
        try realm.write {
            kennel.dogs.move(from: 1, to: 0)
            kennel.tags.replace(index: 1, object: "blue")
            kennel.tags[2] = "huge"
            kennel.scores.removeLast()
        }
        #expect(kennel.dogs.map(\.name) == ["Fido", "Rex"])
        #expect(Array(kennel.tags) == ["first", "blue", "huge"])
        #expect(Array(kennel.scores) == [8, 5])
        #expect(kennel.dogs.index(of: realm.object(ofType: LDog.self, forPrimaryKey: 1)!) == 1)
        try realm.write { kennel.tags.removeAll() }
        #expect(kennel.tags.isEmpty)
    }

    @Test func createFillsListsFromArraysAndDeletingAnObjectRemovesItFromLists() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: config(dir))
        try realm.write {
            realm.create(LKennel.self, value: ["id": 1, "dogs": [["id": 1, "name": "Rex"], ["id": 2, "name": "Fido"]], "tags": ["a", "b"]])
            realm.create(LKennel.self, value: ["id": 2, "dogs": [realm.object(ofType: LDog.self, forPrimaryKey: 2) as Any]])
        }
        let one = try #require(realm.object(ofType: LKennel.self, forPrimaryKey: 1))
        let two = try #require(realm.object(ofType: LKennel.self, forPrimaryKey: 2))
        #expect(one.dogs.map(\.name) == ["Rex", "Fido"])
        #expect(Array(one.tags) == ["a", "b"])
        #expect(two.dogs.map(\.id) == [2])
        try realm.write { realm.delete(realm.object(ofType: LDog.self, forPrimaryKey: 2)!) }
        #expect(one.dogs.map(\.name) == ["Rex"])
        #expect(two.dogs.isEmpty)
        // The stored lists lost the element too, not only the view.
        #expect(one.value(forKey: "dogs") as? List<LDog> != nil)
        let copy = LKennel(value: one)
        #expect(copy.dogs.map(\.name) == ["Rex"])
        #expect(Array(copy.tags) == ["a", "b"])
    }

    @Test func theSchemaShowsListsAndAnEmptyListReadsEmpty() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: config(dir))
        try realm.write { realm.create(LKennel.self, value: ["id": 1]) }
        let schema = try #require(realm.schema["LKennel"])
        let dogs = try #require(schema.properties.first { $0.name == "dogs" })
        #expect(dogs.isArray && dogs.objectClassName == "LDog" && dogs.type == .object)
        #expect(realm.object(ofType: LKennel.self, forPrimaryKey: 1)?.dogs.count == 0)
    }
}

final class LPet: Object {
    @Persisted(primaryKey: true) var id: Int
    @Persisted var name = ""
    @Persisted(originProperty: "pet") var owners: LinkingObjects<LPetOwner>
    @Persisted(originProperty: "pets") var shelters: LinkingObjects<LShelter>
}

final class LPetOwner: Object {
    @Persisted(primaryKey: true) var id: Int
    @Persisted var pet: LPet?
}

final class LShelter: Object {
    @Persisted(primaryKey: true) var id: Int
    @Persisted var pets: List<LPet>
}

/// LinkingObjects naming a property that does not link here.
enum BadInverse {
    final class Pet: Object {
        @Persisted var name = ""
        @Persisted(originProperty: "name") var owners: LinkingObjects<LPetOwner>
    }
}

@Suite struct LinkingObjectsTests {
    @Test func inverseRelationshipsFollowLinksAndLists() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: .init(
            fileURL: URL(fileURLWithPath: dir.child("inverse.realm")), objectTypes: [LPet.self, LPetOwner.self, LShelter.self]))
        try realm.write {
            realm.create(LPetOwner.self, value: ["id": 1, "pet": ["id": 7, "name": "Tom"]])
            realm.create(LPetOwner.self, value: ["id": 2, "pet": realm.object(ofType: LPet.self, forPrimaryKey: 7) as Any])
            realm.create(LShelter.self, value: ["id": 9, "pets": [realm.object(ofType: LPet.self, forPrimaryKey: 7) as Any, ["id": 8, "name": "Jerry"]]])
        }
        let tom = try #require(realm.object(ofType: LPet.self, forPrimaryKey: 7))
        let jerry = try #require(realm.object(ofType: LPet.self, forPrimaryKey: 8))
        #expect(tom.owners.map(\.id) == [1, 2])
        #expect(tom.shelters.map(\.id) == [9])
        #expect(jerry.owners.isEmpty)
        #expect(jerry.shelters.count == 1)
        // Live: they follow the links.
        try realm.write { realm.object(ofType: LPetOwner.self, forPrimaryKey: 1)?.pet = jerry }
        #expect(tom.owners.map(\.id) == [2])
        #expect(jerry.owners.map(\.id) == [1])
        // An unmanaged object has none.
        #expect(LPet().owners.isEmpty)
        #expect {
            _ = try Realm(configuration: .init(
                fileURL: URL(fileURLWithPath: dir.child("bad.realm")), objectTypes: [BadInverse.Pet.self, LPetOwner.self, LPet.self, LShelter.self]))
        } throws: { "\($0)".contains("Pet.owners") && "\($0)".contains("LPetOwner.name") }
    }
}

final class LTagged: Object {
    @Persisted(primaryKey: true) var id: Int
    @Persisted var tags: MutableSet<String>
    @Persisted var friends: MutableSet<LDog>
}

@Suite struct MutableSetTests {
    @Test func setsKeepDistinctElementsThroughWritesAndReopen() throws {
        let dir = try TemporaryDirectory()
        let config = Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("sets.realm")), objectTypes: [LTagged.self, LDog.self])
        do {
            let realm = try Realm(configuration: config)
            let t = LTagged()
            t.id = 1
            t.tags.insert("a")
            t.tags.insert("a")
            t.tags.insert(objectsIn: ["b", "c"])
            #expect(t.tags.count == 3)
            let rex = LDog(value: ["id": 1, "name": "Rex"])
            t.friends.insert(rex)
            t.friends.insert(rex)
            try realm.write { realm.add(t) }
            #expect(t.friends.count == 1)
            try realm.write {
                t.tags.remove("b")
                t.tags.insert("c")
                t.friends.insert(realm.object(ofType: LDog.self, forPrimaryKey: 1)!)
                t.friends.insert(LDog(value: ["id": 2, "name": "Fido"]))
            }
            #expect(Set(t.tags) == ["a", "c"])
            #expect(t.friends.count == 2)
            #expect(realm.schema["LTagged"]?["tags"]?.isSet == true)
        }
        let realm = try Realm(configuration: config)
        let t = try #require(realm.object(ofType: LTagged.self, forPrimaryKey: 1))
        #expect(Set(t.tags) == ["a", "c"])
        #expect(Set(t.friends.map(\.name)) == ["Rex", "Fido"])
        let other = MutableSet<String>()
        other.insert(objectsIn: ["c", "d"])
        try realm.write { t.tags.formIntersection(other) }
        #expect(Array(t.tags) == ["c"])
        try realm.write { realm.create(LTagged.self, value: ["id": 2, "tags": ["x", "x", "y"]]) }
        #expect(realm.object(ofType: LTagged.self, forPrimaryKey: 2)?.tags.count == 2)
    }
}

final class LPrice: Object {
    @Persisted(primaryKey: true) var id: Int
    @Persisted var amount: Decimal128 = 0
    @Persisted var discount: Decimal128?
}

@Suite struct Decimal128Tests {
    @Test func decimalsRoundTripExactlyAndCompareInQueries() throws {
        let dir = try TemporaryDirectory()
        let config = Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("d.realm")), objectTypes: [LPrice.self])
        do {
            let realm = try Realm(configuration: config)
            try realm.write {
                realm.create(LPrice.self, value: ["id": 1, "amount": try Decimal128(string: "0.1")] as [String: Any])
                realm.create(LPrice.self, value: ["id": 2, "amount": 12, "discount": "1.25"] as [String: Any])
                let p = LPrice()
                p.id = 3
                p.amount = try Decimal128(string: "123456789012345678901234567890.123")
                realm.add(p)
            }
        }
        let realm = try Realm(configuration: config)
        #expect(realm.object(ofType: LPrice.self, forPrimaryKey: 1)?.amount == (try Decimal128(string: "0.1")))
        #expect(realm.object(ofType: LPrice.self, forPrimaryKey: 2)?.discount == (try Decimal128(string: "1.25")))
        #expect(realm.object(ofType: LPrice.self, forPrimaryKey: 3)?.amount.description == "123456789012345678901234567890.123")
        #expect(realm.objects(LPrice.self).filter("amount > 10").map(\.id) == [2, 3])
        #expect(realm.objects(LPrice.self).sorted(byKeyPath: "amount", ascending: false).map(\.id) == [3, 2, 1])
        #expect(realm.objects(LPrice.self).filter("discount == nil").count == 2)
        #expect(throws: Realm.Error.self) { try Decimal128(string: "twelve") }
    }
}
