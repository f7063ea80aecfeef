import Foundation
import Strata
import Testing
import TestSupport

final class CAABag: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var items: List<CAAItem>
    @Persisted var tags: MutableSet<String>
    @Persisted var counts: Map<String, Int>
}

final class CAAItem: Object {
    @Persisted var name = ""
}

/// Issue 56, item 5: a collection taken from an unmanaged object is the object's managed collection once the
/// object is added, as RealmSwift's is (its `Persisted` keeps the collection and makes it managed).
@Suite struct CollectionAfterAddTests {
    static func config(_ dir: TemporaryDirectory) -> Realm.Configuration {
        Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("c.realm")), objectTypes: [CAABag.self, CAAItem.self])
    }

    @Test func O034_collectionsTakenBeforeAddAreManagedAfterIt() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: Self.config(dir))
        let bag = CAABag()
        bag.id = 1
        let items = bag.items
        let tags = bag.tags
        let counts = bag.counts
        items.append(CAAItem(value: ["name": "a"]))
        tags.insert("x")
        counts["one"] = 1
        #expect(items.realm == nil)
        try realm.write {
            realm.add(bag)
            // Managed from the add on, inside the write.
            #expect(items.realm != nil)
            #expect(tags.realm != nil)
            #expect(counts.realm != nil)
            items.append(CAAItem(value: ["name": "b"]))
        }
        #expect(items.map(\.name) == ["a", "b"])
        #expect(Array(tags) == ["x"])
        #expect(counts["one"] == 1)
        try realm.write {
            tags.insert("y")
            counts["two"] = 2
        }
        let stored = try #require(realm.object(ofType: CAABag.self, forPrimaryKey: 1))
        #expect(stored.items.map(\.name) == ["a", "b"])
        #expect(Set(stored.tags) == ["x", "y"])
        #expect(stored.counts["two"] == 2)
        // Live: a change made through the object shows in the collection taken before the add.
        try realm.write { stored.items.removeFirst() }
        #expect(items.map(\.name) == ["b"])
    }

    /// A collection assigned to the unmanaged object (not its own) is the managed one after the add too.
    @Test func anAssignedCollectionIsManagedAfterTheAdd() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: Self.config(dir))
        let bag = CAABag(value: ["id": 2])
        let items = List<CAAItem>()
        items.append(CAAItem(value: ["name": "c"]))
        bag.items = items
        try realm.write { realm.add(bag) }
        #expect(items.realm != nil)
        try realm.write { items.append(CAAItem(value: ["name": "d"])) }
        #expect(bag.items.map(\.name) == ["c", "d"])
    }

    /// A cancelled add leaves the object invalidated, as in RealmSwift, and the collection with it.
    @Test func aCancelledAddInvalidatesTheCollection() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: Self.config(dir))
        let bag = CAABag(value: ["id": 3])
        let items = bag.items
        items.append(CAAItem(value: ["name": "e"]))
        realm.beginWrite()
        realm.add(bag)
        realm.cancelWrite()
        #expect(bag.isInvalidated)
        #expect(items.isInvalidated)
    }
}
