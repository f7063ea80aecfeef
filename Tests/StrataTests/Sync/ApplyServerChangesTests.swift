import Foundation
import Testing
import TestSupport

@testable import Strata

/// Applying a server's change sets: no echo, Realm's conflict rules, local edits kept on top, duplicates
/// skipped and gaps refused, notifications with exact change sets.
@Suite struct ApplyServerChangesTests {
    /// Two clients and a server between them.
    struct Pair {
        let server = OrderingServer()
        let a: Realm
        let b: Realm

        /// `newerA`: a's schema is the newer one (`SyncItemV2`, with `note`), b's the older.
        init(_ dir: TemporaryDirectory, newerA: Bool = false) throws {
            var configA = SyncTesting.config(dir, "a.realm")
            if newerA {
                configA.objectTypes = [SyncItemV2.self, SyncAddress.self]
                configA.schemaVersion = 2
            }
            a = try Realm(configuration: configA)
            b = try Realm(configuration: SyncTesting.config(dir, "b.realm"))
        }

        func upload(_ r: Realm) throws {
            let sets = try r.pendingChanges()
            if let id = sets.first?.clientID { server.push(client: id, sets) }
        }

        func download(_ r: Realm) throws {
            try r.applyServerChanges(server.pull(after: r.syncStatus?.serverVersion ?? 0))
        }

        func sync() throws {
            try upload(a)
            try upload(b)
            try download(a)
            try download(b)
        }
    }

    @Test func aRemoteCreateArrivesWithoutEchoAndAcknowledgesTheAuthorsEntry() throws {
        let dir = try TemporaryDirectory()
        let p = try Pair(dir)
        try p.a.write { p.a.add(SyncItem("x", title: "hello")) }
        try p.sync()
        #expect(p.b.object(ofType: SyncItem.self, forPrimaryKey: "x")?.title == "hello")
        // Applying captured nothing on b, and a's entry left its outbox once the server returned it.
        #expect(try p.b.pendingChanges().isEmpty)
        #expect(try p.a.pendingChanges().isEmpty)
        #expect(p.a.syncStatus?.serverVersion == 1)
        #expect(p.b.syncStatus?.serverVersion == 1)
    }

    @Test func aDeleteAndACreateThatSawItBringTheObjectBack() throws {
        let dir = try TemporaryDirectory()
        let p = try Pair(dir)
        try p.a.write { p.a.add(SyncItem("x", title: "one")) }
        try p.sync()
        try p.a.write { p.a.delete(p.a.object(ofType: SyncItem.self, forPrimaryKey: "x")!) }
        try p.a.write { p.a.add(SyncItem("x", title: "two")) }
        try p.sync()
        #expect(p.a.object(ofType: SyncItem.self, forPrimaryKey: "x")?.title == "two")
        #expect(p.b.object(ofType: SyncItem.self, forPrimaryKey: "x")?.title == "two")
        #expect(try SyncContents.of(p.a) == SyncContents.normalized(p.server.oracle.live))
        #expect(try SyncContents.of(p.b) == SyncContents.normalized(p.server.oracle.live))
    }

    @Test func aDeleteWinsOverAConcurrentEditAndAConcurrentCreate() throws {
        let dir = try TemporaryDirectory()
        let p = try Pair(dir)
        try p.a.write { p.a.add(SyncItem("x", title: "one")) }
        try p.sync()
        try p.a.write { p.a.delete(p.a.object(ofType: SyncItem.self, forPrimaryKey: "x")!) }
        try p.b.write { p.b.object(ofType: SyncItem.self, forPrimaryKey: "x")!.title = "edited" }
        try p.sync()
        #expect(p.a.object(ofType: SyncItem.self, forPrimaryKey: "x") == nil)
        #expect(p.b.object(ofType: SyncItem.self, forPrimaryKey: "x") == nil)
    }

