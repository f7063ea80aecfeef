import Engine
import Foundation
import StrataSync
import Testing
import TestSupport

@testable import Strata

/// Two processes syncing one file, as an app and its extension do: each runs its own session, both append to the
/// file's one outbox, and the server takes each change set once, whichever process sends it.
@Suite(.serialized) struct SyncSharedFileTests {
    typealias Setup = SyncServerTests.Setup

    @Test func twoProcessesSyncingOneFileSendEachChangeSetOnce() async throws {
        let child = try #require(MigrationKillTests.childPath, "StrataCrashChild was not built beside the tests")
        try await Setup.with { setup in
            let token = try SyncServerProcess.token(write: ["team"])
            let path = setup.dir.child("shared.realm")
            var shared = Realm.Configuration(fileURL: URL(fileURLWithPath: path), objectTypes: [SyncKillCheck.self])
            shared.syncConfiguration = SyncConfiguration(serverURL: setup.servers[0].url, partition: "team", token: { token })
            var other = Realm.Configuration(fileURL: URL(fileURLWithPath: setup.dir.child("other.realm")), objectTypes: [SyncKillCheck.self])
            other.syncConfiguration = shared.syncConfiguration
            // The file exists, with its schema, before the second process opens it.
            try SyncServerTests.write(shared) { r in r.create(SyncKillCheck.self, value: ["id": 1, "value": 1]) }
            _ = try setup.session(shared)

            let count = 60 * Seeds.scale
            let process = Process()
            process.executableURL = URL(fileURLWithPath: child)
            process.arguments = ["syncshare", path, setup.servers[0].url.absoluteString, token, "\(count)"]
            let out = Pipe(), err = Pipe()
            process.standardOutput = out
            process.standardError = err
            try process.run()
            // Meanwhile this process writes to the same file, with its own session uploading.
            for i in 0..<count {
                try SyncServerTests.write(shared) { r in r.create(SyncKillCheck.self, value: ["id": 20_000 + i, "value": 20_000 + i]) }
                if i % 5 == 0 { try await Task.sleep(for: .milliseconds(3)) }
            }
            // The child ends by itself once the server holds the file's change sets (bounded: the whole suite
            // shares two cores).
            let deadline = Date().addingTimeInterval(900)
            while process.isRunning && Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
            if process.isRunning {
                SystemProcess.killHard(process.processIdentifier)
                process.waitUntilExit()
                Issue.record("the second process did not finish its upload")
                return
            }
            let said = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            let complaint = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(process.terminationStatus == 0 && said.contains("uploaded"), "the second process: \(said) \(complaint)")

            try await setup.session(shared).wait(for: .upload)
            try await setup.session(other).wait(for: .download)
            try await setup.session(shared).wait(for: .download)

            // One client id for the file, every sequence on the server exactly once.
            let realm = try Realm(configuration: shared)
            let status = try #require(realm.syncStatus)
            #expect(status.lastSequence == UInt64(2 * count + 1), "the file's outbox numbered \(status.lastSequence) change sets")
            let held = try setup.history("team").filter { $0.changeSet.clientID == status.clientID }.map(\.changeSet.sequence)
            #expect(held == Array(1...status.lastSequence), "the server holds \(held.count) change sets of \(status.lastSequence), or some twice")
            #expect(try realm.pendingChanges().isEmpty, "change sets are left in the outbox")
            // Both processes' objects everywhere.
            let server = SyncContents.normalized(try setup.objects("team"))
            #expect(server.count == 2 * count + 1)
            for config in [shared, other] {
                let diff = SyncContents.difference(try SyncContents.of(try Realm(configuration: config), type: "SyncKillItem"), server)
                #expect(diff == nil, "\(config.fileURL!.lastPathComponent): \(diff ?? "")")
            }
            let inspector = try DatabaseInspector(path: path)
            defer { _ = try? inspector.close() }  // try?: a read-only inspector's close loses nothing.
            let problems = inspector.verify()
            #expect(problems.isEmpty, "verify: \(problems.prefix(5))")
        }
    }
}
