import Engine
import Foundation
import Testing
import TestSupport

@testable import Strata

/// `Realm.Configuration.encryptionKey` as in RealmSwift: a 64-byte key encrypts the file; the wrong key, no
/// key, or a key for a plain file fail the open with RealmSwift's code (`fileAccess`, "Realm file decryption
/// failed"); a key of another length is Realm's programmer error; `writeCopy` encrypts, re-keys or decrypts.
@Suite struct RealmEncryptionTests {
    static let key = Data((0..<64).map { UInt8(truncatingIfNeeded: $0 &* 5 &+ 17) })
    static let otherKey = Data((0..<64).map { UInt8(truncatingIfNeeded: $0 &* 3 &+ 9) })

    static func configuration(_ path: String, key: Data?) -> Realm.Configuration {
        var c = DatabaseFixtureTests.configuration(path)
        c.encryptionKey = key
        return c
    }

    /// Every file of the database, read raw.
    static func rawFiles(_ path: String) throws -> [(String, [UInt8])] {
        try FileManager.default.contentsOfDirectory(atPath: path).map { ($0, [UInt8](try Data(contentsOf: URL(fileURLWithPath: path + "/" + $0)))) }
    }

    /// The fixture's objects, flushed to segments, then one change only in the log.
    static func write(_ path: String, key: Data?) throws {
        let realm = try Realm(configuration: configuration(path, key: key))
        try DatabaseFixtureTests.fill(realm)
        try DatabaseFixtureTests().checkValues(realm)
        try realm.core.shared.database.flush()
        try realm.write { realm.object(ofType: FixtureItem.self, forPrimaryKey: 2)!.note = "a late secret note" }
    }

    @Test func everyValueKindRoundTripsEncryptedAndNoFileHoldsItsText() throws {
        let dir = try TemporaryDirectory()
        let path = dir.child("secret.realm"), plain = dir.child("plain.realm")
        try Self.write(path, key: Self.key)
        try Self.write(plain, key: nil)
        let needles = ["item 17", "tag 1", "any 3", "a late secret note", "FixtureItem"].map { Array($0.utf8) }
        for (name, bytes) in try Self.rawFiles(path) {
            for needle in needles { #expect(!bytes.contains(needle), "\(name) holds \(String(decoding: needle, as: UTF8.self))") }
        }
        // The same data written plain does hold the note in its log: the search above can find text.
        #expect(try Self.rawFiles(plain).contains { $0.1.contains(Array("a late secret note".utf8)) })
        let realm = try Realm(configuration: Self.configuration(path, key: Self.key))
        #expect(realm.object(ofType: FixtureItem.self, forPrimaryKey: 2)?.note == "a late secret note")
        try realm.write { realm.object(ofType: FixtureItem.self, forPrimaryKey: 2)!.note = DatabaseFixtureTests.expected(2).note }
        try DatabaseFixtureTests().checkValues(realm)
        #expect(try schemaVersionAtURL(URL(fileURLWithPath: path), encryptionKey: Self.key) == 0)
    }

    @Test func theWrongKeyNoKeyOrAKeyForAPlainFileIsRealmsDecryptionError() throws {
        let dir = try TemporaryDirectory()
        let encrypted = dir.child("encrypted.realm"), plain = dir.child("plain.realm")
        do {
            try DatabaseFixtureTests.fill(try Realm(configuration: Self.configuration(encrypted, key: Self.key)))
            try DatabaseFixtureTests.fill(try Realm(configuration: Self.configuration(plain, key: nil)))
        }
        for (path, key, hint) in [(encrypted, Self.otherKey, "not this database's"), (encrypted, nil, "is encrypted"), (plain, Self.key, "not encrypted")] {
            do {
                _ = try Realm(configuration: Self.configuration(path, key: key))
                Issue.record("\(path) opened with \(key == nil ? "no key" : "a key it was not written with")")
            } catch let error as Realm.Error {
                #expect(error.code == .fileAccess)
                #expect(error.message.contains("Realm file decryption failed"), "\(error)")
                #expect(error.message.contains(hint), "\(error)")
                #expect(error.fileURL?.path == path)
            }
        }
        // Nothing was written by the refused opens: the right configurations still open.
        try DatabaseFixtureTests().checkValues(try Realm(configuration: Self.configuration(encrypted, key: Self.key)))
        try DatabaseFixtureTests().checkValues(try Realm(configuration: Self.configuration(plain, key: nil)))
    }

    @Test func aFileOpenInThisProcessRefusesAnotherKey() throws {
        let dir = try TemporaryDirectory()
        let path = dir.child("open.realm")
        let realm = try Realm(configuration: Self.configuration(path, key: Self.key))
        #expect { _ = try Realm(configuration: Self.configuration(path, key: Self.otherKey)) } throws: {
            "\($0)".contains("already opened with different encryption key")
        }
        withExtendedLifetime(realm) {}
    }

    @Test func writeCopyEncryptsReKeysAndDecrypts() throws {
        let dir = try TemporaryDirectory()
        let plain = dir.child("plain.realm")
        let realm = try Realm(configuration: Self.configuration(plain, key: nil))
        try DatabaseFixtureTests.fill(realm)
        // Plain -> encrypted -> another key -> plain again, each checked whole.
        let steps: [(String, Data?)] = [("a.realm", Self.key), ("b.realm", Self.otherKey), ("c.realm", nil)]
        var source = realm
        for (name, key) in steps {
            let target = Self.configuration(dir.child(name), key: key)
            try source.writeCopy(configuration: target)
            let copy = try Realm(configuration: target)
            try DatabaseFixtureTests().checkValues(copy)
            if key != nil {
                for (file, bytes) in try Self.rawFiles(dir.child(name)) { #expect(!bytes.contains(Array("item 17".utf8)), "\(name)/\(file)") }
            }
            source = copy
        }
    }

    @Test func aKeyOfAnotherLengthIsRealmsProgrammerError() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = try TemporaryDirectory()
            var config = Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("short.realm")))
            config.encryptionKey = Data(repeating: 1, count: 32)
            _ = try Realm(configuration: config)
        }
        let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(text.contains("Encryption key must be exactly 64 bytes long"), "\(text.suffix(400))")
    }
}

