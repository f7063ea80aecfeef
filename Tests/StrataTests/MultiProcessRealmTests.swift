import Engine
import Foundation
import Observation
@testable import Strata
import Testing
import TestSupport

/// The class `StrataCrashChild share` declares, under the same name.
final class SharedNote: Object {
    @Persisted(primaryKey: true) var id: Int
    @Persisted var text = ""
}

/// `SharedNote` with its text indexed: what a newer version of an app declares while an older extension still
/// writes without the index.
enum IndexedShare {
    final class SharedNote: Object {
        @Persisted(primaryKey: true) var id: Int
        @Persisted(indexed: true) var text = ""
        override class func className() -> String { "SharedNote" }
    }
}

/// `SharedNote` with a property the file does not have: a model that differs from the file's at the same
/// schema version.
enum WiderShare {
    final class SharedNote: Object {
        @Persisted(primaryKey: true) var id: Int
        @Persisted var text = ""
        @Persisted var pinned = false
        override class func className() -> String { "SharedNote" }
    }
}

/// A type only this process declares (the child declares `SharedTag`, which this process does not).
final class SharedLabel: Object {
    @Persisted var name = ""
}

/// `StrataCrashChild share PATH` running beside a test: one command per line in, what it prints collected.
final class ShareChild {
    let process = Process()
    let input = Pipe()
    let printed: OutputCollector

    init(_ executable: String, _ path: String) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["share", path]
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        printed = OutputCollector(output)
    }

    var lines: [String] { printed.output.split(separator: "\n").map(String.init) }
    var changes: [String] { lines.filter { $0.hasPrefix("changes") } }

    func send(_ command: String) { input.fileHandleForWriting.write(Data((command + "\n").utf8)) }

    func quit() {
        send("quit")
        process.waitUntilExit()
        printed.waitForEnd()
    }
}

/// Waits up to 10 seconds for `condition`; returns it.
func waitUntil(_ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(10)
    while !condition() && Date() < deadline { SystemProcess.sleep(microseconds: 2_000) }
    return condition()
}

/// A Realm shared with another process (`StrataCrashChild share`): its commits reach this process's Realm, its
/// observers and `refresh()`, with the change sets the committing process itself gets.
@Suite struct MultiProcessRealmTests {
    static var childPath: String? { BuildProducts.executable("StrataCrashChild") }

    /// With `watchOnly` (Linux, issue 56 item 9), the poll beside the directory watch runs once an hour: each
    /// notification here came through the watch (inotify), not a poll.
    @Test(arguments: [false, true])
    func anotherProcesssCommitsArriveWithTheSameChangeSets(watchOnly: Bool) throws {
        #if !os(Linux)
        if watchOnly { return }  // No watch of file contents on Apple platforms: the poll delivers.
        #endif
        let child = try #require(Self.childPath, "StrataCrashChild was not built beside the tests")
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("shared.realm"))
        if watchOnly { SharedFile.watchedPollIntervalsForTesting.withLock { $0[url.path] = .seconds(3600) } }
        defer { SharedFile.watchedPollIntervalsForTesting.withLock { $0[url.path] = nil } }
        let config = Realm.Configuration(fileURL: url, objectTypes: [SharedNote.self])
        let received = Locked<[String]>([])
        // A Realm confined to a queue refreshes there when other instances (and processes) commit.
        let queue = DispatchQueue(label: "parent.realm")
        let ready = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var realm: Realm! = nil
        nonisolated(unsafe) var token: NotificationToken? = nil
        try queue.sync {
            realm = try Realm(configuration: config, queue: queue)
            token = realm.objects(SharedNote.self).sorted(byKeyPath: "id").observe { change in
                switch change {
                case .initial: ready.signal()
                case .update(_, let deletions, let insertions, let modifications):
                    received.withLock { $0.append("changes ins=\(insertions) del=\(deletions) mod=\(modifications)") }
                case .error(let error): received.withLock { $0.append("ERROR \(error)") }
                }
            }
        }
        defer { queue.sync { token?.invalidate() } }
        ready.wait()
        if watchOnly {
            #expect(queue.sync { realm.core.shared.watcher.withLock { $0?.watch != nil } }, "no directory watch: the poll would deliver")
        }

        let other = try ShareChild(child, url.path)
        defer { other.quit() }
        func childLines() -> [String] { other.lines }
        #expect(waitUntil { childLines().contains("ready") }, "the child did not start: \(childLines())")

