import Engine
import Foundation
import Testing
import TestSupport

@testable import Strata

/// `Tests/Fixtures/database-v2-encrypted`: the fixture's objects in an encrypted database (manifest format 4,
/// sealed segment blocks and indexes with their salt, sealed log records), kept byte for byte, so that a change
/// to the encrypted formats that breaks existing files fails here.
@Suite struct EncryptedFixtureTests {
    /// The fixture's key (test data, not a secret).
    static let key = Data((0..<64).map { UInt8(truncatingIfNeeded: $0 &* 19 &+ 23) })

    /// Writes the fixture, as `writeCurrentFixture` does for the plain one: segments, then a commit only the log
    /// holds (item 1's name). Run with STRATA_WRITE_FIXTURES=1 when an encrypted format changes on purpose.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["STRATA_WRITE_FIXTURES"] == "1"))
    func writeEncryptedFixture() throws {
        let target = DatabaseFixtureTests.fixtures.appendingPathComponent("database-v2-encrypted").path
        TemporaryDirectory.remove(target)
        let dir = try TemporaryDirectory()
        let path = dir.child("db")
        let realm = try Realm(configuration: RealmEncryptionTests.configuration(path, key: Self.key))
        try DatabaseFixtureTests.fill(realm)
        try realm.write { realm.object(ofType: FixtureItem.self, forPrimaryKey: 1)!.name = "only in the segments" }
        try realm.core.shared.database.flush()
        try realm.write { realm.object(ofType: FixtureItem.self, forPrimaryKey: 1)!.name = DatabaseFixtureTests.expected(1).name }
        try FileManager.default.copyItem(atPath: path, toPath: target)
    }

    @Test func theEncryptedFixtureOpensWithItsKeyOnly() throws {
        let source = DatabaseFixtureTests.fixtures.appendingPathComponent("database-v2-encrypted")
        let names = try FileManager.default.contentsOfDirectory(atPath: source.path)
        for name in names where name.hasSuffix(".seg") {
            // Segment header flags (u32 at 12): key filter (bit 0) and encrypted (bit 1).
            let bytes = try Data(contentsOf: source.appendingPathComponent(name))
            #expect(bytes.count > 16 && bytes[12] == 3, "\(name)")
        }
        let logs = try names.filter { $0.hasSuffix(".log") }.map { try Data(contentsOf: source.appendingPathComponent($0)).count }
        #expect(logs.contains { $0 > 16 }, "the log holds a commit to replay: \(logs)")
        let dir = try TemporaryDirectory()
        let path = try DatabaseFixtureTests.copy("database-v2-encrypted", to: dir)
        #expect(throws: Realm.Error.self) { _ = try Realm(configuration: RealmEncryptionTests.configuration(path, key: nil)) }
        let realm = try Realm(configuration: RealmEncryptionTests.configuration(path, key: Self.key))
        try DatabaseFixtureTests().checkValues(realm)
    }
}
