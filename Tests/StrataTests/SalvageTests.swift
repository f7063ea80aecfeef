import Engine
import Foundation
import Testing
import TestSupport

@testable import Strata

final class SalvageItem: Object {
    @Persisted(primaryKey: true) var code = ""
    @Persisted(indexed: true) var group = 0
    @Persisted var payload = ""
}

final class SalvageTag: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var label = ""
}

/// `strata salvage` (`DatabaseInspector.salvage`): every object that can still be read is copied into a new
/// database with the same schema and schema version, what could not be read is reported by type and key
/// range, and the source is never changed.
@Suite struct SalvageTests {
    static let count = 3000

    static func config(_ path: String) -> Realm.Configuration {
        Realm.Configuration(fileURL: URL(fileURLWithPath: path), schemaVersion: 3, objectTypes: [SalvageItem.self, SalvageTag.self])
    }

    /// A database of items (String primary key, an index) and tags (Int primary key), written in several
    /// transactions and closed, so that its objects are in segments. Returns each item's values by code.
    static func make(_ path: String) throws -> [String: (key: Int64, group: Int, payload: String)] {
        var rng = SplitMix64(seed: 7)
        var made: [String: (key: Int64, group: Int, payload: String)] = [:]
        do {
            let realm = try Realm(configuration: config(path))
            for batch in 0..<6 {
                try realm.write {
                    for i in 0..<(count / 6) {
                        let item = SalvageItem()
                        item.code = "c\(batch)-\(i)"
                        item.group = Int(rng.next() % 10)
                        item.payload = String(repeating: "x", count: Int(rng.next() % 40)) + "\(i)"
                        realm.add(item)
                        made[item.code] = (item._accessor!.key, item.group, item.payload)
                    }
                    realm.create(SalvageTag.self, value: ["id": batch, "label": "t\(batch)"])
                }
            }
            // One object deleted: it must not come back.
            try realm.write { realm.delete(realm.object(ofType: SalvageItem.self, forPrimaryKey: "c0-0")!) }
            made["c0-0"] = nil
        }
        return made
    }

