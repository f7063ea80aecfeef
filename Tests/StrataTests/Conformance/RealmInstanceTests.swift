import Engine
import Foundation
import Strata
import Testing
import TestSupport

// Issue 18, item 1: Realm instances and managed objects behave as RealmSwift's.

final class RIItem: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
    @Persisted var next: RIItem?
}

@Suite struct RealmInstanceTests {
    static func config(_ dir: TemporaryDirectory) -> Realm.Configuration {
        Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("i.realm")), objectTypes: [RIItem.self])
    }

    @Test func realmReturnsTheThreadsInstanceForTheSameConfiguration() throws {
        let dir = try TemporaryDirectory()
        let a = try Realm(configuration: Self.config(dir))
        let b = try Realm(configuration: Self.config(dir))
        #expect(a == b)
        // A write begun through one is the write of the other.
        a.beginWrite()
        #expect(b.isInWriteTransaction)
        b.create(RIItem.self, value: ["id": 1])
        try a.commitWrite()
        #expect(!b.isInWriteTransaction)
        #expect(b.objects(RIItem.self).count == 1)
        // Another file, or another schema version, is another Realm.
        let other = try TemporaryDirectory()
        #expect(try Realm(configuration: Self.config(other)) != a)
    }

    @Test func aRealmOfAnotherThreadIsAnotherInstance() throws {
        let dir = try TemporaryDirectory()
        let here = try Realm(configuration: Self.config(dir))
        let config = Self.config(dir)
        let sameThere = Locked(false)
        let done = DispatchSemaphore(value: 0)
        Thread {
            let there = try? Realm(configuration: config)
            sameThere.withLock { $0 = there == here }
            done.signal()
        }.start()
        done.wait()
        #expect(!sameThere.withLock { $0 })
    }

    @Test func beginWriteInsideAWriteIsRealmsProgrammerError() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = try TemporaryDirectory()
            let realm = try Realm(configuration: RealmInstanceTests.config(dir))
            realm.beginWrite()
            try Realm(configuration: RealmInstanceTests.config(dir)).beginWrite()
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("The Realm is already in a write transaction"))
    }

    @Test func managedObjectsAreEqualAndHashableByIdentityInTheirFile() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: Self.config(dir))
        try realm.write {
            realm.create(RIItem.self, value: ["id": 1, "name": "a"])
            realm.create(RIItem.self, value: ["id": 2, "name": "b"])
        }
        let one = try #require(realm.object(ofType: RIItem.self, forPrimaryKey: 1))
        let again = try #require(realm.objects(RIItem.self).filter("id == 1").first)
        let two = try #require(realm.object(ofType: RIItem.self, forPrimaryKey: 2))
        #expect(one == again)
        #expect(one != two)
        #expect(Set([one, again, two]).count == 2)
        let names = [one: "first", two: "second"]
        #expect(names[again] == "first")
        // Unmanaged objects are equal only to themselves.
        let loose = RIItem(value: ["id": 1])
        #expect(loose != one)
        #expect(loose == loose)
    }

    @Test func objectsAreInvalidatedByDeleteDeleteAllAndInvalidate() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: Self.config(dir))
        let (a, b, c) = try realm.write {
            (realm.create(RIItem.self, value: ["id": 1]), realm.create(RIItem.self, value: ["id": 2]), realm.create(RIItem.self, value: ["id": 3]))
        }
        try realm.write { realm.delete(a) }
        #expect(a.isInvalidated)
        #expect(!b.isInvalidated)
        try realm.write { realm.deleteAll() }
        #expect(b.isInvalidated)
        #expect(c.isInvalidated)
        let d = try realm.write { realm.create(RIItem.self, value: ["id": 4]) }
        realm.invalidate()
        #expect(d.isInvalidated)
    }

    @Test func objectsLinkedInACycleAreFreedWhenDropped() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: Self.config(dir))
        weak var weakA: RIItem?
        try realm.write {
            let a = RIItem(value: ["id": 1])
            let b = RIItem(value: ["id": 2])
            a.next = b
            b.next = a
            realm.add(a)
            weakA = a
        }
        #expect(weakA == nil)
        #expect(realm.object(ofType: RIItem.self, forPrimaryKey: 1)?.next?.next?.id == 1)
    }
}
