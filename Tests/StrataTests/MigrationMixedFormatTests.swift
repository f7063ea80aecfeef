import Engine
import Foundation
import Testing
import TestSupport

@testable import Strata

/// A type whose records are partly in record format 1 (an earlier release's, not upgraded yet) and partly in
/// format 2, under a pending online transform: reads and the background rewrite meet both kinds in one pass
/// (one record writer serves both).
@Suite struct MigrationMixedFormatTests {
    @Test func readsAndTheRewriteTakeFormat1AndFormat2RecordsInOnePass() throws {
        let dir = try TemporaryDirectory()
        let path = try DatabaseFixtureTests.copy("database-v1", to: dir)
        do {
            // Opened at version 0 without the background upgrade: the fixture's records stay in format 1; these are
            // written in format 2, after them in key order.
            let realm = try Realm(configuration: DatabaseFixtureTests.configuration(path))
            try realm.write {
                for id in [100, 101] {
                    let item = FixtureItem()
                    item.id = id
                    item.name = "new \(id)"
                    realm.add(item)
                }
            }
        }
        var config = DatabaseFixtureTests.configuration(path)
        config.schemaVersion = 1
        config.migrationMode = .online
        config.migrationBlock = { m, _ in
            m.transformObjects(ofType: "FixtureItem") { old, new in
                new["note"] = "migrated \(old["id"] as? Int ?? -1)"
            }
        }
        let realm = try Realm(configuration: config)
        // Reads through the transform: format-1 records first, then format-2 ones.
        var seen: [Int: String] = [:]
        for item in realm.objects(FixtureItem.self) { seen[item.id] = item.note }
        #expect(seen.count == DatabaseFixtureTests.count + 2)
        #expect(seen.allSatisfy { $0.value == "migrated \($0.key)" }, "\(seen.filter { $0.value != "migrated \($0.key)" })")
        // The rewrite does the same, then reads find the stored values.
        try realm.finishMigrations()
        #expect(realm.objects(FixtureItem.self).allSatisfy { $0.note == "migrated \($0.id)" })
        #expect(realm.object(ofType: FixtureItem.self, forPrimaryKey: 100)?.name == "new 100")
        #expect(realm.object(ofType: FixtureItem.self, forPrimaryKey: 7)?.name == DatabaseFixtureTests.expected(7).name)
    }
}
