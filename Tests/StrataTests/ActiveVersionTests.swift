import Foundation
import Strata
import Testing
import TestSupport

@Suite struct ActiveVersionTests {
    @Test func tooManyPinnedVersionsStopWritesWithAMessageUntilTheyAreReleased() throws {
        let dir = try TemporaryDirectory()
        var config = Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("v.realm")), objectTypes: [Person.self])
        config.maximumNumberOfActiveVersions = 3
        let realm = try Realm(configuration: config)
        try realm.write { realm.create(Person.self, value: ["id": 1]) }
        var frozen: [Realm] = []
        var refused: (any Error)? = nil
        for i in 2...6 {
            frozen.append(realm.freeze())
            do {
                try realm.write { realm.create(Person.self, value: ["id": i]) }
            } catch {
                refused = error
                break
            }
        }
        let message = try #require(refused.map { "\($0)" }, "the limit was never reached")
        #expect(message.contains("exceeded the limit of 3 (maximumNumberOfActiveVersions)"))
        #expect(!realm.isInWriteTransaction)
        frozen.removeAll()
        try realm.write { realm.create(Person.self, value: ["id": 100]) }
        #expect(realm.object(ofType: Person.self, forPrimaryKey: 100) != nil)
    }
}
