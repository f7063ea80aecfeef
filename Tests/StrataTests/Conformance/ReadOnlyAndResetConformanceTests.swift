import Engine
import Foundation
import Strata
import Testing
import TestSupport

// Catalogue sections 1.10 (deleteRealmIfMigrationNeeded) and 1.13 (read-only opens).

enum RO0 {
    final class Thing: Object {
        @Persisted var a = 0
        @Persisted var b = ""
    }
    final class Extra: Object { @Persisted var x = 0 }
}

enum RO1 {
    /// `b` not declared, `a` indexed.
    final class Thing: Object { @Persisted(indexed: true) var a = 0 }
    /// Not in the file.
    final class Missing: Object { @Persisted var y = 0 }
}

enum RO2 {
    /// A property the file lacks.
    final class Thing: Object {
        @Persisted var a = 0
        @Persisted var b = ""
        @Persisted var c = 0
    }
}

enum RO3 {
    /// `b` made an Int.
    final class Thing: Object {
        @Persisted var a = 0
        @Persisted var b = 0
    }
}

@Suite struct ReadOnlyAndResetConformanceTests {
    func file(_ dir: TemporaryDirectory, version: UInt64 = 0) throws -> URL {
        let url = Conformance.url(dir)
        let realm = try Conformance.open(url, [RO0.Thing.self, RO0.Extra.self], version: version)
        try realm.write {
            realm.create(RO0.Thing.self, value: [1, "one"])
            realm.create(RO0.Extra.self, value: [7])
        }
        return url
    }

    func readOnly(_ url: URL, _ types: [Object.Type], version: UInt64 = 0) throws -> Realm {
        var c = Conformance.config(url, types, version: version)
        c.readOnly = true
        return try Realm(configuration: c)
    }

    @Test func M136_aReadOnlyOpenToleratesIndexesExtraStoredTypesAndPropertiesAndMissingTypes() throws {
        let dir = try TemporaryDirectory()
        let url = try file(dir)
        let realm = try readOnly(url, [RO1.Thing.self, RO1.Missing.self])
        #expect(realm.objects(RO1.Thing.self).first?.a == 1)
        #expect(realm.objects(RO1.Thing.self).where { $0.a == 1 }.count == 1)
        #expect(realm.objects(RO1.Missing.self).isEmpty)
        #expect(realm.objects(RO1.Missing.self).count == 0)
    }

    @Test func M137_aReadOnlyOpenAtAnotherVersionFails() throws {
        let dir = try TemporaryDirectory()
        let url = try file(dir)
        for version: UInt64 in [1] {
            #expect {
                _ = try readOnly(url, [RO0.Thing.self], version: version)
            } throws: { error in
                let e = error as? Realm.Error
                return e?.code == .fail && e?.message == "Provided schema version 1 does not equal last set version 0."
            }
        }
    }

    @Test func M138_aReadOnlyOpenWithAPropertyTheFileLacksFails() throws {
        let dir = try TemporaryDirectory()
        let url = try file(dir)
        #expect {
            _ = try readOnly(url, [RO2.Thing.self])
        } throws: { error in
            let e = error as? Realm.Error
            return e?.code == .fail
                && e?.message == "The following changes cannot be made in read-only schema mode:\n- Property 'Thing.c' has been added."
        }
    }

    @Test func M123_aChangeThatNeedsAMigrationRecreatesTheFileWithoutCallingTheBlock() throws {
        for version: UInt64 in [0, 1] {
            let dir = try TemporaryDirectory()
            let url = try file(dir)
            let called = Locked(false)
            var c = Conformance.config(url, [RO3.Thing.self], version: version) { _, _ in called.withLock { $0 = true } }
            c.deleteRealmIfMigrationNeeded = true
            let realm = try Realm(configuration: c)
            #expect(realm.objects(RO3.Thing.self).isEmpty)
            #expect(!called.withLock { $0 })
            try realm.write { realm.create(RO3.Thing.self, value: [2, 2]) }
            #expect(realm.objects(RO3.Thing.self).first?.b == 2)
        }
    }

    @Test func M124_M125_anyVersionChangeWithTheFlagResetsTheFile() throws {
        for (stored, opened): (UInt64, UInt64) in [(0, 1), (5, 3)] {
            let dir = try TemporaryDirectory()
            let url = try file(dir, version: stored)
            let called = Locked(false)
            var c = Conformance.config(url, [RO0.Thing.self, RO0.Extra.self], version: opened) { _, _ in called.withLock { $0 = true } }
            c.deleteRealmIfMigrationNeeded = true
            let realm = try Realm(configuration: c)
            #expect(realm.objects(RO0.Thing.self).isEmpty, "\(stored) -> \(opened)")
            #expect(!called.withLock { $0 })
            #expect(try schemaVersionAtURL(url) == opened)
        }
    }

    @Test func M126_theFlagKeepsTheDataForChangesThatNeedNoMigration() throws {
        let dir = try TemporaryDirectory()
        let url = try file(dir)
        var c = Conformance.config(url, [RO0.Thing.self], version: 0)
        c.deleteRealmIfMigrationNeeded = true
        let realm = try Realm(configuration: c)
        #expect(realm.objects(RO0.Thing.self).count == 1)
        // The removed type's data is still in the file.
        #expect(try Conformance.open(url, [RO0.Thing.self, RO0.Extra.self]).objects(RO0.Extra.self).count == 1)
    }

    @Test func M127_theFlagCannotBeCombinedWithReadOnly() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = try TemporaryDirectory()
            var c = Conformance.config(Conformance.url(dir), [RO0.Thing.self])
            c.readOnly = true
            c.deleteRealmIfMigrationNeeded = true
            _ = try Realm(configuration: c)
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("Cannot set `deleteRealmIfMigrationNeeded` when `readOnly` is set."))
    }
}
