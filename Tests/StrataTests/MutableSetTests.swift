import Foundation
import Strata
import Testing
import TestSupport

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
