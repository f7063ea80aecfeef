import Foundation
import Engine
import Strata
import Testing
import TestSupport

enum S0 {
    final class Item: Object {
        @Persisted(primaryKey: true) var id: Int
        @Persisted var value = 0
        @Persisted var name = ""
    }
}

enum S1Check {
    final class Item: Object {
        @Persisted(primaryKey: true) var id: Int
        @Persisted var value = 0
        @Persisted var doubled = 0
        @Persisted var label = ""
    }
}

/// SIGKILL during a blocking migration: every reopen sees either the old version with all old data or the
/// new version with all migrated data.
@Suite struct MigrationKillTests {
    static var childPath: String? { BuildProducts.executable("StrataCrashChild") }

    static let count = 20_000

    func populate(_ url: URL) throws {
        try? FileManager.default.removeItem(at: url)
        let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [S0.Item.self]))
        try realm.write {
            for i in 0..<Self.count { realm.create(S0.Item.self, value: ["id": i, "value": i % 1000, "name": "item-\(i)"]) }
        }
    }

    @Test(arguments: Seeds.environmentOr([31]))
    func aKilledMigrationLeavesTheOldOrTheNewVersionWhole(seed: UInt64) throws {
        let child = try #require(Self.childPath, "StrataCrashChild was not built beside the tests")
        let temp = try TemporaryDirectory()
        let url = URL(fileURLWithPath: temp.child("items.realm"))
        try populate(url)
        var rng = SplitMix64(seed: seed)
        var outcomes = (old: 0, new: 0)
        // Calibration: one migration left to finish tells how long one takes in this build.
        let started = Date()
        let calibration = Process()
        calibration.executableURL = URL(fileURLWithPath: child)
        calibration.arguments = ["migrate", url.path]
        try calibration.run()
        calibration.waitUntilExit()
        let full = Date().timeIntervalSince(started)
        #expect(calibration.terminationStatus == 0)
        #expect(try schemaVersionAtURL(url) == 1)
        try populate(url)
        // Killed at 20 random moments.
        for round in 0..<(20 * Seeds.scale) {
            let said = try runChildKilled(
                child, ["migrate", url.path], afterMicroseconds: UInt32(Double(rng.next() % 1000) / 1000 * full * 1.1 * 1_000_000))
            let version = try schemaVersionAtURL(url)
            if said.contains("migrated") { #expect(version == 1, "round \(round): the child reported the migration done") }
            if version == 0 {
                outcomes.old += 1
                let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [S0.Item.self]))
                let items = realm.objects(S0.Item.self)
                #expect(items.count == Self.count, "round \(round)")
                #expect(items.allSatisfy { $0.name == "item-\($0.id)" && $0.value == $0.id % 1000 }, "round \(round)")
            } else {
                outcomes.new += 1
                #expect(version == 1)
                do {
                    let realm = try Realm(configuration: .init(fileURL: url, schemaVersion: 1, objectTypes: [S1Check.Item.self]))
                    let items = realm.objects(S1Check.Item.self)
                    #expect(items.count == Self.count, "round \(round)")
                    #expect(items.allSatisfy { $0.label == "item-\($0.id)" && $0.doubled == 2 * $0.value }, "round \(round)")
                }
                try populate(url)
            }
        }
        // Both outcomes should occur over the rounds; report them either way.
        print("migration kill test: \(outcomes.old) rounds left version 0, \(outcomes.new) reached version 1")
    }
}
