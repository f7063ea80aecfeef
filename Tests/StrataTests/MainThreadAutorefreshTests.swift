import Foundation
import Testing
import TestSupport

/// A Realm opened on the main thread without a queue, as UI code opens it, hears of other threads' commits
/// on the main queue while the main run loop runs (RealmSwift's main-thread autorefresh). Run in a child
/// process (`MainQueueChild`), whose main thread is free to run its run loop, unlike the test runner's.
@Suite struct MainThreadAutorefreshTests {
    /// Issue 56, item 5: on the main thread's Realm, asynchronous writes wait for the main queue, as RealmSwift's
    /// wait for the run loop: one cancelled before it runs never commits and never calls back
    /// (RealmSwift's `testAsyncTransactionCommit`, `testAsyncTransactionShouldNotAutoCommitOnCanceledTransaction`).
    @Test func aMainThreadRealmsAsyncWritesWaitForTheMainQueueAndCanBeCancelled() throws {
        let dir = try TemporaryDirectory()
        let (status, output) = try runChild("MainQueueChild", [dir.child("async.realm"), "async-writes"])
        let lines = output.split(separator: "\n").map(String.init)
        #expect(status == 0, "output: \(lines)")
        #expect(lines == ["queued 0", "count 1"], "output: \(lines)")
    }

    @Test func aMainThreadRealmIsRefreshedAndNotifiedOnTheMainQueue() throws {
        let dir = try TemporaryDirectory()
        let (status, output) = try runChild("MainQueueChild", [dir.child("main.realm")])
        let lines = output.split(separator: "\n").map(String.init)
        #expect(status == 0, "output: \(lines)")
        #expect(lines.first == "initial 0")
        // Each update was seen on the main thread (the child exits otherwise), the last one with all three.
        #expect(lines.filter { $0.hasPrefix("update ") }.last == "update 3", "output: \(lines)")
    }
}
