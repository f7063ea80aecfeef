#if canImport(Combine)
import Combine
#else
import OpenCombine
import OpenCombineDispatch
#endif
import Dispatch
import Foundation
import Strata
import Testing
import TestSupport

/// A serial queue as a scheduler: the queue itself with Combine, its `ocombine` form with OpenCombine.
#if canImport(Combine)
private func scheduler(_ queue: DispatchQueue) -> DispatchQueue { queue }
#else
private func scheduler(_ queue: DispatchQueue) -> DispatchQueue.OCombine { queue.ocombine }
#endif

/// What a sink on another queue saw, and a way to wait for it.
private final class Received<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [T] = []
    private let arrived = DispatchSemaphore(value: 0)

    func append(_ item: T) {
        lock.withLock { items.append(item) }
        arrived.signal()
    }

    /// The items once there are `count` in all (or what arrived by a minute's wait).
    func wait(for count: Int) -> [T] {
        while lock.withLock({ items.count }) < count {
            if arrived.wait(timeout: .now() + 60) == .timedOut { break }
        }
        return lock.withLock { items }
    }
}

/// Issue 56, item 8: a Realm publisher's `subscribe(on:)` observes on a queue, and its `receive(on:)` (directly,
/// or after `threadSafeReference()` past other operators) hands each object or collection to a Realm of the
/// target queue, as RealmSwift's do.
@Suite struct CombineSchedulerTests {
    static func configuration(_ dir: TemporaryDirectory) -> Realm.Configuration {
        .init(fileURL: URL(fileURLWithPath: dir.child("c.realm")), objectTypes: [CPItem.self])
    }

    @Test func receiveOnHandsEachObjectToARealmOfTheQueue() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: Self.configuration(dir))
        let item = try realm.write { realm.create(CPItem.self, value: ["id": 1, "name": "a"]) }
        let queue = DispatchQueue(label: "receive")
        let received = Received<(name: String, sameObject: Bool, live: Bool)>()
        let cancellable = valuePublisher(item).receive(on: scheduler(queue)).sink(receiveCompletion: { _ in }) { object in
            // The object read here is the queue's own: another instance of the same stored object.
            received.append((object.name, object === item, object.realm?.isFrozen == false))
        }
        try realm.write { item.name = "b" }
        let seen = received.wait(for: 1)
        #expect(seen.map(\.name) == ["b"])
        #expect(seen.first?.sameObject == false)
        #expect(seen.first?.live == true)
        cancellable.cancel()
    }

    @Test func subscribeOnDeliversTheObserversNotificationsOnTheQueue() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: Self.configuration(dir))
        let queue = DispatchQueue(label: "subscribe")
        let key = DispatchSpecificKey<Bool>()
        queue.setSpecific(key: key, value: true)
        let received = Received<(count: Int, onQueue: Bool)>()
        let cancellable = changesetPublisher(realm.objects(CPItem.self)).subscribe(on: scheduler(queue)).sink(receiveCompletion: { _ in }) {
            change in
            switch change {
            case .initial(let r), .update(let r, _, _, _): received.append((r.count, DispatchQueue.getSpecific(key: key) == true))
            case .error: break
            }
        }
        // The initial delivery is on the queue too; wait for it before the commit.
        _ = received.wait(for: 1)
        try realm.write { realm.create(CPItem.self, value: ["id": 1]) }
        let seen = received.wait(for: 2)
        #expect(seen.count == 2)
        #expect(seen.allSatisfy { $0.onQueue })
        #expect(seen.last?.count == 1)
        cancellable.cancel()
    }

    @Test func threadSafeReferenceHandsCollectionsOverAfterOtherOperators() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: Self.configuration(dir))
        let queue = DispatchQueue(label: "handover")
        let received = Received<[Int]>()
        let cancellable = realm.objects(CPItem.self).sorted(byKeyPath: "id").collectionPublisher
            .filter { $0.count > 1 }
            .threadSafeReference()
            .receive(on: scheduler(queue))
            .sink(receiveCompletion: { _ in }) { results in received.append(results.map(\.id)) }
        try realm.write { realm.create(CPItem.self, value: ["id": 2]) }
        try realm.write { realm.create(CPItem.self, value: ["id": 1]) }
        #expect(received.wait(for: 1) == [[1, 2]])
        cancellable.cancel()
    }

    @Test func objectChangesetsAreHandedOverWithTheirObject() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: Self.configuration(dir))
        let item = try realm.write { realm.create(CPItem.self, value: ["id": 1, "name": "a"]) }
        let queue = DispatchQueue(label: "changeset")
        let received = Received<(name: String?, properties: [String])>()
        let cancellable = changesetPublisher(item).receive(on: scheduler(queue)).sink(receiveCompletion: { _ in }) { change in
            switch change {
            case .change(let object, let properties): received.append((object.name, properties.map(\.name)))
            case .deleted: received.append((nil, []))
            case .error: break
            }
        }
        try realm.write { item.name = "b" }
        // Resolved after the deletion, the change would find no object and be dropped (as RealmSwift's is).
        _ = received.wait(for: 1)
        try realm.write { realm.delete(item) }
        let seen = received.wait(for: 2)
        #expect(seen.map(\.name) == ["b", nil])
        #expect(seen.first?.properties == ["name"])
        cancellable.cancel()
    }

    /// A frozen object crosses as it is.
    @Test func frozenValuesCrossWithoutAReference() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: Self.configuration(dir))
        let item = try realm.write { realm.create(CPItem.self, value: ["id": 1, "name": "a"]) }
        let queue = DispatchQueue(label: "frozen")
        let received = Received<Bool>()
        let cancellable = valuePublisher(item).freeze().threadSafeReference().receive(on: scheduler(queue)).sink(receiveCompletion: { _ in }) {
            received.append($0.isFrozen && $0.name == "b")
        }
        try realm.write { item.name = "b" }
        #expect(received.wait(for: 1) == [true])
        cancellable.cancel()
    }
}
