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

final class LTagged: Object {
    @Persisted(primaryKey: true) var id: Int
    @Persisted var tags: MutableSet<String>
    @Persisted var friends: MutableSet<LDog>
}

final class LPrice: Object {
    @Persisted(primaryKey: true) var id: Int
    @Persisted var amount: Decimal128 = 0
    @Persisted var discount: Decimal128?
}

/// A link property's declared default (`@Persisted var objectCol: SwiftBoolObject? = SwiftBoolObject()`, as in
/// RealmSwift's test models) is an object of the unmanaged instance, and is added with it.
@Suite struct DefaultLinkedObjectTests {
    @Test func aDeclaredDefaultLinkedObjectIsAddedWithItsOwnerUnlessItWasReplaced() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: .init(fileURL: URL(fileURLWithPath: dir.child("d.realm")), objectTypes: [DescAll.self, DescBool.self]))
        let kept = DescAll()
        kept.intCol = 1
        #expect(kept.value(forKey: "objectCol") as? DescBool === kept.objectCol)
        let cleared = DescAll()
        cleared.objectCol = nil
        let replaced = DescAll()
        let other = DescBool()
        other.boolCol = true
        replaced.objectCol = other
        try realm.write {
            realm.add(kept)
            realm.add(cleared)
            realm.add(replaced)
        }
        #expect(kept.objectCol?.realm != nil)
        #expect(kept.objectCol?.boolCol == false)
        #expect(cleared.objectCol == nil)
        #expect(replaced.objectCol?.boolCol == true)
        #expect(realm.objects(DescBool.self).count == 2)
        // `create` with a value that names no link keeps the declared default too, as RealmSwift's does.
        try realm.write { realm.create(DescAll.self, value: ["intCol": 5]) }
        #expect(realm.objects(DescAll.self).filter("intCol == 5").first?.objectCol != nil)
    }
}
