import Foundation
import Strata
import Testing
import TestSupport
import Synchronization

@Suite struct ObjectLayerTests {
    func memoryRealm(_ name: String = #function, types: [Object.Type]? = [Person.self, Dog.self, Note.self]) throws -> Realm {
        try Realm(configuration: .init(inMemoryIdentifier: name + UUID().uuidString, objectTypes: types))
    }

    func people(_ realm: Realm) throws {
        try realm.write {
            for (i, (f, l, a)) in [("Ada", "Lovelace", 36), ("Alan", "Turing", 41), ("Grace", "Hopper", 85), ("Edsger", "Dijkstra", 72), ("Barbara", "Liskov", 17)].enumerated() {
                realm.add(Person(value: ["id": i + 1, "firstName": f, "lastName": l, "age": a]))
            }
        }
    }

    @Test func addedObjectsAreManagedAndReadBack() throws {
        let realm = try memoryRealm()
        let p = Person()
        p.id = 7
        p.firstName = "Ada"
        p.age = 36
        #expect(p.realm == nil)
        try realm.write { realm.add(p) }
        #expect(p.realm != nil)
        #expect(p.firstName == "Ada")
        let found = try #require(realm.object(ofType: Person.self, forPrimaryKey: 7))
        #expect(found.firstName == "Ada")
        #expect(found.age == 36)
        #expect(found.nickname == nil)
        #expect(found.isActive == true)
        #expect(found.isSameObject(as: p))
        #expect(realm.object(ofType: Person.self, forPrimaryKey: 8) == nil)
    }

    @Test func writesToManagedObjectsAreLiveAndCommitted() throws {
        let realm = try memoryRealm()
        try people(realm)
        let ada = try #require(realm.object(ofType: Person.self, forPrimaryKey: 1))
        try realm.write {
            ada.age = 37
            ada.nickname = "Countess"
            #expect(ada.age == 37)
        }
        let again = try #require(realm.object(ofType: Person.self, forPrimaryKey: 1))
        #expect(again.age == 37)
        #expect(again.nickname == "Countess")
        try realm.write { ada.nickname = nil }
        #expect(again.nickname == nil)
    }

    @Test func cancelledWritesLeaveNoTrace() throws {
        let realm = try memoryRealm()
        try people(realm)
        let ada = try #require(realm.object(ofType: Person.self, forPrimaryKey: 1))
        realm.beginWrite()
        ada.age = 99
        realm.add(Person(value: ["id": 100]))
        realm.cancelWrite()
        #expect(ada.age == 36)
        #expect(realm.object(ofType: Person.self, forPrimaryKey: 100) == nil)
        #expect(realm.objects(Person.self).count == 5)
    }

    @Test func stringAndTypeSafeQueriesAgree() throws {
        let realm = try memoryRealm()
        try people(realm)
        let all = realm.objects(Person.self)
        #expect(all.count == 5)
        #expect(all.filter("age > 40").count == 3)
        #expect(all.where { $0.age > 40 }.count == 3)
        #expect(all.filter("age > %@ AND firstName BEGINSWITH %@", 18, "A").count == 2)
        #expect(all.where { $0.age > 18 && $0.firstName.starts(with: "A") }.count == 2)
        #expect(all.filter("firstName BEGINSWITH[c] 'a'").count == 2)
        #expect(all.where { $0.firstName.starts(with: "a", options: .caseInsensitive) }.count == 2)
        #expect(all.filter("lastName CONTAINS 'o'").count == 3)
        #expect(all.filter("lastName ENDSWITH 'er'").count == 1)
        #expect(all.filter("firstName LIKE 'A*a'").count == 1)
        #expect(all.filter("age BETWEEN {30, 50}").count == 2)
        #expect(all.where { $0.age.contains(30...50) }.count == 2)
        #expect(all.filter("id IN {1, 3, 5}").count == 3)
        #expect(all.where { $0.id.in([1, 3, 5]) }.count == 3)
        #expect(all.filter("NOT (age < 40) OR firstName == 'Ada'").count == 4)
        #expect(all.where { !($0.age < 40) || $0.firstName == "Ada" }.count == 4)
        #expect(all.filter("nickname == nil").count == 5)
        #expect(all.where { $0.nickname == nil }.count == 5)
        #expect(all.where { $0.isActive }.count == 5)
        #expect(all.filter("isActive == false").count == 0)
        #expect(all.filter("age > 40").filter("age < 80").count == 2)
    }

