import Foundation
import Testing
import TestSupport

@testable import Strata

/// `Realm.changes(since:)`: the outbox's change sets, then each new commit as it happens, resumable from a
/// stored sequence; and the outbox across an online migration and the file checker.
@Suite struct ChangeFeedTests {
    /// Commits one write on a Realm of its own (a Realm must not live across an `await`).
    static func commit(_ config: Realm.Configuration, _ id: String) throws {
        let realm = try Realm(configuration: config)
        try realm.write { realm.add(SyncItem(id)) }
    }

    @Test func theFeedGivesTheOutboxThenEachNewCommitAndResumesFromACursor() async throws {
        let dir = try TemporaryDirectory()
        let config = SyncTesting.config(dir)
        try Self.commit(config, "a")
        try Self.commit(config, "b")
        var iterator = try Realm(configuration: config).changes(since: 0).makeAsyncIterator()
        #expect(try await iterator.next()?.sequence == 1)
        #expect(try await iterator.next()?.sequence == 2)
        // A commit from another thread arrives as it commits.
        let queue = DispatchQueue(label: "feed.writer")
        queue.asyncAfter(deadline: .now() + 0.05) { try? Self.commit(config, "c") }
        let third = try await iterator.next()
        #expect(third?.sequence == 3)
        guard case .create(let created, _)? = third?.operations.first else {
            Issue.record("expected the create of c, got \(String(describing: third))")
            return
        }
        #expect(created == SyncTesting.ref("c"))
        // An integration that stored cursor 2 resumes after it.
        var resumed = try Realm(configuration: config).changes(since: 2).makeAsyncIterator()
        #expect(try await resumed.next()?.sequence == 3)
    }

    @Test func theOutboxSurvivesAnOnlineMigrationAndLaterChangeSetsCarryTheNewVersion() throws {
        let dir = try TemporaryDirectory()
        do {
            let realm = try Realm(configuration: SyncTesting.config(dir))
            try realm.write { for i in 0..<50 { realm.add(SyncItem("m\(i)", title: "t\(i)")) } }
        }
        var config = SyncTesting.config(dir)
        config.schemaVersion = 1
        config.migrationBlock = { m, old in
            if old < 1 { m.transformObjects(ofType: "SyncItem") { _, new in new["score"] = 1.5 } }
        }
        let realm = try Realm(configuration: config)
        #expect(try realm.pendingChanges().count == 1)
        try realm.write { realm.object(ofType: SyncItem.self, forPrimaryKey: "m3")!.title = "after" }
        let later = try realm.pendingChanges(after: 1)
        #expect(later.first?.schemaVersion == 1)
        #expect(later.first?.operations == [.set(SyncTesting.ref("m3"), property: "title", value: .string("after"))])
        #expect(realm.object(ofType: SyncItem.self, forPrimaryKey: "m3")?.score == 1.5)
    }
}
