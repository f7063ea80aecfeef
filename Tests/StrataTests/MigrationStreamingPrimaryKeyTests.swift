import Foundation
import Testing
import TestSupport
@testable import Strata

/// A type with a String primary key (an index of its own) streams too; a block that writes keys makes the
/// type's keys be checked and rebuilt with every streamed object brought back.
@Suite struct MigrationStreamingPrimaryKeyTests {
    static let count = 200

    static func file(_ dir: TemporaryDirectory) throws -> URL {
        let url = URL(fileURLWithPath: dir.child("tags.realm"))
        let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [SK1.Tag.self]))
        try realm.write {
            for i in 0..<count { realm.create(SK1.Tag.self, value: ["name": "t\(i)", "uses": i]) }
        }
        return url
    }

    static func open(_ url: URL, _ block: @escaping MigrationBlock) throws -> Realm {
        var c = Realm.Configuration(fileURL: url, schemaVersion: 2, migrationBlock: block, objectTypes: [SK2.Tag.self])
        c.migrationSpillBytes = 1200
        return try Realm(configuration: c)
    }

    @Test func objectsOfAStringKeyedTypeStreamAndKeepTheirKeys() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.open(try Self.file(dir)) { m, _ in
            m.enumerateObjects(ofType: "Tag") { old, new in new!["label"] = "L\(old!["uses"] as! Int)" }
        }
        #expect(realm.core.shared.objectsStreamed.current == Self.count)
        for i in 0..<Self.count {
            let tag = try #require(realm.object(ofType: SK2.Tag.self, forPrimaryKey: "t\(i)"))
            #expect(tag.uses == i && tag.label == "L\(i)")
        }
    }

    /// Old objects view their record: one kept past its closure still reads its own values afterwards.
    @Test func oldObjectsKeptPastTheirClosureKeepTheirValues() throws {
        let dir = try TemporaryDirectory()
        nonisolated(unsafe) var kept: [MigrationObject] = []
        nonisolated(unsafe) var later: [Int] = []
        _ = try Self.open(try Self.file(dir)) { m, _ in
            m.enumerateObjects(ofType: "Tag") { old, new in
                if (old!["uses"] as! Int) % 50 == 0 { kept.append(old!) }
                new!["label"] = "x"
            }
            later = kept.map { $0["uses"] as! Int }
        }
        #expect(later == [0, 50, 100, 150])
        #expect(kept.map { $0["name"] as? String } == ["t0", "t50", "t100", "t150"])
    }

    @Test func keysWrittenLateInTheEnumerationAreRebuilt() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.open(try Self.file(dir)) { m, _ in
            m.enumerateObjects(ofType: "Tag") { old, new in
                let uses = old!["uses"] as! Int
                new!["label"] = "L\(uses)"
                // The last objects get new keys, after most were streamed.
                if uses >= Self.count - 3 { new!["name"] = "renamed\(uses)" }
            }
        }
        #expect(realm.objects(SK2.Tag.self).count == Self.count)
        for i in 0..<Self.count {
            let name = i >= Self.count - 3 ? "renamed\(i)" : "t\(i)"
            let tag = try #require(realm.object(ofType: SK2.Tag.self, forPrimaryKey: name))
            #expect(tag.uses == i && tag.label == "L\(i)")
        }
        #expect(realm.object(ofType: SK2.Tag.self, forPrimaryKey: "t\(Self.count - 1)") == nil)
    }

    @Test func aDuplicateKeyWrittenAfterStreamingFailsTheOpenAndWritesNothing() throws {
        let dir = try TemporaryDirectory()
        let url = try Self.file(dir)
        #expect(throws: Realm.Error.self) {
            _ = try Self.open(url) { m, _ in
                m.enumerateObjects(ofType: "Tag") { old, new in
                    if (old!["uses"] as! Int) == Self.count - 1 { new!["name"] = "t0" }
                }
            }
        }
        let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [SK1.Tag.self]))
        #expect(realm.objects(SK1.Tag.self).count == Self.count)
        #expect(realm.object(ofType: SK1.Tag.self, forPrimaryKey: "t\(Self.count - 1)")?.uses == Self.count - 1)
    }
}