    @Test func sortingAndAggregates() throws {
        let realm = try memoryRealm()
        try people(realm)
        let byAge = realm.objects(Person.self).sorted(byKeyPath: "age")
        #expect(byAge.map(\.firstName) == ["Barbara", "Ada", "Alan", "Edsger", "Grace"])
        let byName = realm.objects(Person.self).sorted(by: \.lastName, ascending: false)
        #expect(byName.first?.lastName == "Turing")
        let all = realm.objects(Person.self)
        #expect(all.min(ofProperty: "age") == 17)
        #expect(all.max(ofProperty: "age") == 85)
        #expect(all.sum(ofProperty: "age") == 251)
        #expect(all.average(ofProperty: "age") == 50.2)
        #expect(all.max(of: \.age) == 85)
        #expect(all.where { $0.age > 100 }.average(ofProperty: "age") as Double? == nil)
    }

    @Test func distinctKeepsTheFirstObjectOfEachValueInSortOrder() throws {
        let realm = try memoryRealm()
        try realm.write {
            for (i, (name, age)) in [("Ada", 36), ("Ada", 20), ("Alan", 41), ("Ada", 50), ("Alan", 30)].enumerated() {
                realm.create(Person.self, value: ["id": i, "firstName": name, "age": age])
            }
        }
        let youngestFirst = realm.objects(Person.self).sorted(byKeyPath: "age").distinct(by: ["firstName"])
        #expect(youngestFirst.map(\.age) == [20, 30])
        #expect(realm.objects(Person.self).distinct(by: ["firstName", "age"]).count == 5)
        #expect(realm.objects(Person.self).where { $0.age > 25 }.distinct(by: ["firstName"]).count == 2)
    }

    @Test func primaryKeysRejectDuplicatesUnlessUpdating() throws {
        let realm = try memoryRealm()
        try people(realm)
        try realm.write {
            realm.add(Person(value: ["id": 1, "firstName": "Augusta", "age": 36]), update: .modified)
        }
        #expect(realm.objects(Person.self).count == 5)
        #expect(realm.object(ofType: Person.self, forPrimaryKey: 1)?.firstName == "Augusta")
        try realm.write {
            realm.create(Person.self, value: ["id": 2, "age": 42], update: .modified)
        }
        #expect(realm.object(ofType: Person.self, forPrimaryKey: 2)?.age == 42)
        // A partial dictionary changes only what it names (O014).
        #expect(realm.object(ofType: Person.self, forPrimaryKey: 2)?.firstName == "Alan")
    }

    @Test func objectIdAndStringKeysUseTheIndex() throws {
        let realm = try memoryRealm()
        let id = ObjectId.generate()
        let tag = UUID()
        try realm.write {
            realm.create(Dog.self, value: ["_id": id, "name": "Rex", "weight": 12.5, "tag": tag])
            for i in 0..<20 { realm.create(Dog.self, value: ["_id": ObjectId.generate(), "name": "dog \(i)"]) }
        }
        let rex = try #require(realm.object(ofType: Dog.self, forPrimaryKey: id))
        #expect(rex.name == "Rex")
        #expect(rex.weight == 12.5)
        #expect(rex.tag == tag)
        #expect(rex.color == .green)
        try realm.write { rex.color = .blue }
        #expect(realm.objects(Dog.self).where { $0.color == .blue }.count == 1)
        try realm.write { realm.delete(rex) }
        #expect(realm.object(ofType: Dog.self, forPrimaryKey: id) == nil)
        #expect(rex.isInvalidated)
        #expect(realm.objects(Dog.self).count == 20)
    }

    @Test func typesWithoutPrimaryKeysGetKeysAndCanBeDeleted() throws {
        let realm = try memoryRealm()
        try realm.write {
            for i in 0..<10 { realm.add(Note(value: ["text": "note \(i)", "priority": Int8(i % 3)])) }
        }
        let notes = realm.objects(Note.self)
        #expect(notes.count == 10)
        #expect(notes.where { $0.priority == 2 }.count == 3)
        try realm.write { realm.delete(notes.where { $0.priority == 0 }) }
        #expect(notes.count == 6)
        try realm.write { realm.add(Note(value: ["text": "later"])) }
        #expect(notes.count == 7)
        #expect(notes.filter("text == 'later'").first?.priority == 1)
        try realm.write { realm.deleteAll() }
        #expect(notes.isEmpty)
        #expect(realm.isEmpty)
    }

