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

final class RIHolder: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var items: List<RIItem>
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

    /// Issue 56, item 1 (from RealmSwift's own tests): `try! Realm().beginWrite()`, `try! Realm().create(...)`,
    /// `try! Realm().commitWrite()` is one write. Each `Realm()` is a temporary, but a Realm in a write
    /// transaction stays its thread's Realm until the write commits or is cancelled (RealmSwift's autoreleased
    /// instance lives that long). Before, the first went away with its write open and the next waited forever.
    @Test func temporaryRealmsOfOneThreadShareTheirOpenWrite() throws {
        let dir = try TemporaryDirectory()
        let config = Self.config(dir)
        let finished = DispatchSemaphore(value: 0)
        let failure = Locked<String?>(nil)
        Thread {
            do {
                try Realm(configuration: config).beginWrite()
                try Realm(configuration: config).create(RIItem.self, value: ["id": 1, "name": "one"])
                if try !Realm(configuration: config).isInWriteTransaction { failure.withLock { $0 = "the write ended early" } }
                try Realm(configuration: config).commitWrite()
                if try Realm(configuration: config).isInWriteTransaction { failure.withLock { $0 = "the write did not end" } }
                // Cancelled the same way.
                try Realm(configuration: config).beginWrite()
                try Realm(configuration: config).create(RIItem.self, value: ["id": 2])
                try Realm(configuration: config).cancelWrite()
            } catch {
                failure.withLock { $0 = "\(error)" }
            }
            finished.signal()
        }.start()
        guard finished.wait(timeout: .now() + 60) == .success else {
            Issue.record("the temporary Realms' write hung")
            return
        }
        #expect(failure.withLock { $0 } == nil)
        let realm = try Realm(configuration: config)
        #expect(realm.objects(RIItem.self).map(\.id) == [1])
        #expect(realm.object(ofType: RIItem.self, forPrimaryKey: 1)?.name == "one")
        // Another thread can write now: nothing kept the first write's lock.
        try realm.write { realm.create(RIItem.self, value: ["id": 3]) }
    }

    /// Two Realm instances of one thread on one file (configurations that differ, here in observation
    /// tracking): a write begun through the second while the first is in one would wait for it forever. It
    /// traps and says so instead of hanging.
    @Test func aWriteThatWouldWaitForItsOwnThreadTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = try TemporaryDirectory()
            var tracking = RealmInstanceTests.config(dir)
            tracking.observationTracking = true
            let first = try Realm(configuration: RealmInstanceTests.config(dir))
            let second = try Realm(configuration: tracking)
            first.beginWrite()
            second.beginWrite()
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("another Realm instance of this thread is in a write transaction on the same file"))
    }

    /// The same two instances one after the other: no trap once the first write ended.
    @Test func twoRealmsOfOneThreadWriteOneAfterTheOther() throws {
        let dir = try TemporaryDirectory()
        var tracking = Self.config(dir)
        tracking.observationTracking = true
        let first = try Realm(configuration: Self.config(dir))
        let second = try Realm(configuration: tracking)
        try first.write { first.create(RIItem.self, value: ["id": 1]) }
        try second.write { second.create(RIItem.self, value: ["id": 2]) }
        first.beginWrite()
        first.cancelWrite()
        try second.write { second.create(RIItem.self, value: ["id": 3]) }
        first.refresh()
        #expect(first.objects(RIItem.self).count == 3)
    }

    /// Issue 56, item 6: a change outside a write traps with Realm's words and says what was changed: the type
    /// and property set, the type added or deleted.
    @Test(arguments: ["set", "add", "delete", "list"])
    func O036_aChangeOutsideAWriteNamesWhatItChanged(_ change: String) async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [change] in
            let dir = try TemporaryDirectory()
            let realm = try Realm(configuration: RealmInstanceTests.listConfig(dir))
            let item = try realm.write { realm.create(RIItem.self, value: ["id": 1]) }
            let holder = try realm.write { realm.create(RIHolder.self, value: ["id": 1]) }
            switch change {
            case "set": item.name = "outside"
            case "add": realm.add(RIItem(value: ["id": 2]))
            case "delete": realm.delete(item)
            default: holder.items.append(item)
            }
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("Cannot modify managed objects outside of a write transaction"))
        let named = ["set": "setting RIItem.name", "add": "adding a RIItem", "delete": "deleting a RIItem", "list": "RIHolder.items"][change]!
        #expect(stderr.contains(named), "\(stderr)")
    }

    static func listConfig(_ dir: TemporaryDirectory) -> Realm.Configuration {
        Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("l.realm")), objectTypes: [RIItem.self, RIHolder.self])
    }

    /// RealmSwift's code and text for a read-only open of a file that does not exist
    /// (`RealmTests.testReadOnlyRealmMustExist`).
    @Test func aReadOnlyRealmMustExist() throws {
        let dir = try TemporaryDirectory()
        var config = Self.config(dir)
        config.readOnly = true
        do {
            _ = try Realm(configuration: config)
            Issue.record("a read-only open of a missing file succeeded")
        } catch let e as Realm.Error {
            #expect(e.code == .fileNotFound)
            #expect(e.localizedDescription == "Failed to open Realm file at path '\(dir.child("i.realm"))': No such file or directory")
            #expect(e.fileURL == config.fileURL)
        }
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

extension RealmInstanceTests {
    /// Issue 56, item 5: a thread that ends with a write open (a test that never commits, a worker that
    /// throws) cancels it as its Realm goes, as RealmSwift's deallocated Realm does. Before, the Realm's file
    /// closed first and waited for the writer gate that the open write held: the thread never ended, and every
    /// later write in the process waited forever.
    @Test func aThreadThatEndsInAWriteCancelsIt() throws {
        let dir = try TemporaryDirectory()
        let config = Self.config(dir)
        let ended = DispatchSemaphore(value: 0)
        Thread {
            let realm = try! Realm(configuration: config)
            realm.beginWrite()
            let a = realm.create(RIItem.self, value: ["id": 1])
            a.next = realm.create(RIItem.self, value: ["id": 2])
            a.next?.next = a
            // The thread's Realm goes as the thread ends, before or after the write below begins.
            ended.signal()
        }.start()
        ended.wait()
        let written = DispatchSemaphore(value: 0)
        Thread {
            let realm = try! Realm(configuration: config)
            try! realm.write { realm.create(RIItem.self, value: ["id": 3]) }
            written.signal()
        }.start()
        guard written.wait(timeout: .now() + 60) == .success else {
            Issue.record("a write after the abandoned one waited forever")
            return
        }
        #expect(try Realm(configuration: config).objects(RIItem.self).map(\.id) == [3])
    }

}
