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
    @Persisted var ratio = 0.0
}

final class WatchedOwner: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var label = ""
    @Persisted var scores: List<Int>
    @Persisted var tags: MutableSet<String>
    @Persisted var limits: Map<String, Int>
    @Persisted var friends: List<Watched>
}

final class WatchedName: Projection<Watched> {
    @Projected(\Watched.name) var title
}

/// Objects in Swift's Observation (`withObservationTracking`): a tracking hears of a commit that changes what it
/// read, from any thread, once; not of one that changes something else.
@Suite struct ObservationTests {
    let dir: TemporaryDirectory
    let config: Realm.Configuration

    init() throws {
        dir = try TemporaryDirectory()
        var config = Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("watched.realm")), objectTypes: [Watched.self, WatchedOwner.self])
        config.observationTracking = true
        self.config = config
        let realm = try Realm(configuration: config)
        try realm.write {
            realm.add(Watched(value: ["id": 1, "name": "one", "age": 10]))
            realm.add(Watched(value: ["id": 2, "name": "two", "age": 20]))
            realm.add(WatchedOwner(value: ["id": 1, "label": "owner", "scores": [1, 2], "tags": ["a"], "limits": ["x": 1]]))
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

    @Test func aLoopReadsTheResultsAndObjectsItKeepsTheirProperties() throws {
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
        // The loop read the results' contents, which the change modifies; the kept objects' tracking read
        // the name.
        try commitElsewhere { $0.object(ofType: Watched.self, forPrimaryKey: 2)?.name = "deux" }
        realm.refresh()
        #expect(fired.withLock { $0 } == 11)
    }

    @Test func aResultsCountFiresWhenObjectsComeOrGoNotWhenOneChanges() throws {
        let realm = try Realm(configuration: config)
        let results = realm.objects(Watched.self)
        let fired = Locked(0)
        let count = withObservationTracking { results.count } onChange: { fired.withLock { $0 += 1 } }
        #expect(count == 2)
        try commitElsewhere { $0.object(ofType: Watched.self, forPrimaryKey: 1)?.age = 99 }
        realm.refresh()
        #expect(fired.withLock { $0 } == 0, "a modification leaves the count as it was")
        try commitElsewhere { $0.add(Watched(value: ["id": 3, "name": "three"])) }
        realm.refresh()
        #expect(fired.withLock { $0 } == 1)
        #expect(results.count == 3)
    }

    @Test func aResultsContentsFireForAChangeOfAnObjectInThemOnly() throws {
        let realm = try Realm(configuration: config)
        let older = realm.objects(Watched.self).where { $0.age > 15 }
        let fired = Locked(0)
        let ids = withObservationTracking { older.map(\.id) } onChange: { fired.withLock { $0 += 1 } }
        #expect(ids == [2])
        // Object 1 stays out of the results: nothing they hold changed.
        try commitElsewhere { $0.object(ofType: Watched.self, forPrimaryKey: 1)?.age = 11 }
        realm.refresh()
        #expect(fired.withLock { $0 } == 0)
        // Object 1 enters them.
        try commitElsewhere { $0.object(ofType: Watched.self, forPrimaryKey: 1)?.age = 16 }
        realm.refresh()
        #expect(fired.withLock { $0 } == 1)
        #expect(older.map(\.id) == [1, 2])

        // Contents read without reading any object's property (a loop's cursor): a modification of an object
        // in the results fires too.
        let again = Locked(0)
        withObservationTracking { for _ in older {} } onChange: { again.withLock { $0 += 1 } }
        try commitElsewhere { $0.object(ofType: Watched.self, forPrimaryKey: 2)?.name = "zwei" }
        realm.refresh()
        #expect(again.withLock { $0 } == 1)
    }

    @Test func aResultsReadInAWriteTransactionHearsOfItsCommit() throws {
        let realm = try Realm(configuration: config)
        let fired = Locked(0)
        try realm.write {
            _ = withObservationTracking { realm.objects(Watched.self).count } onChange: { fired.withLock { $0 += 1 } }
            realm.add(Watched(value: ["id": 4]))
        }
        #expect(fired.withLock { $0 } == 1)
        // Read after the write's own change: its commit changes nothing that was read.
        let again = Locked(0)
        try realm.write {
            realm.add(Watched(value: ["id": 5]))
            _ = withObservationTracking { realm.objects(Watched.self).count } onChange: { again.withLock { $0 += 1 } }
        }
        #expect(again.withLock { $0 } == 0)
    }

    @Test func aListSetOrMapFiresWhenItChangesNotWhenAnotherPropertyDoes() throws {
        let realm = try Realm(configuration: config)
        let owner = try #require(realm.object(ofType: WatchedOwner.self, forPrimaryKey: 1))
        // Each collection taken outside the tracking, then read inside it.
        let scores = owner.scores
        let tags = owner.tags
        let limits = owner.limits
        let fired = Locked([0, 0, 0])
        _ = withObservationTracking { scores.count } onChange: { fired.withLock { $0[0] += 1 } }
        _ = withObservationTracking { tags.contains("a") } onChange: { fired.withLock { $0[1] += 1 } }
        _ = withObservationTracking { limits["x"] } onChange: { fired.withLock { $0[2] += 1 } }
        try commitElsewhere { $0.object(ofType: WatchedOwner.self, forPrimaryKey: 1)?.label = "renamed" }
        realm.refresh()
        #expect(fired.withLock { $0 } == [0, 0, 0])
        try commitElsewhere { $0.object(ofType: WatchedOwner.self, forPrimaryKey: 1)?.scores.append(3) }
        realm.refresh()
        #expect(fired.withLock { $0 } == [1, 0, 0])
        try commitElsewhere { $0.object(ofType: WatchedOwner.self, forPrimaryKey: 1)?.tags.insert("b") }
        try commitElsewhere { $0.object(ofType: WatchedOwner.self, forPrimaryKey: 1)?.limits["x"] = 2 }
        realm.refresh()
        #expect(fired.withLock { $0 } == [1, 1, 1])
        #expect(Array(scores) == [1, 2, 3])
    }

    @Test func aListOfObjectsFiresForTheListAndItsObjectsForTheirProperties() throws {
        let realm = try Realm(configuration: config)
        let owner = try #require(realm.object(ofType: WatchedOwner.self, forPrimaryKey: 1))
        try realm.write { owner.friends.append(try #require(realm.object(ofType: Watched.self, forPrimaryKey: 1))) }
        let fired = Locked(0)
        let names = withObservationTracking { owner.friends.map(\.name) } onChange: { fired.withLock { $0 += 1 } }
        #expect(names == ["one"])
        // The linked object's name, read through the list.
        try commitElsewhere { $0.object(ofType: Watched.self, forPrimaryKey: 1)?.name = "ichi" }
        realm.refresh()
        #expect(fired.withLock { $0 } == 1)
        let again = Locked(0)
        _ = withObservationTracking { owner.friends.count } onChange: { again.withLock { $0 += 1 } }
        try commitElsewhere { realm in
            if let o = realm.object(ofType: WatchedOwner.self, forPrimaryKey: 1), let two = realm.object(ofType: Watched.self, forPrimaryKey: 2) {
                o.friends.append(two)
            }
        }
        realm.refresh()
        #expect(again.withLock { $0 } == 1)
    }

    @Test func anObjectFetchedReadAndLetGoStillTellsItsTracking() throws {
        // A SwiftUI body that fetches its object at each redraw: no instance outlives the read.
        let realm = try Realm(configuration: config)
        let fired = Locked([0, 0])
        for n in 0..<2 {
            let name = withObservationTracking {
                realm.object(ofType: Watched.self, forPrimaryKey: 1)?.name
            } onChange: { fired.withLock { $0[n] += 1 } }
            #expect(name == "one")
        }
        try commitElsewhere { $0.object(ofType: Watched.self, forPrimaryKey: 1)?.age = 1 }
        realm.refresh()
        #expect(fired.withLock { $0 } == [0, 0])
        try commitElsewhere { $0.object(ofType: Watched.self, forPrimaryKey: 1)?.name = "one!" }
        realm.refresh()
        #expect(fired.withLock { $0 } == [1, 1], "both fetches of the record share its observation")
    }

    @Test func aResultsMadeReadAndLetGoStillTellsItsTracking() throws {
        let realm = try Realm(configuration: config)
        let fired = Locked(0)
        let count = withObservationTracking {
            realm.objects(Watched.self).filter("age > 15").count
        } onChange: { fired.withLock { $0 += 1 } }
        #expect(count == 1)
        try commitElsewhere { $0.add(Watched(value: ["id": 9, "age": 90])) }
        realm.refresh()
        #expect(fired.withLock { $0 } == 1)
    }

    @Test func aFrozenObjectRecordsNothing() throws {
        let realm = try Realm(configuration: config)
        let frozen = try #require(realm.object(ofType: Watched.self, forPrimaryKey: 1)).freeze()
        let fired = Locked(0)
        _ = withObservationTracking { frozen.name } onChange: { fired.withLock { $0 += 1 } }
        try commitElsewhere { $0.object(ofType: Watched.self, forPrimaryKey: 1)?.name = "changed" }
        realm.refresh()
        #expect(fired.withLock { $0 } == 0)
        #expect(frozen.name == "one")
    }

    @Test func aCollectionsResultsAndAResultsOfValuesCompareTheirContents() throws {
        let realm = try Realm(configuration: config)
        let owner = try #require(realm.object(ofType: WatchedOwner.self, forPrimaryKey: 1))
        try realm.write {
            owner.friends.append(objectsIn: realm.objects(Watched.self).sorted(byKeyPath: "id"))
        }
        let older = owner.friends.where { $0.age > 15 }
        let scores = owner.scores.sorted(ascending: false)
        let fired = Locked([0, 0])
        _ = withObservationTracking { older.count } onChange: { fired.withLock { $0[0] += 1 } }
        _ = withObservationTracking { Array(scores) } onChange: { fired.withLock { $0[1] += 1 } }
        // Object 1 stays younger: neither changes.
        try commitElsewhere { $0.object(ofType: Watched.self, forPrimaryKey: 1)?.age = 12 }
        realm.refresh()
        #expect(fired.withLock { $0 } == [0, 0])
        try commitElsewhere { $0.object(ofType: Watched.self, forPrimaryKey: 1)?.age = 40 }
        try commitElsewhere { $0.object(ofType: WatchedOwner.self, forPrimaryKey: 1)?.scores.append(7) }
        realm.refresh()
        #expect(fired.withLock { $0 } == [1, 1])
        #expect(older.count == 2)
        #expect(Array(scores) == [7, 2, 1])
    }

    @Test func aNaNWrittenAgainOrAnotherPropertyOfItsObjectChangedTellsNothing() throws {
        let realm = try Realm(configuration: config)
        try realm.write { realm.object(ofType: Watched.self, forPrimaryKey: 1)?.ratio = .nan }
        let one = try #require(realm.object(ofType: Watched.self, forPrimaryKey: 1))
        let results = realm.objects(Watched.self).where { $0.age < 15 }
        let fired = Locked([0, 0])
        _ = withObservationTracking { one.ratio } onChange: { fired.withLock { $0[0] += 1 } }
        _ = withObservationTracking { results.map(\.id) } onChange: { fired.withLock { $0[1] += 1 } }
        try commitElsewhere { $0.object(ofType: Watched.self, forPrimaryKey: 1)?.ratio = .nan }
        realm.refresh()
        #expect(fired.withLock { $0 } == [0, 0])
        try commitElsewhere { $0.object(ofType: Watched.self, forPrimaryKey: 1)?.ratio = 0.5 }
        realm.refresh()
        #expect(fired.withLock { $0 } == [1, 1])
    }

    @Test func aRealmOpenedWithTrackingBesideOneWithoutIsAnotherInstance() throws {
        var plain = config
        plain.observationTracking = false
        let untracked = try Realm(configuration: plain)
        let realm = try Realm(configuration: config)
        let one = try #require(realm.object(ofType: Watched.self, forPrimaryKey: 1))
        let fired = Locked(0)
        _ = withObservationTracking { one.name } onChange: { fired.withLock { $0 += 1 } }
        try commitElsewhere { $0.object(ofType: Watched.self, forPrimaryKey: 1)?.name = "x" }
        realm.refresh()
        #expect(fired.withLock { $0 } == 1)
        #expect(untracked.object(ofType: Watched.self, forPrimaryKey: 1) != nil)
    }

    @Test func aRealmWhoseReadsWereTrackedClosesWhenLetGo() throws {
        // What Observation keeps (records' observations, observed queries) must not keep the Realm open: a
        // Realm's files can be deleted once nothing of it is held.
        let fired = Locked(0)
        do {
            let realm = try Realm(configuration: config)
            let results = realm.objects(Watched.self).where { $0.age > 0 }
            _ = withObservationTracking {
                (results.count, realm.object(ofType: WatchedOwner.self, forPrimaryKey: 1)?.scores.count, results.first?.name)
            } onChange: { fired.withLock { $0 += 1 } }
        }
        #expect(try Realm.deleteFiles(for: config), "the Realm is still open")
        #expect(fired.withLock { $0 } == 0)
    }

    @Test func aProjectionObservesAsItsObject() throws {
        let realm = try Realm(configuration: config)
        let projection = try #require(realm.objects(WatchedName.self).first { $0.title == "one" })
        let fired = Locked(0)
        let title = withObservationTracking { projection.title } onChange: { fired.withLock { $0 += 1 } }
        #expect(title == "one")
        try commitElsewhere { $0.object(ofType: Watched.self, forPrimaryKey: 1)?.age = 70 }
        realm.refresh()
        #expect(fired.withLock { $0 } == 0, "the projection does not show the age")
        try commitElsewhere { $0.object(ofType: Watched.self, forPrimaryKey: 1)?.name = "un" }
        realm.refresh()
        #expect(fired.withLock { $0 } == 1)
        #expect(projection.title == "un")
    }

    @Test func anUnmanagedObjectReadUnderATrackingKeepsItsObservationOnceAdded() throws {
        let realm = try Realm(configuration: config)
        let o = Watched(value: ["id": 5, "name": "five"])
        let fired = Locked(0)
        _ = withObservationTracking { o.name } onChange: { fired.withLock { $0 += 1 } }
        try realm.write { realm.add(o) }
        #expect(fired.withLock { $0 } == 0, "adding it changes none of its values")
        try commitElsewhere { $0.object(ofType: Watched.self, forPrimaryKey: 5)?.name = "fünf" }
        realm.refresh()
        #expect(fired.withLock { $0 } == 1)
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
