import Foundation
import Strata
import Testing
import TestSupport

/// The older spellings `RealmProperty<Value>` and `RealmOptional<Wrapped>` (realm-api.md, model declaration):
/// declared with `let`, read and written through `.value`, stored as the `@Persisted` optional would be.
@Suite struct RealmPropertyTests {
    final class Legacy: Object {
        @Persisted(primaryKey: true) var id = 0
        let age = RealmProperty<Int?>()
        let mood = RealmProperty<AnyRealmValue>()
        let score = RealmOptional<Double>()
    }

    /// The same file read with the modern declaration.
    final class Modern: Object {
        @Persisted(primaryKey: true) var id = 0
        @Persisted var age: Int?
        @Persisted var mood: AnyRealmValue
        @Persisted var score: Double?
        override class func className() -> String { "Legacy" }
    }

    final class LinkHolder: Object {
        @Persisted var id = 0
        let friend = RealmProperty<Legacy?>()
    }

    @Test func aLinkDeclaredAsRealmPropertyIsRefused() throws {
        let dir = try TemporaryDirectory()
        let error = Conformance.openError(Conformance.url(dir), [LinkHolder.self, Legacy.self])
        #expect(error?.code == .schemaMismatch)
        #expect(error?.localizedDescription.contains("LinkHolder.friend") == true)
    }

    @Test func theSchemaIsThatOfTheOptionalProperty() throws {
        let dir = try TemporaryDirectory()
        let realm = try Conformance.open(Conformance.url(dir), [Legacy.self])
        let schema = try #require(realm.schema["Legacy"])
        #expect(schema.properties.map(\.name) == ["id", "age", "mood", "score"])
        #expect(schema["age"]?.type == .int && schema["age"]?.isOptional == true)
        #expect(schema["mood"]?.type == .any && schema["mood"]?.isOptional == false)
        #expect(schema["score"]?.type == .double && schema["score"]?.isOptional == true)
    }

    @Test func unmanagedAndManagedValuesGoThroughValue() throws {
        let dir = try TemporaryDirectory()
        let url = Conformance.url(dir)
        do {
            let realm = try Conformance.open(url, [Legacy.self])
            let object = Legacy()
            object.id = 1
            #expect(object.age.value == nil && object.score.value == nil)
            object.age.value = 30
            object.mood.value = .string("calm")
            try realm.write { realm.add(object) }
            // Managed now: reads and writes go to the file.
            #expect(object.age.value == 30)
            #expect(object.mood.value == .string("calm"))
            try realm.write {
                object.age.value = 31
                object.score.value = 2.5
            }
            let again = try #require(realm.object(ofType: Legacy.self, forPrimaryKey: 1))
            #expect(again.age.value == 31 && again.score.value == 2.5)
            #expect(realm.objects(Legacy.self).filter("age == 31 AND score > 2").count == 1)
            // Values given by name land in the properties, managed or not.
            let byName = Legacy(value: ["id": 2, "age": 5, "score": 1.0])
            #expect(byName.age.value == 5 && byName.score.value == 1.0)
            try realm.write { realm.add(byName) }
            #expect(realm.objects(Legacy.self).filter("age == 5").first?.score.value == 1.0)
            let created = try realm.write { realm.create(Legacy.self, value: ["id": 3, "age": 7]) }
            #expect(created.age.value == 7 && created.score.value == nil)
            // Enumeration binds every object it makes.
            #expect(realm.objects(Legacy.self).sorted(byKeyPath: "id").map { $0.age.value } == [31, 5, 7])
            // A property kept after its object is gone still reads that object, never the next one of a loop.
            let kept = realm.objects(Legacy.self).sorted(byKeyPath: "id").map { $0.age }
            #expect(kept.map(\.value) == [31, 5, 7])
            #expect(realm.objects(Legacy.self).filter("id == 1").first?.age.value == 31)
        }
        // The file is the one the @Persisted declaration writes.
        let modern = try Realm(configuration: Conformance.config(url, [Modern.self]))
        let one = try #require(modern.object(ofType: Modern.self, forPrimaryKey: 1))
        #expect(one.age == 31 && one.score == 2.5 && one.mood == .string("calm"))
    }
}
