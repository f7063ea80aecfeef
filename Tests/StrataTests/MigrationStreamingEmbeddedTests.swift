import Foundation
import Testing
import TestSupport
@testable import Strata

/// Embedded types stream their enumerated objects: one that was embedded before (nothing of the whole type is
/// needed at the end), and one made embedded by the migration (its objects' parents are counted from the links
/// at the end, and the objects read back one at a time: orphans deleted, shared ones copied).
@Suite struct MigrationStreamingEmbeddedTests {
    @Test func enumeratedEmbeddedObjectsStreamAndStayWithTheirParents() throws {
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("homes.realm"))
        do {
            let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [SE1.Home.self, SE1.Address.self]))
            try realm.write {
                for i in 0..<100 { realm.create(SE1.Home.self, value: ["name": "h\(i)", "address": ["street": "s\(i)"]]) }
            }
        }
        var c = Realm.Configuration(fileURL: url, schemaVersion: 2, migrationBlock: { m, _ in
            m.enumerateObjects(ofType: "Address") { old, new in new!["city"] = "c-" + (old!["street"] as! String) }
        }, objectTypes: [SE2.Home.self, SE2.Address.self])
        c.migrationSpillBytes = 800
        let realm = try Realm(configuration: c)
        #expect(realm.core.shared.objectsStreamed.current == 100)
        let homes = realm.objects(SE2.Home.self)
        #expect(homes.count == 100)
        for home in homes {
            let i = home.name.dropFirst()
            #expect(home.address?.street == "s\(i)" && home.address?.city == "c-s\(i)", "\(home.name)")
        }
    }

    @Test func aTypeMadeEmbeddedStreamsItsObjectsAndIsStillConverted() throws {
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("pets.realm"))
        do {
            let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [MEV1.Owner.self, MEV1.Pet.self]))
            try realm.write {
                let pets = (0..<60).map { realm.create(MEV1.Pet.self, value: ["name": "p\($0)"]) }
                // Owners 0..<50 link pet i % 40: pets 0..<10 have two owners, 10..<40 one, 40..<60 none.
                for i in 0..<50 { realm.create(MEV1.Owner.self, value: ["name": "o\(i)", "pet": pets[i % 40]]) }
            }
        }
        var c = Realm.Configuration(fileURL: url, schemaVersion: 1, migrationBlock: { m, _ in
            m.enumerateObjects(ofType: "ECPet") { old, new in new!["tag"] = "t-" + (old!["name"] as! String) }
        }, objectTypes: [MEV2.Owner.self, MEV2.Pet.self])
        c.migrationSpillBytes = 600
        let realm = try Realm(configuration: c)
        #expect(realm.core.shared.objectsStreamed.current == 60)
        let owners = realm.objects(MEV2.Owner.self)
        #expect(owners.count == 50)
        for owner in owners {
            let i = Int(owner.name.dropFirst())!
            #expect(owner.pet?.name == "p\(i % 40)" && owner.pet?.tag == "t-p\(i % 40)", "\(owner.name)")
        }
        // Orphans deleted, each shared pet copied for its second owner: one pet per owner.
        let partition = try #require(realm.core.shared.storedSchema.withLock { $0?.type(named: "ECPet")?.partition })
        #expect(try realm.core.shared.database.snapshot().count(partition) == 50)
        try realm.write { owners.first!.pet!.name = "changed" }
        #expect(owners.filter { $0.pet?.name == "changed" }.count == 1)
    }
}

/// A type made embedded: pets of owners.
enum MEV1 {
    final class Owner: Object {
        @Persisted var name = ""
        @Persisted var pet: Pet?
        override class func className() -> String { "ECOwner" }
    }
    final class Pet: Object {
        @Persisted var name = ""
        override class func className() -> String { "ECPet" }
    }
}

enum MEV2 {
    final class Owner: Object {
        @Persisted var name = ""
        @Persisted var pet: Pet?
        override class func className() -> String { "ECOwner" }
    }
    final class Pet: EmbeddedObject {
        @Persisted var name = ""
        @Persisted var tag = ""
        override class func className() -> String { "ECPet" }
    }
}
