import Dispatch
import Engine
import Foundation
import Strata
import Testing
import TestSupport

final class RVPlayer: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
    @Persisted var scores: List<Int>
    @Persisted var nicknames: List<String>
    @Persisted var maybeScores: List<Int?>
    @Persisted var weights: MutableSet<Double>
    @Persisted var prices: Map<String, Double>
    @Persisted var mixed: List<AnyRealmValue>
}

final class RVPlayerName: Projection<RVPlayer> {
    @Projected(\RVPlayer.name) var name
}

// Generic code over Results as an app writes it against RealmSwift.

func everything<T: RealmFetchable>(_ realm: Realm, _ type: T.Type) -> Results<T> { realm.objects(type) }

func countOf<T: RealmCollectionValue>(_ results: Results<T>) -> Int { results.count }

func largestValue<T: RealmCollectionValue & MinMaxType & SortableType>(_ list: List<T>) -> T? { list.sorted(ascending: false).first }

/// `Results` of values (`list.sorted(ascending:)`, `filter("self > 3")`, `distinct()`) and of projections
/// (`realm.objects(Projection.self)`), and `RealmFetchable`, as RealmSwift has them.
@Suite struct ResultsOfValuesTests {
    static func open(_ dir: TemporaryDirectory) throws -> Realm {
        try Realm(configuration: .init(fileURL: URL(fileURLWithPath: dir.child("v.realm")), objectTypes: [RVPlayer.self]))
    }

    static func fill(_ realm: Realm) throws -> RVPlayer {
        let player = RVPlayer()
        player.id = 1
        player.name = "Ada"
        player.scores.append(objectsIn: [30, 10, 20, 10])
        player.nicknames.append(objectsIn: ["Bee", "ada", "Alpha", "beta"])
        player.maybeScores.append(objectsIn: [3, nil, 1])
        player.weights.insert(objectsIn: [2.5, 1.5])
        player.prices["b"] = 2
        player.prices["a"] = 3
        try realm.write { realm.add(player) }
        return player
    }

