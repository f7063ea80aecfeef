import Foundation
import Testing
import TestSupport

@testable import Strata

enum SL1 {
    final class SDog: Object {
        @Persisted var name = ""
    }
    final class SOwner: Object {
        @Persisted var name = ""
        @Persisted var dog: SDog?
    }
}

/// Dogs get a nickname.
enum SL2 {
    final class SDog: Object {
        @Persisted var name = ""
        @Persisted var nickname = ""
    }
    final class SOwner: Object {
        @Persisted var name = ""
        @Persisted var dog: SDog?
    }
}

/// A blocking migration writes each enumerated object into its transaction as the closure returns
/// (`StreamedRecords`), keeping nothing per object; whatever the block does with those objects afterwards (a
/// second enumeration, a rename, objects it kept, links read through other objects, a delete, a mistake that
/// fails the open) counts exactly as when every object was kept to the end.
@Suite struct MigrationStreamingTests {
    static let count = 300

    static func fileV1(_ dir: TemporaryDirectory) throws -> URL {
        let url = URL(fileURLWithPath: dir.child("people.realm"))
        let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [M1.Person.self]))
        try realm.write {
            for i in 0..<count {
                realm.create(
                    M1.Person.self, value: ["id": i, "firstName": "f\(i)", "lastName": "l\(i)", "age": i, "nickname": i % 2 == 0 ? "n\(i)" : nil])
            }
        }
        return url
    }

    /// The migrations here spill their transaction every few objects (`migrationSpillBytes`), so that what
    /// the block does after a spill reads the objects back from the spilled segments.
    static func config(_ url: URL, _ block: @escaping MigrationBlock) -> Realm.Configuration {
        var c = Realm.Configuration(fileURL: url, schemaVersion: 2, migrationBlock: block, objectTypes: [M2.Person.self])
        c.migrationSpillBytes = 1500
        return c
    }

    /// The seeds' combine: fullName from the old object's two names.
    static func combine(_ migration: Migration) {
        migration.enumerateObjects(ofType: "Person") { old, new in
            new!["fullName"] = "\(old!["firstName"] as! String) \(old!["lastName"] as! String)"
        }
    }

    /// The seeds' combine-then-rename, over enough objects to span several segment blocks: every object is
    /// streamed, and the rename after the enumeration still moves `age`'s values to `yearsSinceBirth`.
    @Test func enumeratedObjectsAreWrittenAsTheirClosureReturns() throws {
        let dir = try TemporaryDirectory()
        let url = try Self.fileV1(dir)
        let realm = try Realm(configuration: Self.config(url) { migration, _ in
            Self.combine(migration)
            migration.renameProperty(onType: "Person", from: "age", to: "yearsSinceBirth")
        })
        #expect(realm.core.shared.objectsStreamed.current == Self.count)
        #expect(realm.objects(M2.Person.self).count == Self.count)
        for p in realm.objects(M2.Person.self) {
            #expect(p.fullName == "f\(p.id) l\(p.id)")
            #expect(p.yearsSinceBirth == p.id)
            #expect(p.nickname == (p.id % 2 == 0 ? "n\(p.id)" : "none"))
        }
    }

    @Test func aSecondEnumerationSeesWhatTheFirstWrote() throws {
        let dir = try TemporaryDirectory()
        let url = try Self.fileV1(dir)
        let realm = try Realm(configuration: Self.config(url) { migration, _ in
            Self.combine(migration)
            migration.enumerateObjects(ofType: "Person") { _, new in
                new!["fullName"] = (new!["fullName"] as! String) + "!"
            }
        })
        #expect(realm.objects(M2.Person.self).count == Self.count)
        for p in realm.objects(M2.Person.self) { #expect(p.fullName == "f\(p.id) l\(p.id)!") }
    }

    /// Objects the block keeps past their closure are not streamed: what it sets on them later is written.
    @Test func objectsTheBlockKeepsGetWhatItSetsLater() throws {
        let dir = try TemporaryDirectory()
        let url = try Self.fileV1(dir)
        let realm = try Realm(configuration: Self.config(url) { migration, _ in
            var kept: [MigrationObject] = []
            migration.enumerateObjects(ofType: "Person") { old, new in
                new!["fullName"] = "x"
                if (old!["id"] as! Int) % 2 == 0 { kept.append(new!) }
            }
            for o in kept { o["fullName"] = "kept" }
        })
        #expect(realm.core.shared.objectsStreamed.current == Self.count / 2)
        for p in realm.objects(M2.Person.self) { #expect(p.fullName == (p.id % 2 == 0 ? "kept" : "x")) }
    }

    @Test func objectsDeletedInTheirClosureAreDeleted() throws {
        let dir = try TemporaryDirectory()
        let url = try Self.fileV1(dir)
        let realm = try Realm(configuration: Self.config(url) { migration, _ in
            migration.enumerateObjects(ofType: "Person") { old, new in
                if (old!["id"] as! Int) % 3 == 0 { migration.delete(new!) } else { new!["fullName"] = "y" }
            }
        })
        #expect(realm.objects(M2.Person.self).count == Self.count - Self.count / 3)
        #expect(realm.objects(M2.Person.self).where { $0.fullName != "y" }.isEmpty)
        #expect(realm.object(ofType: M2.Person.self, forPrimaryKey: 3) == nil)
    }

    /// An object deleted in its closure and created again with the same Int primary key is the new one.
    @Test func anObjectDeletedAndCreatedAgainWithItsKeyIsTheNewOne() throws {
        let dir = try TemporaryDirectory()
        let url = try Self.fileV1(dir)
        let realm = try Realm(configuration: Self.config(url) { migration, _ in
            migration.enumerateObjects(ofType: "Person") { old, new in
                new!["fullName"] = "kept"
                guard (old!["id"] as! Int) == 7 else { return }
                migration.delete(new!)
                migration.create("Person", value: ["id": 7, "fullName": "replacement"])
            }
        })
        #expect(realm.objects(M2.Person.self).count == Self.count)
        #expect(realm.object(ofType: M2.Person.self, forPrimaryKey: 7)?.fullName == "replacement")
        #expect(realm.object(ofType: M2.Person.self, forPrimaryKey: 8)?.fullName == "kept")
    }

    /// Objects created in the block beside streamed ones: new Int keys are theirs at once; a key another object
    /// has fails the migration with Realm's duplicate-key error.
    @Test func objectsCreatedBesideStreamedOnes() throws {
        let dir = try TemporaryDirectory()
        let url = try Self.fileV1(dir)
        let realm = try Realm(configuration: Self.config(url) { migration, _ in
            Self.combine(migration)
            for id in 1000..<1010 { migration.create("Person", value: ["id": id, "fullName": "new \(id)"]) }
        })
        #expect(realm.core.shared.objectsStreamed.current == Self.count)
        #expect(realm.objects(M2.Person.self).count == Self.count + 10)
        #expect(realm.object(ofType: M2.Person.self, forPrimaryKey: 1004)?.fullName == "new 1004")
        #expect(realm.object(ofType: M2.Person.self, forPrimaryKey: 4)?.fullName == "f4 l4")
        let other = try TemporaryDirectory()
        let url2 = try Self.fileV1(other)
        do {
            _ = try Realm(configuration: Self.config(url2) { migration, _ in
                Self.combine(migration)
                migration.create("Person", value: ["id": 5, "fullName": "twin"])
            })
            Issue.record("a duplicate primary key was accepted")
        } catch {
            #expect("\(error)".contains("Primary key property 'Person.id' has duplicate values after migration."))
        }
    }

    /// A mistake after objects were streamed fails the open and leaves the file as it was.
    @Test func aFailedMigrationAfterStreamingWritesNothing() throws {
        let dir = try TemporaryDirectory()
        let url = try Self.fileV1(dir)
        #expect(throws: Realm.Error.self) {
            _ = try Realm(configuration: Self.config(url) { migration, _ in
                migration.enumerateObjects(ofType: "Person") { _, new in new!["fullName"] = "z" }
                migration.enumerateObjects(ofType: "Person") { _, new in
                    if (new!["id"] as! Int) == Self.count - 1 { new!["noSuchProperty"] = 1 }
                }
            })
        }
        #expect(try schemaVersionAtURL(url) == 0)
        let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [M1.Person.self]))
        #expect(realm.objects(M1.Person.self).count == Self.count)
        #expect(realm.object(ofType: M1.Person.self, forPrimaryKey: 7)?.firstName == "f7")
    }

    /// A link read through another type's new object gives the streamed object as the block left it, and
    /// changes made through it are written.
    @Test func linksReadThroughNewObjectsGiveStreamedObjectsBack() throws {
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("dogs.realm"))
        do {
            let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [SL1.SDog.self, SL1.SOwner.self]))
            try realm.write {
                for i in 0..<50 {
                    let owner = SL1.SOwner()
                    owner.name = "o\(i)"
                    let dog = SL1.SDog()
                    dog.name = "d\(i)"
                    owner.dog = dog
                    realm.add(owner)
                }
            }
        }
        var dogsConfig = Realm.Configuration(fileURL: url, schemaVersion: 1, migrationBlock: { migration, _ in
            migration.enumerateObjects(ofType: "SDog") { old, new in new!["nickname"] = (old!["name"] as! String).uppercased() }
            migration.enumerateObjects(ofType: "SOwner") { _, new in
                guard let dog = new!["dog"] as? MigrationObject else { return }
                dog["nickname"] = (dog["nickname"] as! String) + " of " + (new!["name"] as! String)
            }
        }, objectTypes: [SL2.SDog.self, SL2.SOwner.self])
        dogsConfig.migrationSpillBytes = 400
        let realm = try Realm(configuration: dogsConfig)
        #expect(realm.core.shared.objectsStreamed.current >= 50)
        #expect(realm.objects(SL2.SOwner.self).count == 50)
        for owner in realm.objects(SL2.SOwner.self) {
            let dog = try #require(owner.dog)
            #expect(dog.nickname == dog.name.uppercased() + " of " + owner.name)
        }
    }
}

enum SK1 {
    final class Tag: Object {
        @Persisted(primaryKey: true) var name = ""
        @Persisted var uses = 0
    }
}

/// Tags get a label.
enum SK2 {
    final class Tag: Object {
        @Persisted(primaryKey: true) var name = ""
        @Persisted var uses = 0
        @Persisted var label = ""
    }
}

enum SE1 {
    final class Home: Object {
        @Persisted var name = ""
        @Persisted var address: Address?
    }
    final class Address: EmbeddedObject {
        @Persisted var street = ""
    }
}

/// Addresses get a city.
enum SE2 {
    final class Home: Object {
        @Persisted var name = ""
        @Persisted var address: Address?
    }
    final class Address: EmbeddedObject {
        @Persisted var street = ""
        @Persisted var city = ""
    }
}
