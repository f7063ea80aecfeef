import Foundation
import Strata
import Testing
import TestSupport

@Suite struct PartialUpdateTests {
    @Test func O014_aPartialUpdateWithNestedObjectsUpdatesThemAndKeepsTheRest() throws {
        let dir = try TemporaryDirectory()
        let realm = try MissingAPITests.realm(dir)
        _ = try MissingAPITests.filled(realm)
        try realm.write {
            realm.create(APIOwner.self, value: ["id": 1, "dogs": [["id": 1, "name": "renamed"], ["id": 9, "name": "new"]]], update: .modified)
        }
        let owner = try #require(realm.object(ofType: APIOwner.self, forPrimaryKey: 1))
        #expect(owner.dogs.map(\.id) == [1, 9])
        #expect(realm.object(ofType: APIDog.self, forPrimaryKey: 1)?.name == "renamed")
        #expect(Array(owner.numbers) == [1, 2, 3, 4])
        #expect(owner.byName["a"]??.id == 1)
        #expect(realm.objects(APIDog.self).count == 4)
    }
}
