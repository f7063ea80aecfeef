import Foundation
import Strata
import Testing
import TestSupport

@Suite struct NoPolymorphismTests {
    static func config(_ path: String) -> Realm.Configuration {
        .init(fileURL: URL(fileURLWithPath: path), objectTypes: [OBAnimal.self, OBDog.self, OBZoo.self])
    }

    @Test func O045_O046_aSubclassIsAnotherTypeAndCannotFillItsParentsLinks() async throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: Self.config(dir.child("z.realm")))
        #expect(realm.schema["OBDog"]?.properties.map(\.name) == ["name", "barks"])
        try realm.write {
            realm.create(OBAnimal.self, value: ["name": "cat"])
            realm.create(OBDog.self, value: ["name": "rex", "barks": true])
        }
        #expect(realm.objects(OBAnimal.self).map(\.name) == ["cat"])
        let link = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = try TemporaryDirectory()
            let realm = try Realm(configuration: NoPolymorphismTests.config(dir.child("z.realm")))
            try realm.write { realm.create(OBZoo.self).star = OBDog(value: ["name": "rex"]) }
        }
        let linkError = String(decoding: link?.standardErrorContent ?? [], as: UTF8.self)
        #expect(linkError.contains("Object of type 'OBDog' cannot be stored in 'OBZoo.star'"))
        let list = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = try TemporaryDirectory()
            let realm = try Realm(configuration: NoPolymorphismTests.config(dir.child("z.realm")))
            try realm.write { realm.create(OBZoo.self).animals.append(OBDog(value: ["name": "rex"])) }
        }
        let listError = String(decoding: list?.standardErrorContent ?? [], as: UTF8.self)
        #expect(listError.contains("Object of type 'OBDog' cannot be stored in"))
    }
}