    @Test func queriesInsideAWriteSeeItsChanges() throws {
        let realm = try memoryRealm()
        try people(realm)
        try realm.write {
            realm.add(Person(value: ["id": 50, "firstName": "Katherine", "age": 101]))
            #expect(realm.objects(Person.self).count == 6)
            #expect(realm.objects(Person.self).where { $0.age > 100 }.count == 1)
            realm.delete(realm.objects(Person.self).where { $0.id == 1 })
            #expect(realm.objects(Person.self).count == 5)
        }
        #expect(realm.objects(Person.self).count == 5)
    }

    @Test func dataSurvivesReopeningTheFile() throws {
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("people.realm"))
        do {
            let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [Person.self]))
            try people(realm)
        }
        let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [Person.self]))
        #expect(realm.objects(Person.self).count == 5)
        #expect(realm.object(ofType: Person.self, forPrimaryKey: 3)?.lastName == "Hopper")
        #expect(try schemaVersionAtURL(url) == 0)
    }

    @Test func typesAreDiscoveredOnFirstUseWhenObjectTypesIsNil() throws {
        let realm = try Realm(configuration: .init(inMemoryIdentifier: "discover-\(UUID())"))
        try realm.write { realm.add(Note(value: ["text": "hello"])) }
        #expect(realm.objects(Note.self).count == 1)
        #expect(realm.schema["Note"]?.properties.map(\.name) == ["text", "priority", "payload"])
    }

    @Test func aLowerSchemaVersionIsAnErrorNamingBothVersions() throws {
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("v.realm"))
        do { _ = try Realm(configuration: .init(fileURL: url, schemaVersion: 3, objectTypes: [V0.Item.self])) }
        #expect {
            _ = try Realm(configuration: .init(fileURL: url, schemaVersion: 2, objectTypes: [V0.Item.self]))
        } throws: { error in
            guard let e = error as? Realm.Error else { return false }
            return e.code == .fail && e.message == "Provided schema version 2 is less than last set version 3."
                && "\(e)".contains("open it with schemaVersion 3 or higher")
        }
    }

    @Test func theSameVersionWithADifferentSchemaListsEveryDifference() throws {
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("m.realm"))
        do {
            let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [V0.Item.self]))
            try realm.write { realm.add(V0.Item(value: ["id": 1, "name": "one"])) }
        }
        do {
            _ = try Realm(configuration: .init(fileURL: url, objectTypes: [V1.Item.self]))
            Issue.record("opening with a changed schema and the same version succeeded")
        } catch Realm.Error.schemaMismatch {
            // The pattern form ported code uses.
        }
        #expect {
            _ = try Realm(configuration: .init(fileURL: url, objectTypes: [V1.Item.self]))
        } throws: { error in
            guard let e = error as? Realm.Error else { return false }
            return e.message.contains("'Item.email' has been added") && e.message.contains("'Item.score' has been added")
                && "\(e)".contains("raise schemaVersion to 1")
        }
        // Nothing was written: the old schema still opens.
        let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [V0.Item.self]))
        #expect(realm.objects(V0.Item.self).first?.name == "one")
    }

    @Test func addedPropertiesGetTheDeclaredDefaultOnExistingObjects() throws {
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("a.realm"))
        do {
            let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [V0.Item.self]))
            try realm.write { realm.add(V0.Item(value: ["id": 1, "name": "one"])) }
        }
        let realm = try Realm(configuration: .init(fileURL: url, schemaVersion: 1, objectTypes: [V1.Item.self]))
        let item = try #require(realm.object(ofType: V1.Item.self, forPrimaryKey: 1))
        #expect(item.name == "one")
        #expect(item.email == "none")
        #expect(item.score == nil)
        #expect(try schemaVersionAtURL(url) == 1)
    }

    @Test func invalidModelsAreErrorsNamingTheTypeAndProperty() throws {
        final class TwoKeys: Object {
            @Persisted(primaryKey: true) var a: Int
            @Persisted(primaryKey: true) var b: Int
        }
        final class BadKey: Object {
            @Persisted(primaryKey: true) var value: Double
        }
        #expect {
            _ = try Realm(configuration: .init(inMemoryIdentifier: "bad1", objectTypes: [TwoKeys.self]))
        } throws: { error in "\(error)".contains("Properties 'b' and 'a' are both marked as the primary key of 'TwoKeys'") }
        #expect {
            _ = try Realm(configuration: .init(inMemoryIdentifier: "bad2", objectTypes: [BadKey.self]))
        } throws: { error in
            "\(error)".contains("Property 'value' cannot be made the primary key of 'BadKey' because it is not a 'string', 'int', 'objectId', or 'uuid' property.")
        }
    }

    @Test func keyValueCodingAndDescription() throws {
        let realm = try memoryRealm()
        try people(realm)
        let p = try #require(realm.object(ofType: Person.self, forPrimaryKey: 2))
        #expect(p["firstName"] as? String == "Alan")
        #expect(p.value(forKey: "age") as? Int == 41)
        try realm.write { p["age"] = 42 }
        #expect(p.age == 42)
        #expect(p.description.contains("firstName = \"Alan\""))
        let unmanaged = Person(value: ["id": 9, "firstName": "Unmanaged"])
        #expect(unmanaged.firstName == "Unmanaged")
        unmanaged.firstName = "Changed"
        #expect(unmanaged.firstName == "Changed")
        #expect(realm.objects(Person.self).value(forKey: "firstName").count == 5)
        try realm.write { realm.objects(Person.self).where { $0.age > 40 }.setValue("older", forKey: "nickname") }
        #expect(realm.objects(Person.self).filter("nickname == 'older'").count == 3)  // Alan (42), Grace, Edsger
    }
}

