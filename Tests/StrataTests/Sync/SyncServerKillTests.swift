import Engine
import Foundation
import StrataSyncWire
import Testing
import TestSupport

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@testable import Strata

/// A server killed inside a push's transaction: PostgreSQL keeps nothing of it, and the client's retry is taken
/// exactly once.
@Suite(.serialized) struct SyncServerKillTests {
    typealias Setup = SyncServerTests.Setup

    @Test func aServerKilledInsideAPushTransactionKeepsNothingOfItAndTheRetryIsTakenOnce() async throws {
        try await Setup.with { setup in
            let holding = try SyncServerProcess(cluster: setup.cluster, database: setup.database, dir: setup.dir, name: "holding",
                                                environment: ["STRATA_SYNC_TEST_HOLD_PUSH_MS": "3600000"])
            setup.servers.append(holding)
            let token = try SyncServerProcess.token(write: ["team"])
            let change = ChangeSet(clientID: 9, sequence: 1, baseVersion: 0, schemaVersion: 0,
                                   operations: [.create(SyncTesting.ref("k"), values: ["id": .string("k"), "title": .string("kept")])])
            let body = try SyncWire.encoder.encode(PushRequest(clientID: 9, changeSets: [change]))
            let url = holding.url, log = holding.log
            // The held push answers only when killed. An answer or a failure before the server holds it is a
            // refusal: under the whole suite's load a fresh server's first connections to PostgreSQL can time out
            // (503), and a request can fail on the way. It is sent again. A failure once it is held is the kill.
            // Each attempt is bounded (30 s): under the whole suite, a request of Linux's URLSession was seen
            // to get no answer and no error for minutes.
            let refusals = Locked<[String]>([])
            let inFlight = Task { () -> (Int, WireError?)? in
                while !Task.isCancelled {
                    let attempt = await Self.bounded(seconds: 30) {
                        try await SyncServerTests.post(url, "v1/partitions/team/push", body: body, token: token)
                    }
                    let held = (try? String(contentsOfFile: log, encoding: .utf8))?.contains("holding push") ?? false
                    switch attempt {
                    case .success(let answer?) where answer.0 == 200: return answer
                    case .success(let answer?): refusals.withLock { $0.append("\(answer.0)") }
                    case .success(nil):
                        if held { return nil }
                        refusals.withLock { $0.append("no answer in 30 s") }
                    case .failure(let error):
                        if held { return nil }
                        refusals.withLock { $0.append("\(error)") }
                    }
                    try? await Task.sleep(for: .milliseconds(200))
                }
                return nil
            }
            // Generous bounds: in the whole suite, synchronous tests can hold both of the two cores' cooperative
            // threads for minutes, and this test's tasks (the push, this loop) wait for them. A full run saw the
            // push reach the server only after 300 s. The server holds it for an hour (until killed), so a late
            // kill still lands inside the transaction.
            let deadline = Date().addingTimeInterval(1200)
            while !holding.logText.contains("holding push 1 of 9") {
                guard Date() < deadline || holding.logText.contains("holding push 1 of 9") else {
                    inFlight.cancel()
                    let health = await Self.bounded(seconds: 10) { try await Self.health(url) }
                    Issue.record("""
                        the server never reached its commit (refusals \(refusals.withLock { $0 }); server running: \(holding.process.isRunning), \
                        health: \(health)): \(holding.logText)
                        """)
                    return
                }
                try await Task.sleep(for: .milliseconds(10))
            }
            // Every write of the push is done, its commit not: the kill lands inside the transaction.
            holding.kill()
            let answer = await inFlight.value
            #expect(answer == nil || answer?.0 != 200, "the killed server answered \(String(describing: answer))")
            for table in ["strata_changes", "strata_objects", "strata_clients"] {
                #expect(try setup.cluster.sql("SELECT count(*) FROM \(table)", database: setup.database).hasPrefix("0"), "\(table) kept rows of the killed push")
            }
            #expect(try setup.version("team") == 0)

            // The client sends it again (to the other server), and again: taken once.
            for _ in 0..<2 {
                let (status, refusal) = try await setup.post("v1/partitions/team/push", body: body, token: token)
                #expect(status == 200, "\(String(describing: refusal))")
            }
            #expect(try setup.version("team") == 1)
            #expect(try setup.history("team").map(\.changeSet) == [change])
            #expect(try setup.objects("team")[SyncTesting.ref("k")]?.fields["title"] == .value(.string("kept")))
        }
    }

    /// `body`'s result, or nil when it has none after `seconds` (it is left running then).
    static func bounded<T: Sendable>(seconds: Int, _ body: @escaping @Sendable () async throws -> T) async -> Result<T?, any Error> {
        let once = Locked(false)
        return await withCheckedContinuation { (c: CheckedContinuation<Result<T?, any Error>, Never>) in
            func finish(_ r: Result<T?, any Error>) {
                if once.withLock({ done in defer { done = true }; return !done }) { c.resume(returning: r) }
            }
            Task {
                do { finish(.success(try await body())) } catch { finish(.failure(error)) }
            }
            Task {
                try? await Task.sleep(for: .seconds(seconds))
                finish(.success(nil))
            }
        }
    }

    /// The status of the server's health check.
    static func health(_ url: URL) async throws -> Int {
        var request = URLRequest(url: url.appendingPathComponent("v1/health"))
        request.setValue("close", forHTTPHeaderField: "Connection")
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
        let (_, response) = try await session.data(for: request)
        return (response as? HTTPURLResponse)?.statusCode ?? 0
    }
}