        for (step, command) in ["insert", "modify", "delete"].enumerated() {
            other.send(command)
            #expect(waitUntil { childLines().filter { $0.hasPrefix("changes") }.count > step }, "\(command): the child saw no change")
            #expect(waitUntil { received.withLock { $0.count } > step }, "\(command): no notification here from the other process's commit")
            let theirs = childLines().filter { $0.hasPrefix("changes") }
            let ours = received.withLock { $0 }
            if theirs.count > step, ours.count > step {
                #expect(ours[step] == theirs[step], "\(command): this process got \(ours[step]), the committing one \(theirs[step])")
            }
        }
        #expect(received.withLock { $0 } == [
            "changes ins=[0, 1, 2] del=[] mod=[]", "changes ins=[] del=[] mod=[0]", "changes ins=[] del=[1] mod=[]",
        ])
        // A Realm of another thread, without observers, sees them at refresh, as it would commits of this process.
        let plain = try Realm(configuration: config)
        plain.refresh()
        #expect(plain.objects(SharedNote.self).map(\.id) == [1, 3])
        #expect(plain.object(ofType: SharedNote.self, forPrimaryKey: 1)?.text == "changed")
        // And this process's writes go on from them.
        try plain.write { plain.add(SharedNote(value: ["id": 4, "text": "from the parent"])) }
        // Its object key came from the caught-up counter: no object of the other process was overwritten.
        #expect(plain.objects(SharedNote.self).map(\.id).sorted() == [1, 3, 4])
        #expect(plain.object(ofType: SharedNote.self, forPrimaryKey: 1)?.text == "changed")
        #expect(waitUntil { childLines().filter { $0.hasPrefix("changes") }.count == 4 }, "the child saw no change from here")
        #expect(childLines().filter { $0.hasPrefix("changes") }.last == "changes ins=[2] del=[] mod=[]")
    }

    /// Swift's Observation across processes: a tracking of this process hears of the other process's commits
    /// that change what it read (issue 39, item 1).
    @Test func anotherProcesssCommitsTellObservationTrackings() throws {
        let child = try #require(Self.childPath, "StrataCrashChild was not built beside the tests")
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("observed.realm"))
        var config = Realm.Configuration(fileURL: url, objectTypes: [SharedNote.self])
        config.observationTracking = true
        let queue = DispatchQueue(label: "parent.observation")
        let fired = Locked<[String]>([])
        nonisolated(unsafe) var realm: Realm! = nil
        nonisolated(unsafe) var notes: Results<SharedNote>! = nil
        try queue.sync {
            realm = try Realm(configuration: config, queue: queue)
            notes = realm.objects(SharedNote.self)
            _ = withObservationTracking { notes.count } onChange: { fired.withLock { $0.append("count") } }
        }
        defer { queue.sync { notes = nil; realm = nil } }

        let other = try ShareChild(child, url.path)
        defer { other.quit() }
        #expect(waitUntil { other.lines.contains("ready") }, "the child did not start: \(other.lines)")
        other.send("insert")
        #expect(waitUntil { fired.withLock { $0 } == ["count"] }, "the other process's insert told nothing: \(fired.withLock { $0 })")
        nonisolated(unsafe) var first: SharedNote? = nil
        let text: String? = queue.sync {
            first = realm.object(ofType: SharedNote.self, forPrimaryKey: 1)
            let read: String? = withObservationTracking { first?.text } onChange: { fired.withLock { $0.append("text") } }
            return read
        }
        #expect(text != nil)
        other.send("modify")
        #expect(waitUntil { fired.withLock { $0 } == ["count", "text"] }, "the other process's change told nothing: \(fired.withLock { $0 })")
        queue.sync { first = nil }
    }

    /// An index one process declares is kept up by the writes of a process whose model does not know it (an
    /// extension built before the app added the index): queries through the index find what that process wrote.
    @Test func aWriterThatDoesNotKnowAnIndexKeepsItUp() throws {
        let child = try #require(Self.childPath, "StrataCrashChild was not built beside the tests")
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("indexed.realm"))
        let realm = try Realm(configuration: Realm.Configuration(fileURL: url, objectTypes: [IndexedShare.SharedNote.self]))
        try realm.write { realm.add(IndexedShare.SharedNote(value: ["id": 10, "text": "note 3"])) }
        let other = try ShareChild(child, url.path)
        defer { other.quit() }
        #expect(waitUntil { other.lines.contains("ready") }, "the child did not start: \(other.lines)")
        func matches(_ text: String) -> [Int] {
            realm.refresh()
            let found = realm.objects(IndexedShare.SharedNote.self).filter("text == %@", text)
            #expect(found.plan == .index(type: "SharedNote", property: "text"), "the query did not use the index")
            return found.map(\.id).sorted()
        }
        for (step, command) in ["insert", "modify", "delete"].enumerated() {
            other.send(command)
            #expect(waitUntil { other.changes.count > step }, "\(command): the child saw no change")
        }
        // The child inserted notes 1-3 ("note N"), set note 1's text to "changed" and deleted note 2.
        #expect(matches("note 1") == [])
        #expect(matches("changed") == [1])
        #expect(matches("note 2") == [])
        #expect(matches("note 3") == [3, 10])
        // This process's writes, which know the index, go on from the entries the other one wrote.
        try realm.write { realm.object(ofType: IndexedShare.SharedNote.self, forPrimaryKey: 3)?.text = "changed" }
        #expect(matches("changed") == [1, 3])
        #expect(matches("note 3") == [10])
        // What the index finds is what a scan finds.
        let scanned = realm.objects(IndexedShare.SharedNote.self).filter { $0.text == "changed" }.map(\.id).sorted()
        #expect(scanned == [1, 3])
    }

    /// A type another process added is kept when this process, which does not declare it, writes and changes the
    /// schema itself; the other process finds its objects again.
    @Test func aTypeAnotherProcessAddedSurvivesThisProcesssSchemaChanges() throws {
        let child = try #require(Self.childPath, "StrataCrashChild was not built beside the tests")
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("types.realm"))
        let realm = try Realm(configuration: Realm.Configuration(fileURL: url, objectTypes: [SharedNote.self]))
        try realm.write { realm.add(SharedNote(value: ["id": 1, "text": "one"])) }

        var run = try runProcess(child, ["tag", url.path])
        #expect(run.status == 0 && run.out.contains("tags 1 notes 1"), "\(run.out) \(run.err)")
        // A write here, and a type this process adds (a schema change of its own), after the other's.
        try realm.write { realm.add(SharedNote(value: ["id": 2, "text": "two"])) }
        let wider = try Realm(configuration: Realm.Configuration(fileURL: url, objectTypes: [SharedNote.self, SharedLabel.self]))
        try wider.write { wider.add(SharedLabel(value: ["name": "label"])) }
        let names = Set(realm.core.shared.storedSchema.withLock { $0?.types.map(\.name) ?? [] })
        #expect(names == ["SharedNote", "SharedTag", "SharedLabel"])

        run = try runProcess(child, ["tag", url.path])
        #expect(run.status == 0 && run.out.contains("tags 2 notes 2"), "\(run.out) \(run.err)")
        realm.refresh()
        #expect(realm.objects(SharedNote.self).count == 2)
        #expect(wider.objects(SharedLabel.self).count == 1)
    }

    /// "Am I alone" across processes: compaction on launch is skipped while another process has the file open
    /// (as in Realm), and `performMigration` refuses to raise the schema version under it (M019's refusal of an
    /// open Realm, for a Realm open in another process).
    @Test func launchCompactionAndPerformMigrationLookForOtherProcesses() throws {
        let child = try #require(Self.childPath, "StrataCrashChild was not built beside the tests")
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("alone.realm"))
        let other = try ShareChild(child, url.path)
        defer { other.quit() }
        #expect(waitUntil { other.lines.contains("ready") }, "the child did not start: \(other.lines)")
        other.send("insert")
        #expect(waitUntil { other.changes.count == 1 })

        var bump = Realm.Configuration(fileURL: url, schemaVersion: 1, objectTypes: [SharedNote.self])
        bump.migrationBlock = { _, _ in }
        #expect(throws: Realm.Error.self) { try Realm.performMigration(for: bump) }
        do {
            try Realm.performMigration(for: bump)
        } catch let error as Realm.Error {
            #expect(error.code == .alreadyOpen)
            #expect(error.localizedDescription.contains("another process has it open"), "\(error)")
        }
        #expect(try schemaVersionAtURL(url) == 0)

        let asked = Locked(false)
        var config = Realm.Configuration(fileURL: url, objectTypes: [SharedNote.self])
        config.shouldCompactOnLaunch = { _, _ in
            asked.withLock { $0 = true }
            return true
        }
        // The same version: nothing to raise, the online work (none here) is finished beside the other process.
        try Realm.performMigration(for: config)
        #expect(!asked.withLock { $0 }, "shouldCompactOnLaunch was asked while another process had the file open")
        let realm = try Realm(configuration: config)
        #expect(realm.objects(SharedNote.self).count == 3)
    }

    /// Issue 56, item 9: what processes sharing a file may differ in, said exactly. A model that differs from
    /// the file's at the same schema version (not only by added types or indexes) is refused at open with
    /// Realm's schema-mismatch error while another process has the file open, and the other process goes on.
    @Test func aModelThatDiffersFromTheFilesAtTheSameVersionIsRefusedBesideAnotherProcess() throws {
        let child = try #require(Self.childPath, "StrataCrashChild was not built beside the tests")
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("mismatch.realm"))
        let other = try ShareChild(child, url.path)
        defer { other.quit() }
        #expect(waitUntil { other.lines.contains("ready") }, "the child did not start: \(other.lines)")
        do {
            _ = try Realm(configuration: Realm.Configuration(fileURL: url, objectTypes: [WiderShare.SharedNote.self]))
            Issue.record("a model with a property the file lacks opened at the same schema version")
        } catch let error as Realm.Error {
            #expect(error.code == .schemaMismatch, "\(error)")
            #expect(error.localizedDescription.contains("Property 'SharedNote.pinned' has been added."), "\(error)")
        }
        other.send("insert")
        #expect(waitUntil { other.changes.count == 1 }, "the other process stopped: \(other.lines)")
    }

}
