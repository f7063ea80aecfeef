import Foundation
import Engine
@testable import Strata
import Testing
import TestSupport

enum S2Check {
    final class Item: Object {
        @Persisted(primaryKey: true) var id: Int
        @Persisted var value = 0
        @Persisted var label = ""
        override class func className() -> String { "Item" }
    }
}

/// SIGKILL at random moments of an online migration while a child process writes and reads: no acknowledged
/// write is lost, every object is transformed exactly once, and the next open resumes the migration.
@Suite struct OnlineMigrationKillTests {
    static let count = 10_000 * Seeds.scale

    func populate(_ url: URL) throws {
        try? FileManager.default.removeItem(at: url)
        let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [S0.Item.self]))
        try realm.write {
            for i in 0..<Self.count { realm.create(S0.Item.self, value: ["id": i, "value": i % 1000, "name": "item-\(i)"]) }
        }
    }

    func checkConfig(_ url: URL) -> Realm.Configuration {
        var config = Realm.Configuration(fileURL: url, schemaVersion: 1, migrationBlock: { m, old in
            if old < 1 {
                m.renameProperty(onType: "Item", from: "name", to: "label")
                m.transformObjects(ofType: "Item") { _, new in new["label"] = (new["label"] as? String ?? "") + "#" }
            }
        }, objectTypes: [S2Check.Item.self])
        // The checker only reads: the killed child's migration must be resumed by the next child.
        config.backgroundMigration = false
        return config
    }

    @Test func aTransformThatCreatesObjectsTrapsNamingTheType() throws {
        let child = try #require(MigrationKillTests.childPath, "StrataCrashChild was not built beside the tests")
        let temp = try TemporaryDirectory()
        let url = URL(fileURLWithPath: temp.child("items.realm"))
        do {
            let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [S0.Item.self]))
            try realm.write { realm.create(S0.Item.self, value: ["id": 1, "value": 1, "name": "one"]) }
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: child)
        process.arguments = ["misuse", url.path]
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        process.environment = environment
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let message = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus != 0)
        #expect(!String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).contains("no trap"))
        #expect(message.contains("Migration.create was called inside transformObjects(ofType: \"Item\")"), "\(message.prefix(400))")
        #expect(message.contains("enumerateObjects"))
        // The open trapped before committing: the file is still at version 0.
        #expect(try schemaVersionAtURL(url) == 0)
    }

    @Test(arguments: Seeds.environmentOr([41]))
    func killedOnlineMigrationsLoseNothingAndTransformOnce(seed: UInt64) throws {
        let child = try #require(MigrationKillTests.childPath, "StrataCrashChild was not built beside the tests")
        let temp = try TemporaryDirectory()
        let url = URL(fileURLWithPath: temp.child("items.realm"))
        try populate(url)
        var rng = SplitMix64(seed: seed)
        // What every object must hold: acknowledged values, and objects created by acknowledged writes.
        var values = Dictionary(uniqueKeysWithValues: (0..<Self.count).map { ($0, $0 % 1000) })
        var created: [Int: Int] = [:]
        var outcomes = (pending: 0, finished: 0, writes: 0)
        for round in 0..<20 {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: child)
            process.arguments = ["online", url.path, "\(Self.count)", "\(round + 1)"]
            let pipe = Pipe()
            process.standardOutput = pipe
            try process.run()
            // Mostly short lives (a kill inside the migration), every fourth one long enough to finish it.
            SystemProcess.sleep(microseconds: UInt32(round % 4 == 3 ? 400_000 + rng.next() % 400_000 : 10_000 + rng.next() % 200_000))
            SystemProcess.killHard(process.processIdentifier)
            process.waitUntilExit()
            let said = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(!said.contains("twice"), "round \(round): the child saw a label marked twice: \(said.split(separator: "\n").last ?? "")")
            // The last write may have committed without its acknowledgement: either outcome is allowed for it.
            var unsure: (id: Int, value: Int, fresh: Int, before: Int)? = nil
            for line in said.split(separator: "\n") {
                let parts = line.split(separator: " ").compactMap { Int($0) }
                guard parts.count == 3 else { continue }
                if line.hasPrefix("try ") {
                    unsure = (parts[0], parts[1], parts[2], values[parts[0]] ?? -1)
                } else if line.hasPrefix("ack ") {
                    values[parts[0]] = parts[1]
                    created[parts[2]] = parts[1]
                    unsure = nil
                    outcomes.writes += 1
                }
            }
            if try check(url, round: round, unsure: unsure, values: &values, created: &created) {
                // Finished: start over from version 0, so that later rounds land in a migration again.
                outcomes.finished += 1
                values = Dictionary(uniqueKeysWithValues: (0..<Self.count).map { ($0, $0 % 1000) })
                created = [:]
                try populate(url)
            } else {
                outcomes.pending += 1
            }
        }
        print("online migration kill test: \(outcomes.pending) rounds killed mid-migration, \(outcomes.finished) after it finished, \(outcomes.writes) acknowledged writes")
        #expect(outcomes.pending > 0, "no kill landed during the migration; the timing needs adjusting")
    }

    /// Checks every object against what was acknowledged; returns whether the migration has finished.
    func check(
        _ url: URL, round: Int, unsure: (id: Int, value: Int, fresh: Int, before: Int)?, values: inout [Int: Int], created: inout [Int: Int]
    ) throws -> Bool {
            let realm = try Realm(configuration: checkConfig(url))
            if let u = unsure, let o = realm.object(ofType: S2Check.Item.self, forPrimaryKey: u.fresh) {
                // It committed: both of its changes are there.
                #expect(o.value == u.value && o.label == "fresh", "round \(round)")
                values[u.id] = u.value
                created[u.fresh] = u.value
            }
            let items = realm.objects(S2Check.Item.self)
            #expect(items.count == Self.count + created.count, "round \(round)")
            var wrong: [String] = []
            for item in items {
                if item.id < Self.count {
                    if item.label != "item-\(item.id)#" || item.value != values[item.id] {
                        wrong.append("\(item.id): \(item.label) \(item.value), expected \(values[item.id] ?? -1)")
                    }
                } else if item.label != "fresh" || item.value != created[item.id] {
                    wrong.append("new \(item.id): \(item.label) \(item.value), expected \(created[item.id] ?? -1)")
                }
            }
            #expect(wrong.isEmpty, "round \(round): \(wrong.count) objects wrong, e.g. \(wrong.prefix(3))")
            #expect(realm.migrationProgress.allSatisfy { $0.objectsMigrated == 0 }, "round \(round): the checker migrated")
            return realm.core.shared.storedSchema.withLock { $0?.pending ?? [] }.isEmpty
    }

    /// An online migration another process started, and keeps writing through, is read and finished here while
    /// both processes' migrators run: every object transformed exactly once whichever process rewrote it, and
    /// every acknowledged write of both processes kept.
    @Test func anOnlineMigrationStartedInAnotherProcessFinishesHere() throws {
        let child = try #require(MigrationKillTests.childPath, "StrataCrashChild was not built beside the tests")
        let temp = try TemporaryDirectory()
        let url = URL(fileURLWithPath: temp.child("items.realm"))
        try populate(url)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: child)
        process.arguments = ["online", url.path, "\(Self.count)", "7"]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let printed = OutputCollector(pipe)
        #expect(waitUntil { printed.output.contains("opened") }, "the child did not open the file")

        var config = checkConfig(url)
        config.backgroundMigration = true
        let realm = try Realm(configuration: config)
        var rng = SplitMix64(seed: 7)
        var twice: [String] = []
        for i in 0..<200 {
            realm.refresh()
            let id = Int(rng.next() % UInt64(Self.count))
            if let label = realm.object(ofType: S2Check.Item.self, forPrimaryKey: id)?.label, label != "item-\(id)#" { twice.append(label) }
            try realm.write { realm.create(S2Check.Item.self, value: ["id": -1 - i, "value": i, "label": "parent"]) }
        }
        try realm.finishMigrations()
        SystemProcess.killHard(process.processIdentifier)
        process.waitUntilExit()
        printed.waitForEnd()
        #expect(twice.isEmpty, "labels read here while both processes migrated: \(twice.prefix(3))")
        #expect(!printed.output.contains("twice"), "the child saw a label marked twice")

        var values = Dictionary(uniqueKeysWithValues: (0..<Self.count).map { ($0, $0 % 1000) })
        var created: [Int: Int] = [:]
        var unsure: (id: Int, value: Int, fresh: Int)? = nil
        for line in printed.output.split(separator: "\n") {
            let parts = line.split(separator: " ").compactMap { Int($0) }
            guard parts.count == 3 else { continue }
            if line.hasPrefix("try ") {
                unsure = (parts[0], parts[1], parts[2])
            } else if line.hasPrefix("ack ") {
                values[parts[0]] = parts[1]
                created[parts[2]] = parts[1]
                unsure = nil
            }
        }
        #expect(!created.isEmpty, "the child acknowledged no write")
        realm.refresh()
        if let u = unsure, realm.object(ofType: S2Check.Item.self, forPrimaryKey: u.fresh) != nil {
            values[u.id] = u.value
            created[u.fresh] = u.value
        }
        var wrong: [String] = []
        for item in realm.objects(S2Check.Item.self) {
            if item.id < 0 {
                if item.label != "parent" || item.value != -1 - item.id { wrong.append("parent's \(item.id): \(item.label) \(item.value)") }
            } else if item.id < Self.count {
                if item.label != "item-\(item.id)#" || item.value != values[item.id] {
                    wrong.append("\(item.id): \(item.label) \(item.value), expected \(values[item.id] ?? -1)")
                }
            } else if item.label != "fresh" || item.value != created[item.id] {
                wrong.append("new \(item.id): \(item.label) \(item.value), expected \(created[item.id] ?? -1)")
            }
        }
        #expect(realm.objects(S2Check.Item.self).count == Self.count + created.count + 200)
        #expect(wrong.isEmpty, "\(wrong.count) objects wrong, e.g. \(wrong.prefix(3))")
        #expect(realm.core.shared.storedSchema.withLock { ($0?.pending ?? []).isEmpty }, "the migration did not finish")
    }
}
