import Engine
import Foundation
import Testing
import TestSupport

@testable import Strata

/// Capture's direct path for types of plain values (`PlainCapture`): a write's creates and sets go into the
/// outbox as runs that name the type and property once. They must read back as the operations and undo images
/// the general path records, and damaged runs must be refused with a typed error.
@Suite struct CaptureRunsTests {
    private func config(_ dir: TemporaryDirectory) -> Realm.Configuration {
        var c = SyncTesting.config(dir, "runs.realm")
        c.objectTypes = [SyncPlain.self, SyncPlainByName.self]
        return c
    }

    private static let when = Date(timeIntervalSinceReferenceDate: 812_345_678.125)

    /// The values object `i` is created with: text of every width (non-ASCII among them), nil and not.
    private static func values(_ i: Int) -> (name: String, size: Int, ratio: Double, when: Date?) {
        let names = ["", "a", "plain ascii", "Ærø – ünïcödé", String(repeating: "long ", count: 40), "e\u{301}"]
        return (names[i % names.count] + "\(i)", i * 7 - 300, i % 5 == 0 ? .nan : Double(i) / 3, i % 4 == 0 ? nil : when.addingTimeInterval(Double(i)))
    }

    @Test func aLargeWriteOfPlainObjectsRecordsWhatTheGeneralPathRecords() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: config(dir))
        let n = 600
        try realm.write {
            for i in 0..<n {
                let v = Self.values(i)
                realm.create(SyncPlain.self, value: ["id": i - 100, "name": v.name, "size": v.size, "ratio": v.ratio, "when": v.when as Any])
                realm.create(SyncPlainByName.self, value: ["name": "k\(i)", "score": i])
            }
        }
        var expected: [ChangeOperation] = []
        for i in 0..<n {
            let v = Self.values(i)
            let ref = ObjectReference(type: "SyncPlain", primaryKey: .int(Int64(i - 100)))
            expected.append(.create(ref, values: [
                "id": .int(Int64(i - 100)), "name": .string(v.name), "size": .int(Int64(v.size)), "ratio": .double(v.ratio),
                "when": v.when.map { .date($0) } ?? .null, "tag": .null,
            ]))
        }
        let created = try realm.pendingChanges().flatMap(\.operations)
        #expect(created.count == 2 * n)
        #expect(Set(created.filter { $0.object.type == "SyncPlain" }) == Set(expected))
        #expect(created.filter { $0.object.type == "SyncPlainByName" }.count == n)

        // Changes: a name (sometimes to the text it had), a size, a NaN set again, a date to nil, a key by name.
        try realm.write {
            for i in 0..<n {
                let o = try #require(realm.object(ofType: SyncPlain.self, forPrimaryKey: i - 100))
                // Text of another length, of the same length (reversed), and the same text.
                let name = Self.values(i).name
                if i % 2 == 0 { o.name = i % 4 == 0 ? name : i % 8 == 2 ? "renamed \(i) ✓" : String(name.reversed()) }
                if i % 3 == 0 { o.size += 1 }
                if i % 5 == 0 { o.ratio = .nan }
                if i % 7 == 1 { o.when = nil }
                if i % 9 == 0 { try #require(realm.object(ofType: SyncPlainByName.self, forPrimaryKey: "k\(i)")).score = -i }
            }
        }
        expected = []
        for i in 0..<n {
            let v = Self.values(i)
            let ref = ObjectReference(type: "SyncPlain", primaryKey: .int(Int64(i - 100)))
            if i % 8 == 2 { expected.append(.set(ref, property: "name", value: .string("renamed \(i) ✓"))) }
            if i % 8 == 6, String(v.name.reversed()) != v.name { expected.append(.set(ref, property: "name", value: .string(String(v.name.reversed())))) }
            if i % 3 == 0 { expected.append(.set(ref, property: "size", value: .int(Int64(v.size + 1)))) }
            if i % 7 == 1, v.when != nil { expected.append(.set(ref, property: "when", value: .null)) }
            if i % 9 == 0, i != 0 {
                expected.append(.set(ObjectReference(type: "SyncPlainByName", primaryKey: .string("k\(i)")), property: "score", value: .int(Int64(-i))))
            }
        }
        let changed = try realm.pendingChanges(after: 1).flatMap(\.operations)
        #expect(changed.count == expected.count)
        #expect(Set(changed) == Set(expected))
        // Runs name the type and property once: the outbox's operations take fewer bytes than the same change
        // sets written one operation at a time.
        let stored = try realm.core.outboxSizes(after: 0, at: realm.core.readSnapshot).map(\.bytes).reduce(0, +)
        let sent = try realm.pendingChanges().map { SyncCoding.encode($0).count }.reduce(0, +)
        #expect(stored < sent, "the outbox holds \(stored) bytes, the change sets one operation at a time \(sent)")
    }

    /// A write that spills has most of its records in its spilled segments: the direct path reads them there.
    @Test func aSpillingWriteOfPlainObjectsIsReadBackFromItsSpills() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: config(dir))
        realm.core.spillThreshold = 64 * 1024
        let n = 4000
        var spills = 0
        try realm.write {
            defer { spills = realm.core.write?.tx.spillCount() ?? 0 }
            for i in 0..<n { realm.create(SyncPlain.self, value: ["id": i, "name": String(repeating: "x", count: 30) + "\(i)", "size": i]) }
        }
        #expect(spills > 0, "the write spilled")
        let creates = try realm.pendingChanges().flatMap(\.operations)
        #expect(creates.count == n)
        #expect(Set(creates.map(\.object.primaryKey)) == Set((0..<n).map { SyncValue.int(Int64($0)) }))
        try realm.write {
            defer { spills = realm.core.write?.tx.spillCount() ?? 0 }
            for o in realm.objects(SyncPlain.self) where o.id % 3 != 0 { o.size = -o.id }
        }
        #expect(spills > 0, "the write spilled")
        let expected = (0..<n).filter { $0 % 3 != 0 }.map {
            ChangeOperation.set(ObjectReference(type: "SyncPlain", primaryKey: .int(Int64($0))), property: "size", value: .int(Int64(-$0)))
        }
        #expect(try realm.pendingChanges(after: 1).flatMap(\.operations) == expected)
        // Taken by the direct path (as runs), not the general one: fewer bytes than one operation at a time.
        let stored = try realm.core.outboxSizes(after: 0, at: realm.core.readSnapshot).map(\.bytes)
        let sent = try realm.pendingChanges().map { SyncCoding.encode($0).count }
        #expect(stored.count == 2 && stored[0] < sent[0] * 3 / 4 && stored[1] < sent[1] / 2, "stored \(stored), one at a time \(sent)")
        // The file written passes the verifier.
        let inspector = try DatabaseInspector(path: try #require(realm.configuration.fileURL).path)
        defer { _ = try? inspector.close() }  // try?: a read-only inspector's close loses nothing.
        let problems = inspector.verify()
        #expect(problems.isEmpty, "verify: \(problems.prefix(5))")
    }

    /// A type with tombstones: a new object whose primary key has one (another client deleted objects of those
    /// keys, negative and positive, which this file never had) is recorded against it by the general path (its
    /// undo image is the tombstone, and the tombstone goes); the others by the direct path.
    @Test func aCreateOverATombstoneIsRecordedAgainstIt() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: config(dir))
        // Keys below every key created later: those are new objects, above the base's largest key.
        try realm.write { for i in -1000 ..< -990 { realm.create(SyncPlain.self, value: ["id": i, "name": "n\(i)"]) } }
        let gone = [-300, 300].map { ObjectReference(type: "SyncPlain", primaryKey: .int(Int64($0))) }
        let theirs = ChangeSet(clientID: 99, sequence: 1, baseVersion: 0, schemaVersion: 0, operations: gone.map { .delete($0) })
        try realm.applyServerChanges([ServerChangeSet(version: 1, changeSet: try #require(try realm.pendingChanges().first)), ServerChangeSet(version: 2, changeSet: theirs)])
        for ref in gone {
            guard case .deleted? = try RealmCore.syncState(nil, meta: realm.core.syncMeta(ref, at: realm.core.readSnapshot)) as SyncObjectState? else {
                Issue.record("\(ref) has no tombstone")
                return
            }
        }
        let ids = -310..<390
        try realm.write { for i in ids { realm.create(SyncPlain.self, value: ["id": i, "name": "again \(i)"]) } }
        let changes = try realm.pendingChanges()
        let sequence = try #require(changes.last?.sequence)
        let created = changes.flatMap(\.operations)
        #expect(Set(created.map(\.object)) == Set(ids.map { ObjectReference(type: "SyncPlain", primaryKey: .int(Int64($0))) }))
        for op in created {
            guard case .create(let ref, let values) = op, case .int(let id) = ref.primaryKey else {
                Issue.record("\(op)")
                continue
            }
            #expect(values["name"] == .string("again \(id)") && values["id"] == .int(id))
        }
        let images = try realm.core.undoImages(sequence, at: realm.core.readSnapshot).images
        #expect(images.count == ids.count)
        for (ref, image) in images {
            guard case .state(let state) = image else {
                Issue.record("\(ref): \(image)")
                continue
            }
            if gone.contains(ref) {
                guard case .deleted = state else {
                    Issue.record("\(ref), created again, has the undo image \(state), not its tombstone")
                    continue
                }
            } else {
                #expect(state == .absent)
            }
        }
        for ref in gone { #expect(try realm.core.syncMeta(ref, at: realm.core.readSnapshot) == nil, "the tombstone of \(ref) went with the create") }
        // The others took the direct path: runs, fewer bytes than one operation at a time.
        let stored = try realm.core.outboxSizes(after: sequence - 1, at: realm.core.readSnapshot).map(\.bytes).reduce(0, +)
        let sent = try realm.pendingChanges(after: sequence - 1).map { SyncCoding.encode($0).count }.reduce(0, +)
        #expect(stored * 2 < sent, "stored \(stored), one at a time \(sent)")
    }

    /// A large write's objects of one type are taken on two cores (`PlainCapture.Concurrent`, from 16,384 of them:
    /// the upper half of the keys on another core). The operations and undo images are those of one core, and the
    /// objects either half declines take the general path once each: a create over a tombstone in each half, and
    /// every change of a write with an integer addition.
    @Test func aLargeWriteIsTakenOnTwoCoresAsOnOne() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: config(dir))
        let n = PlainCapture.Concurrent.minimumObjects + 4_000
        let ids = 0..<n
        func ref(_ i: Int) -> ObjectReference { ObjectReference(type: "SyncPlain", primaryKey: .int(Int64(i))) }
        // Keys below every key created later, then tombstones of one key in each half.
        try realm.write { for i in -1000 ..< -990 { realm.create(SyncPlain.self, value: ["id": i, "name": "n\(i)"]) } }
        let gone = [1_000, n - 1_000].map(ref)
        let theirs = ChangeSet(clientID: 99, sequence: 1, baseVersion: 0, schemaVersion: 0, operations: gone.map { .delete($0) })
        try realm.applyServerChanges([ServerChangeSet(version: 1, changeSet: try #require(try realm.pendingChanges().first)), ServerChangeSet(version: 2, changeSet: theirs)])

        var halves = PlainCapture.Concurrent.started.withLock { $0 }
        func expectTwoCores(_ what: String) {
            let now = PlainCapture.Concurrent.started.withLock { $0 }
            #expect(now > halves || ProcessInfo.processInfo.activeProcessorCount == 1, "\(what) was not taken on two cores")
            halves = now
        }
        try realm.write { for i in ids { realm.create(SyncPlain.self, value: ["id": i, "name": "new \(i)", "size": i]) } }
        expectTwoCores("the creates")
        var sequence = try #require(try realm.pendingChanges().last?.sequence)
        let created = try realm.pendingChanges(after: sequence - 1).flatMap(\.operations)
        #expect(created.count == n)
        #expect(Set(created) == Set(ids.map { i in
            ChangeOperation.create(ref(i), values: [
                "id": .int(Int64(i)), "name": .string("new \(i)"), "size": .int(Int64(i)), "ratio": .double(0), "when": .null, "tag": .null,
            ])
        }))
        var images = try realm.core.undoImages(sequence, at: realm.core.readSnapshot).images
        #expect(images.count == n)
        for (r, image) in images {
            if gone.contains(r) {
                guard case .state(.deleted) = image else {
                    Issue.record("\(r), created again, has the undo image \(image), not its tombstone")
                    continue
                }
            } else {
                #expect(image == .state(.absent), "\(r): \(image)")
            }
        }
        for r in gone { #expect(try realm.core.syncMeta(r, at: realm.core.readSnapshot) == nil, "the tombstone of \(r) went with the create") }

        // Changes in both halves, with undo images per property, in a write that spills: both cores read spilled
        // records.
        realm.core.spillThreshold = 256 * 1024
        var spills = 0
        try realm.write {
            defer { spills = realm.core.write?.tx.spillCount() ?? 0 }
            for o in realm.objects(SyncPlain.self) where o.id >= 0 {
                o.size += 1
                if o.id % 5 == 0 { o.name = "renamed \(o.id)" }
            }
        }
        #expect(spills > 0, "the write spilled")
        expectTwoCores("the changes")
        sequence += 1
        var expected: [ChangeOperation] = []
        for i in ids {
            expected.append(.set(ref(i), property: "size", value: .int(Int64(i + 1))))
            if i % 5 == 0 { expected.append(.set(ref(i), property: "name", value: .string("renamed \(i)"))) }
        }
        var changed = try realm.pendingChanges(after: sequence - 1).flatMap(\.operations)
        #expect(changed.count == expected.count)
        #expect(Set(changed) == Set(expected))
        var before: [ObjectReference: [String: FieldState]] = [:]
        images = try realm.core.undoImages(sequence, at: realm.core.readSnapshot).images
        for (r, image) in images {
            guard case .fields(let fields) = image else {
                Issue.record("\(r): \(image)")
                continue
            }
            before[r, default: [:]].merge(fields) { a, _ in a }
        }
        #expect(before.count == n)
        for i in ids {
            let fields = before[ref(i)] ?? [:]
            #expect(fields.count == (i % 5 == 0 ? 2 : 1), "object \(i): \(fields)")
            #expect(fields["size"] == .value(.int(Int64(i))))
            if i % 5 == 0 { #expect(fields["name"] == .value(.string("new \(i)"))) }
        }

        // An integer addition: every change of the write takes the general path, in both halves.
        try realm.write {
            for o in realm.objects(SyncPlain.self) where o.id >= 0 { o.ratio = Double(o.id) }
            try #require(realm.object(ofType: SyncPlain.self, forPrimaryKey: 7)).increment("size", by: 2)
        }
        expectTwoCores("the write with an addition")
        sequence += 1
        expected = ids.filter { $0 != 0 }.map { .set(ref($0), property: "ratio", value: .double(Double($0))) }
        expected.append(.addInteger(ref(7), property: "size", amount: 2))
        changed = try realm.pendingChanges(after: sequence - 1).flatMap(\.operations)
        #expect(changed.count == expected.count)
        #expect(Set(changed) == Set(expected))
    }

    /// `strata verify` decodes the sync outbox (`DatabaseInspector.outboxProblems`): a file written with capture
    /// passes; an operation chunk or an undo chunk cut short is reported, naming the outbox and the key.
    @Test func verifyDecodesTheOutbox() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: config(dir))
        try realm.write { for i in 0..<500 { realm.create(SyncPlain.self, value: ["id": i, "name": "n\(i)", "size": i]) } }
        try realm.write { for o in realm.objects(SyncPlain.self) { o.size += 1 } }
        let path = try #require(realm.configuration.fileURL).path
        func verify() throws -> [String] {
            let inspector = try DatabaseInspector(path: path)
            defer { _ = try? inspector.close() }  // try?: a read-only inspector's close loses nothing.
            return inspector.verify()
        }
        #expect(try verify() == [])
        let db = realm.core.database
        for key in [SyncStorage.outboxKey(2, chunk: 1), SyncStorage.undoKey(2, chunk: 0)] {
            let snapshot = try db.snapshot()
            let whole = try #require(try snapshot.get(key, in: SyncStorage.partition))
            snapshot.close()
            try db.write { try $0.put(key, Array(whole.prefix(whole.count / 2)), in: SyncStorage.partition) }
            let problems = try verify()
            #expect(problems.count == 1 && problems.first?.contains("sync outbox is damaged at key \(SyncStorage.hex(key))") == true, "\(problems)")
            try db.write { try $0.put(key, whole, in: SyncStorage.partition) }
            #expect(try verify() == [])
        }
    }

    /// The undo images of runs undo: the server orders the creates, then another client's edits of the same
    /// objects, which are applied under this client's unacknowledged edits (they stay on top).
    @Test func runsOfUndoImagesKeepLocalEditsOnTopOfRemoteOnes() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: config(dir))
        let n = 300
        try realm.write {
            for i in 0..<n { realm.create(SyncPlain.self, value: ["id": i, "name": "n\(i)", "size": i]) }
        }
        try realm.write {
            for i in 0..<n where i % 2 == 0 {
                let o = try #require(realm.object(ofType: SyncPlain.self, forPrimaryKey: i))
                o.name = "mine \(i)"
                o.ratio = 0.5
            }
        }
        // The undo images hold each changed property's value before the write (one image per property).
        var before: [ObjectReference: [String: FieldState]] = [:]
        for (ref, image) in try realm.core.undoImages(2, at: realm.core.readSnapshot).images {
            guard case .fields(let fields) = image else {
                Issue.record("\(ref): \(image)")
                continue
            }
            before[ref, default: [:]].merge(fields) { a, _ in a }
        }
        #expect(before.count == n / 2)
        for i in stride(from: 0, to: n, by: 2) {
            let ref = ObjectReference(type: "SyncPlain", primaryKey: .int(Int64(i)))
            #expect(before[ref] == ["name": .value(.string("n\(i)")), "ratio": .value(.double(0))])
        }
        let creates = try #require(try realm.pendingChanges().first)
        var theirs: [ChangeOperation] = []
        for i in 0..<n {
            let ref = ObjectReference(type: "SyncPlain", primaryKey: .int(Int64(i)))
            theirs.append(.set(ref, property: "name", value: .string("theirs \(i)")))
            theirs.append(.set(ref, property: "size", value: .int(Int64(-i))))
        }
        let other = ChangeSet(clientID: 99, sequence: 1, baseVersion: 1, schemaVersion: 0, operations: theirs)
        try realm.applyServerChanges([ServerChangeSet(version: 1, changeSet: creates), ServerChangeSet(version: 2, changeSet: other)])
        #expect(try realm.pendingChanges().map(\.sequence) == [2])
        for i in 0..<n {
            let o = try #require(realm.object(ofType: SyncPlain.self, forPrimaryKey: i))
            #expect(o.name == (i % 2 == 0 ? "mine \(i)" : "theirs \(i)"))
            #expect(o.size == -i)
            #expect(o.ratio == (i % 2 == 0 ? 0.5 : 0))
        }
    }

    /// Every prefix of a chunk of runs, and the chunk with any one byte changed, reads as operations or fails
    /// with `StorageError`; nothing traps.
    @Test func damagedRunsAreRefusedWithATypedError() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: config(dir))
        try realm.write {
            for i in 0..<40 { realm.create(SyncPlain.self, value: ["id": i, "name": "n\(i)", "when": Self.when]) }
        }
        try realm.write {
            for i in 0..<40 { try #require(realm.object(ofType: SyncPlain.self, forPrimaryKey: i)).size = i * 1000 }
        }
        let snapshot = realm.core.readSnapshot
        var chunks: [[UInt8]] = []
        for (sequence, kind) in [(UInt64(1), "o"), (2, "o"), (1, "u"), (2, "u")] {
            let key = kind == "o" ? SyncStorage.outboxKey(sequence, chunk: 1) : SyncStorage.undoKey(sequence, chunk: 0)
            chunks.append(try #require(try snapshot.get(key, in: SyncStorage.partition)))
        }
        func read(_ bytes: [UInt8], undo: Bool) throws {
            try bytes.withUnsafeBytes { raw in
                var r = ByteReader(raw)
                let count = try r.readLength("items", limit: r.remaining)
                var ops: [ChangeOperation] = []
                var images: [(ObjectReference, UndoImage)] = []
                for _ in 0..<count {
                    if undo { try SyncCoding.readUndoItem(&r, into: &images) } else { try SyncCoding.readOutboxItem(&r, into: &ops) }
                }
            }
        }
        var refused = 0
        for (c, chunk) in chunks.enumerated() {
            let undo = c >= 2
            try read(chunk, undo: undo)
            var rng = SplitMix64(seed: UInt64(c))
            for cut in 0..<chunk.count {
                var damaged = chunk
                if cut % 2 == 0 {
                    damaged.removeLast(chunk.count - cut)
                } else {
                    damaged[cut] ^= UInt8(truncatingIfNeeded: rng.next() | 1)
                }
                do {
                    try read(damaged, undo: undo)
                } catch is StorageError {
                    refused += 1
                }
            }
        }
        #expect(refused > 0)
    }
}
