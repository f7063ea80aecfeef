import Foundation
import Testing
import TestSupport

@testable import Strata

/// Change capture: each write transaction of a file that captures changes commits its field operations in
/// the outbox, one change set per commit, per operation kind and property kind.
@Suite struct ChangeCaptureTests {
    private func ops(_ realm: Realm, after: UInt64 = 0) throws -> [ChangeOperation] {
        try realm.pendingChanges(after: after).flatMap(\.operations)
    }

    @Test func aCreateRecordsItsValuesAndItsCollections() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: SyncTesting.config(dir))
        try realm.write {
            let item = SyncItem("a", title: "first")
            item.count = 3
            item.tags.append(objectsIn: ["x", "y"])
            item.labels.insert("l")
            item.attributes["k"] = 7
            item.address = SyncAddress()
            item.address?.city = "Oslo"
            item.extra = .int(5)
            realm.add(item)
        }
        let changes = try realm.pendingChanges()
        #expect(changes.count == 1)
        let c = try #require(changes.first)
        #expect(c.sequence == 1)
        #expect(c.clientID == realm.syncStatus?.clientID)
        let a = SyncTesting.ref("a")
        guard case .create(a, let values)? = c.operations.first else {
            Issue.record("expected a create first, got \(c.operations)")
            return
        }
        #expect(values["title"] == .string("first"))
        #expect(values["count"] == .int(3))
        #expect(values["owner"] == .null)
        #expect(values["extra"] == .int(5))
        #expect(values["address"] == .embedded(["city": .string("Oslo"), "zip": .int(0)]))
        let rest = Array(c.operations.dropFirst())
        let inserts = rest.compactMap { op -> SyncValue? in
            if case .listInsert(a, "tags", _, _, let v) = op { return v }
            return nil
        }
        #expect(inserts == [.string("x"), .string("y")])
        #expect(rest.contains(.setInsert(a, property: "labels", value: .string("l"))))
        #expect(rest.contains(.mapPut(a, property: "attributes", key: "k", value: .int(7))))
    }

    @Test func setsDeletesAndLinksAreRecordedAsFieldOperations() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: SyncTesting.config(dir))
        try realm.write {
            realm.add(SyncItem("a"))
            realm.add(SyncItem("b"))
        }
        let a = try #require(realm.object(ofType: SyncItem.self, forPrimaryKey: "a"))
        let b = try #require(realm.object(ofType: SyncItem.self, forPrimaryKey: "b"))
        try realm.write {
            a.title = "renamed"
            a.owner = b
            a.address = SyncAddress()
        }
        #expect(
            Set(try ops(realm, after: 1)) == [
                .set(SyncTesting.ref("a"), property: "title", value: .string("renamed")),
                .set(SyncTesting.ref("a"), property: "owner", value: .link(SyncTesting.ref("b"))),
                .set(SyncTesting.ref("a"), property: "address", value: .embedded(["city": .string(""), "zip": .int(0)])),
            ])
        // A change inside an embedded object is a set of its parent's property.
        try realm.write { a.address?.zip = 42 }
        #expect(try ops(realm, after: 2) == [.set(SyncTesting.ref("a"), property: "address", value: .embedded(["city": .string(""), "zip": .int(42)]))])
        // Deleting b nulls a's link: both are recorded.
        try realm.write { realm.delete(b) }
        #expect(Set(try ops(realm, after: 3)) == [.delete(SyncTesting.ref("b")), .set(SyncTesting.ref("a"), property: "owner", value: .null)])
        // A write that changes nothing records nothing.
        try realm.write { a.title = "renamed" }
        #expect(try realm.pendingChanges(after: 4).isEmpty)
        #expect(realm.syncStatus?.lastSequence == 4)
    }

    @Test func listOperationsNameElementsByStableIDs() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: SyncTesting.config(dir))
        let item = SyncItem("a")
        try realm.write {
            item.tags.append(objectsIn: ["p", "q", "r"])
            realm.add(item)
        }
        let ids = try realm.pendingChanges().flatMap(\.operations).compactMap { op -> ElementID? in
            if case .listInsert(_, "tags", let e, _, _) = op { return e }
            return nil
        }
        #expect(ids.count == 3 && Set(ids).count == 3)
        try realm.write { item.tags.move(from: 0, to: 2) }
        let moves = try ops(realm, after: 1)
        #expect(moves.count == 1)
        if case .listMove(_, "tags", let e, _)? = moves.first { #expect(e == ids[0]) } else { Issue.record("expected a move, got \(moves)") }
        try realm.write { item.tags[0] = "Q" }
        #expect(try ops(realm, after: 2) == [.listSet(SyncTesting.ref("a"), property: "tags", element: ids[1], value: .string("Q"))])
        try realm.write { item.tags.remove(at: 1) }
        #expect(try ops(realm, after: 3) == [.listRemove(SyncTesting.ref("a"), property: "tags", element: ids[2])])
        try realm.write { item.tags.insert("n", at: 1) }
        let inserted = try ops(realm, after: 4)
        guard case .listInsert(_, "tags", let e, _, .string("n"))? = inserted.first else {
            Issue.record("expected an insert, got \(inserted)")
            return
        }
        #expect(!ids.contains(e))
    }

    @Test func incrementsAreRecordedAsAdditions() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: SyncTesting.config(dir))
        let item = SyncItem("a")
        try realm.write { realm.add(item) }
        try realm.write { item.increment("count", by: 5) }
        #expect(item.count == 5)
        #expect(try ops(realm, after: 1) == [.addInteger(SyncTesting.ref("a"), property: "count", amount: 5)])
        // An increment and then a set: the set is what happened.
        try realm.write {
            item.increment("count", by: 1)
            item.count = 100
        }
        #expect(try ops(realm, after: 2) == [.set(SyncTesting.ref("a"), property: "count", value: .int(100))])
    }

    @Test func setsAndMapsRecordInsertsRemovesAndPuts() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: SyncTesting.config(dir))
        let item = SyncItem("a")
        try realm.write {
            item.labels.insert(objectsIn: ["x", "y"])
            item.attributes["one"] = 1
            item.attributes["two"] = 2
            realm.add(item)
        }
        try realm.write {
            item.labels.remove("x")
            item.labels.insert("z")
            item.attributes["one"] = 11
            item.attributes.removeObject(for: "two")
        }
        let a = SyncTesting.ref("a")
        #expect(
            Set(try ops(realm, after: 1)) == [
                .setRemove(a, property: "labels", value: .string("x")), .setInsert(a, property: "labels", value: .string("z")),
                .mapPut(a, property: "attributes", key: "one", value: .int(11)), .mapRemove(a, property: "attributes", key: "two"),
            ])
    }

    @Test func deleteAllAndLargeSpillingWritesAreCapturedWhole() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: SyncTesting.config(dir))
        realm.core.spillThreshold = 64 * 1024
        try realm.write { for i in 0..<3000 { realm.add(SyncItem("i\(i)", title: String(repeating: "t", count: 40))) } }
        let creates = try ops(realm).filter { if case .create = $0 { true } else { false } }
        #expect(creates.count == 3000)
        try realm.write { realm.deleteAll() }
        let deletes = try ops(realm, after: 1).filter { if case .delete = $0 { true } else { false } }
        #expect(deletes.count == 3000)
    }

    /// A write that spills is read back in key order across its spills and the base (`OrderedLookup`), and its
    /// records are compared by bytes: it records exactly the properties it changed, nothing for a value set to
    /// what it was (a NaN included).
    @Test func aSpillingWriteRecordsOnlyThePropertiesItChanged() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: SyncTesting.config(dir))
        realm.core.spillThreshold = 64 * 1024
        let ids = (0..<3000).map { String(format: "i%04d", $0) }
        try realm.write {
            for id in ids {
                let item = SyncItem(id, title: String(repeating: "t", count: 40))
                item.score = .nan
                realm.add(item)
            }
        }
        var spills = 0
        try realm.write {
            defer { spills = realm.core.write?.tx.spillCount() ?? 0 }
            for (n, id) in ids.enumerated() {
                let item = try #require(realm.object(ofType: SyncItem.self, forPrimaryKey: id))
                switch n % 3 {
                case 0: item.title = "changed \(n)"
                case 1:
                    item.title = String(repeating: "t", count: 40)
                    item.score = .nan
                default: item.count = n
                }
            }
        }
        #expect(spills > 0, "the write spilled")
        var expected: [ChangeOperation] = []
        for (n, id) in ids.enumerated() where n % 3 != 1 {
            let ref = SyncTesting.ref(id)
            expected.append(n % 3 == 0 ? .set(ref, property: "title", value: .string("changed \(n)")) : .set(ref, property: "count", value: .int(Int64(n))))
        }
        #expect(try ops(realm, after: 1) == expected)
    }

    @Test func theOutboxSurvivesReopenAndCompaction() throws {
        let dir = try TemporaryDirectory()
        do {
            let realm = try Realm(configuration: SyncTesting.config(dir))
            for i in 0..<20 { try realm.write { realm.add(SyncItem("i\(i)")) } }
        }
        // Compacted at open, and opened without asking for capture: the file captures, so the write is recorded.
        var config = SyncTesting.config(dir, captures: false)
        config.shouldCompactOnLaunch = { _, _ in true }
        let realm = try Realm(configuration: config)
        try realm.write { realm.add(SyncItem("late")) }
        let changes = try realm.pendingChanges()
        #expect(changes.map(\.sequence) == Array(1...21))
        try realm.acknowledgeChanges(through: 10)
        #expect(try realm.pendingChanges().map(\.sequence) == Array(11...21))
        #expect(realm.syncStatus?.acknowledgedSequence == 10)
    }

    /// Plain-value types take capture's direct path: the same operations, undo images that undo, and a file
    /// that applies them ends equal.
    @Test func plainValueTypesRecordTheSameOperationsByTheDirectPath() throws {
        let dir = try TemporaryDirectory()
        var config = SyncTesting.config(dir, "plain.realm")
        config.objectTypes = [SyncPlain.self]
        let realm = try Realm(configuration: config)
        let when = Date(timeIntervalSince1970: 1_700_000_000.25)
        try realm.write {
            for i in 0..<3 { realm.create(SyncPlain.self, value: ["id": i, "name": "n\(i)", "size": i * 10, "ratio": 0.5, "when": when]) }
        }
        let ref = ObjectReference(type: "SyncPlain", primaryKey: .int(1))
        let created = try realm.pendingChanges().flatMap(\.operations)
        #expect(created.count == 3)
        #expect(created[1] == .create(ref, values: ["id": .int(1), "name": .string("n1"), "size": .int(10), "ratio": .double(0.5), "when": .date(when), "tag": .null]))
        let tag = UUID()
        try realm.write {
            realm.object(ofType: SyncPlain.self, forPrimaryKey: 1)!.name = "renamed"
            realm.object(ofType: SyncPlain.self, forPrimaryKey: 1)!.tag = tag
        }
        #expect(Set(try realm.pendingChanges(after: 1).flatMap(\.operations)) == [.set(ref, property: "name", value: .string("renamed")), .set(ref, property: "tag", value: .uuid(tag))])
        // The undo images undo: the server orders the creates, then another client's edit, which is applied
        // under the local edit (still in the outbox), so that the local edit stays on top.
        let creates = try #require(try realm.pendingChanges().first)
        let other = ChangeSet(clientID: 99, sequence: 1, baseVersion: 1, schemaVersion: 0, operations: [.set(ref, property: "size", value: .int(77)), .set(ref, property: "name", value: .string("theirs"))])
        try realm.applyServerChanges([ServerChangeSet(version: 1, changeSet: creates), ServerChangeSet(version: 2, changeSet: other)])
        #expect(try realm.pendingChanges().map(\.sequence) == [2])
        let one = try #require(realm.object(ofType: SyncPlain.self, forPrimaryKey: 1))
        #expect(one.name == "renamed")
        #expect(one.size == 77)
        #expect(one.tag == tag)
        #expect(one.when == when)
    }

    /// A NaN left alone is unchanged: touching another property records only that one.
    @Test func aNaNLeftAloneRecordsNothing() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: SyncTesting.config(dir))
        let item = SyncItem("n")
        item.score = .nan
        item.tags.append("t")
        try realm.write { realm.add(item) }
        try realm.write { item.title = "touched" }
        #expect(try ops(realm, after: 1) == [.set(SyncTesting.ref("n"), property: "title", value: .string("touched"))])
    }

    /// Capture and applying work through every type of the file: a Realm that leaves one out is refused.
    @Test func aRealmThatLeavesOutATypeOfTheFileIsRefused() throws {
        let dir = try TemporaryDirectory()
        var config = SyncTesting.config(dir)
        config.objectTypes = [SyncItem.self, SyncAddress.self, SyncPlain.self]
        _ = try Realm(configuration: config)
        #expect {
            _ = try Realm(configuration: SyncTesting.config(dir))
        } throws: { error in
            "\(error)".contains("leave out types the file holds: SyncPlain")
        }
    }

    @Test func aTypeWithoutAPrimaryKeyIsRefusedAtOpen() throws {
        let dir = try TemporaryDirectory()
        var config = SyncTesting.config(dir)
        config.objectTypes = [SyncItem.self, SyncAddress.self, SyncUnkeyed.self]
        #expect {
            _ = try Realm(configuration: config)
        } throws: { error in
            "\(error)".contains("SyncUnkeyed has none")
        }
    }
}
