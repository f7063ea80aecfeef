import Engine
import Foundation
import Strata
import Testing
import TestSupport

@Suite struct AsyncWriteTests {
    @Test func writeAsyncCommitsAndCallsBack() throws {
        let dir = try TemporaryDirectory()
        let realm = try MissingAPITests.realm(dir)
        let done = Locked<[Bool]>([])
        realm.writeAsync({ realm.create(APIDog.self, value: ["id": 7, "name": "async"]) }, onComplete: { error in
            done.withLock { $0.append(error == nil) }
        })
        #expect(done.withLock { $0 } == [true])
        #expect(realm.object(ofType: APIDog.self, forPrimaryKey: 7)?.name == "async")
        #expect(!realm.isPerformingAsynchronousWriteOperations)
        // A block that neither commits nor cancels is cancelled.
        realm.beginAsyncWrite { realm.create(APIDog.self, value: ["id": 8]) }
        #expect(realm.object(ofType: APIDog.self, forPrimaryKey: 8) == nil)
        #expect(!realm.isInWriteTransaction)
    }

    @Test func onAQueueTheWorkRunsThereInOrderAndCanBeCancelledBeforeItRuns() throws {
        let dir = try TemporaryDirectory()
        let queue = DispatchQueue(label: "async-writes")
        let config = Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("q.realm")), objectTypes: [APIDog.self, APIOwner.self])
        let order = Locked<[Int]>([])
        queue.sync {
            let realm = try! Realm(configuration: config, queue: queue)
            realm.writeAsync { realm.create(APIDog.self, value: ["id": 1]) }
            let second = realm.beginAsyncWrite {
                realm.create(APIDog.self, value: ["id": 2])
                realm.commitAsyncWrite()
            }
            realm.writeAsync({ realm.create(APIDog.self, value: ["id": 3]) }, onComplete: { _ in order.withLock { $0.append(3) } })
            try! realm.cancelAsyncWrite(second)
            #expect(realm.isPerformingAsynchronousWriteOperations)
        }
        queue.sync {}
        queue.sync {}
        let realm = try Realm(configuration: config)
        #expect(realm.objects(APIDog.self).map(\.id).sorted() == [1, 3])
        #expect(order.withLock { $0 } == [3])
    }
}

/// Asynchronous writes begun while a write transaction is open wait for it, as RealmSwift's do (its
/// `testAsyncTransactionFromSyncTransaction`, `testBeginAsyncTransactionInAsyncTransaction` and
/// `testAsyncTransactionCommit`), on a Realm without a queue (whose work runs at once, as a run loop would turn)
/// and on a queue.
@Suite struct AsyncWriteOrderingTests {
    @Test func aBeginAsyncWriteInsideAWriteRunsWhenThatWriteCommits() throws {
        let dir = try TemporaryDirectory()
        let realm = try MissingAPITests.realm(dir)
        let events = Locked<[String]>([])
        realm.beginWrite()
        realm.create(APIDog.self, value: ["id": 1])
        realm.beginAsyncWrite {
            events.withLock { $0.append("block sees \(realm.objects(APIDog.self).count)") }
            realm.create(APIDog.self, value: ["id": 2])
            realm.commitAsyncWrite { error in events.withLock { $0.append("committed \(error == nil)") } }
        }
        // Not run yet: the write that is open is the synchronous one.
        #expect(events.withLock { $0 }.isEmpty)
        #expect(realm.isPerformingAsynchronousWriteOperations)
        try realm.commitWrite()
        #expect(events.withLock { $0 } == ["block sees 1", "committed true"])
        #expect(realm.objects(APIDog.self).map(\.id).sorted() == [1, 2])
        #expect(!realm.isInWriteTransaction && !realm.isPerformingAsynchronousWriteOperations)

        // Inside `write {}`, and after a write that is cancelled.
        try realm.write {
            realm.writeAsync { realm.create(APIDog.self, value: ["id": 3]) }
            #expect(realm.object(ofType: APIDog.self, forPrimaryKey: 3) == nil)
        }
        #expect(realm.object(ofType: APIDog.self, forPrimaryKey: 3) != nil)
        realm.beginWrite()
        realm.create(APIDog.self, value: ["id": 4])
        realm.writeAsync { realm.create(APIDog.self, value: ["id": 5]) }
        realm.cancelWrite()
        #expect(realm.objects(APIDog.self).map(\.id).sorted() == [1, 2, 3, 5])
    }

    @Test func oneBegunInsideAnotherRunsAfterTheOuterCommits() throws {
        let dir = try TemporaryDirectory()
        let realm = try MissingAPITests.realm(dir)
        let events = Locked<[String]>([])
        realm.beginAsyncWrite {
            realm.create(APIDog.self, value: ["id": 1])
            realm.beginAsyncWrite {
                events.withLock { $0.append("inner sees \(realm.objects(APIDog.self).count)") }
                realm.create(APIDog.self, value: ["id": 2])
                realm.commitAsyncWrite { _ in events.withLock { $0.append("inner committed") } }
            }
            events.withLock { $0.append("outer commits") }
            realm.commitAsyncWrite { _ in events.withLock { $0.append("outer committed") } }
        }
        // In the order they were queued: the inner block before the outer commit's callback, which was queued
        // when the outer block committed (in RealmSwift too the next write may begin before a commit's callback).
        #expect(events.withLock { $0 } == ["outer commits", "inner sees 1", "outer committed", "inner committed"])
        #expect(realm.objects(APIDog.self).count == 2)
    }

