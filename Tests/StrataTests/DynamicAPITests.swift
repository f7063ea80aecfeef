import Foundation
import Strata
import Testing
import TestSupport

@Suite struct DynamicAPITests {
    @Test func objectsAreCreatedReadQueriedAndWrittenByName() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: .init(
            fileURL: URL(fileURLWithPath: dir.child("d.realm")), objectTypes: [QPerson.self, QDog.self, QVet.self]))
        try realm.write {
            realm.dynamicCreate("QDog", value: ["id": 1, "name": "Rex", "age": 3])
            let ada = realm.dynamicCreate("QPerson", value: ["id": 1, "name": "Ada", "dogs": [["id": 2, "name": "Fido", "age": 5]]])
            ada["best"] = realm.dynamicObject(ofType: "QDog", forPrimaryKey: 1)
            realm.dynamicCreate("QPerson", value: ["id": 2, "name": "Bo", "scores": [1, 2]])
        }
        let people = realm.dynamicObjects("QPerson")
        #expect(people.count == 2)
        let ada = try #require(realm.dynamicObject(ofType: "QPerson", forPrimaryKey: 1))
        #expect(ada["name"] as? String == "Ada")
        #expect(ada.name as? String == "Ada")
        #expect((ada["best"] as? QDog)?.name == "Rex")
        #expect((ada["dogs"] as? List<QDog>)?.map(\.name) == ["Fido"])
        #expect(ada.objectSchema.className == "QPerson")
        #expect(people.filter("best.name == 'Rex'").map { $0["id"] as? Int } == [1])
        #expect(people.sorted(byKeyPath: "name", ascending: false).map { $0["name"] as? String } == ["Bo", "Ada"])
        try realm.write { ada["name"] = "Ada L." }
        // The typed and the dynamic views are of one object.
        #expect(realm.object(ofType: QPerson.self, forPrimaryKey: 1)?.name == "Ada L.")
        #expect(realm.dynamicObject(ofType: "QPerson", forPrimaryKey: 3) == nil)
        try realm.write { realm.delete(ada) }
        #expect(realm.dynamicObjects("QPerson").count == 1)
        #expect(ada.isInvalidated)
    }
}
