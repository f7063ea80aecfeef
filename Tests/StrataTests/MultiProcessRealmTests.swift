import Engine
import Foundation
import Strata
import Testing
import TestSupport

/// The class `StrataCrashChild share` declares, under the same name.
final class SharedNote: Object {
    @Persisted(primaryKey: true) var id: Int
    @Persisted var text = ""
}

/// A Realm shared with another process (`StrataCrashChild share`): its commits reach this process's Realm, its
/// observers and `refresh()`, with the change sets the committing process itself gets.
@Suite struct MultiProcessRealmTests {
    static var childPath: String? { BuildProducts.executable("StrataCrashChild") }

    @Test func anotherProcesssCommitsArriveWithTheSameChangeSets() throws {
        let child = try #require(Self.childPath, "StrataCrashChild was not built beside the tests")
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("shared.realm"))
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

        let process = Process()
        process.executableURL = URL(fileURLWithPath: child)
        process.arguments = ["share", url.path]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        let printed = OutputCollector(output)
        defer {
            input.fileHandleForWriting.write(Data("quit\n".utf8))
            process.waitUntilExit()
            printed.waitForEnd()
        }
        func childLines() -> [String] { printed.output.split(separator: "\n").map(String.init) }
        func waitUntil(_ condition: () -> Bool) -> Bool {
            let deadline = Date().addingTimeInterval(10)
            while !condition() && Date() < deadline { SystemProcess.sleep(microseconds: 2_000) }
            return condition()
        }
        #expect(waitUntil { childLines().contains("ready") }, "the child did not start: \(childLines())")

        for (step, command) in ["insert", "modify", "delete"].enumerated() {
            input.fileHandleForWriting.write(Data((command + "\n").utf8))
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
        #expect(waitUntil { childLines().filter { $0.hasPrefix("changes") }.count == 4 }, "the child saw no change from here")
        #expect(childLines().filter { $0.hasPrefix("changes") }.last == "changes ins=[2] del=[] mod=[]")
    }
}
