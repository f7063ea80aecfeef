import Foundation
import Strata
import Testing
import TestSupport

enum MLinkV0 {
    final class Owner: Object {
        @Persisted(primaryKey: true) var id: Int
        @Persisted var name = ""
        @Persisted var pet: Pet?
        @Persisted var address: Address?
    }
    final class Pet: Object {
        @Persisted(primaryKey: true) var id: Int
        @Persisted var name = ""
    }
    final class Address: Object {
        @Persisted var street = ""
    }
}

/// Version 1: one pet became a list of pets, and addresses became embedded in their owners.
enum MLinkV1 {
    final class Owner: Object {
        @Persisted(primaryKey: true) var id: Int
        @Persisted var name = ""
        @Persisted var pets: List<Pet>
        @Persisted var address: Address?
    }
    final class Pet: Object {
        @Persisted(primaryKey: true) var id: Int
        @Persisted var name = ""
    }
    final class Address: EmbeddedObject {
        @Persisted var street = ""
    }
}

@Suite struct MigrationLinkTests {
    func v0(_ path: String) -> Realm.Configuration {
        Realm.Configuration(fileURL: URL(fileURLWithPath: path), objectTypes: [MLinkV0.Owner.self, MLinkV0.Pet.self, MLinkV0.Address.self])
    }

    func v1(_ path: String, _ block: MigrationBlock? = nil) -> Realm.Configuration {
        var c = Realm.Configuration(fileURL: URL(fileURLWithPath: path), objectTypes: [MLinkV1.Owner.self, MLinkV1.Pet.self, MLinkV1.Address.self])
        c.schemaVersion = 1
        c.migrationMode = .blocking
        c.migrationBlock = block
        return c
    }

    /// Three owners, each with a pet and an address of their own; `extra` adds addresses as given.
    func fill(_ path: String, extra: (Realm, [MLinkV0.Owner]) -> Void = { _, _ in }) throws {
        let realm = try Realm(configuration: v0(path))
        try realm.write {
            var owners: [MLinkV0.Owner] = []
            for i in 1...3 {
                owners.append(realm.create(MLinkV0.Owner.self, value: [
                    "id": i, "name": "owner \(i)", "pet": ["id": i, "name": "pet \(i)"], "address": ["street": "\(i) Main St"],
                ]))
            }
            extra(realm, owners)
        }
    }

    @Test func linksAndListsAreReadAndWrittenInTheBlockAndATypeBecomesEmbedded() throws {
        let dir = try TemporaryDirectory()
        let path = dir.child("m.realm")
        try fill(path)
        do {
            let realm = try Realm(configuration: v1(path) { migration, _ in
                migration.enumerateObjects(ofType: "Owner") { old, new in
                    guard let old, let new, let id = old["id"] as? Int else { return }
                    // A link of the old object reads as an object of the old schema, with its values.
                    let pet = old["pet"] as? MigrationObject
                    #expect(pet?["name"] as? String == "pet \(id)")
                    let adopted = migration.create("Pet", value: ["id": 100 + id, "name": "adopted \(id)"])
                    new["pets"] = [pet, adopted].compactMap { $0 }
                    // The address link is kept as it was; through the new object it reads in the new schema.
                    let address = new["address"] as? MigrationObject
                    #expect(address?["street"] as? String == "\(id) Main St")
                }
            })
            let owner = try #require(realm.object(ofType: MLinkV1.Owner.self, forPrimaryKey: 2))
            #expect(owner.pets.map(\.name) == ["pet 2", "adopted 2"])
            #expect(owner.address?.street == "2 Main St")
            #expect(realm.schema["Address"]?.isEmbedded == true)
            #expect(realm.objects(MLinkV1.Pet.self).count == 6)
        }
        let realm = try Realm(configuration: v1(path))
        #expect(realm.object(ofType: MLinkV1.Owner.self, forPrimaryKey: 3)?.pets.map(\.id) == [3, 103])
        // Embedded now: replacing an owner's address deletes the old one.
        try realm.write { realm.object(ofType: MLinkV1.Owner.self, forPrimaryKey: 3)?.address = MLinkV1.Address() }
        #expect(realm.objects(MLinkV1.Owner.self).filter("address.street == '3 Main St'").count == 0)
    }

    /// M116, M117: as RealmSwift (10.29 and later) converts, an object no parent links to is deleted and one
    /// with several parents is copied for each.
    @Test(arguments: [Realm.Configuration.MigrationMode.online, .blocking])
    func M116_M117_theConversionDeletesOrphansAndCopiesSharedObjects(mode: Realm.Configuration.MigrationMode) throws {
        let dir = try TemporaryDirectory()
        let path = dir.child("m.realm")
        try fill(path) { realm, owners in
            realm.create(MLinkV0.Address.self, value: ["street": "orphan"])
            owners[1].address = owners[0].address
            owners[2].address = owners[0].address
        }
        var config = v1(path)
        config.migrationMode = mode
        let realm = try Realm(configuration: config)
        let owners = realm.objects(MLinkV1.Owner.self).sorted(byKeyPath: "id")
        #expect(owners.map { $0.address?.street } == ["1 Main St", "1 Main St", "1 Main St"])
        // Three parents, three distinct objects; the orphan and the addresses no one links to any more are gone.
        try realm.write { owners[0].address?.street = "changed" }
        #expect(owners.map { $0.address?.street } == ["changed", "1 Main St", "1 Main St"])
        #expect(realm.schema["Address"]?.isEmbedded == true)
        #expect(realm.objects(MLinkV1.Owner.self).filter("address.street == '1 Main St'").count == 2)
    }
}
