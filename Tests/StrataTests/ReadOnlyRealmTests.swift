import Foundation
import Strata
import Testing
import TestSupport

@Suite struct ReadOnlyRealmTests {
    @Test func aReadOnlyRealmReadsAndRefusesWritesAndSchemaVersionAtURLWritesNothing() throws {
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("ro.realm"))
        do {
            let realm = try Realm(configuration: .init(fileURL: url, schemaVersion: 4, objectTypes: [Person.self]))
            try realm.write { realm.create(Person.self, value: ["id": 1, "firstName": "Ada"]) }
        }
        func listing() throws -> [String: Int] {
            var out: [String: Int] = [:]
            for name in try FileManager.default.contentsOfDirectory(atPath: url.path) where name != "LOCK" {
                out[name] = (try FileManager.default.attributesOfItem(atPath: url.path + "/" + name)[.size] as? Int) ?? -1
            }
            return out
        }
        let before = try listing()
        #expect(try schemaVersionAtURL(url) == 4)
        let realm = try Realm(configuration: .init(fileURL: url, readOnly: true, schemaVersion: 4, objectTypes: [Person.self]))
        #expect(realm.object(ofType: Person.self, forPrimaryKey: 1)?.firstName == "Ada")
        #expect(throws: Realm.Error.self) { try realm.write { realm.create(Person.self, value: ["id": 2]) } }
        #expect(try listing() == before)
        #expect(throws: Realm.Error.self) {
            _ = try Realm(configuration: .init(fileURL: url, readOnly: true, schemaVersion: 5, objectTypes: [Person.self]))
        }
    }
}
