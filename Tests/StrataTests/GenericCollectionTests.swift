import Dispatch
import Engine
import Foundation
import Strata
import Testing
import TestSupport

final class GDog: Object {
    @Persisted var name = ""
    @Persisted var age = 0
    @Persisted var weight = 0.0
    @Persisted(originProperty: "dogs") var owners: LinkingObjects<GOwner>
}

final class GOwner: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var dogs: List<GDog>
    @Persisted var favourites: MutableSet<GDog>
    @Persisted var scores: List<Int>
    @Persisted var maybeScores: List<Int?>
    @Persisted var weights: MutableSet<Double>
    @Persisted var prices: Map<String, Decimal128>
    @Persisted var days: List<Date>
}

// Generic helpers written as an app writes them against RealmSwift.

func total<T: RealmCollectionValue & AddableType>(_ list: List<T>) -> T { list.sum() }

func largest<T: RealmCollectionValue & MinMaxType>(_ list: List<T>) -> T? { list.max() }

func names(_ dogs: AnyRealmCollection<GDog>) -> [String] { dogs.map(\.name) }

func olderThan<C: RealmCollection>(_ dogs: C, _ age: Int) -> Results<GDog> where C.Element == GDog {
    dogs.filter("age > %@", age).sorted(byKeyPath: "name")
}

func keyCount<M: RealmKeyedCollection>(_ map: M) -> Int { map.keys.count }

func priceOf<M: RealmKeyedCollection>(_ map: M, _ key: M.Key) -> M.Value? { map[key] }

func itemCount<S: RealmSectionedResult>(_ sectioned: S) -> Int { sectioned.count }

func frozenCopy<S: RealmSectionedResult>(_ sectioned: S) -> S { sectioned.freeze() }

actor DogCounter {
    func count(_ dogs: ThreadSafe<Results<GDog>>) -> Int { dogs.wrappedValue?.count ?? -1 }
}

/// RealmSwift's generic collection API: `RealmCollectionValue` and its companion protocols, `RealmCollection`
/// and `AnyRealmCollection`, queries on lists, sets and linking objects, and thread-safe references to every
/// kind of collection.
@Suite struct GenericCollectionTests {
    static func open(_ dir: TemporaryDirectory) throws -> Realm {
        try Realm(configuration: .init(fileURL: URL(fileURLWithPath: dir.child("g.realm")), objectTypes: [GDog.self, GOwner.self]))
    }

    /// An owner with five dogs (rex twice in the list), scores, weights, prices and days.
    static func fill(_ realm: Realm) throws -> GOwner {
        try realm.write {
            let dogs = [("rex", 3, 30.0), ("ada", 9, 12.5), ("bo", 1, 4.0), ("cy", 12, 20.0), ("dot", 6, 8.0)].map { name, age, weight in
                realm.create(GDog.self, value: ["name": name, "age": age, "weight": weight])
            }
            realm.create(GDog.self, value: ["name": "stray", "age": 40])
            let owner = realm.create(GOwner.self, value: ["id": 1])
            owner.dogs.append(objectsIn: [dogs[3], dogs[0], dogs[1], dogs[2], dogs[0]])
            owner.favourites.insert(objectsIn: [dogs[4], dogs[1]])
            owner.scores.append(objectsIn: [4, -2, 9, 7])
            owner.maybeScores.append(objectsIn: [4, nil, 6])
            owner.weights.insert(objectsIn: [1.5, 2.5, 4.0])
            owner.prices["a"] = Decimal128(stringLiteral: "1.10")
            owner.prices["b"] = Decimal128(stringLiteral: "2.25")
            owner.days.append(objectsIn: [Date(timeIntervalSince1970: 5), Date(timeIntervalSince1970: 2)])
            return owner
        }
    }

