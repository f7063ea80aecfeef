import Foundation
import Strata
import Testing
import TestSupport

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
