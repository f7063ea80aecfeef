import Foundation
import Strata
import Testing
import TestSupport

@Suite struct RealmCacheTaskTests {
    @Test func twoTasksNeverShareARealm() async throws {
        let dir = try TemporaryDirectory()
        let config = RealmInstanceTests.config(dir)
        let first = Task { try Realm(configuration: config) }
        let second = Task { try Realm(configuration: config) }
        let a = try await first.value, b = try await second.value
        #expect(a != b)
        // Within one task, the same Realm.
        #expect(try Realm(configuration: config) == Realm(configuration: config))
    }
}
