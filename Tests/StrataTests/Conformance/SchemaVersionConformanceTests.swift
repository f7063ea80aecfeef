import Engine
import Foundation
import Strata
import Testing
import TestSupport

// Catalogue section 1.1: schema-version rules, and section 0.4's error codes.

@Suite struct SchemaVersionConformanceTests {
    @Test func errorCodesHaveRealmSwiftsNumbers() {
        #expect(Realm.Error.Code.fail.rawValue == 1)
        #expect(Realm.Error.Code.fileAccess.rawValue == 2)
        #expect(Realm.Error.Code.filePermissionDenied.rawValue == 3)
        #expect(Realm.Error.Code.fileNotFound.rawValue == 5)
        #expect(Realm.Error.Code.schemaMismatch.rawValue == 10)
        #expect(Realm.Error.Code.alreadyOpen.rawValue == 12)
        #expect(Realm.Error.Code.invalidDatabase.rawValue == 20)
    }

    @Test func M003_aLowerVersionFailsWithRealmsMessageAndLeavesTheFileUnchanged() throws {
        let dir = try TemporaryDirectory()
        let url = Conformance.url(dir)
        do {
            let realm = try Conformance.open(url, [SC0.Pair.self], version: 10)
            try realm.write { realm.create(SC0.Pair.self, value: [1, 2]) }
        }
        let called = Locked(false)
        let error = try #require(Conformance.openError(url, [SC0.Pair.self], version: 5) { _, _ in called.withLock { $0 = true } })
        #expect(error.code == .fail)
        #expect(error.message == "Provided schema version 5 is less than last set version 10.")
        #expect(!called.withLock { $0 })
        #expect(try schemaVersionAtURL(url) == 10)
        #expect(try Conformance.open(url, [SC0.Pair.self], version: 10).objects(SC0.Pair.self).count == 1)
    }

    @Test func M013_theLargestVersionIsAProgrammerError() async throws {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = try TemporaryDirectory()
            _ = try Conformance.open(Conformance.url(dir), [SC0.Pair.self], version: UInt64.max)
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("Cannot set schema version to 18446744073709551615 (RLMNotVersioned)"))
        // One less is a version like any other.
        let dir = try TemporaryDirectory()
        _ = try Conformance.open(Conformance.url(dir), [SC0.Pair.self], version: UInt64.max - 1)
        #expect(try schemaVersionAtURL(Conformance.url(dir)) == UInt64.max - 1)
    }

    @Test func M014_M015_M016_schemaVersionAtURL() throws {
        let dir = try TemporaryDirectory()
        let url = Conformance.url(dir)
        #expect {
            _ = try schemaVersionAtURL(url)
        } throws: { error in
            guard let e = error as? Realm.Error else { return false }
            return e.code == .invalidDatabase && e.message == "Realm at path '\(url.path)' has not been initialized." && e.fileURL == url
        }
        _ = try Conformance.open(url, [SC0.Pair.self])
        #expect(try schemaVersionAtURL(url) == 0)
        _ = try Conformance.open(url, [SC0.Pair.self], version: 1)
        #expect(try schemaVersionAtURL(url) == 1)
        #expect {
            _ = try schemaVersionAtURL(URL(fileURLWithPath: "/dev/null"))
        } throws: { error in
            guard let e = error as? Realm.Error else { return false }
            return e.code == .fileAccess || e.code == .filePermissionDenied
        }
    }

    @Test(arguments: Conformance.modes)
    func M012_M103_duplicatePrimaryKeysAfterAMigrationFailWithRealmsErrorAndKeepTheVersion(mode: Realm.Configuration.MigrationMode) throws {
        let dir = try TemporaryDirectory()
        let url = Conformance.url(dir)
        do {
            let realm = try Conformance.open(url, [K0.Tag.self])
            try realm.write {
                realm.create(K0.Tag.self, value: ["code": 1, "label": "a"])
                realm.create(K0.Tag.self, value: ["code": 1, "label": "b"])
            }
        }
        let error = try #require(Conformance.openError(url, [K1.Tag.self], version: 1, mode: mode))
        #expect(error.code == .fail)
        #expect(error.message == "Primary key property 'Tag.code' has duplicate values after migration.")
        #expect(try schemaVersionAtURL(url) == 0)
        #expect(try Conformance.open(url, [K0.Tag.self]).objects(K0.Tag.self).count == 2)
    }

    enum OpeningPath: CaseIterable, Sendable { case initializer, performMigration, open }

    @Test(arguments: OpeningPath.allCases)
    func M018_everyOpeningPathMigratesTheSameWay(path: OpeningPath) async throws {
        let dir = try TemporaryDirectory()
        let url = Conformance.url(dir)
        do {
            let realm = try Conformance.open(url, [SC0.Pair.self])
            try realm.write { realm.create(SC0.Pair.self, value: [1, 2]) }
        }
        let calls = Locked(0)
        let config = Conformance.config(url, [SC1.Pair.self], version: 1) { m, old in
            calls.withLock { $0 += 1 }
            m.enumerateObjects(ofType: "Pair") { _, new in new?["col1"] = 10 }
        }
        switch path {
        case .initializer: _ = try Realm(configuration: config)
        case .performMigration: try Realm.performMigration(for: config)
        case .open: _ = try await Realm.open(configuration: config)
        }
        #expect(calls.withLock { $0 } == 1)
        #expect(try schemaVersionAtURL(url) == 1)
        let realm = try Realm(configuration: config)
        #expect(realm.objects(SC1.Pair.self).first.map { [$0.col1, $0.col2] } == [10, 2])
    }

    @Test func M019_performMigrationRefusesARealmThatIsOpen() async throws {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = try TemporaryDirectory()
            let config = Conformance.config(Conformance.url(dir), [SC0.Pair.self])
            let realm = try Realm(configuration: config)
            try Realm.performMigration(for: config)
            _ = realm
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("Cannot migrate Realms that are already open."))
    }
}
