import Dispatch
import Engine
import Foundation
import Observation
import Strata
import Testing
import TestSupport

final class Watched: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
    @Persisted var age = 0
}

/// Objects in Swift's Observation (`withObservationTracking`): a tracking hears of a commit that changes what it
/// read, from any thread, once; not of one that changes something else.
@Suite struct ObservationTests {
    let dir: TemporaryDirectory
    let config: Realm.Configuration

    init() throws {
        dir = try TemporaryDirectory()
        var config = Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("watched.realm")), objectTypes: [Watched.self])
        config.observationTracking = true
        self.config = config
        let realm = try Realm(configuration: config)
        try realm.write {
            realm.add(Watched(value: ["id": 1, "name": "one", "age": 10]))
            realm.add(Watched(value: ["id": 2, "name": "two", "age": 20]))
        }
    }

    /// Commits `body` from another thread, with a Realm of its own.
    func commitElsewhere(_ body: @escaping @Sendable (Realm) -> Void) throws {
        let config = config
        let failure = Locked<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            defer { done.signal() }
            do {
                let realm = try Realm(configuration: config)
                try realm.write { body(realm) }
            } catch {
                failure.withLock { $0 = "\(error)" }
            }
        }
        thread.start()
        done.wait()
        if let failure = failure.withLock({ $0 }) { Issue.record("the other thread's write failed: \(failure)") }
    }

    @Test func aPropertyReadThenChangedByAnotherThreadsCommitFiresOnce() throws {
        let realm = try Realm(configuration: config)
        let one = try #require(realm.object(ofType: Watched.self, forPrimaryKey: 1))
        let fired = Locked(0)
        let name = withObservationTracking { one.name } onChange: { fired.withLock { $0 += 1 } }
        #expect(name == "one")
        try commitElsewhere { $0.object(ofType: Watched.self, forPrimaryKey: 1)?.name = "uno" }
        #expect(fired.withLock { $0 } == 0, "before this Realm moved to the commit")
        realm.refresh()
        #expect(fired.withLock { $0 } == 1)
        #expect(one.name == "uno")
        // A tracking fires once: another change calls nothing more.
        try commitElsewhere { $0.object(ofType: Watched.self, forPrimaryKey: 1)?.name = "eins" }
        realm.refresh()
        #expect(fired.withLock { $0 } == 1)
    }

    @Test func aCommitThatChangesAnotherPropertyOrObjectCallsNothing() throws {
        let realm = try Realm(configuration: config)
        let one = try #require(realm.object(ofType: Watched.self, forPrimaryKey: 1))
        let fired = Locked(0)
        _ = withObservationTracking { one.name } onChange: { fired.withLock { $0 += 1 } }
        try commitElsewhere { $0.object(ofType: Watched.self, forPrimaryKey: 1)?.age = 11 }
        try commitElsewhere { $0.object(ofType: Watched.self, forPrimaryKey: 2)?.name = "dos" }
        // The same value written again changes nothing either.
        try commitElsewhere { $0.object(ofType: Watched.self, forPrimaryKey: 1)?.name = "one" }
        realm.refresh()
        #expect(fired.withLock { $0 } == 0)
        #expect(one.age == 11)
    }

    @Test func thisRealmsOwnWriteFiresAtItsCommit() throws {
        let realm = try Realm(configuration: config)
        let one = try #require(realm.object(ofType: Watched.self, forPrimaryKey: 1))
        let fired = Locked(0)
        _ = withObservationTracking { one.age } onChange: { fired.withLock { $0 += 1 } }
        try realm.write { one.age = 12 }
        #expect(fired.withLock { $0 } == 1)
    }

    @Test func aDeletedObjectFires() throws {
        let realm = try Realm(configuration: config)
        let two = try #require(realm.object(ofType: Watched.self, forPrimaryKey: 2))
        let fired = Locked(0)
        _ = withObservationTracking { two.age } onChange: { fired.withLock { $0 += 1 } }
        try commitElsewhere { realm in
            if let o = realm.object(ofType: Watched.self, forPrimaryKey: 2) { realm.delete(o) }
        }
        realm.refresh()
        #expect(fired.withLock { $0 } == 1)
        #expect(two.isInvalidated)
    }

    @Test func aRealmOfAQueueFiresWithoutARefresh() throws {
        let queue = DispatchQueue(label: "observation.realm")
        let fired = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var realm: Realm! = nil
        nonisolated(unsafe) var one: Watched! = nil
        try queue.sync {
            realm = try Realm(configuration: config, queue: queue)
            one = realm.object(ofType: Watched.self, forPrimaryKey: 1)
            _ = withObservationTracking { one.name } onChange: { fired.signal() }
        }
        try commitElsewhere { $0.object(ofType: Watched.self, forPrimaryKey: 1)?.name = "un" }
        #expect(fired.wait(timeout: .now() + 10) == .success, "the queue's Realm did not move to the commit")
        #expect(queue.sync { one.name } == "un")
        queue.sync {
            one = nil
            realm = nil
        }
    }

    @Test func aLoopsCursorRecordsNothingAndObjectsItKeepsDo() throws {
        let realm = try Realm(configuration: config)
        let fired = Locked(0)
        let kept = withObservationTracking {
            var names: [String] = []
            for o in realm.objects(Watched.self) { names.append(o.name) }
            return names
        } onChange: { fired.withLock { $0 += 1 } }
        #expect(kept == ["one", "two"])
        let objects = Array(realm.objects(Watched.self))
        _ = withObservationTracking { objects.map(\.name) } onChange: { fired.withLock { $0 += 10 } }
        try commitElsewhere { $0.object(ofType: Watched.self, forPrimaryKey: 2)?.name = "deux" }
        realm.refresh()
        #expect(fired.withLock { $0 } == 10)
    }

    @Test func withoutObservationTrackingManagedReadsRecordNothing() throws {
        var plain = config
        plain.observationTracking = false
        let realm = try Realm(configuration: plain)
        let one = try #require(realm.object(ofType: Watched.self, forPrimaryKey: 1))
        let fired = Locked(0)
        _ = withObservationTracking { one.name } onChange: { fired.withLock { $0 += 1 } }
        try realm.write { one.name = "changed" }
        #expect(fired.withLock { $0 } == 0)
    }

    @Test func anUnmanagedObjectIsObservedAsAnObservableClass() {
        let o = Watched(value: ["id": 3, "name": "three"])
        let fired = Locked(0)
        _ = withObservationTracking { o.name } onChange: { fired.withLock { $0 += 1 } }
        o.age = 30
        #expect(fired.withLock { $0 } == 0)
        o.name = "drei"
        #expect(fired.withLock { $0 } == 1)
    }
}