    @Test func anOfflineEditStaysOnTopOfRemoteChangesUntilTheServerOrdersIt() throws {
        let dir = try TemporaryDirectory()
        let p = try Pair(dir)
        try p.a.write { p.a.add(SyncItem("x", title: "one")) }
        try p.sync()
        let bx = try #require(p.b.object(ofType: SyncItem.self, forPrimaryKey: "x"))
        try p.b.write {
            bx.title = "mine"
            bx.increment("count", by: 2)
        }
        try p.a.write {
            let ax = p.a.object(ofType: SyncItem.self, forPrimaryKey: "x")!
            ax.title = "theirs"
            ax.increment("count", by: 5)
        }
        try p.upload(p.a)
        // b applies a's change: its own title stays (it will be ordered later), the additions sum.
        try p.download(p.b)
        #expect(bx.title == "mine")
        #expect(bx.count == 7)
        #expect(try p.b.pendingChanges().count == 1)
        try p.sync()
        #expect(p.a.object(ofType: SyncItem.self, forPrimaryKey: "x")?.title == "mine")
        #expect(p.a.object(ofType: SyncItem.self, forPrimaryKey: "x")?.count == 7)
        #expect(bx.count == 7)
    }

    @Test func concurrentListInsertsAreAllKeptInOneOrder() throws {
        let dir = try TemporaryDirectory()
        let p = try Pair(dir)
        try p.a.write {
            let x = SyncItem("x")
            x.tags.append(objectsIn: ["m", "n"])
            p.a.add(x)
        }
        try p.sync()
        try p.a.write { p.a.object(ofType: SyncItem.self, forPrimaryKey: "x")!.tags.insert("a1", at: 1) }
        try p.b.write { p.b.object(ofType: SyncItem.self, forPrimaryKey: "x")!.tags.insert("b1", at: 1) }
        try p.b.write { p.b.object(ofType: SyncItem.self, forPrimaryKey: "x")!.tags.remove(at: 0) }
        try p.sync()
        try p.download(p.a)
        let at = Array(p.a.object(ofType: SyncItem.self, forPrimaryKey: "x")!.tags)
        let bt = Array(p.b.object(ofType: SyncItem.self, forPrimaryKey: "x")!.tags)
        #expect(at == bt)
        #expect(Set(at) == ["a1", "b1", "n"])
    }

    @Test func nestedCollectionsAndListsOfEmbeddedObjectsArriveWhole() throws {
        let dir = try TemporaryDirectory()
        let p = try Pair(dir)
        try p.a.write {
            let x = SyncItem("x")
            x.extra = .fromArray([.int(1), .fromDictionary(["k": .string("v")]), .none])
            let place = SyncAddress()
            place.city = "Bergen"
            x.places.append(place)
            p.a.add(x)
        }
        try p.sync()
        let bx = try #require(p.b.object(ofType: SyncItem.self, forPrimaryKey: "x"))
        #expect(bx.places.first?.city == "Bergen")
        guard case .list(let list) = bx.extra else {
            Issue.record("extra is \(bx.extra), not a nested list")
            return
        }
        #expect(list.count == 3)
        #expect(list[0] == .int(1))
        try p.a.write { p.a.object(ofType: SyncItem.self, forPrimaryKey: "x")!.places.first!.zip = 5005 }
        try p.sync()
        #expect(bx.places.first?.zip == 5005)
        #expect(try SyncContents.of(p.b) == SyncContents.normalized(p.server.oracle.live))
        #expect(try SyncContents.of(p.a) == SyncContents.normalized(p.server.oracle.live))
    }

