import Foundation
import Strata
import Testing
import TestSupport

/// Primary keys: duplicates refused unless updating, ObjectId and String keys found through their index,
/// types without a key get object keys.
@Suite struct PrimaryKeyTests {
    @Test func primaryKeysRejectDuplicatesUnlessUpdating() throws {
        let realm = try memoryRealm()
        try addPeople(realm)
        try realm.write {
            realm.add(Person(value: ["id": 1, "firstName": "Augusta", "age": 36]), update: .modified)
        }
        #expect(realm.objects(Person.self).count == 5)
        #expect(realm.object(ofType: Person.self, forPrimaryKey: 1)?.firstName == "Augusta")
        try realm.write {
            realm.create(Person.self, value: ["id": 2, "age": 42], update: .modified)
        }
        #expect(realm.object(ofType: Person.self, forPrimaryKey: 2)?.age == 42)
        // A partial dictionary changes only what it names (O014).
        #expect(realm.object(ofType: Person.self, forPrimaryKey: 2)?.firstName == "Alan")
    }

    @Test func objectIdAndStringKeysUseTheIndex() throws {
        let realm = try memoryRealm()
        let id = ObjectId.generate()
        let tag = UUID()
        try realm.write {
            realm.create(Dog.self, value: ["_id": id, "name": "Rex", "weight": 12.5, "tag": tag])
            for i in 0..<20 { realm.create(Dog.self, value: ["_id": ObjectId.generate(), "name": "dog \(i)"]) }
        }
        let rex = try #require(realm.object(ofType: Dog.self, forPrimaryKey: id))
        #expect(rex.name == "Rex")
        #expect(rex.weight == 12.5)
        #expect(rex.tag == tag)
        #expect(rex.color == .green)
        try realm.write { rex.color = .blue }
        #expect(realm.objects(Dog.self).where { $0.color == .blue }.count == 1)
        try realm.write { realm.delete(rex) }
        #expect(realm.object(ofType: Dog.self, forPrimaryKey: id) == nil)
        #expect(rex.isInvalidated)
        #expect(realm.objects(Dog.self).count == 20)
    }

    @Test func typesWithoutPrimaryKeysGetKeysAndCanBeDeleted() throws {
        let realm = try memoryRealm()
        try realm.write {
            for i in 0..<10 { realm.add(Note(value: ["text": "note \(i)", "priority": Int8(i % 3)])) }
        }
        let notes = realm.objects(Note.self)
        #expect(notes.count == 10)
        #expect(notes.where { $0.priority == 2 }.count == 3)
        try realm.write { realm.delete(notes.where { $0.priority == 0 }) }
        #expect(notes.count == 6)
        try realm.write { realm.add(Note(value: ["text": "later"])) }
        #expect(notes.count == 7)
        #expect(notes.filter("text == 'later'").first?.priority == 1)
        try realm.write { realm.deleteAll() }
        #expect(notes.isEmpty)
        #expect(realm.isEmpty)
    }
}
