import Foundation
import Strata
import Testing
import TestSupport

@Suite struct CollectionAsyncTests {
    @Test func listChangesArriveAsFrozenListsAndRealmChangesAsNotifications() async throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: .init(
            fileURL: URL(fileURLWithPath: dir.child("a.realm")), objectTypes: [QPerson.self, QDog.self, QVet.self]))
        try realm.write { realm.create(QPerson.self, value: ["id": 1, "scores": [1]]) }
        let person = try #require(realm.object(ofType: QPerson.self, forPrimaryKey: 1))
        var changes = person.scores.changes().makeAsyncIterator()
        var versions = realm.changes.makeAsyncIterator()
        guard case .initial(let first)? = await changes.next() else {
            Issue.record("no initial list")
            return
        }
        #expect(first.isFrozen && Array(first) == [1])
        try realm.write { person.scores.append(2) }
        guard case .update(let list, let deletions, let insertions, _)? = await changes.next() else {
            Issue.record("no update")
            return
        }
        #expect(list.isFrozen && Array(list) == [1, 2] && deletions == [] && insertions == [1])
        #expect(await versions.next() == .didChange)
    }
}
