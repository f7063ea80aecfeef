import Foundation
import Strata
import Testing
import TestSupport

final class LegacyDog: Object {
    @Persisted var name = ""
    let owners = LinkingObjects(fromType: LegacyOwner.self, property: "dogs")
}

final class LegacyOwner: Object {
    @Persisted var name = ""
    let dogs = List<LegacyDog>()
    let tags = MutableSet<String>()
    let scores = Map<String, Int>()
    let age = RealmProperty<Int?>()
    @Persisted var badge: LegacyOnlyBacklinks?
}

/// A model whose only property is a collection declared with `let`.
final class LegacyOnlyList: Object {
    let values = List<Int>()
}

/// A model whose only property is linking objects declared with `let`.
final class LegacyOnlyBacklinks: Object {
    let owners = LinkingObjects(fromType: LegacyOwner.self, property: "badge")
}

/// RealmSwift's older declarations of collections, `let dogs = List<Dog>()` and the like, are properties: the
/// same schema and file as `@Persisted var dogs: List<Dog>`, and the same instance reads the stored elements
/// once its object is managed.
@Suite struct LegacyCollectionTests {
    static func configuration(_ dir: TemporaryDirectory) -> Realm.Configuration {
        .init(fileURL: URL(fileURLWithPath: dir.child("l.realm")), objectTypes: [LegacyDog.self, LegacyOwner.self, LegacyOnlyList.self, LegacyOnlyBacklinks.self])
    }

    @Test func letCollectionsAreStoredReadAndChangedThroughTheirObject() throws {
        let dir = try TemporaryDirectory()
        do {
            let realm = try Realm(configuration: Self.configuration(dir))
            let schema = try #require(realm.schema["LegacyOwner"])
            #expect(schema.properties.map(\.name) == ["name", "dogs", "tags", "scores", "age", "badge"])
            #expect(realm.schema["LegacyDog"]?.computedProperties.map(\.name) == ["owners"])
            let owner = LegacyOwner()
            owner.name = "ann"
            owner.dogs.append(objectsIn: [LegacyDog(value: ["name": "rex"]), LegacyDog(value: ["name": "bo"])])
            owner.tags.insert(objectsIn: ["a", "b", "a"])
            owner.scores["x"] = 3
            owner.age.value = 40
            let dogs = owner.dogs
            try realm.write { realm.add(owner) }
            // The same List instance now shows the stored list, and changes it.
            #expect(dogs === owner.dogs && dogs.realm != nil && dogs.map(\.name) == ["rex", "bo"])
            try realm.write { owner.dogs.append(LegacyDog(value: ["name": "cy"])) }
            #expect(dogs.count == 3 && owner.tags.count == 2 && owner.scores["x"] == 3)
            let created = try realm.write { realm.create(LegacyOwner.self, value: ["name": "bob", "dogs": [["name": "dot"]], "scores": ["y": 1]]) }
            #expect(created.dogs.map(\.name) == ["dot"] && created.scores["y"] == 1)
            try realm.write { realm.create(LegacyOnlyList.self, value: ["values": [1, 2, 3]]) }
        }
        // Read back from the file: objects made by the Realm have their `let` collections bound.
        let realm = try Realm(configuration: Self.configuration(dir))
        let ann = try #require(realm.objects(LegacyOwner.self).filter("name == 'ann'").first)
        #expect(ann.dogs.map(\.name) == ["rex", "bo", "cy"] && Set(ann.tags) == ["a", "b"] && ann.scores["x"] == 3 && ann.age.value == 40)
        #expect(ann.dogs.filter("name BEGINSWITH 'b'").map(\.name) == ["bo"])
        let rex = try #require(realm.objects(LegacyDog.self).filter("name == 'rex'").first)
        #expect(rex.owners.map(\.name) == ["ann"])
        #expect((rex.value(forKey: "owners") as? LinkingObjects<LegacyOwner>)?.count == 1)
        #expect(realm.objects(LegacyOwner.self).filter("ANY dogs.name == 'dot'").first?.name == "bob")
        #expect(Array(realm.objects(LegacyOnlyList.self).first?.values ?? List()) == [1, 2, 3])
        // A model whose only property is computed.
        let badge = try realm.write { realm.create(LegacyOnlyBacklinks.self) }
        try realm.write { ann.badge = badge }
        #expect(badge.owners.map(\.name) == ["ann"])
        // An unmanaged object's linking objects are empty.
        #expect(LegacyDog().owners.isEmpty)
    }
}