    /// A property a client's schema does not have is kept (by the server and the clients that have it),
    /// never nulled by that client's edits.
    @Test func aPropertyAnOlderClientDoesNotKnowIsKept() throws {
        let dir = try TemporaryDirectory()
        let p = try Pair(dir, newerA: true)
        let (a, b, server) = (p.a, p.b, p.server)
        try a.write {
            let x = SyncItemV2()
            x.id = "x"
            x.note = "kept"
            a.add(x)
        }
        try p.sync()
        #expect(try a.pendingChanges().isEmpty)
        try b.write { b.object(ofType: SyncItem.self, forPrimaryKey: "x")!.title = "from the old client" }
        try p.sync()
        let ax = try #require(a.object(ofType: SyncItemV2.self, forPrimaryKey: "x"))
        #expect(ax.title == "from the old client")
        #expect(ax.note == "kept")
        #expect(server.oracle.live[SyncTesting.ref("x")]?.fields["note"] == .value(.string("kept")))
        #expect(try b.pendingChanges(after: 0).isEmpty)
        #expect(server.history.last?.changeSet.schemaVersion == 0)
        #expect(server.history.first?.changeSet.schemaVersion == 2)
    }

    /// An object added with links to objects it brings along (created after it in the same write) keeps them on
    /// every device: a change set's creates come first.
    @Test func linksToObjectsCreatedInTheSameWriteArrive() throws {
        let dir = try TemporaryDirectory()
        let p = try Pair(dir)
        try p.a.write {
            let x = SyncItem("x")
            x.owner = SyncItem("y")
            x.related.append(SyncItem("z"))
            x.extra = .object(SyncItem("w"))
            p.a.add(x)
        }
        try p.sync()
        for realm in [p.a, p.b] {
            let x = try #require(realm.object(ofType: SyncItem.self, forPrimaryKey: "x"))
            #expect(x.owner?.id == "y")
            #expect(x.related.map(\.id) == ["z"])
            #expect(x.extra.objectValue?.value(forKey: "id") as? String == "w")
        }
    }

    /// A create from a client whose schema lacks a property leaves that property at its default on a client
    /// that has it (a required property included).
    @Test func aCreateFromAnOlderSchemaLeavesTheNewPropertyAtItsDefault() throws {
        let dir = try TemporaryDirectory()
        let p = try Pair(dir, newerA: true)
        let (a, b) = (p.a, p.b)
        try b.write { b.add(SyncItem("y", title: "old")) }
        try p.upload(b)
        try p.download(a)
        let y = try #require(a.object(ofType: SyncItemV2.self, forPrimaryKey: "y"))
        #expect(y.title == "old")
        #expect(y.note == "")
    }

