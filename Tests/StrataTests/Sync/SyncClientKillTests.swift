import Engine
import Foundation
import StrataSync
import Testing
import TestSupport

@testable import Strata

/// A client process with a sync session, killed (SIGKILL) again and again at random moments: inside its commits,
/// its uploads and its applies of another client's changes. Every local commit ends on the server or in the
/// outbox: at the end the server holds the file's every sequence, once, and both clients equal the server.
@Suite(.serialized) struct SyncClientKillTests {
    typealias Setup = SyncServerTests.Setup

    @Test(arguments: Seeds.environmentOr([11]))
    func aClientKilledMidCommitMidUploadAndMidApplyLosesNoCommit(seed: UInt64) async throws {
        let child = try #require(MigrationKillTests.childPath, "StrataCrashChild was not built beside the tests")
        try await Setup.with { setup in
            let token = try SyncServerProcess.token(write: ["team"])
            let path = setup.dir.child("killed.realm")
            var mine = Realm.Configuration(fileURL: URL(fileURLWithPath: path), objectTypes: [SyncKillCheck.self])
            mine.syncConfiguration = SyncConfiguration(serverURL: setup.servers[0].url, partition: "team", token: { token })
            var other = Realm.Configuration(fileURL: URL(fileURLWithPath: setup.dir.child("other.realm")), objectTypes: [SyncKillCheck.self])
            other.syncConfiguration = mine.syncConfiguration
            var rng = SplitMix64(seed: seed)
            var acknowledged = 0
            var lastValue: [Int: Int] = [:]
            for round in 0..<(6 * Seeds.scale) {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: child)
                process.arguments = ["syncclient", path, setup.servers[0].url.absoluteString, token, "\(seed &* 1000 &+ UInt64(round))"]
                let pipe = Pipe()
                process.standardOutput = pipe
                try process.run()
                // Meanwhile the other client commits, so that the killed one is applying changes too.
                let until = Date().addingTimeInterval(Double(150 + rng.next() % 600) / 1000)
                var n = 0
                while Date() < until {
                    let realm = try Realm(configuration: other)
                    try realm.write { realm.create(SyncKillCheck.self, value: ["id": 1000 + Int(rng.next() % 20), "value": round * 100 + n], update: .modified) }
                    n += 1
                    _ = try setup.session(other)
                    try await Task.sleep(for: .milliseconds(Int(rng.next() % 30)))
                }
                SystemProcess.killHard(process.processIdentifier)
                process.waitUntilExit()
                let said = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                var pending: (Int, Int)?
                for line in said.split(separator: "\n") {
                    let parts = line.split(separator: " ")
                    if parts.first == "try", parts.count == 3 { pending = (Int(parts[1])!, Int(parts[2])!) }
                    if parts.first == "ack", let (id, value) = pending {
                        acknowledged += 1
                        lastValue[id] = value
                        pending = nil
                    }
                }
                // A write killed between its commit and its "ack" may have committed: either value is right.
                if let (id, value) = pending, let committed = try Realm(configuration: mine).object(ofType: SyncKillCheck.self, forPrimaryKey: id),
                    committed.value == value
                {
                    lastValue[id] = value
                }
            }
            #expect(acknowledged > 0, "the child never committed")

            // The file again, with its own session: everything reaches the server and comes back.
            try await setup.session(mine).wait(for: .upload)
            try await setup.session(other).wait(for: .upload)
            try await setup.session(mine).wait(for: .download)
            try await setup.session(other).wait(for: .download)
            let realm = try Realm(configuration: mine)
            let status = try #require(realm.syncStatus)
            #expect(try realm.pendingChanges().isEmpty, "change sets are left in the outbox")
            let held = try setup.history("team").filter { $0.changeSet.clientID == status.clientID }.map(\.changeSet.sequence)
            #expect(held == Array(1...status.lastSequence), "the server holds sequences \(held.first ?? 0)...\(held.last ?? 0) of \(status.lastSequence), or some twice")
            let server = SyncContents.normalized(try setup.objects("team"))
            for config in [mine, other] {
                let diff = SyncContents.difference(try SyncContents.of(try Realm(configuration: config), type: "SyncKillItem"), server)
                #expect(diff == nil, "\(config.fileURL!.lastPathComponent): \(diff ?? "")")
            }
            for (id, value) in lastValue {
                #expect(realm.object(ofType: SyncKillCheck.self, forPrimaryKey: id)?.value == value, "item \(id): the last committed value \(value) is lost")
            }
            // The killed file, its outbox and sync metadata among its data, passes the verifier.
            let inspector = try DatabaseInspector(path: path)
            defer { _ = try? inspector.close() }  // try?: a read-only inspector's close loses nothing.
            let problems = inspector.verify()
            #expect(problems.isEmpty, "verify: \(problems.prefix(5))")
        }
    }
}