    @Test func aggregatesOverCollectionsOfValuesTakeGenericHelpers() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.open(dir)
        let owner = try Self.fill(realm)
        #expect(total(owner.scores) == 18)
        #expect(total(owner.maybeScores) == 10)
        #expect(largest(owner.scores) == 9)
        #expect(largest(owner.days) == Date(timeIntervalSince1970: 5))
        #expect(owner.scores.min() == -2)
        let mean: Double? = owner.scores.average()
        #expect(mean == 4.5)
        let maybeMean: Double? = owner.maybeScores.average()
        #expect(maybeMean == 5)
        #expect(owner.weights.sum() == 8.0 && owner.weights.min() == 1.5 && owner.weights.max() == 4.0)
        #expect(owner.prices.sum() == Decimal128(stringLiteral: "3.35"))
        #expect(owner.prices.max() == Decimal128(stringLiteral: "2.25"))
        let priceMean: Decimal128? = owner.prices.average()
        #expect(priceMean == Decimal128(stringLiteral: "1.675"))
        // Unmanaged lists aggregate too.
        let loose = List<Int>()
        loose.append(objectsIn: [3, 5])
        #expect(total(loose) == 8 && loose.max() == 5)
        let empty: Double? = List<Int>().average()
        #expect(empty == nil)
    }

    @Test func aListsQueriesGiveResultsOfItsObjectsInItsOrder() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.open(dir)
        let owner = try Self.fill(realm)
        // Its objects only (not the stray), in list order, an object listed twice twice.
        #expect(owner.dogs.filter("age > 2").map(\.name) == ["cy", "rex", "ada", "rex"])
        #expect(owner.dogs.where { $0.weight < 13 }.map(\.name) == ["ada", "bo"])
        #expect(owner.dogs.sorted(byKeyPath: "age", ascending: false).map(\.name) == ["cy", "ada", "rex", "rex", "bo"])
        #expect(owner.dogs.sorted(by: \.name).map(\.name) == ["ada", "bo", "cy", "rex", "rex"])
        #expect(owner.dogs.distinct(by: ["name"]).count == 4)
        #expect(owner.dogs.index(matching: "name == 'ada'") == 2)
        #expect(owner.dogs.index(matching: { $0.age > 100 }) == nil)
        #expect(owner.dogs.objects(at: IndexSet([0, 4])).map(\.name) == ["cy", "rex"])
        #expect(owner.dogs.max(ofProperty: "age") == 12)
        #expect(owner.dogs.sum(ofProperty: "age") == 28)
        #expect(owner.dogs.sum(of: \.weight) == 96.5)
        #expect(owner.dogs.min(of: \.age) == 1)
        let mean: Double? = owner.dogs.average(ofProperty: "age")
        #expect(mean == 5.6)
        #expect(olderThan(owner.dogs, 5).map(\.name) == ["ada", "cy"])
        #expect(olderThan(owner.favourites, 5).map(\.name) == ["ada", "dot"])
        #expect(olderThan(realm.objects(GDog.self), 5).map(\.name) == ["ada", "cy", "dot", "stray"])
        // Live: a change to the list changes the Results.
        let heavy = owner.dogs.filter("weight >= 12")
        #expect(heavy.count == 4)
        try realm.write { owner.dogs.remove(at: 0) }
        #expect(heavy.map(\.name) == ["rex", "ada", "rex"])
        try realm.write { realm.delete(realm.objects(GDog.self).filter("name == 'ada'")) }
        #expect(heavy.map(\.name) == ["rex", "rex"])
        // The backlinks of a dog, queried.
        let rex = try #require(realm.objects(GDog.self).filter("name == 'rex'").first)
        #expect(rex.owners.filter("id == 1").count == 1 && rex.owners.filter("id == 2").isEmpty)
        #expect(rex.owners.first?.dogs.count == 3)
        #expect(olderThan(rex.owners.first!.dogs, 2).map(\.name) == ["rex", "rex"])
    }

    @Test func anyRealmCollectionWrapsEveryKindOfCollection() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.open(dir)
        let owner = try Self.fill(realm)
        let rex = try #require(realm.objects(GDog.self).filter("name == 'rex'").first)
        let collections: [AnyRealmCollection<GDog>] = [
            AnyRealmCollection(realm.objects(GDog.self).sorted(byKeyPath: "name")), AnyRealmCollection(owner.dogs),
            AnyRealmCollection(owner.favourites), AnyRealmCollection(realm.objects(GOwner.self).first!.dogs.filter("age < 5")),
        ]
        #expect(collections.map { names($0) } == [
            ["ada", "bo", "cy", "dot", "rex", "stray"], ["cy", "rex", "ada", "bo", "rex"], ["dot", "ada"], ["rex", "bo", "rex"],
        ])
        #expect(AnyRealmCollection(AnyRealmCollection(owner.dogs)).count == 5)
        #expect(collections[1].filter("age < 5").count == 3)
        #expect(collections[1].index(of: rex) == 1)
        #expect(collections.allSatisfy { $0.realm != nil && !$0.isFrozen && !$0.isInvalidated })
        let frozen = collections[1].freeze()
        try realm.write { owner.dogs.removeAll() }
        #expect(frozen.isFrozen && frozen.count == 5 && collections[1].isEmpty)
        #expect(frozen.thaw()?.count == 0)
        let owners = AnyRealmCollection(rex.owners)
        #expect(owners.count == 0)
    }

    @Test func collectionsAndTheirQueriesCrossThreadsByReference() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.open(dir)
        let owner = try Self.fill(realm)
        let rex = try #require(realm.objects(GDog.self).filter("name == 'rex'").first)
        let listRef = ThreadSafeReference(to: owner.dogs)
        let setRef = ThreadSafeReference(to: owner.weights)
        let mapRef = ThreadSafeReference(to: owner.prices)
        let backlinksRef = ThreadSafeReference(to: rex.owners)
        let queryRef = ThreadSafeReference(to: owner.dogs.filter("age > 2"))
        #expect(!listRef.isInvalidated)
        let configuration = realm.configuration
        let seen = Locked<[String]>([])
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            defer { done.signal() }
            guard let there = try? Realm(configuration: configuration) else { return }
            let list = there.resolve(listRef)
            let set = there.resolve(setRef)
            let map = there.resolve(mapRef)
            let backlinks = there.resolve(backlinksRef)
            let query = there.resolve(queryRef)
            var out: [String] = []
            out.append(list.map { $0.map(\.name).joined(separator: ",") } ?? "nil")
            out.append(set.map { "\($0.sum())" } ?? "nil")
            out.append(map.map { "\($0.count)" } ?? "nil")
            out.append(backlinks.map { "\($0.count)" } ?? "nil")
            out.append(query.map { "\($0.count)" } ?? "nil")
            seen.withLock { $0 = out }
        }
        done.wait()
        #expect(seen.withLock { $0 } == ["cy,rex,ada,bo,rex", "8.0", "2", "1", "4"])
        #expect(listRef.isInvalidated && queryRef.isInvalidated)
        // The collection of a deleted object resolves to nil.
        let goneRef = ThreadSafeReference(to: owner.scores)
        try realm.write { realm.delete(owner) }
        #expect(realm.resolve(goneRef) == nil)
    }

    @Test func aThreadSafePropertyIsReadOnAnotherThreadAndInAnActor() async throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.open(dir)
        _ = try Self.fill(realm)
        @ThreadSafe var heavy = realm.objects(GDog.self).filter("weight > 10")
        let wrapper = _heavy
        let fromThread = Locked(-1)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            fromThread.withLock { $0 = wrapper.wrappedValue?.count ?? -2 }
            // Read twice: each read resolves a fresh reference.
            if wrapper.wrappedValue?.count != 3 { fromThread.withLock { $0 = -3 } }
            done.signal()
        }
        done.wait()
        #expect(fromThread.withLock { $0 } == 3)
        #expect(await DogCounter().count(wrapper) == 3)
        #expect(heavy?.count == 3)
        heavy = nil
        #expect(wrapper.wrappedValue == nil)
    }

    /// A collection's `Results` with nothing narrowing it iterates the collection's objects, in its order.
    @Test func aCollectionsResultsIteratesItsOwnObjects() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.open(dir)
        let owner = try Self.fill(realm)
        let results = try #require(owner.dogs._results)
        #expect(results.map(\.name) == ["cy", "rex", "ada", "bo", "rex"])
        #expect(Array(results).count == results.count)
        let owners = try #require(owner.dogs[0].owners._results)
        #expect(owners.map(\.id) == [1])
    }

    /// Maps are `RealmKeyedCollection`s; sectioned results and their sections are `RealmSectionedResult`s,
    /// freezable and handed to another thread.
    @Test func keyedAndSectionedCollectionsTakeGenericHelpers() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.open(dir)
        let owner = try Self.fill(realm)
        #expect(keyCount(owner.prices) == 2)
        #expect(priceOf(owner.prices, "b") == Decimal128(stringLiteral: "2.25"))
        let byAge = realm.objects(GDog.self).sectioned(by: { $0.age >= 6 }, sortDescriptors: [SortDescriptor(keyPath: "age")])
        #expect(itemCount(byAge) == 2)
        #expect(itemCount(byAge[1]) == 4)
        let frozen = frozenCopy(byAge)
        #expect(frozen.isFrozen && frozen != byAge && byAge == byAge)
        #expect(frozenCopy(byAge[0]).isFrozen && byAge[0] == byAge[0])
        let reference = ThreadSafeReference(to: byAge[1])
        let url = realm.configuration.fileURL!
        let seen = Locked<[String]>([])
        let done = DispatchSemaphore(value: 0)
        Thread {
            defer { done.signal() }
            guard let other = try? Realm(configuration: .init(fileURL: url, objectTypes: [GDog.self, GOwner.self])),
                let section = other.resolve(reference)
            else { return }
            seen.withLock { $0 = section.map(\.name) }
        }.start()
        done.wait()
        #expect(seen.withLock { $0 } == ["dot", "ada", "cy", "stray"])
    }

    @Test func queriesOnUnmanagedListsAndResolvingTwiceTrapAsRealmSwiftDoes() async {
        let filter = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dogs = List<GDog>()
            print(dogs.filter("age > 1").count)
        }
        let filterText = String(decoding: filter?.standardErrorContent ?? [], as: UTF8.self)
        #expect(filterText.contains("This method may only be called on RLMArray instances retrieved from an RLMRealm"), "\(filterText.suffix(400))")
        let twice = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = try TemporaryDirectory()
            let realm = try GenericCollectionTests.open(dir)
            let owner = try GenericCollectionTests.fill(realm)
            let reference = ThreadSafeReference(to: owner)
            _ = realm.resolve(reference)
            _ = realm.resolve(reference)
        }
        let twiceText = String(decoding: twice?.standardErrorContent ?? [], as: UTF8.self)
        #expect(twiceText.contains("Can only resolve a thread safe reference once."), "\(twiceText.suffix(400))")
    }

    /// A list's query is observed as any `Results`: a change to the list or to a listed object is delivered.
    @Test func aListsQueryAndABacklinksQueryDeliverChanges() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.open(dir)
        let owner = try Self.fill(realm)
        let seen = Deliveries<Results<GDog>>()
        let token = owner.dogs.filter("age > 2").observe { seen.changes.append($0) }
        defer { token.invalidate() }
        let stray = try #require(realm.objects(GDog.self).filter("name == 'stray'").first)
        let rex = try #require(realm.objects(GDog.self).filter("name == 'rex'").first)
        let backlinkSeen = Deliveries<Results<GOwner>>()
        let backlinkToken = stray.owners.filter("id > 0").observe { backlinkSeen.changes.append($0) }
        defer { backlinkToken.invalidate() }
        // The stray joins the list (the owner's record changes, no dog's does).
        try realm.write { owner.dogs.append(stray) }
        guard case .update(let r, _, let insertions, _)? = seen.changes.last else {
            Issue.record("no update after the list changed: \(seen.changes.count) deliveries")
            return
        }
        #expect(r.map(\.name) == ["cy", "rex", "ada", "rex", "stray"] && insertions == [4], "\(insertions)")
        guard case .update(let owners, _, let ownerInsertions, _)? = backlinkSeen.changes.last else {
            Issue.record("no update of the stray's owners")
            return
        }
        #expect(owners.map(\.id) == [1] && ownerInsertions == [0])
        // A listed dog ages out of the query.
        let before = seen.changes.count
        try realm.write { rex.age = 1 }
        guard case .update(let r2, let deletions, _, _)? = seen.changes.last, seen.changes.count == before + 1 else {
            Issue.record("no update after a listed dog changed")
            return
        }
        #expect(r2.map(\.name) == ["cy", "ada", "stray"] && deletions == [1, 3])
    }

    /// Issue 56, item 7 (from real apps): generic code observes any collection of objects through
    /// `RealmCollection` (`observe(keyPaths:on:_:)` is a requirement, as in RealmSwift), `LinkingObjects` and
    /// `AnyRealmCollection` included, with changes in the collection's own positions.
    @Test func genericCodeObservesEveryCollectionOfObjects() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.open(dir)
        let owner = try Self.fill(realm)
        let stray = try #require(realm.objects(GDog.self).filter("name == 'stray'").first)
        func watch<C: RealmCollection>(_ collection: C, _ changes: Deliveries<C>, keyPaths: [String]? = nil) -> NotificationToken {
            keyPaths == nil ? collection.observe { changes.changes.append($0) } : collection.observe(keyPaths: keyPaths, on: nil) { changes.changes.append($0) }
        }
        let dogs = Deliveries<List<GDog>>()
        let owners = Deliveries<LinkingObjects<GOwner>>()
        let any = Deliveries<AnyRealmCollection<GDog>>()
        let named = Deliveries<Results<GDog>>()
        let tokens = [
            watch(owner.dogs, dogs), watch(stray.owners, owners), watch(AnyRealmCollection(owner.favourites), any),
            watch(realm.objects(GDog.self), named, keyPaths: ["name"]),
        ]
        defer { tokens.forEach { $0.invalidate() } }
        #expect(dogs.changes.count == 1 && owners.changes.count == 1 && any.changes.count == 1 && named.changes.count == 1)
        try realm.write {
            owner.dogs.append(stray)
            owner.favourites.insert(stray)
        }
        guard case .update(let list, _, let insertions, _)? = dogs.changes.last else {
            Issue.record("no update of the list")
            return
        }
        #expect(list.count == 6 && insertions == [5])
        guard case .update(let linking, _, let ownerInsertions, _)? = owners.changes.last else {
            Issue.record("no update of the stray's owners")
            return
        }
        #expect(linking.map(\.id) == [1] && ownerInsertions == [0])
        guard case .update(let wrapped, _, let anyInsertions, _)? = any.changes.last else {
            Issue.record("no update of the wrapped set")
            return
        }
        #expect(wrapped.count == 3 && anyInsertions == [2])
        // Only names are watched: an age change is not a change of those results.
        let before = named.changes.count
        try realm.write { stray.age = 41 }
        #expect(named.changes.count == before)
        try realm.write { stray.name = "found" }
        #expect(named.changes.count == before + 1)
    }

    @Test func typeSafeQueriesAskWhetherACollectionHoldsAnyOfSomeValues() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.open(dir)
        let owner = try Self.fill(realm)
        try realm.write { realm.create(GOwner.self, value: ["id": 2, "scores": [100], "prices": ["z": Decimal128(integerLiteral: 9)]]) }
        let owners = realm.objects(GOwner.self)
        #expect(owners.where { $0.scores.containsAny(in: [9, 100]) }.map(\.id) == [1, 2])
        #expect(owners.where { $0.scores.containsAny(in: [100, 5]) }.map(\.id) == [2])
        #expect(owners.where { $0.scores.containsAny(in: []) }.isEmpty)
        let rex = try #require(realm.objects(GDog.self).filter("name == 'rex'").first)
        let stray = try #require(realm.objects(GDog.self).filter("name == 'stray'").first)
        #expect(owners.where { $0.dogs.containsAny(in: [stray, rex]) }.map(\.id) == [1])
        #expect(owners.where { $0.favourites.containsAny(in: [stray]) }.isEmpty)
        #expect(owners.where { $0.prices.containsAny(in: [Decimal128(integerLiteral: 9)]) }.map(\.id) == [2])
        #expect(owner.prices.asKeyValueSequence().map(\.key) == ["a", "b"])
    }

    /// What is thawed belongs to the thread's own Realm: inside a write begun there, it can be changed.
    @Test func thawingInsideAWriteGivesTheWritingRealmsObjects() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.open(dir)
        let owner = try Self.fill(realm)
        let frozenOwner = owner.freeze()
        let frozenDogs = owner.dogs.freeze()
        try realm.write {
            let live = try #require(frozenOwner.thaw())
            #expect(live.realm?.isInWriteTransaction == true)
            live.scores.append(42)
            let dogs = try #require(frozenDogs.thaw())
            dogs.removeLast()
        }
        #expect(owner.scores.last == 42 && owner.dogs.count == 4)
    }

    @Test func unmanagedListsOfObjectsAggregateTheirObjectsValues() {
        let dogs = List<GDog>()
        dogs.append(objectsIn: [GDog(value: ["name": "a", "age": 4]), GDog(value: ["name": "b", "age": 10])])
        #expect(dogs.sum(ofProperty: "age") == 14)
        #expect(dogs.max(of: \.age) == 10)
        let mean: Double? = dogs.average(ofProperty: "age")
        #expect(mean == 7)
    }
}

