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
}