    /// A programmer error: applying a server's changes inside a write transaction (it needs one of its own).
    @Test func applyingInsideAWriteTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = try TemporaryDirectory()
            let realm = try Realm(configuration: SyncTesting.config(dir))
            realm.beginWrite()
            try realm.applyServerChanges([])
        }
        let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(text.contains("applyServerChanges(_:) begins a write transaction of its own"), "\(text.suffix(400))")
    }

    @Test func repeatedVersionsAreSkippedAndAGapIsRefused() throws {
        let dir = try TemporaryDirectory()
        let p = try Pair(dir)
        for i in 0..<3 { try p.a.write { p.a.add(SyncItem("x\(i)")) } }
        try p.upload(p.a)
        let all = p.server.pull(after: 0)
        #expect(throws: Realm.Error.self) { try p.b.applyServerChanges([all[1]]) }
        #expect(p.b.objects(SyncItem.self).isEmpty)
        try p.b.applyServerChanges([all[0], all[0], all[1]])
        try p.b.applyServerChanges(all)
        #expect(p.b.objects(SyncItem.self).count == 3)
        #expect(p.b.syncStatus?.serverVersion == 3)
    }

    @Test func observersOfAnAppliedBatchGetExactChangeSets() throws {
        let dir = try TemporaryDirectory()
        let p = try Pair(dir)
        try p.a.write {
            p.a.add(SyncItem("x"))
            p.a.add(SyncItem("y"))
        }
        try p.sync()
        let results = p.b.objects(SyncItem.self).sorted(byKeyPath: "id")
        var changes: [(deletions: [Int], insertions: [Int], modifications: [Int])] = []
        let token = results.observe { change in
            if case .update(_, let d, let i, let m) = change { changes.append((d, i, m)) }
        }
        defer { token.invalidate() }
        try p.a.write {
            p.a.object(ofType: SyncItem.self, forPrimaryKey: "y")!.title = "changed"
            p.a.add(SyncItem("z"))
        }
        try p.upload(p.a)
        try p.download(p.b)
        p.b.refresh()
        #expect(changes.count == 1)
        #expect(changes.first?.deletions == [])
        #expect(changes.first?.insertions == [2])
        #expect(changes.first?.modifications == [1])
    }

    /// A create of a type holding plain values is added, and a set of a plain value made, from the values as
    /// stored (not through key-value coding): every kind arrives as it was, nil and an enum included, and an
    /// observer sees the insertions. A type with a narrower integer takes the dynamic path, which checks its
    /// range, and arrives too.
    @Test func remoteCreatesAndSetsOfPlainValuesArriveWithEveryKind() throws {
        let dir = try TemporaryDirectory()
        func config(_ name: String) -> Realm.Configuration {
            var c = Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child(name)), objectTypes: [SyncEveryPlain.self, SyncNarrowPlain.self, SyncNamedPlain.self])
            c.capturesChanges = true
            return c
        }
        let (a, b) = (try Realm(configuration: config("a.realm")), try Realm(configuration: config("b.realm")))
        let server = OrderingServer()
        let when = Date(timeIntervalSince1970: 1_700_000_000.123456)
        let (uuid, objectId) = (UUID(), ObjectId.generate())
        try a.write {
            let full = SyncEveryPlain()
            full.id = 1
            full.flag = true
            full.ratio = 0.25
            full.score = 1.5
            full.name = "full"
            full.bytes = Data([1, 2, 3])
            full.when = when
            full.uuid = uuid
            full.objectId = objectId
            full.amount = try Decimal128(string: "12.5")
            full.color = .blue
            full.note = "kept"
            a.add(full)
            let empty = SyncEveryPlain()
            empty.id = 2
            a.add(empty)
        }
        let results = b.objects(SyncEveryPlain.self).sorted(byKeyPath: "id")
        var insertions: [[Int]] = []
        let token = results.observe { change in
            if case .update(_, _, let i, _) = change { insertions.append(i) }
        }
        defer { token.invalidate() }
        let sets = try a.pendingChanges()
        server.push(client: try #require(sets.first?.clientID), sets)
        try b.applyServerChanges(server.pull(after: 0))
        b.refresh()
        #expect(insertions == [[0, 1]])
        let full = try #require(b.object(ofType: SyncEveryPlain.self, forPrimaryKey: 1))
        #expect(full.flag && full.ratio == 0.25 && full.score == 1.5 && full.name == "full")
        #expect(full.bytes == Data([1, 2, 3]) && full.when == when && full.uuid == uuid && full.objectId == objectId)
        #expect(full.amount == (try Decimal128(string: "12.5")) && full.color == .blue && full.note == "kept")
        let empty = try #require(b.object(ofType: SyncEveryPlain.self, forPrimaryKey: 2))
        #expect(!empty.flag && empty.name == "" && empty.when == nil && empty.uuid == nil && empty.note == nil)
        #expect(empty.color == .red && empty.amount == Decimal128(0))
        #expect(try b.pendingChanges().isEmpty)
        // Sets of every kind, to values and to nil, arrive as set.
        let uuid2 = UUID()
        try a.write {
            let full = try #require(a.object(ofType: SyncEveryPlain.self, forPrimaryKey: 1))
            full.flag = false
            full.ratio = -1
            full.score = 2.5
            full.name = "changed"
            full.bytes = Data([9])
            full.when = nil
            full.uuid = uuid2
            full.objectId = nil
            full.amount = Decimal128(3)
            full.color = .red
            full.note = nil
        }
        let changed = try a.pendingChanges()
        server.push(client: try #require(changed.first?.clientID), changed)
        try b.applyServerChanges(server.pull(after: b.syncStatus?.serverVersion ?? 0))
        #expect(!full.flag && full.ratio == -1 && full.score == 2.5 && full.name == "changed" && full.bytes == Data([9]))
        #expect(full.when == nil && full.uuid == uuid2 && full.objectId == nil && full.amount == Decimal128(3) && full.color == .red)
        #expect(full.note == nil)
        try a.write { a.add(SyncNarrowPlain(value: ["id": 3, "small": -7])) }
        let more = try a.pendingChanges()
        server.push(client: try #require(more.first?.clientID), more)
        try b.applyServerChanges(server.pull(after: b.syncStatus?.serverVersion ?? 0))
        #expect(b.object(ofType: SyncNarrowPlain.self, forPrimaryKey: 3)?.small == -7)
        // A String primary key, through the general add.
        try a.write { a.add(SyncNamedPlain(value: ["name": "n", "size": 4])) }
        let named = try a.pendingChanges()
        server.push(client: try #require(named.first?.clientID), named)
        try b.applyServerChanges(server.pull(after: b.syncStatus?.serverVersion ?? 0))
        #expect(b.object(ofType: SyncNamedPlain.self, forPrimaryKey: "n")?.size == 4)
    }

    /// A create from a client whose schema lacks a property of a type holding plain values: the property gets
    /// what a new instance holds, a default made per object included (not one value for every object).
    @Test func aPlainCreateFromAnOlderSchemaGetsEachNewInstancesDefault() throws {
        let dir = try TemporaryDirectory()
        func config(_ name: String, _ type: Object.Type) -> Realm.Configuration {
            var c = Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child(name)), objectTypes: [type])
            c.capturesChanges = true
            return c
        }
        let a = try Realm(configuration: config("a.realm", SyncNamedPlain.self))
        let b = try Realm(configuration: config("b.realm", SyncNamedPlainV2.self))
        let server = OrderingServer()
        try a.write {
            a.add(SyncNamedPlain(value: ["name": "x", "size": 1]))
            a.add(SyncNamedPlain(value: ["name": "y", "size": 2]))
        }
        let sets = try a.pendingChanges()
        server.push(client: try #require(sets.first?.clientID), sets)
        try b.applyServerChanges(server.pull(after: 0))
        let x = try #require(b.object(ofType: SyncNamedPlainV2.self, forPrimaryKey: "x"))
        let y = try #require(b.object(ofType: SyncNamedPlainV2.self, forPrimaryKey: "y"))
        #expect(x.size == 1 && y.size == 2)
        #expect(x.stamp != y.stamp)
        #expect(x.label == "unnamed")
    }
}

/// Every kind of plain value (`remoteCreatesAndSetsOfPlainValuesArriveWithEveryKind`), and a narrower integer.
final class SyncEveryPlain: Object {
    enum Hue: String, PersistableEnum { case red, blue }
    @Persisted(primaryKey: true) var id = 0
    @Persisted var flag = false
    @Persisted var ratio: Float = 0
    @Persisted var score = 0.0
    @Persisted var name = ""
    @Persisted var bytes = Data()
    @Persisted var when: Date?
    @Persisted var uuid: UUID?
    @Persisted var objectId: ObjectId?
    @Persisted var amount = Decimal128(0)
    @Persisted var color = Hue.red
    @Persisted var note: String?
}

final class SyncNarrowPlain: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var small: Int8 = 0
}

/// A type holding plain values with a String primary key.
final class SyncNamedPlain: Object {
    @Persisted(primaryKey: true) var name = ""
    @Persisted var size = 0
}

/// `SyncNamedPlain` at a newer schema: a per-object default and a constant one.
final class SyncNamedPlainV2: Object {
    @Persisted(primaryKey: true) var name = ""
    @Persisted var size = 0
    @Persisted var stamp = UUID()
    @Persisted var label = "unnamed"
    override class func className() -> String { "SyncNamedPlain" }
}
