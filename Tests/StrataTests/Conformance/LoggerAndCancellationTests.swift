import Engine
import Foundation
import Strata
import Testing
import TestSupport

@Suite struct LoggerAndCancellationTests {
    @Test func loggerReceivesStrataWarningsAtItsLevel() throws {
        let messages = Locked<[String]>([])
        let previous = Logger.shared
        Logger.shared = Logger(level: .warn) { level, message in
            if level == .warn { messages.withLock { $0.append(message) } }
        }
        defer { Logger.shared = previous }
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("l.realm"))
        do {
            let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [APIDog.self]))
            try realm.write { realm.create(APIDog.self, value: ["id": 1]) }
        }
        var reset = Realm.Configuration(fileURL: url, schemaVersion: 1, objectTypes: [APIDog.self])
        reset.deleteRealmIfMigrationNeeded = true
        _ = try Realm(configuration: reset)
        #expect(messages.withLock { $0 }.contains { $0.contains("deleteRealmIfMigrationNeeded") && $0.contains("l.realm") })
        let quiet = Logger(level: .error) { _, _ in Issue.record("a warning passed an error-level logger") }
        quiet.log(level: .warn, message: "dropped")
    }

    @Test func asyncWriteInACancelledTaskWritesNothing() async throws {
        let dir = try TemporaryDirectory()
        let config = Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("c.realm")), objectTypes: [APIDog.self, APIOwner.self])
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            let realm = try await Realm.open(configuration: config)
            try await realm.asyncWrite { realm.create(APIDog.self, value: ["id": 1]) }
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        let realm = try Realm(configuration: config)
        #expect(realm.objects(APIDog.self).isEmpty)
    }
}
