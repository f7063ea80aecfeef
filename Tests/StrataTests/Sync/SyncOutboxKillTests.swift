import Foundation
import Engine
import Testing
import TestSupport

@testable import Strata

/// The parent's view of the child's `SyncKillItem`.
final class SyncKillCheck: Object {
    @Persisted(primaryKey: true) var id: Int
    @Persisted var value = 0
    @Persisted var marks: List<Int>
    override class func className() -> String { "SyncKillItem" }
}

/// SIGKILL of processes writing to one file that captures changes, at random moments (inside commits among
/// them): every committed write has its change set in the outbox, the sequences have no gap, and replaying the
/// outbox from nothing gives exactly the objects in the file.
@Suite struct SyncOutboxKillTests {
    @Test(arguments: Seeds.environmentOr([7]))
    func killedWritersLeaveAnOutboxThatReplaysToTheFile(seed: UInt64) throws {
        let child = try #require(MigrationKillTests.childPath, "StrataCrashChild was not built beside the tests")
        let temp = try TemporaryDirectory()
        let url = URL(fileURLWithPath: temp.child("outbox.realm"))
        var config = Realm.Configuration(fileURL: url, objectTypes: [SyncKillCheck.self])
        config.capturesChanges = true
        var rng = SplitMix64(seed: seed)
        var acknowledged = 0
        var unsure = 0
        for round in 0..<(8 * Seeds.scale) {
            // Two processes write together; each is killed at its own moment.
            var children: [(Process, Pipe)] = []
            for k in 0..<2 {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: child)
                process.arguments = ["capture", url.path, "\(seed &* 1000 &+ UInt64(round * 2 + k))"]
                let pipe = Pipe()
                process.standardOutput = pipe
                try process.run()
                children.append((process, pipe))
            }
            for (process, _) in children {
                SystemProcess.sleep(microseconds: UInt32(20_000 + rng.next() % 150_000))
                SystemProcess.killHard(process.processIdentifier)
            }
            for (process, pipe) in children {
                process.waitUntilExit()
                let said = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                var open = false
                for line in said.split(separator: "\n") {
                    if line.hasPrefix("try ") { open = true }
                    if line.hasPrefix("ack ") {
                        open = false
                        acknowledged += 1
                    }
                }
                if open { unsure += 1 }
            }
            let realm = try Realm(configuration: config)
            let changes = try realm.pendingChanges()
            #expect(changes.map(\.sequence) == (0..<changes.count).map { UInt64($0 + 1) }, "round \(round): the outbox's sequences have a gap")
            #expect(changes.count >= acknowledged && changes.count <= acknowledged + unsure, "round \(round): \(changes.count) change sets for \(acknowledged) acknowledged writes (\(unsure) unsure)")
            let oracle = MemorySyncStore()
            for c in changes {
                for op in c.operations { SyncRules.apply(op, author: c.clientID, base: 0, version: Tombstone.unordered, to: oracle) }
            }
            let contents = try SyncContents.of(realm, type: "SyncKillItem")
            let diff = SyncContents.difference(contents, SyncContents.normalized(oracle.live))
            #expect(diff == nil, "round \(round): replaying the outbox does not give the file's objects: \(diff ?? "")")
            // What the writers could not have acknowledged as done counts once it is in the outbox.
            acknowledged = changes.count
            unsure = 0
        }
        #expect(acknowledged > 0)
        // The file, its sync partition among its data, passes the verifier.
        let inspector = try DatabaseInspector(path: url.path)
        defer { _ = try? inspector.close() }  // try?: a read-only inspector's close loses nothing.
        let problems = inspector.verify()
        #expect(problems.isEmpty, "verify: \(problems.prefix(5))")
        print("sync outbox kill test: \(acknowledged) change sets after \(8 * Seeds.scale) rounds of two killed writers")
    }

    /// A server history of another client's edits to the child's objects: creates, sets, deletes, list inserts
    /// and removals.
    static func history(seed: UInt64, count: Int) -> [ServerChangeSet] {
        var rng = SplitMix64(seed: seed)
        let client: UInt64 = 0xABCD
        var inserted: [ElementID] = []
        return (1...count).map { v in
            var ops: [ChangeOperation] = []
            for _ in 0..<Int.random(in: 1...3, using: &rng) {
                let ref = ObjectReference(type: "SyncKillItem", primaryKey: .int(Int64.random(in: 0..<40, using: &rng)))
                switch Int.random(in: 0..<6, using: &rng) {
                case 0: ops.append(.create(ref, values: ["id": ref.primaryKey, "value": .int(Int64(v))]))
                case 1: ops.append(.delete(ref))
                case 2, 3:
                    let e = ElementID(client: client, counter: UInt64(v * 4 + ops.count))
                    inserted.append(e)
                    ops.append(.listInsert(ref, property: "marks", element: e, position: ListPosition(bytes: [UInt8.random(in: 1...255, using: &rng)]), value: .int(-Int64(v))))
                case 4:
                    if let e = inserted.randomElement(using: &rng) { ops.append(.listRemove(ref, property: "marks", element: e)) }
                default: ops.append(.set(ref, property: "value", value: .int(Int64(v))))
                }
            }
            return ServerChangeSet(version: UInt64(v), changeSet: ChangeSet(clientID: client, sequence: UInt64(v), baseVersion: UInt64(v - 1), schemaVersion: 0, operations: ops))
        }
    }

    /// SIGKILL of a process that applies a server's change sets between its own writes, at random moments
    /// (inside an apply among them): after each kill the file holds exactly the server's history up to the version
    /// it says it applied, with its outbox applied on top, and the outbox has every local commit.
    @Test(arguments: Seeds.environmentOr([11]))
    func killedWhileApplyingTheFileIsTheHistoryWithTheOutboxOnTop(seed: UInt64) throws {
        let child = try #require(MigrationKillTests.childPath, "StrataCrashChild was not built beside the tests")
        let temp = try TemporaryDirectory()
        let url = URL(fileURLWithPath: temp.child("apply.realm"))
        let historyURL = URL(fileURLWithPath: temp.child("history.json"))
        let history = Self.history(seed: seed, count: 400)
        try JSONEncoder().encode(history).write(to: historyURL)
        var config = Realm.Configuration(fileURL: url, objectTypes: [SyncKillCheck.self])
        config.capturesChanges = true
        var rng = SplitMix64(seed: seed)
        var acknowledged = 0
        var appliedSaid: UInt64 = 0
        var killedInApply = 0
        // Under the whole suite's load a child can be killed before it applies anything, round after round: past
        // the planned rounds, more come, each giving the child half a second more, until one has applied.
        var round = 0
        while round < 10 * Seeds.scale || (appliedSaid == 0 && round < 30 * Seeds.scale) {
            defer { round += 1 }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: child)
            process.arguments = ["apply", url.path, historyURL.path, "\(seed &* 1000 &+ UInt64(round))"]
            let pipe = Pipe()
            process.standardOutput = pipe
            try process.run()
            let extra = UInt32(max(0, round - 10 * Seeds.scale + 1)) * 500_000
            SystemProcess.sleep(microseconds: UInt32(20_000 + rng.next() % 120_000) + extra)
            SystemProcess.killHard(process.processIdentifier)
            process.waitUntilExit()
            var unsure = 0
            var applying: UInt64?
            for line in String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).split(separator: "\n") {
                let word = line.split(separator: " ")
                switch word.first {
                case "try": unsure = 1
                case "ack":
                    unsure = 0
                    acknowledged += 1
                case "apply": applying = word.last.flatMap { UInt64($0) }
                case "applied":
                    appliedSaid = word.last.flatMap { UInt64($0) } ?? appliedSaid
                    applying = nil
                default: break
                }
            }
            if applying != nil { killedInApply += 1 }
            let realm = try Realm(configuration: config)
            let version = realm.syncStatus?.serverVersion ?? 0
            #expect(version >= appliedSaid && version <= max(appliedSaid, applying ?? 0), "round \(round): the file says version \(version), the child said \(appliedSaid) (applying \(String(describing: applying)))")
            let changes = try realm.pendingChanges()
            #expect(changes.count >= acknowledged && changes.count <= acknowledged + unsure, "round \(round): \(changes.count) change sets for \(acknowledged) acknowledged writes")
            let oracle = MemorySyncStore()
            for c in history.prefix(Int(version)) {
                for op in c.changeSet.operations { SyncRules.apply(op, author: c.changeSet.clientID, base: c.changeSet.baseVersion, version: c.version, to: oracle) }
            }
            for c in changes {
                for op in c.operations { SyncRules.apply(op, author: c.clientID, base: c.baseVersion, version: Tombstone.unordered, to: oracle) }
            }
            let diff = SyncContents.difference(try SyncContents.of(realm, type: "SyncKillItem"), SyncContents.normalized(oracle.live))
            #expect(diff == nil, "round \(round), version \(version): the file is not the history with the outbox on top: \(diff ?? "")")
            acknowledged = changes.count
            appliedSaid = version
        }
        #expect(appliedSaid > 0)
        print("sync apply kill test: \(appliedSaid) server versions applied, \(acknowledged) local change sets, \(killedInApply) kills during an apply")
    }
}