@Suite struct InMemoryRealmTests {
    @Test func anInMemoryRealmLivesWhileAnInstanceDoes() throws {
        let id = "mem-\(UUID())"
        do {
            let a = try Realm(configuration: .init(inMemoryIdentifier: id, objectTypes: [Note.self]))
            try a.write { a.add(Note(value: ["text": "kept"])) }
            let b = try Realm(configuration: .init(inMemoryIdentifier: id, objectTypes: [Note.self]))
            #expect(b.objects(Note.self).count == 1)
        }
        let c = try Realm(configuration: .init(inMemoryIdentifier: id, objectTypes: [Note.self]))
        #expect(c.objects(Note.self).isEmpty)
    }
}

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

@Suite struct ConfigurationTests {
    @Test func anEncryptionKeyIsRefusedRatherThanIgnored() throws {
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("e.realm"))
        #expect {
            _ = try Realm(configuration: .init(fileURL: url, encryptionKey: Data(repeating: 1, count: 64), objectTypes: [Note.self]))
        } throws: { error in "\(error)".contains("encryption at rest is not supported yet") }
        #expect(!FileManager.default.fileExists(atPath: url.path))
    }

    @Test func aSeedFileIsCopiedForANewRealm() throws {
        let dir = try TemporaryDirectory()
        let seed = URL(fileURLWithPath: dir.child("seed.realm"))
        do {
            let realm = try Realm(configuration: .init(fileURL: seed, objectTypes: [Note.self]))
            try realm.write { realm.add(Note(value: ["text": "from the seed"])) }
        }
        let url = URL(fileURLWithPath: dir.child("app.realm"))
        let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [Note.self], seedFilePath: seed))
        #expect(realm.objects(Note.self).first?.text == "from the seed")
    }

    @Test func shouldCompactOnLaunchIsAskedWithTotalAndUsedBytes() throws {
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("c.realm"))
        // Three sessions overwrite the same objects: three segments, two of them superseded.
        for round in 0..<3 {
            let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [Person.self]))
            try realm.write {
                for i in 0..<300 {
                    realm.create(Person.self, value: ["id": i, "firstName": "r\(round)-\(UUID().uuidString)"], update: .modified)
                }
            }
        }
        let asked = Mutex<(Int, Int)?>(nil)
        var config = Realm.Configuration(fileURL: url, objectTypes: [Person.self])
        config.shouldCompactOnLaunch = { total, used in
            asked.withLock { $0 = (total, used) }
            return true
        }
        do {
            let realm = try Realm(configuration: config)
            #expect(realm.objects(Person.self).count == 300)
            #expect(realm.objects(Person.self).allSatisfy { $0.firstName.hasPrefix("r2-") })
        }
        // Used bytes are uncompressed, total bytes compressed; three copies still take more than one.
        let (total, used) = try #require(asked.withLock { $0 })
        #expect(total > used, "three copies of the data, one live: total \(total), used \(used)")
        // The compaction it asked for left one copy.
        _ = try Realm(configuration: config)
        let (after, _) = try #require(asked.withLock { $0 })
        // (Background merges at the earlier opens may have dropped some copies already.)
        #expect(after < total, "after compaction: \(after) bytes, before: \(total)")
    }
}
