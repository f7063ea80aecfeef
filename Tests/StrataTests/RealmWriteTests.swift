import Foundation
import Strata
import Testing
import TestSupport

/// Writes through a Realm: objects added become managed, changes are live and committed, cancelled writes
/// leave nothing, reads inside a write see its changes, and committed data survives reopening.
@Suite struct RealmWriteTests {
    @Test func addedObjectsAreManagedAndReadBack() throws {
        let realm = try memoryRealm()
        let p = Person()
        p.id = 7
        p.firstName = "Ada"
        p.age = 36
        #expect(p.realm == nil)
        try realm.write { realm.add(p) }
        #expect(p.realm != nil)
        #expect(p.firstName == "Ada")
        let found = try #require(realm.object(ofType: Person.self, forPrimaryKey: 7))
        #expect(found.firstName == "Ada")
        #expect(found.age == 36)
        #expect(found.nickname == nil)
        #expect(found.isActive == true)
        #expect(found.isSameObject(as: p))
        #expect(realm.object(ofType: Person.self, forPrimaryKey: 8) == nil)
    }

    @Test func writesToManagedObjectsAreLiveAndCommitted() throws {
        let realm = try memoryRealm()
        try addPeople(realm)
        let ada = try #require(realm.object(ofType: Person.self, forPrimaryKey: 1))
        try realm.write {
            ada.age = 37
            ada.nickname = "Countess"
            #expect(ada.age == 37)
        }
        let again = try #require(realm.object(ofType: Person.self, forPrimaryKey: 1))
        #expect(again.age == 37)
        #expect(again.nickname == "Countess")
        try realm.write { ada.nickname = nil }
        #expect(again.nickname == nil)
    }

    @Test func cancelledWritesLeaveNoTrace() throws {
        let realm = try memoryRealm()
        try addPeople(realm)
        let ada = try #require(realm.object(ofType: Person.self, forPrimaryKey: 1))
        realm.beginWrite()
        ada.age = 99
        realm.add(Person(value: ["id": 100]))
        realm.cancelWrite()
        #expect(ada.age == 36)
        #expect(realm.object(ofType: Person.self, forPrimaryKey: 100) == nil)
        #expect(realm.objects(Person.self).count == 5)
    }

    @Test func queriesInsideAWriteSeeItsChanges() throws {
        let realm = try memoryRealm()
        try addPeople(realm)
        try realm.write {
            realm.add(Person(value: ["id": 50, "firstName": "Katherine", "age": 101]))
            #expect(realm.objects(Person.self).count == 6)
            #expect(realm.objects(Person.self).where { $0.age > 100 }.count == 1)
            realm.delete(realm.objects(Person.self).where { $0.id == 1 })
            #expect(realm.objects(Person.self).count == 5)
        }
        #expect(realm.objects(Person.self).count == 5)
    }

    @Test func dataSurvivesReopeningTheFile() throws {
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("people.realm"))
        do {
            let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [Person.self]))
            try addPeople(realm)
        }
        let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [Person.self]))
        #expect(realm.objects(Person.self).count == 5)
        #expect(realm.object(ofType: Person.self, forPrimaryKey: 3)?.lastName == "Hopper")
        #expect(try schemaVersionAtURL(url) == 0)
    }
}