/// Key-path observation through linking objects and lists.
@Suite struct KeyPathObservationThroughCollectionsTests {
    @Test func observingBacklinksAndListElementPropertiesDelivers() throws {
        let dir = try TemporaryDirectory()
        let realm = try GenericCollectionTests.open(dir)
        let owner = try GenericCollectionTests.fill(realm)
        let rex = try #require(realm.objects(GDog.self).filter("name == 'rex'").first)
        let stray = try #require(realm.objects(GDog.self).filter("name == 'stray'").first)
        var dogChanges: [[String]] = []
        let dogToken = realm.objects(GDog.self).observe(keyPaths: ["owners"]) { change in
            if case .update(_, let d, let i, let m) = change { dogChanges.append(["\(d)", "\(i)", "\(m)"]) }
        }
        defer { dogToken.invalidate() }
        var strayChanges: [[String]] = []
        let strayToken = stray.observe(keyPaths: ["owners"]) { (change: ObjectChange<GDog>) in
            if case .change(_, let properties) = change { strayChanges.append(properties.map(\.name)) }
        }
        defer { strayToken.invalidate() }
        var ownerChanges = 0
        let ownerToken = realm.objects(GOwner.self).observe(keyPaths: ["dogs.name"]) { change in
            if case .update = change { ownerChanges += 1 }
        }
        defer { ownerToken.invalidate() }
        // A dog's age is not observed by either.
        try realm.write { rex.age = 4 }
        #expect(ownerChanges == 0)
        // A listed dog's name is.
        try realm.write { rex.name = "rexy" }
        #expect(ownerChanges == 1)
        #expect(dogChanges.isEmpty)
        // The stray gains an owner: its linking objects change, and it is reported modified.
        try realm.write { owner.dogs.append(stray) }
        let strayIndex = try #require(realm.objects(GDog.self).index(of: stray))
        #expect(dogChanges == [["[]", "[]", "[\(strayIndex)]"]])
        #expect(strayChanges == [["owners"]])
        // A property of the linking objects: watched through `owners.scores`, not through `owners`.
        var scoreChanges: [[Int]] = []
        let scoreToken = realm.objects(GDog.self).observe(keyPaths: ["owners.scores"]) { change in
            if case .update(_, _, _, let m) = change { scoreChanges.append(m) }
        }
        defer { scoreToken.invalidate() }
        try realm.write { owner.scores.append(1) }
        let owned = realm.objects(GDog.self).enumerated().filter { !$0.element.owners.isEmpty }.map(\.offset)
        #expect(scoreChanges == [owned] && dogChanges.count == 1, "\(scoreChanges) \(owned)")
    }
}
