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