    @Test func writesCancelledBeforeTheyRunNeverCommitAndOnesThatDoNotCommitAreCancelled() throws {
        let dir = try TemporaryDirectory()
        let realm = try MissingAPITests.realm(dir)
        let ran = Locked<[Int]>([])
        realm.beginWrite()
        realm.beginAsyncWrite {
            ran.withLock { $0.append(1) }
            realm.create(APIDog.self, value: ["id": 1, "name": "with commit: commits"])
            realm.commitAsyncWrite()
        }
        realm.beginAsyncWrite {
            ran.withLock { $0.append(2) }
            realm.create(APIDog.self, value: ["id": 2, "name": "without commit: does not"])
        }
        let cancelled = realm.beginAsyncWrite {
            ran.withLock { $0.append(3) }
            realm.create(APIDog.self, value: ["id": 3, "name": "cancelled after begin: does not"])
            realm.commitAsyncWrite()
        }
        let callback = realm.writeAsync({ realm.create(APIDog.self, value: ["id": 4]) }, onComplete: { _ in ran.withLock { $0.append(40) } })
        try realm.cancelAsyncWrite(cancelled)
        try realm.cancelAsyncWrite(callback)
        try realm.commitWrite()
        #expect(ran.withLock { $0 } == [1, 2])
        #expect(realm.objects(APIDog.self).map(\.id) == [1])
        #expect(!realm.isPerformingAsynchronousWriteOperations)
    }

    @Test func onAQueueABlockWaitsForAWriteLeftOpenAcrossQueueBlocks() throws {
        let dir = try TemporaryDirectory()
        let queue = DispatchQueue(label: "async-ordering")
        let config = Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("q.realm")), objectTypes: [APIDog.self, APIOwner.self])
        let events = Locked<[String]>([])
        nonisolated(unsafe) var realm: Realm!
        queue.sync {
            realm = try! Realm(configuration: config, queue: queue)
            realm.beginWrite()
            realm.create(APIDog.self, value: ["id": 1])
            realm.writeAsync({
                events.withLock { $0.append("A") }
                realm.create(APIDog.self, value: ["id": 2])
            }, onComplete: { _ in events.withLock { $0.append("A committed") } })
            realm.writeAsync({ events.withLock { $0.append("B") } }, onComplete: { _ in events.withLock { $0.append("B committed") } })
        }
        queue.sync {}
        #expect(events.withLock { $0 }.isEmpty)
        queue.sync { try! realm.commitWrite() }
        queue.sync {}
        queue.sync {}
        #expect(events.withLock { $0 } == ["A", "B", "A committed", "B committed"])
        queue.sync {
            #expect(realm.objects(APIDog.self).map(\.id).sorted() == [1, 2])
            realm = nil
        }
    }
}

/// `asyncRefresh()` as RealmSwift's `testAsyncRefresh`, `testAsyncRefreshTaskCancellation` and
/// `testAsyncRefreshOnQueueConfinedRealm` check it.
@Suite struct AsyncRefreshTests {
    @Test func asyncRefreshSaysWhetherTheRealmMovedAndACancelledTaskDoesNotRefresh() async throws {
        let dir = try TemporaryDirectory()
        let config = Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("r.realm")), objectTypes: [APIDog.self, APIOwner.self])
        try await AsyncRefreshActor().check(config)
    }

    static func queueConfinedRealm() throws -> Realm {
        let dir = try TemporaryDirectory()
        let config = Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("q.realm")), objectTypes: [APIDog.self, APIOwner.self])
        let queue = DispatchQueue(label: "confined")
        nonisolated(unsafe) var realm: Realm!
        queue.sync { realm = try! Realm(configuration: config, queue: queue) }
        return realm
    }

    @Test func asyncRefreshTrapsOnAQueueConfinedRealm() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = try await AsyncRefreshTests.queueConfinedRealm().asyncRefresh()
        }
        let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(text.contains("asyncRefresh() can only be called on main thread or actor-isolated Realms"))
    }

    @Test func asyncWriteTrapsOnAQueueConfinedRealm() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            try await AsyncRefreshTests.queueConfinedRealm().asyncWrite {}
        }
        let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(text.contains("asyncWrite() can only be called on main thread or actor-isolated Realms"))
    }
}

actor AsyncRefreshActor {
    func check(_ config: Realm.Configuration) async throws {
        let realm = try await Realm(configuration: config, actor: self)
        realm.autorefresh = false
        let results = realm.objects(APIDog.self)
        #expect(results.count == 0)
        #expect(await realm.asyncRefresh() == false)
        let writer = Thread {
            let other = try! Realm(configuration: config)
            try! other.write { other.create(APIDog.self, value: ["id": 1]) }
        }
        writer.start()
        while !writer.isFinished { try await Task.sleep(nanoseconds: 1_000_000) }
        #expect(results.count == 0)
        let cancelled = Task { await realm.asyncRefresh() }
        cancelled.cancel()
        _ = await cancelled.value
        #expect(await realm.asyncRefresh() == true)
        #expect(results.count == 1)
    }
}
