import Engine
import Foundation
import Strata
import Testing
import TestSupport

@Suite struct MigrationTests {
    func fileV1(_ dir: TemporaryDirectory) throws -> URL {
        let url = URL(fileURLWithPath: dir.child("people.realm"))
        let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [M1.Person.self]))
        try realm.write {
            realm.create(M1.Person.self, value: ["id": 1, "firstName": "Ada", "lastName": "Lovelace", "age": 36, "nickname": "Countess"])
            realm.create(M1.Person.self, value: ["id": 2, "firstName": "Alan", "lastName": "Turing", "age": 41])
        }
        return url
    }

    @Test func renameAndCombineAsTheSeedsDescribe() throws {
        let dir = try TemporaryDirectory()
        let url = try fileV1(dir)
        let calls = Locked<[UInt64]>([])
        let config = Realm.Configuration(fileURL: url, schemaVersion: 2, migrationBlock: { migration, oldVersion in
            calls.withLock { $0.append(oldVersion) }
            if oldVersion < 1 {
                migration.enumerateObjects(ofType: "Person") { old, new in
                    let first = old!["firstName"] as! String
                    let last = old!["lastName"] as! String
                    new!["fullName"] = "\(first) \(last)"
                }
            }
            if oldVersion < 2 {
                migration.renameProperty(onType: "Person", from: "age", to: "yearsSinceBirth")
            }
        }, objectTypes: [M2.Person.self])
        let realm = try Realm(configuration: config)
        #expect(calls.withLock { $0 } == [0])
        let ada = try #require(realm.object(ofType: M2.Person.self, forPrimaryKey: 1))
        #expect(ada.fullName == "Ada Lovelace")
        #expect(ada.yearsSinceBirth == 36)
        #expect(ada.nickname == "Countess")
        let alan = try #require(realm.object(ofType: M2.Person.self, forPrimaryKey: 2))
        #expect(alan.fullName == "Alan Turing")
        #expect(alan.yearsSinceBirth == 41)
        // Optional to required: nil becomes the declared default, other values stay.
        #expect(alan.nickname == "none")
        #expect(try schemaVersionAtURL(url) == 2)
        #expect(realm.objects(M2.Person.self).where { $0.yearsSinceBirth > 40 }.count == 1)
    }

    @Test func aTypeChangeIsMigratedWithEnumerateObjects() throws {
        let dir = try TemporaryDirectory()
        let url = try fileV1(dir)
        do {
            _ = try Realm(configuration: .init(fileURL: url, schemaVersion: 2, migrationBlock: { m, _ in
                m.renameProperty(onType: "Person", from: "age", to: "yearsSinceBirth")
            }, objectTypes: [M2.Person.self]))
        }
        let realm = try Realm(configuration: .init(fileURL: url, schemaVersion: 3, migrationBlock: { m, old in
            #expect(old == 2)
            m.enumerateObjects(ofType: "Person") { oldObject, newObject in
                newObject!["yearsSinceBirth"] = String(oldObject!["yearsSinceBirth"] as! Int)
            }
        }, objectTypes: [M3.Person.self]))
        #expect(realm.object(ofType: M3.Person.self, forPrimaryKey: 1)?.yearsSinceBirth == "36")
        #expect(realm.object(ofType: M3.Person.self, forPrimaryKey: 2)?.yearsSinceBirth == "41")
    }

    @Test func theBlockRunsOncePerBumpEvenWithoutSchemaChangesButNeverForANewFile() throws {
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("n.realm"))
        let calls = Locked<[UInt64]>([])
        let block: Realm.MigrationBlock = { _, old in calls.withLock { $0.append(old) } }
        _ = try Realm(configuration: .init(fileURL: url, schemaVersion: 5, migrationBlock: block, objectTypes: [M1.Person.self]))
        #expect(calls.withLock { $0 } == [])
        _ = try Realm(configuration: .init(fileURL: url, schemaVersion: 5, migrationBlock: block, objectTypes: [M1.Person.self]))
        #expect(calls.withLock { $0 } == [])
        _ = try Realm(configuration: .init(fileURL: url, schemaVersion: 6, migrationBlock: block, objectTypes: [M1.Person.self]))
        #expect(calls.withLock { $0 } == [5])
    }

    @Test func aFailedRenameFailsTheOpenAndWritesNothing() throws {
        let dir = try TemporaryDirectory()
        let url = try fileV1(dir)
        #expect {
            _ = try Realm(configuration: .init(fileURL: url, schemaVersion: 2, migrationBlock: { m, _ in
                m.renameProperty(onType: "Person", from: "agee", to: "yearsSinceBirth")
            }, objectTypes: [M2.Person.self]))
        } throws: { error in
            "\(error)".contains("'Person.agee' because it does not exist") && "\(error)".contains("nothing was written")
        }
        #expect(try schemaVersionAtURL(url) == 0)
        let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [M1.Person.self]))
        #expect(realm.object(ofType: M1.Person.self, forPrimaryKey: 1)?.age == 36)
    }

    @Test func oldObjectsShowRemovedPropertiesAndDeleteDataRemovesObjects() throws {
        let dir = try TemporaryDirectory()
        let url = try fileV1(dir)
        let seen = Locked<[String]>([])
        let realm = try Realm(configuration: .init(fileURL: url, schemaVersion: 1, migrationBlock: { m, _ in
            m.enumerateObjects(ofType: "Person") { old, new in
                seen.withLock { $0.append(old!["lastName"] as! String) }
                if (old!["age"] as! Int) > 40 { m.delete(new!) }
            }
            m.create("Person", value: ["id": 3, "fullName": "Grace Hopper", "yearsSinceBirth": 85])
        }, objectTypes: [M2.Person.self]))
        #expect(seen.withLock { $0 }.sorted() == ["Lovelace", "Turing"])
        #expect(realm.objects(M2.Person.self).map(\.id).sorted() == [1, 3])
        #expect(realm.object(ofType: M2.Person.self, forPrimaryKey: 3)?.fullName == "Grace Hopper")
    }

    @Test func deleteRealmIfMigrationNeededStartsOver() throws {
        let dir = try TemporaryDirectory()
        let url = try fileV1(dir)
        let realm = try Realm(configuration: .init(fileURL: url, deleteRealmIfMigrationNeeded: true, objectTypes: [M3.Person.self]))
        #expect(realm.objects(M3.Person.self).isEmpty)
        try realm.write { realm.create(M3.Person.self, value: ["id": 9, "yearsSinceBirth": "9"]) }
        #expect(realm.object(ofType: M3.Person.self, forPrimaryKey: 9)?.yearsSinceBirth == "9")
    }

    @Test func mistakesInTheBlockFailTheOpenNamingTypePropertyAndVersionsAndWriteNothing() throws {
        let dir = try TemporaryDirectory()
        let url = try fileV1(dir)
        let cases: [(String, Realm.MigrationBlock)] = [
            ("old objects are read-only", { m, _ in m.enumerateObjects(ofType: "Person") { old, _ in old!["age"] = 5 } }),
            ("Invalid value", { m, _ in m.enumerateObjects(ofType: "Person") { _, new in new!["fullName"] = 42 } }),
            ("Invalid property name 'nope'", { m, _ in m.enumerateObjects(ofType: "Person") { _, new in new!["nope"] = 1 } }),
            // (Enumerating a type in neither schema is no mistake: it does nothing, M052.)
        ]
        for (expected, block) in cases {
            #expect {
                _ = try Realm(configuration: .init(fileURL: url, schemaVersion: 2, migrationBlock: block, objectTypes: [M2.Person.self]))
            } throws: { error in
                let text = "\(error)"
                return text.contains(expected) && text.contains("from schema version 0 to 2") && text.contains("nothing was written")
            }
            #expect(try schemaVersionAtURL(url) == 0)
        }
        let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [M1.Person.self]))
        #expect(realm.object(ofType: M1.Person.self, forPrimaryKey: 1)?.firstName == "Ada")
    }
}
