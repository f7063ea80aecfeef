import Foundation
import Strata
import Testing
import TestSupport

@Suite struct WriteCopyTests {
    @Test func writeCopyWritesEveryObjectToANewFile() throws {
        let dir = try TemporaryDirectory()
        let realm = try MissingAPITests.realm(dir)
        _ = try MissingAPITests.filled(realm)
        let copyURL = URL(fileURLWithPath: dir.child("copy.realm"))
        let config = Realm.Configuration(fileURL: copyURL, objectTypes: [APIDog.self, APIOwner.self])
        try realm.writeCopy(configuration: config)
        #expect(throws: Realm.Error.self) { try realm.writeCopy(configuration: config) }
        let copy = try Realm(configuration: config)
        #expect(copy.objects(APIDog.self).count == 3)
        let owner = try #require(copy.object(ofType: APIOwner.self, forPrimaryKey: 1))
        #expect(owner.dogs.map(\.name) == ["d1", "d2", "d3"])
        #expect(owner.byName["a"]??.id == 1)
        try copy.write { copy.create(APIDog.self, value: ["id": 9]) }
        #expect(realm.objects(APIDog.self).count == 3)
    }
}
