#if canImport(Combine)
import Combine
#else
import OpenCombine
#endif
import Foundation
import Strata
import Testing
import TestSupport

final class CPItem: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
    @Persisted var tags: List<String>
}

/// Issue 56, item 8: RealmSwift's Combine publishers, with Combine on Apple platforms and OpenCombine on Linux. Notifications of a Realm without a queue arrive at its own commits and refreshes,
/// so each step below is a commit on the test's thread.
@Suite struct CombinePublisherTests {
    static func realm() throws -> Realm {
        try Realm(configuration: .init(inMemoryIdentifier: "combine-\(UUID().uuidString)", objectTypes: [CPItem.self]))
    }

    @Test func valuePublisherOfAnObjectPublishesEachChangeAndFinishesAtDeletion() throws {
        let realm = try Self.realm()
        let item = try realm.write { realm.create(CPItem.self, value: ["id": 1, "name": "a"]) }
        var names: [String] = []
        var finished = false
        let cancellable = valuePublisher(item).sink(receiveCompletion: { _ in finished = true }, receiveValue: { names.append($0.name) })
        try realm.write { item.name = "b" }
        try realm.write { item.name = "c" }
        #expect(names == ["b", "c"])
        try realm.write { realm.delete(item) }
        #expect(finished)
        cancellable.cancel()
    }

    @Test func changesetPublisherOfAnObjectNamesTheChangedProperties() throws {
        let realm = try Self.realm()
        let item = try realm.write { realm.create(CPItem.self, value: ["id": 1, "name": "a"]) }
        var changed: [[String]] = []
        var deleted = false
        let cancellable = changesetPublisher(item).sink(receiveCompletion: { _ in }, receiveValue: { change in
            switch change {
            case .change(_, let properties): changed.append(properties.map(\.name))
            case .deleted: deleted = true
            case .error: break
            }
        })
        try realm.write { item.name = "b" }
        try realm.write { item.tags.append("t") }
        try realm.write { realm.delete(item) }
        #expect(changed == [["name"], ["tags"]])
        #expect(deleted)
        withExtendedLifetime(cancellable) {}
    }

    @Test func collectionPublishersPublishNowAndAfterEachChange() throws {
        let realm = try Self.realm()
        let results = realm.objects(CPItem.self).sorted(byKeyPath: "id")
        var counts: [Int] = []
        var insertions: [[Int]] = []
        let values = results.collectionPublisher.sink(receiveCompletion: { _ in }, receiveValue: { counts.append($0.count) })
        let changes = results.changesetPublisher.sink(receiveCompletion: { _ in }, receiveValue: { change in
            switch change {
            case .initial: insertions.append([])
            case .update(_, _, let inserted, _): insertions.append(inserted)
            case .error: break
            }
        })
        try realm.write { realm.create(CPItem.self, value: ["id": 1]) }
        try realm.write { realm.create(CPItem.self, value: ["id": 0]) }
        #expect(counts == [0, 1, 2])
        #expect(insertions == [[], [0], [0]])
        // Cancelled: nothing more arrives.
        values.cancel()
        try realm.write { realm.create(CPItem.self, value: ["id": 2]) }
        #expect(counts == [0, 1, 2])
        #expect(insertions.count == 4)
        changes.cancel()
    }

    @Test func aListPublishesItsChangesAndFrozenValuesCrossThreads() throws {
        let realm = try Self.realm()
        let item = try realm.write { realm.create(CPItem.self, value: ["id": 1]) }
        var frozen: [List<String>] = []
        let cancellable = item.tags.collectionPublisher.freeze().sink(receiveCompletion: { _ in }, receiveValue: { frozen.append($0) })
        try realm.write { item.tags.append("x") }
        #expect(frozen.map(\.count) == [0, 1])
        #expect(frozen.allSatisfy { $0.isFrozen })
        withExtendedLifetime(cancellable) {}
    }

    @Test func objectWillChangeSignalsEachChange() throws {
        let realm = try Self.realm()
        let item = try realm.write { realm.create(CPItem.self, value: ["id": 1]) }
        var signals = 0
        let cancellable = item.objectWillChange.sink { signals += 1 }
        try realm.write { item.name = "b" }
        try realm.write { item.name = "c" }
        #expect(signals == 2)
        withExtendedLifetime(cancellable) {}
    }

    /// Demand is honoured: a subscriber that asked for one value gets one.
    @Test func aSubscriberGetsNoMoreThanItAsksFor() throws {
        let realm = try Self.realm()
        let results = realm.objects(CPItem.self)
        final class One: Subscriber {
            typealias Input = Results<CPItem>
            typealias Failure = any Error
            var received = 0
            var subscription: (any Subscription)?
            func receive(subscription: any Subscription) {
                self.subscription = subscription
                subscription.request(.max(1))
            }
            func receive(_ input: Results<CPItem>) -> Subscribers.Demand {
                received += 1
                return .none
            }
            func receive(completion: Subscribers.Completion<any Error>) {}
        }
        let one = One()
        results.collectionPublisher.subscribe(one)
        try realm.write { realm.create(CPItem.self, value: ["id": 1]) }
        #expect(one.received == 1)
        one.subscription?.cancel()
    }

    /// `publisher(for:)`, which RealmSwift's objects get from key-value observing: the value now, then each
    /// change of that property (not of others), finishing at deletion.
    @Test func aPropertysPublisherGivesItsValueNowAndAfterEachChange() throws {
        let realm = try Self.realm()
        let item = try realm.write { realm.create(CPItem.self, value: ["id": 1, "name": "a"]) }
        var names: [String] = []
        var finished = false
        let cancellable = item.publisher(for: \.name).sink(receiveCompletion: { _ in finished = true }) { names.append($0) }
        try realm.write { item.name = "b" }
        try realm.write { item.tags.append("t") }
        try realm.write { item.name = "c" }
        #expect(names == ["a", "b", "c"])
        try realm.write { realm.delete(item) }
        #expect(finished)
        cancellable.cancel()
        // Unmanaged: the value now, then the end.
        var unmanaged: [String] = []
        _ = CPItem(value: ["name": "u"]).publisher(for: \.name).sink { unmanaged.append($0) }
        #expect(unmanaged == ["u"])
    }

}
