import Foundation
import Strata
import Testing
import TestSupport

@Suite struct PrimaryKeyMigrationTests {
    func file(_ dir: TemporaryDirectory, codes: [Int]) throws -> URL {
        let url = URL(fileURLWithPath: dir.child("tags.realm"))
        let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [K0.Tag.self]))
        try realm.write {
            for (i, c) in codes.enumerated() { realm.create(K0.Tag.self, value: ["code": c, "label": "tag\(i)"]) }
        }
        return url
    }

    @Test func addingAnIntPrimaryKeyRekeysEveryObject() throws {
        let dir = try TemporaryDirectory()
        // Codes chosen so that objects move onto each other's old keys.
        let url = try file(dir, codes: [1, 0, 7, 2])
        let realm = try Realm(configuration: .init(fileURL: url, schemaVersion: 1, objectTypes: [K1.Tag.self]))
        #expect(realm.objects(K1.Tag.self).count == 4)
        for (i, c) in [1, 0, 7, 2].enumerated() {
            #expect(realm.object(ofType: K1.Tag.self, forPrimaryKey: c)?.label == "tag\(i)")
        }
    }

    @Test func duplicatePrimaryKeysAfterTheBlockFailTheOpenNamingTypeAndValue() throws {
        let dir = try TemporaryDirectory()
        let url = try file(dir, codes: [5, 6, 5])
        #expect {
            _ = try Realm(configuration: .init(fileURL: url, schemaVersion: 1, objectTypes: [K1.Tag.self]))
        } throws: { error in
            "\(error)".contains("'Tag.code' has duplicate values") && "\(error)".contains("5")
        }
        #expect(try schemaVersionAtURL(url) == 0)
        // The block can repair the duplicates.
        let realm = try Realm(configuration: .init(fileURL: url, schemaVersion: 1, migrationBlock: { m, _ in
            var next = 100
            m.enumerateObjects(ofType: "Tag") { old, new in
                if (old!["label"] as! String) == "tag2" {
                    new!["code"] = next
                    next += 1
                }
            }
        }, objectTypes: [K1.Tag.self]))
        #expect(realm.object(ofType: K1.Tag.self, forPrimaryKey: 100)?.label == "tag2")
        #expect(realm.object(ofType: K1.Tag.self, forPrimaryKey: 5)?.label == "tag0")
    }

    @Test func changingThePrimaryKeyToAStringBuildsItsIndex() throws {
        let dir = try TemporaryDirectory()
        let url = try file(dir, codes: [3, 4])
        _ = try Realm(configuration: .init(fileURL: url, schemaVersion: 1, objectTypes: [K1.Tag.self]))
        let realm = try Realm(configuration: .init(fileURL: url, schemaVersion: 2, objectTypes: [K2.Tag.self]))
        #expect(realm.object(ofType: K2.Tag.self, forPrimaryKey: "tag1")?.code == 4)
        try realm.write { realm.create(K2.Tag.self, value: ["label": "new", "code": 9]) }
        #expect(realm.object(ofType: K2.Tag.self, forPrimaryKey: "new")?.code == 9)
    }
}
