import Engine
import Foundation
import FuzzTargets
import Testing
import TestSupport

/// Encryption at rest in the engine: what an encrypted database writes holds no plaintext, reads back whole
/// with its key, and refuses to open (`.decryptionFailed`) with another key, without one, or a plain database
/// with one; flipped ciphertext is an error naming the file and offset.
@Suite struct EncryptionTests {
    static let key: [UInt8] = (0..<64).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
    static let otherKey: [UInt8] = (0..<64).map { UInt8(truncatingIfNeeded: $0 &* 11 &+ 5) }
    /// A value that is easy to look for in the files.
    static let marker = Array("plaintext-marker-".utf8)

    static func options(_ key: [UInt8]?) -> Database.Options {
        var o = Database.Options()
        o.backgroundMaintenance = false
        o.memtableFlushBytes = 64 * 1024
        o.encryptionKey = key
        return o
    }

    static func value(_ i: Int) -> [UInt8] { marker + Array("\(i)".utf8) + [UInt8](repeating: UInt8(i % 251), count: i % 40) }

    /// A database with segments (several flushes, a compaction), then commits only in the log, left as a
    /// crashed process leaves it. Returns the expected contents of partition 1.
    static func make(_ fs: MemoryFileSystem, key: [UInt8]?) throws -> [[UInt8]: [UInt8]] {
        var expected: [[UInt8]: [UInt8]] = [:]
        let db = try Database.open(at: "/db", options: options(key), fileSystem: fs)
        for round in 0..<4 {
            try db.write { tx in
                for i in (round * 1000)..<(round * 1000 + 1500) {
                    try tx.put(EngineTests.key(i), value(i), in: 1)
                    expected[EngineTests.key(i)] = value(i)
                }
            }
            try db.flush()
        }
        try db.compact()
        try db.write { tx in
            for i in 0..<50 {
                try tx.delete(EngineTests.key(i * 3), in: 1)
                expected[EngineTests.key(i * 3)] = nil
            }
            try tx.put(EngineTests.key(99_999), value(7), in: 1)
            expected[EngineTests.key(99_999)] = value(7)
        }
        db.simulateProcessDeath()
        return expected
    }

    static func readAll(_ db: Database) throws -> [[UInt8]: [UInt8]] {
        var out: [[UInt8]: [UInt8]] = [:]
        try db.snapshot().scan(1) { k, v in
            out[[UInt8](k)] = [UInt8](v)
            return true
        }
        return out
    }

    static func files(_ fs: MemoryFileSystem) throws -> [(String, [UInt8])] {
        try fs.listDirectory(atPath: "/db").compactMap { name in fs.contents(ofFile: "/db/" + name).map { (name, $0) } }
    }

    @Test func anEncryptedDatabaseReadsBackWithItsKeyAndHoldsNoPlaintext() throws {
        let fs = MemoryFileSystem()
        let expected = try Self.make(fs, key: Self.key)
        for (name, bytes) in try Self.files(fs) {
            #expect(!bytes.contains(Self.marker), "\(name) holds plaintext")
        }
        // Recovery replays the sealed log; lookups, scans and the index of every segment open.
        let db = try Database.open(at: "/db", options: Self.options(Self.key), fileSystem: fs)
        #expect(try Self.readAll(db) == expected)
        #expect(try db.snapshot().get(EngineTests.key(1), in: 1) == Self.value(1))
        #expect(try db.snapshot().get(EngineTests.key(3), in: 1) == nil)
        #expect(db.checkConsistency() == [])
        try db.close()
        // A plain database of the same data holds it in the clear (the check above can fail).
        let plain = MemoryFileSystem()
        _ = try Self.make(plain, key: nil)
        #expect(try Self.files(plain).contains { $0.1.contains(Self.marker) })
    }

