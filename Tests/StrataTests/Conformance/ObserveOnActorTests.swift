import Foundation
import Strata
import Testing
import TestSupport

/// `observe(keyPaths:on:_:)` with an actor, as RealmSwift declares it for objects, results, lists, sets and
/// maps: the block runs isolated to the actor, with values of the actor's own Realm.
@Suite struct ObserveOnActorTests {
    final class Owner: Object {
        @Persisted(primaryKey: true) var id = 0
        @Persisted var name = ""
        @Persisted var scores: List<Int>
        @Persisted var tags: MutableSet<String>
        @Persisted var notes: Map<String, String>
    }

    /// Records what its observers report; only code isolated to it can call `record`.
    actor Recorder {
        private(set) var events: [String] = []
        func record(_ event: String) { events.append(event) }

        /// Waits (a bounded number of short sleeps) until `count` events have arrived.
        func waitFor(_ count: Int) async -> [String] {
            var tries = 0
            while events.count < count && tries < 2_000 {
                try? await Task.sleep(nanoseconds: 5_000_000)
                tries += 1
            }
            return events
        }
    }

    private func open(_ dir: TemporaryDirectory) throws -> Realm {
        try Conformance.open(Conformance.url(dir), [Owner.self])
    }

    @Test func objectObserveOnAnActorDeliversChangesIsolatedToIt() async throws {
        let dir = try TemporaryDirectory()
        let realm = try open(dir)
        let owner = Owner()
        owner.id = 1
        try realm.write { realm.add(owner) }
        let recorder = Recorder()
        let token = await owner.observe(keyPaths: ["name"], on: recorder) { recorder, change in
            switch change {
            case .change(let object, let properties):
                // The object is the actor's own: a different Realm instance than the writer's.
                recorder.record("change \(object.name) \(properties.map(\.name)) \(object.realm != nil)")
            case .deleted: recorder.record("deleted")
            case .error(let error): recorder.record("error \(error)")
            }
        }
        try realm.write { owner.scores.append(1) }  // not a watched key path: nothing
        try realm.write { owner.name = "a" }
        #expect(await recorder.waitFor(1) == ["change a [\"name\"] true"])
        try realm.write { realm.delete(owner) }
        #expect(await recorder.waitFor(2) == ["change a [\"name\"] true", "deleted"])
        token.invalidate()
    }

    @Test func resultsObserveOnAnActorStartsWithInitial() async throws {
        let dir = try TemporaryDirectory()
        let realm = try open(dir)
        try realm.write { realm.create(Owner.self, value: ["id": 1]) }
        let recorder = Recorder()
        let token = await realm.objects(Owner.self).observe(on: recorder) { recorder, change in
            switch change {
            case .initial(let results): recorder.record("initial \(results.count)")
            case .update(let results, let deletions, let insertions, let modifications):
                recorder.record("update \(results.count) \(deletions) \(insertions) \(modifications)")
            case .error(let error): recorder.record("error \(error)")
            }
        }
        #expect(await recorder.events == ["initial 1"], "the initial callback runs before observe returns")
        try realm.write { realm.create(Owner.self, value: ["id": 2]) }
        #expect(await recorder.waitFor(2) == ["initial 1", "update 2 [] [1] []"])
        token.invalidate()
        // After invalidation nothing more is delivered.
        try realm.write { realm.create(Owner.self, value: ["id": 3]) }
        try await Task.sleep(nanoseconds: 50_000_000)
        #expect(await recorder.events.count == 2)
    }

    @Test func listSetAndMapObserveOnAnActor() async throws {
        let dir = try TemporaryDirectory()
        let realm = try open(dir)
        let owner = try realm.write { realm.create(Owner.self, value: ["id": 1]) }
        let recorder = Recorder()
        let listToken = await owner.scores.observe(on: recorder) { recorder, change in
            if case .update(let list, _, let insertions, _) = change { recorder.record("list \(Array(list)) \(insertions)") }
        }
        let setToken = await owner.tags.observe(on: recorder) { recorder, change in
            if case .update(let set, _, let insertions, _) = change { recorder.record("set \(set.count) \(insertions)") }
        }
        let mapToken = await owner.notes.observe(on: recorder) { recorder, change in
            if case .update(let map, _, let insertions, _) = change { recorder.record("map \(map["k"] ?? "-") \(insertions)") }
        }
        try realm.write {
            owner.scores.append(7)
            owner.tags.insert("x")
            owner.notes["k"] = "v"
        }
        let events = await recorder.waitFor(3)
        #expect(Set(events) == ["list [7] [0]", "set 1 [0]", "map v [\"k\"]"])
        listToken.invalidate()
        setToken.invalidate()
        mapToken.invalidate()
    }
}