    static func snapshot(of path: String) throws -> [String: [UInt8]] {
        var files: [String: [UInt8]] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: path) {
            files[name] = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path + "/" + name)))
        }
        return files
    }

    /// Whether `key` is inside one of the type's reported lost ranges.
    static func reportedLost(_ key: Int64, _ report: SalvageSummary.TypeReport) -> Bool {
        report.lostKeys.contains { r in (r.from.map { key >= $0 } ?? true) && (r.through.map { key <= $0 } ?? true) }
    }

    /// Checks the copy: every object copied is exactly the original, every original not copied lies in a
    /// reported range, nothing deleted came back, and lookups and indexed queries work in the copy.
    static func expectFaithful(_ copyPath: String, _ made: [String: (key: Int64, group: Int, payload: String)], _ summary: SalvageSummary) throws -> Int {
        let realm = try Realm(configuration: config(copyPath))
        let items = realm.objects(SalvageItem.self)
        let report = try #require(summary.types.first { $0.name == "SalvageItem" })
        #expect(report.copied == items.count)
        var copied = 0
        for item in items {
            guard let original = made[item.code] else {
                Issue.record("\(item.code) was not in the source (or was deleted) but is in the copy")
                continue
            }
            #expect(item.group == original.group && item.payload == original.payload, "\(item.code)")
            copied += 1
        }
        for (code, original) in made where realm.object(ofType: SalvageItem.self, forPrimaryKey: code) == nil {
            #expect(reportedLost(original.key, report), "\(code) (key \(original.key)) is missing from the copy and from the report")
        }
        // The indexed property answers queries in the copy (its index was built again at this open).
        let inGroup = made.values.filter { $0.group == 3 }.count
        #expect(items.where { $0.group == 3 }.count <= inGroup)
        #expect(items.where { $0.group == 3 }.count == items.filter { $0.group == 3 }.count)
        #expect(summary.schemaVersion == 3)
        return copied
    }

    @Test func anUndamagedDatabaseIsCopiedWhole() throws {
        let dir = try TemporaryDirectory()
        let made = try Self.make(dir.child("source.realm"))
        let before = try Self.snapshot(of: dir.child("source.realm"))
        let summary = try DatabaseInspector.salvage(source: dir.child("source.realm"), destination: dir.child("copy.realm"))
        #expect(summary.losses.isEmpty)
        #expect(try Self.expectFaithful(dir.child("copy.realm"), made, summary) == made.count)
        #expect(summary.types.first { $0.name == "SalvageTag" }?.copied == 6)
        #expect(try Self.snapshot(of: dir.child("source.realm")) == before, "salvage changed the source")
        #expect(try Realm(configuration: Self.config(dir.child("copy.realm"))).object(ofType: SalvageTag.self, forPrimaryKey: 4)?.label == "t4")
    }

    /// Damage in a data block, in a segment's footer and in its index: the rest is copied, the loss is
    /// reported with its file and offset, and the source is unchanged.
    @Test(arguments: ["data block", "footer", "index", "missing segment"])
    func aDamagedSegmentLosesOnlyWhatItHeld(damage: String) throws {
        let dir = try TemporaryDirectory()
        let source = dir.child("source.realm")
        let made = try Self.make(source)
        // The largest segment holds the items.
        let segments = try FileManager.default.contentsOfDirectory(atPath: source).filter { $0.hasSuffix(".seg") }
        let sizes = try segments.map { ($0, try FileManager.default.attributesOfItem(atPath: source + "/" + $0)[.size] as! Int) }
        let (name, size) = try #require(sizes.max { $0.1 < $1.1 })
        let file = URL(fileURLWithPath: source + "/" + name)
        var bytes = [UInt8](try Data(contentsOf: file))
        switch damage {
        case "data block": bytes[size / 3] ^= 0x40
        case "footer": bytes[size - 20] ^= 0x40
        case "index": bytes[size - 120] ^= 0x40
        default: break
        }
        if damage == "missing segment" {
            try FileManager.default.removeItem(at: file)
        } else {
            try Data(bytes).write(to: file)
        }
        let before = try Self.snapshot(of: source)
        let summary = try DatabaseInspector.salvage(source: source, destination: dir.child("copy.realm"))
        #expect(!summary.losses.isEmpty, "\(damage): no loss reported")
        #expect(summary.losses.contains { $0.contains(".seg") }, "\(summary.losses)")
        let copied = try Self.expectFaithful(dir.child("copy.realm"), made, summary)
        #expect(copied < made.count, "\(damage): nothing was lost")
        if damage == "data block" { #expect(copied > made.count / 2, "a block's damage lost \(made.count - copied) of \(made.count)") }
        #expect(try Self.snapshot(of: source) == before, "salvage changed the source")
    }

    /// The tool: one line per type, the losses, exit status 1 when something was lost, 0 otherwise.
    @Test func theToolReportsPerTypeAndExitsOneOnLoss() throws {
        let dir = try TemporaryDirectory()
        let source = dir.child("source.realm")
        _ = try Self.make(source)
        let clean = try StrataToolTests.strata("salvage", source, dir.child("clean.realm"))
        #expect(clean.status == 0, "\(clean.err)")
        #expect(clean.out.contains("SalvageItem: \(Self.count - 1) objects copied"), "\(clean.out)")
        #expect(clean.out.contains("SalvageTag: 6 objects copied"), "\(clean.out)")
        let again = try StrataToolTests.strata("salvage", source, dir.child("clean.realm"))
        #expect(again.status == 1 && again.err.contains("already exists"), "\(again.err)")

        let segments = try FileManager.default.contentsOfDirectory(atPath: source).filter { $0.hasSuffix(".seg") }
        let sizes = try segments.map { ($0, try FileManager.default.attributesOfItem(atPath: source + "/" + $0)[.size] as! Int) }
        let (name, size) = try #require(sizes.max { $0.1 < $1.1 })
        let file = URL(fileURLWithPath: source + "/" + name)
        var bytes = [UInt8](try Data(contentsOf: file))
        bytes[size / 2] ^= 0x01
        try Data(bytes).write(to: file)
        let damaged = try StrataToolTests.strata("salvage", source, dir.child("damaged.realm"))
        #expect(damaged.status == 1)
        #expect(damaged.out.contains("could not read keys"), "\(damaged.out)")
        #expect(damaged.out.contains("lost: \(name) at offset"), "\(damaged.out)")
    }
}