    @Test func theWrongKeyNoKeyAndAKeyForAPlainDatabaseAreRefused() throws {
        let fs = MemoryFileSystem()
        let expected = try Self.make(fs, key: Self.key)
        for (key, words) in [(Self.otherKey, "not this database's"), (nil, "is encrypted")] as [([UInt8]?, String)] {
            do {
                _ = try Database.open(at: "/db", options: Self.options(key), fileSystem: fs)
                Issue.record("opened with \(key == nil ? "no key" : "the wrong key")")
            } catch let error as StorageError {
                #expect(error.code == .decryptionFailed)
                #expect(error.message.contains(words), "\(error)")
                #expect(error.file?.hasPrefix("MANIFEST-") == true, "\(error)")
            }
        }
        let plain = MemoryFileSystem()
        _ = try Self.make(plain, key: nil)
        #expect { _ = try Database.open(at: "/db", options: Self.options(Self.key), fileSystem: plain) } throws: {
            ($0 as? StorageError)?.code == .decryptionFailed && "\($0)".contains("not encrypted")
        }
        // A key of the wrong length is the caller's mistake.
        #expect { _ = try Database.open(at: "/db", options: Self.options([1, 2, 3]), fileSystem: fs) } throws: {
            ($0 as? StorageError)?.code == .invalidArgument
        }
        // The right key still opens it: nothing above wrote to it.
        let db = try Database.open(at: "/db", options: Self.options(Self.key), fileSystem: fs)
        #expect(try Self.readAll(db) == expected)
        try db.close()
    }

    @Test func flippedCiphertextIsAnErrorNamingTheFileAndOffset() throws {
        let fs = MemoryFileSystem()
        _ = try Self.make(fs, key: Self.key)
        do {
            let db = try Database.open(at: "/db", options: Self.options(Self.key), fileSystem: fs)
            try db.close()
        }
        let segment = try #require(try fs.listDirectory(atPath: "/db").filter { $0.hasSuffix(".seg") }.sorted().last)
        var bytes = try #require(fs.contents(ofFile: "/db/" + segment))
        // A byte of the first block's ciphertext, with the checksums made to match again (an attacker's edit, not
        // disk damage): only authentication can catch it.
        bytes[32 + 24 + 40] ^= 0x40
        bytes = EngineFuzzing.repairingSegmentChecksums(bytes)
        fs.replaceContents(ofFile: "/db/" + segment, with: bytes)
        let db = try Database.open(at: "/db", options: Self.options(Self.key), fileSystem: fs)
        do {
            _ = try Self.readAll(db)
            Issue.record("a forged block was read")
        } catch let error as StorageError {
            #expect(error.code == .decryptionFailed, "\(error)")
            #expect(error.file == segment, "\(error)")
            #expect(error.offset == 32, "\(error)")
        }
        #expect(db.checkConsistency().contains { $0.contains(segment) })
        try db.close()
    }

    /// Edits a plain field of the newest segment (checksums repaired after), reopens, and returns the error of
    /// reading everything, nil when everything read back as written.
    static func readAfterEditing(_ edit: (inout [UInt8]) -> Void) throws -> StorageError? {
        let fs = MemoryFileSystem()
        let expected = try make(fs, key: key)
        do {
            let db = try Database.open(at: "/db", options: options(key), fileSystem: fs)
            try db.close()
        }
        let segment = try #require(try fs.listDirectory(atPath: "/db").filter { $0.hasSuffix(".seg") }.sorted().last)
        var bytes = try #require(fs.contents(ofFile: "/db/" + segment))
        edit(&bytes)
        fs.replaceContents(ofFile: "/db/" + segment, with: EngineFuzzing.repairingSegmentChecksums(bytes))
        do {
            let db = try Database.open(at: "/db", options: options(key), fileSystem: fs)
            defer { try? db.close() }
            let seen = try readAll(db)
            #expect(seen == expected)
            return nil
        } catch let error as StorageError {
            return error
        }
    }

    @Test func editedBlockHeadersFootersAndSaltsDoNotAuthenticate() throws {
        let edits: [(String, (inout [UInt8]) -> Void)] = [
            // One entry fewer in the first block: its first key would vanish without an error.
            ("entry count", { b in b[40] &-= 1 }),
            ("raw length", { b in b[36] &+= 4 }),
            ("LZ4 flag", { b in b[44] ^= 1 }),
            ("header salt", { b in b[20] ^= 1 }),
            ("footer user metadata", { b in b[b.count - 88 + 64] ^= 1 }),
            ("footer sequence", { b in b[b.count - 88 + 48] ^= 1 }),
        ]
        for (what, edit) in edits {
            let error = try Self.readAfterEditing(edit)
            #expect(error != nil, "an edited \(what) read back")
            #expect(error.map { [.decryptionFailed, .corrupted].contains($0.code) } ?? true, "\(what): \(String(describing: error))")
        }
        // The same path with no edit reads everything back (the check above can fail).
        #expect(try Self.readAfterEditing { _ in } == nil)
    }

    @Test func aCipherSealsAndOpensOnlyAtItsPlace() throws {
        let cipher = try #require(Cipher(key: Self.key))
        let plain: [UInt8] = Array("a block".utf8)
        let sealed = plain.withUnsafeBytes { cipher.seal($0, at: .block(file: 7, offset: 32), database: 9) }
        #expect(sealed.count == plain.count + Cipher.overhead)
        #expect(try sealed.withUnsafeBytes { try cipher.open($0, at: .block(file: 7, offset: 32), database: 9) } == plain)
        for (place, database) in [(Cipher.Place.block(file: 8, offset: 32), UInt64(9)), (.block(file: 7, offset: 64), 9), (.block(file: 7, offset: 32), 10)] {
            #expect(throws: StorageError.self) { try sealed.withUnsafeBytes { try cipher.open($0, at: place, database: database) } }
        }
        // Two seals of the same bytes differ (a fresh nonce each time).
        #expect(plain.withUnsafeBytes { cipher.seal($0, at: .block(file: 7, offset: 32), database: 9) } != sealed)
        #expect(Cipher(key: [UInt8](repeating: 0, count: 32)) == nil)
    }
}
