import Dispatch
import Engine
import Foundation
import Strata
import Testing
import TestSupport

@Suite struct AsyncNotificationTests {
    @Test func resultsChangesArriveAsFrozenSnapshotsInAnAsyncSequence() async throws {
        let dir = try TemporaryDirectory()
        let config = Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("a.realm")), objectTypes: [Person.self])
        let realm = try Realm(configuration: config)
        try realm.write { realm.create(Person.self, value: ["id": 1, "age": 10]) }
        var iterator = realm.objects(Person.self).changes().makeAsyncIterator()
        guard case .initial(let first)? = await iterator.next() else {
            Issue.record("no initial")
            return
        }
        #expect(first.isFrozen && first.count == 1)
        try realm.write { realm.create(Person.self, value: ["id": 2, "age": 20]) }
        guard case .update(let second, let deletions, let insertions, _)? = await iterator.next() else {
            Issue.record("no update")
            return
        }
        #expect(second.isFrozen && second.map(\.id) == [1, 2])
        #expect(deletions.isEmpty && insertions == [1])
        // The frozen snapshot does not move on with later writes.
        try realm.write { realm.create(Person.self, value: ["id": 3]) }
        #expect(second.count == 2)
    }
}
