import Foundation
import Strata
import TestSupport

/// Opening files the way the catalogue's entries write it: open(S, vN, block), in either migration mode.
enum Conformance {
    static func url(_ dir: TemporaryDirectory, _ name: String = "c.realm") -> URL {
        URL(fileURLWithPath: dir.child(name))
    }

    static func config(
        _ url: URL, _ types: [Object.Type], version: UInt64 = 0, mode: Realm.Configuration.MigrationMode = .online,
        block: Realm.MigrationBlock? = nil
    ) -> Realm.Configuration {
        var c = Realm.Configuration(fileURL: url, schemaVersion: version, migrationBlock: block, objectTypes: types)
        c.migrationMode = mode
        return c
    }

    @discardableResult
    static func open(
        _ url: URL, _ types: [Object.Type], version: UInt64 = 0, mode: Realm.Configuration.MigrationMode = .online,
        block: Realm.MigrationBlock? = nil
    ) throws -> Realm {
        try Realm(configuration: config(url, types, version: version, mode: mode, block: block))
    }

    /// The error an open throws, or nil when it succeeds.
    static func openError(
        _ url: URL, _ types: [Object.Type], version: UInt64 = 0, mode: Realm.Configuration.MigrationMode = .online,
        block: Realm.MigrationBlock? = nil
    ) -> Realm.Error? {
        do {
            _ = try open(url, types, version: version, mode: mode, block: block)
            return nil
        } catch let e as Realm.Error {
            return e
        } catch {
            return Realm.Error(.fail, "not a Realm.Error: \(error)")
        }
    }

    static let modes: [Realm.Configuration.MigrationMode] = [.online, .blocking]
}
