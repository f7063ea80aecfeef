import Foundation
import Strata
import Testing
import TestSupport

@Suite struct LinkingObjectsTests {
    @Test func inverseRelationshipsFollowLinksAndLists() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: .init(
            fileURL: URL(fileURLWithPath: dir.child("inverse.realm")), objectTypes: [LPet.self, LPetOwner.self, LShelter.self]))
        try realm.write {
            realm.create(LPetOwner.self, value: ["id": 1, "pet": ["id": 7, "name": "Tom"]])
            realm.create(LPetOwner.self, value: ["id": 2, "pet": realm.object(ofType: LPet.self, forPrimaryKey: 7) as Any])
            realm.create(LShelter.self, value: ["id": 9, "pets": [realm.object(ofType: LPet.self, forPrimaryKey: 7) as Any, ["id": 8, "name": "Jerry"]]])
        }
        let tom = try #require(realm.object(ofType: LPet.self, forPrimaryKey: 7))
        let jerry = try #require(realm.object(ofType: LPet.self, forPrimaryKey: 8))
        #expect(tom.owners.map(\.id) == [1, 2])
        #expect(tom.shelters.map(\.id) == [9])
        #expect(jerry.owners.isEmpty)
        #expect(jerry.shelters.count == 1)
        // Live: they follow the links.
        try realm.write { realm.object(ofType: LPetOwner.self, forPrimaryKey: 1)?.pet = jerry }
        #expect(tom.owners.map(\.id) == [2])
        #expect(jerry.owners.map(\.id) == [1])
        // An unmanaged object has none.
        #expect(LPet().owners.isEmpty)
        #expect {
            _ = try Realm(configuration: .init(
                fileURL: URL(fileURLWithPath: dir.child("bad.realm")), objectTypes: [BadInverse.Pet.self, LPetOwner.self, LPet.self, LShelter.self]))
        } throws: { "\($0)".contains("Pet.owners") && "\($0)".contains("LPetOwner.name") }
    }
}
