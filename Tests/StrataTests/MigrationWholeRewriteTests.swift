import Foundation
import Testing
import TestSupport
@testable import Strata

enum WR1 {
    final class Item: Object {
        @Persisted(primaryKey: true) var id: Int
        @Persisted var name = ""
        @Persisted var count = 0
    }
    final class Note: Object {
        @Persisted(primaryKey: true) var id: Int
        @Persisted var text = ""
    }
}

enum WR2 {
    final class Item: Object {
        @Persisted(primaryKey: true) var id: Int
        @Persisted var name = ""
        @Persisted var count = ""
        @Persisted var tag = "none"
    }
    final class Note: Object {
        @Persisted(primaryKey: true) var id: Int
        @Persisted var text = ""
    }
}

/// A blocking migration whose enumeration changes a type's first object rewrites the type whole
/// (`Migration.rewritingWhole`): its partition is emptied before the first record is written and every object
/// the block does not stream is copied as stored, so that the new records replace the old segments at commit
/// instead of lying over them. Whatever the block keeps, deletes, creates or leaves, the objects come out as
/// a migration that writes only what changed leaves them.
@Suite struct MigrationWholeRewriteTests {
    static let count = 600

    static func file(_ dir: TemporaryDirectory) throws -> URL {
        let url = URL(fileURLWithPath: dir.child("items.realm"))
        let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [WR1.Item.self, WR1.Note.self]))
        try realm.write {
            for i in 0..<count { realm.create(WR1.Item.self, value: ["id": i, "name": "n\(i)", "count": i * 3]) }
            for i in 0..<50 { realm.create(WR1.Note.self, value: ["id": i, "text": "t\(i)"]) }
        }
        return url
    }

    static func open(_ url: URL, _ block: @escaping MigrationBlock) throws -> Realm {
        var c = Realm.Configuration(fileURL: url, schemaVersion: 2, migrationBlock: block, objectTypes: [WR2.Item.self, WR2.Note.self])
        // Small: the rewrite spills many times. No merge: the segments stay as the migration's commit left them.
        c.migrationSpillBytes = 2000
        c.backgroundMaintenance = false
        return try Realm(configuration: c)
    }

    /// The item partition's live entries on disk (every version of a key counts).
    static func itemEntries(_ realm: Realm) throws -> Int {
        let partition = try #require(realm.core.shared.storedSchema.withLock { $0 }?.type(named: "Item")?.partition)
        return realm.core.shared.database.partitionStatistics()[partition]?.segmentEntries ?? 0
    }

    /// Every item as (name, count, tag), by id.
    static func items(_ realm: Realm) -> [Int: [String]] {
        Dictionary(uniqueKeysWithValues: realm.objects(WR2.Item.self).map { ($0.id, [$0.name, $0.count, $0.tag]) })
    }

    /// What `strata verify` finds in the closed file.
    static func problems(_ url: URL) throws -> [String] {
        let inspector = try DatabaseInspector(path: url.path)
        defer { _ = try? inspector.close() }  // try?: a read-only inspector's close loses nothing.
        return inspector.verify()
    }

    @Test func aBlockThatChangesEveryObjectReplacesTheTypesRecords() throws {
        let dir = try TemporaryDirectory()
        let url = try Self.file(dir)
        do {
            let realm = try Self.open(url) { m, _ in
                m.enumerateObjects(ofType: "Item") { old, new in new!["count"] = String(old!["count"] as! Int) }
            }
            #expect(realm.core.shared.typesRewrittenWhole.current == 1)
            #expect(Self.items(realm) == Dictionary(uniqueKeysWithValues: (0..<Self.count).map { ($0, ["n\($0)", "\($0 * 3)", "none"]) }))
            #expect(realm.objects(WR2.Note.self).count == 50)
            // Written over the old records, the partition would hold each object twice until a merge.
            #expect(try Self.itemEntries(realm) == Self.count)
        }
        let problems = try Self.problems(url)
        #expect(problems.isEmpty, "\(problems.prefix(3))")
    }

    @Test func aBlockThatLeavesTheFirstObjectAsItWasWritesOnlyWhatItChanges() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.open(try Self.file(dir)) { m, _ in
            m.enumerateObjects(ofType: "Item") { old, new in
                let id = old!["id"] as! Int
                if id % 2 == 1 { new!["tag"] = "odd" }
            }
        }
        #expect(realm.core.shared.typesRewrittenWhole.current == 0)
        #expect(realm.core.shared.objectsStreamed.current == Self.count / 2)
        // The changed objects over the old records.
        #expect(try Self.itemEntries(realm) == Self.count + Self.count / 2)
        #expect(Self.items(realm) == Dictionary(uniqueKeysWithValues: (0..<Self.count).map { ($0, ["n\($0)", "", $0 % 2 == 1 ? "odd" : "none"]) }))
    }

    /// Objects the block keeps and changes later, deletes, leaves as they were, creates before and during the
    /// enumeration, and a second enumeration of the type: each written once, as it ends up.
    @Test func keptDeletedLeftAndCreatedObjectsComeOutAsTheBlockLeftThem() throws {
        let dir = try TemporaryDirectory()
        let url = try Self.file(dir)
        var expected: [Int: [String]] = [:]
        for i in 0..<Self.count {
            // Retyped from Int, `count` reads as its default where the block does not set it.
            var row = ["n\(i)", i % 3 == 0 ? "\(i * 3)" : "", "none"]
            if i % 5 == 2 { row[0] = "late\(i)" }
            if i % 11 == 0 { row[2] = "second" }
            if i % 7 != 0 || i == 0 { expected[i] = row }
        }
        expected[1_000_000] = ["before", "", "none"]
        expected[1_000_001] = ["during", "", "none"]
        expected[1_000_003] = ["during, tagged", "", "created"]
        do {
            let realm = try Self.open(url) { m, _ in
                _ = m.create("Item", value: ["id": 1_000_000, "name": "before"])
                nonisolated(unsafe) var kept: [MigrationObject] = []
                m.enumerateObjects(ofType: "Item") { old, new in
                    let id = old!["id"] as! Int
                    if id % 3 == 0 { new!["count"] = String(old!["count"] as! Int) }
                    if id % 5 == 2 { kept.append(new!) }
                    if id % 7 == 0 && id != 0 { m.delete(new!) }
                    if id == 300 {
                        _ = m.create("Item", value: ["id": 1_000_001, "name": "during"])
                        _ = m.create("Item", value: ["id": 1_000_003, "name": "during, tagged", "tag": "created"])
                    }
                }
                for object in kept where (object["id"] as! Int) % 7 != 0 {
                    object["name"] = "late\(object["id"] as! Int)"
                }
                m.enumerateObjects(ofType: "Item") { old, new in
                    // Old objects only, as in Realm: not those the block created.
                    if let new, (new["id"] as! Int) % 11 == 0 { new["tag"] = "second" }
                }
            }
            #expect(realm.core.shared.typesRewrittenWhole.current == 1)
            #expect(Self.items(realm) == expected)
            #expect(realm.objects(WR2.Note.self).count == 50)
        }
        let problems = try Self.problems(url)
        #expect(problems.isEmpty, "\(problems.prefix(3))")
        // Reopened: what was committed, read from disk.
        let again = try Self.open(url) { _, _ in }
        #expect(Self.items(again) == expected)
    }

    /// A type the transaction has already written (here by an earlier enumeration) is not dropped again: the
    /// second enumeration writes what changes, over what is there.
    @Test func aTypeAlreadyWrittenInTheMigrationIsNotRewrittenWhole() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.open(try Self.file(dir)) { m, _ in
            m.enumerateObjects(ofType: "Note") { _, new in new!["text"] = "x" }
            m.enumerateObjects(ofType: "Note") { _, new in new!["text"] = (new!["text"] as! String) + "y" }
        }
        #expect(realm.core.shared.typesRewrittenWhole.current == 1)
        #expect(realm.objects(WR2.Note.self).map(\.text) == Array(repeating: "xy", count: 50))
        #expect(realm.objects(WR2.Item.self).count == Self.count)
    }

    /// An enumeration nested in the block on the first object streams the type's other objects before the outer
    /// enumeration writes that object: the partition is not dropped then (it would discard what the inner one
    /// spilled), and every object gets both changes.
    @Test func anEnumerationNestedInTheFirstObjectsBlockKeepsWhatItWrote() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.open(try Self.file(dir)) { m, _ in
            var nested = false
            m.enumerateObjects(ofType: "Item") { old, new in
                if !nested {
                    nested = true
                    m.enumerateObjects(ofType: "Item") { _, inner in inner!["tag"] = "inner" }
                }
                new!["count"] = String(old!["count"] as! Int)
            }
        }
        #expect(realm.core.shared.typesRewrittenWhole.current == 0)
        #expect(Self.items(realm) == Dictionary(uniqueKeysWithValues: (0..<Self.count).map { ($0, ["n\($0)", "\($0 * 3)", "inner"]) }))
    }
}
