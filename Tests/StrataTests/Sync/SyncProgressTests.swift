import Engine
import Foundation
import StrataSync
import StrataSyncWire
import Testing
import TestSupport

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@testable import Strata

/// Progress notifications of a sync session (RealmSwift's `addProgressNotification(for:mode:block:)`), against a
/// real server: upload progress counts the outbox's bytes, download progress the server's change sets and what
/// the server says is left after a page.
@Suite(.serialized) struct SyncProgressTests {
    typealias Setup = SyncServerTests.Setup

    /// What a block was called with, in order.
    final class Calls: Sendable {
        let all = Locked<[SyncSession.Progress]>([])
        func append(_ p: SyncSession.Progress) { all.withLock { $0.append(p) } }
        var values: [SyncSession.Progress] { all.withLock { $0 } }

        /// Waits (up to a generous bound: in the whole suite, synchronous tests can hold the cooperative threads
        /// for minutes) for a call that satisfies `condition`.
        func wait(_ what: String, until condition: @escaping ([SyncSession.Progress]) -> Bool) async throws {
            let deadline = Date().addingTimeInterval(900)
            while !condition(values) {
                guard Date() < deadline else {
                    Issue.record("no progress call \(what): \(values)")
                    return
                }
                try await Task.sleep(for: .milliseconds(20))
            }
        }
    }

    @Test func uploadProgressCountsTheOutboxAndDownloadProgressWhatTheServerGives() async throws {
        try await Setup.with { setup in
            let token = try SyncServerProcess.token(write: ["team"])
            let a = setup.config("a.realm", token: token)
            let b = setup.config("b.realm", token: token)
            // Suspended from its start: the outbox holds all that is written next when the notifications are added.
            let sessionA = try setup.session(a)
            sessionA.suspend()
            let sessionB = try setup.session(b)
            try await sessionB.wait(for: .download)

            for i in 0..<40 { try SyncServerTests.write(a) { r in r.add(SyncItem("item-\(i)", title: String(repeating: "t", count: 100))) } }
            let outstanding = Calls(), indefinite = Calls(), downloads = Calls()
            let outstandingToken = try #require(sessionA.addProgressNotification(for: .upload, mode: .forCurrentlyOutstandingWork) { outstanding.append($0) })
            let indefiniteToken = try #require(sessionA.addProgressNotification(for: .upload, mode: .reportIndefinitely) { indefinite.append($0) })
            let downloadToken = try #require(sessionB.addProgressNotification(for: .download, mode: .reportIndefinitely) { downloads.append($0) })
            defer {
                indefiniteToken.invalidate()
                downloadToken.invalidate()
            }
            try await outstanding.wait("with the outbox pending") { !$0.isEmpty }
            let first = try #require(outstanding.values.first)
            // 40 change sets of a create with a 100-character title each.
            #expect(first.transferredBytes == 0 && first.transferrableBytes > 40 * 100, "\(first)")
            #expect(!first.isTransferComplete)

            sessionA.resume()
            try await sessionA.wait(for: .upload)
            try await outstanding.wait("complete") { $0.last?.isTransferComplete == true }
            let calls = outstanding.values
            // Counted from zero to the bytes outstanding when it was added, never back, and then no more calls.
            #expect(calls.allSatisfy { $0.transferrableBytes == first.transferrableBytes }, "\(calls)")
            #expect(zip(calls, calls.dropFirst()).allSatisfy { $0.transferredBytes <= $1.transferredBytes }, "\(calls)")
            #expect(calls.last?.transferredBytes == first.transferrableBytes)
            try await indefinite.wait("complete") { $0.last?.isTransferComplete == true && $0.last?.transferredBytes == first.transferrableBytes }

            // A later commit: the indefinite notification hears of it, the finished one does not.
            try SyncServerTests.write(a) { r in r.add(SyncItem("late", title: "late")) }
            try await sessionA.wait(for: .upload)
            try await indefinite.wait("of the later commit") { ($0.last?.transferredBytes ?? 0) > first.transferrableBytes && $0.last?.isTransferComplete == true }
            #expect(outstanding.values.count == calls.count)
            outstandingToken.invalidate()

            // B downloads the 41 change sets: its figures grow by their bytes and end complete.
            try await sessionB.wait(for: .download)
            try await downloads.wait("of the download") { ($0.last?.transferredBytes ?? 0) > 40 * 100 && $0.last?.isTransferComplete == true }
            #expect(try Realm(configuration: b).objects(SyncItem.self).count == 41)

            // After invalidate(), a block is not called again.
            indefiniteToken.invalidate()
            let before = indefinite.values.count
            try SyncServerTests.write(a) { r in r.add(SyncItem("after", title: "after")) }
            try await sessionA.wait(for: .upload)
            #expect(indefinite.values.count == before)

            // A page that fills its limit says how many bytes are left after it: the rest of the history.
            let history = try setup.history("team")
            let page: PullResponse = try await Self.pull(setup, token: token, PullRequest(clientID: 77, after: 0, limit: 10))
            // A client at version 0 bootstraps from a snapshot instead: ask from version 1, which it would hold.
            let firstVersion = try #require(history.first?.version)
            let later: PullResponse = try await Self.pull(setup, token: token, PullRequest(clientID: 77, after: firstVersion, limit: 10))
            #expect(page.snapshot != nil && page.remainingBytes == 0)
            #expect(later.changes.count == 10)
            let rest = history.filter { $0.version > later.changes.last!.version }.map { SyncCoding.encode($0.changeSet).count }.reduce(0, +)
            #expect(later.remainingBytes == UInt64(rest) && rest > 0, "\(String(describing: later.remainingBytes)) against \(rest)")
            let whole: PullResponse = try await Self.pull(setup, token: token, PullRequest(clientID: 77, after: firstVersion, limit: 1000))
            #expect(whole.remainingBytes == 0)
        }
    }

    /// A raw pull, decoded.
    static func pull(_ setup: Setup, token: String, _ request: PullRequest) async throws -> PullResponse {
        try await setup.exchange("pull", token: token, request)
    }
}