    @Test func aSortedListIsALiveResultsOfItsValues() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.open(dir)
        let player = try Self.fill(realm)
        let ascending: Results<Int> = player.scores.sorted(ascending: true)
        #expect(Array(ascending) == [10, 10, 20, 30])
        #expect(Array(player.scores.sorted(ascending: false)) == [30, 20, 10, 10])
        #expect(Array(player.maybeScores.sorted()) == [nil, 1, 3])
        try realm.write { player.scores.append(5) }
        #expect(Array(ascending) == [5, 10, 10, 20, 30])
        #expect(ascending.first == 5 && ascending.last == 30 && ascending[2] == 10 && ascending.count == 5)
        #expect(Array(player.scores.distinct()) == [30, 10, 20, 5])
        #expect(Array(player.prices.sorted(ascending: true)) == [2, 3])
        #expect(Array(player.weights.sorted(ascending: false)) == [2.5, 1.5])
        #expect(largestValue(player.scores) == 30)
        #expect(countOf(ascending) == 5)
        #expect(ascending.description.hasPrefix("Results<int> <0x"))
    }

    @Test func valuesAreFilteredOnSelf() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.open(dir)
        let player = try Self.fill(realm)
        #expect(Array(player.scores.filter("self > 15")) == [30, 20])
        #expect(Array(player.scores.filter("self >= %@", 20).sorted()) == [20, 30])
        #expect(Array(player.scores.filter("self IN {10, 30}")) == [30, 10, 10])
        #expect(Array(player.scores.filter("self BETWEEN {15, 25}")) == [20])
        #expect(Array(player.scores.filter("15 < self AND NOT self == 30")) == [20])
        #expect(Array(player.nicknames.filter("self BEGINSWITH[c] 'a'")) == ["ada", "Alpha"])
        #expect(Array(player.nicknames.sorted(ascending: true).filter("self CONTAINS 'e'")) == ["Bee", "beta"])
        #expect(Array(player.weights.filter("self < 2")) == [1.5])
        #expect(Array(player.prices.filter("self > 2.5")) == [3])
        // A Results of values narrows again, and stays live.
        let high = player.scores.filter("self > 5").sorted(ascending: false).filter("self < 30")
        #expect(Array(high) == [20, 10, 10])
        try realm.write { player.scores.append(25) }
        #expect(Array(high) == [25, 20, 10, 10])
    }

    @Test func aResultsOfValuesAggregates() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.open(dir)
        let player = try Self.fill(realm)
        let scores = player.scores.filter("self > 10")
        #expect(scores.min() == 20)
        #expect(scores.max() == 30)
        #expect(scores.sum() == 50)
        #expect(scores.average() == 25.0)
        #expect(player.maybeScores.sorted().sum() == 4)
        #expect(player.scores.filter("self > 100").max() == nil)
    }

    @Test func aResultsOfValuesIsObservedFrozenAndHandedToAnotherThread() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.open(dir)
        let player = try Self.fill(realm)
        let sorted = player.scores.sorted(ascending: true)
        var changes: [[Int]] = []
        let token = sorted.observe { change in
            switch change {
            case .initial(let r): changes.append(Array(r))
            case .update(_, let deletions, let insertions, _): changes.append(deletions.map { -$0 - 1 } + insertions)
            case .error: changes.append([Int.min])
            }
        }
        defer { token.invalidate() }
        try realm.write { player.scores.append(15) }
        try realm.write { player.name = "Ada L." }  // not the list: nothing to deliver
        try realm.write { player.scores.remove(at: 0) }  // 30 goes, at the end of the sorted values
        #expect(changes == [[10, 10, 20, 30], [2], [-5]])

        let frozen = sorted.freeze()
        #expect(frozen.isFrozen && Array(frozen) == [10, 10, 15, 20])
        try realm.write { player.scores.append(1) }
        #expect(Array(frozen) == [10, 10, 15, 20])
        #expect(frozen.thaw().map(Array.init) == [1, 10, 10, 15, 20])

        let reference = ThreadSafeReference(to: sorted)
        let url = realm.configuration.fileURL!
        let seen = Locked<[Int]>([])
        let done = DispatchSemaphore(value: 0)
        Thread {
            defer { done.signal() }
            guard let other = try? Realm(configuration: .init(fileURL: url, objectTypes: [RVPlayer.self])),
                let resolved = other.resolve(reference)
            else { return }
            seen.withLock { $0 = Array(resolved) }
        }.start()
        done.wait()
        #expect(seen.withLock { $0 } == [1, 10, 10, 15, 20])
    }

    @Test func aDeletedOwnerLeavesAnEmptyResults() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.open(dir)
        let player = try Self.fill(realm)
        let sorted = player.scores.sorted()
        try realm.write { realm.delete(player) }
        #expect(sorted.isEmpty && sorted.count == 0 && sorted.first == nil)
    }

    @Test func projectionsAreAResultsOfTheProjection() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.open(dir)
        _ = try Self.fill(realm)
        try realm.write { realm.create(RVPlayer.self, value: ["id": 2, "name": "Bo"]) }
        let names: Results<RVPlayerName> = realm.objects(RVPlayerName.self)
        #expect(names.count == 2)
        #expect(names.sorted(byKeyPath: "name", ascending: false).map(\.name) == ["Bo", "Ada"])
        #expect(names.filter("id == 2").first?.name == "Bo")
        #expect(names.where { $0.name == "Ada" }.count == 1)
        let ada = try #require(names.filter("name == 'Ada'").first)
        #expect(names.index(of: ada) != nil)
        #expect(names.freeze().map(\.name).sorted() == ["Ada", "Bo"])
        #expect(names.description.hasPrefix("Results<RVPlayerName> <0x"))
        var counts: [Int] = []
        let token = names.observe { change in
            switch change {
            case .initial(let r): counts.append(r.count)
            case .update(let r, _, _, _): counts.append(r.count)
            case .error: counts.append(-1)
            }
        }
        defer { token.invalidate() }
        try realm.write { realm.create(RVPlayer.self, value: ["id": 3, "name": "Cy"]) }
        #expect(counts == [2, 3])
        // Generic code over RealmFetchable takes models and projections alike.
        #expect(everything(realm, RVPlayer.self).count == 3)
        #expect(everything(realm, RVPlayerName.self).map(\.name).sorted() == ["Ada", "Bo", "Cy"])
    }

    @Test func valueQueriesOnUnmanagedListsAndOnOtherKeyPathsTrapAsRealmSwiftDoes() async {
        let unmanaged = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let scores = List<Int>()
            scores.append(3)
            print(scores.sorted(ascending: true).count)
        }
        let unmanagedText = String(decoding: unmanaged?.standardErrorContent ?? [], as: UTF8.self)
        #expect(unmanagedText.contains("This method may only be called on RLMArray instances retrieved from an RLMRealm"), "\(unmanagedText.suffix(400))")
        let keyPath = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = try TemporaryDirectory()
            let realm = try ResultsOfValuesTests.open(dir)
            let player = try ResultsOfValuesTests.fill(realm)
            print(player.scores.filter("value > 3").count)
        }
        let keyPathText = String(decoding: keyPath?.standardErrorContent ?? [], as: UTF8.self)
        #expect(keyPathText.contains("can only compare the values themselves, named 'self'"), "\(keyPathText.suffix(400))")
    }

    /// A `Results<AnyRealmValue>` hands out the objects its values name, and sorts values of different kinds
    /// by kind, numbers of different types by value.
    @Test func mixedValuesKeepTheirObjectsAndSortByKind() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.open(dir)
        let player = try Self.fill(realm)
        try realm.write {
            let other = realm.create(RVPlayer.self, value: ["id": 2, "name": "Bo"])
            player.mixed.append(objectsIn: [.string("b"), .int(3), .object(other), .double(1.5), .bool(true), .none, .string("a")])
        }
        let sorted = Array(player.mixed.sorted(ascending: true))
        #expect(sorted.prefix(5) == [.none, .bool(true), .double(1.5), .int(3), .string("a")])
        #expect(sorted[5] == .string("b"))
        guard case .object(let object) = sorted[6] else {
            Issue.record("the object came back as \(sorted[6])")
            return
        }
        #expect((object as? RVPlayer)?.name == "Bo")
        #expect(Array(player.mixed.filter("self == 3")) == [.int(3)])
    }
}
