import Foundation
import Strata
import Testing
import TestSupport

@Suite struct LinearMigrationTests {
    func v1(_ dir: TemporaryDirectory, _ name: String) throws -> URL {
        let url = URL(fileURLWithPath: dir.child(name))
        let realm = try Realm(configuration: .init(fileURL: url, schemaVersion: 1, objectTypes: [L1.Person.self]))
        try realm.write { realm.create(L1.Person.self, value: ["id": 1, "email": "tim@v1.example"]) }
        return url
    }

    /// Version 3's block, as the seed recommends: non-nested `if oldSchemaVersion < X`.
    static let block: Realm.MigrationBlock = { migration, oldSchemaVersion in
        if oldSchemaVersion < 3 {
            migration.enumerateObjects(ofType: "Person") { _, new in new?["email"] = nil }
        }
    }

    @Test func stepByStepAndSkippingVersionsGiveTheSameData() throws {
        let dir = try TemporaryDirectory()
        // JP: 1 -> 2 -> 3.
        let jp = try v1(dir, "jp.realm")
        // (Version 2 of the app had no block: the `< 3` clause arrived with version 3.)
        _ = try Realm(configuration: .init(fileURL: jp, schemaVersion: 2, objectTypes: [L2.Person.self]))
        let jpRealm = try Realm(configuration: .init(fileURL: jp, schemaVersion: 3, migrationBlock: Self.block, objectTypes: [L3.Person.self]))
        // Tim: 1 -> 3 in one open.
        let tim = try v1(dir, "tim.realm")
        let timRealm = try Realm(configuration: .init(fileURL: tim, schemaVersion: 3, migrationBlock: Self.block, objectTypes: [L3.Person.self]))
        #expect(jpRealm.object(ofType: L3.Person.self, forPrimaryKey: 1)?.email == nil)
        #expect(timRealm.object(ofType: L3.Person.self, forPrimaryKey: 1)?.email == nil)
    }

    @Test func withoutTheRecommendedLineAJumpKeepsTheOldContentsAsRealmDoes() throws {
        let dir = try TemporaryDirectory()
        let tim = try v1(dir, "tim.realm")
        let realm = try Realm(configuration: .init(fileURL: tim, schemaVersion: 3, objectTypes: [L3.Person.self]))
        #expect(realm.object(ofType: L3.Person.self, forPrimaryKey: 1)?.email == "tim@v1.example")
        // Step by step, the deletion at version 2 really deletes.
        let jp = try v1(dir, "jp.realm")
        _ = try Realm(configuration: .init(fileURL: jp, schemaVersion: 2, objectTypes: [L2.Person.self]))
        let jpRealm = try Realm(configuration: .init(fileURL: jp, schemaVersion: 3, objectTypes: [L3.Person.self]))
        #expect(jpRealm.object(ofType: L3.Person.self, forPrimaryKey: 1)?.email == nil)
    }
}
