import Crypto
import Foundation
import Testing
import TestSupport
import _CryptoExtras
@testable import RealmFile
import RealmFileTesting

/// SHA-224 and HMAC-SHA224 against their standards' vectors; Realm's page encryption through files encrypted here
/// with its layout (an IV table page before every 64 data pages), and the encrypted fixtures with the right key,
/// the wrong key and no key.
@Suite struct RealmFileEncryptionTests {
    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    @Test func sha224MatchesFIPS180Vectors() {
        #expect(Self.hex(SHA224.hash(Array("abc".utf8))) == "23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7")
        #expect(Self.hex(SHA224.hash([UInt8]())) == "d14a028c2a3a2bc9476102bb288234c415a2b01f828ea62ac5b3e42f")
        #expect(Self.hex(SHA224.hash(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)))
            == "75388b16512776cc5dba5da1fd890150b0c6455cb4f58b1952522525")
        #expect(Self.hex(SHA224.hash([UInt8](repeating: 0x61, count: 1_000_000))) == "20794655980c91d8bbb4c1ea97618a4bf03f42581948b2ee4ee7ad67")
    }

    @Test func hmacSHA224MatchesRFC4231Vectors() {
        #expect(Self.hex(SHA224.hmac(key: [UInt8](repeating: 0x0b, count: 20), message: Array("Hi There".utf8)))
            == "896fb1128abbdf196832107cd49df33f47b4b1169912ba4f53684b22")
        #expect(Self.hex(SHA224.hmac(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8)))
            == "a30e01098bc6dbbf45690f3a7e9e6d0f8bbea2a39e6148008fd05e44")
        #expect(Self.hex(SHA224.hmac(key: [UInt8](repeating: 0xaa, count: 20), message: [UInt8](repeating: 0xdd, count: 50)))
            == "7fb3cb3588c6c1f6ffa9694d7d6ad2649365b0c1f65d69d1ec8333ea")
        #expect(Self.hex(SHA224.hmac(key: [UInt8](repeating: 0xaa, count: 131), message: Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)))
            == "95e9a0db962095adaebe9b2d6f0dbce2d499f112f2d2b7273fa6870e")
    }

    static func encrypt(_ plain: [UInt8], key: [UInt8], interrupted: Set<Int> = [], unwritten: Set<Int> = []) throws -> [UInt8] {
        try RealmFileWriter.encrypt(plain, key: key, interrupted: interrupted, unwritten: unwritten)
    }

    static func sampleFile(objects: Int) -> [UInt8] {
        var writer = RealmFileWriter()
        writer.schemaVersion = 9
        let table = RealmFileWriter.Table(
            name: "Note", properties: [.init("text", .string), .init("n", .int)],
            objects: (0..<objects).map { (Int64($0), [.string(String(repeating: "note \($0) ", count: 20)), .int(Int64($0))]) })
        return writer.write([table])
    }

    @Test func anEncryptedFileReadsAsItsPlaintext() throws {
        let key = (0..<64).map { UInt8(truncatingIfNeeded: $0 * 5 + 1) }
        let plain = Self.sampleFile(objects: 3000)
        #expect(plain.count > 65 * 4096, "the file spans more than one IV block")
        let encrypted = try Self.encrypt(plain, key: key, interrupted: [3, 70])
        let file = try RealmFile(bytes: encrypted, name: "note.realm", encryptionKey: key)
        #expect(file.isEncrypted)
        #expect(file.schemaVersion == 9)
        var count = 0
        try file.forEachObject(in: file.classes[0]) { object in
            #expect(object.values[1] == .int(object.key))
            count += 1
        }
        #expect(count == 3000)
    }

    @Test func aWrongKeyOrNoKeyIsAnErrorNeverGarbage() throws {
        let key = (0..<64).map { UInt8(truncatingIfNeeded: $0 * 5 + 1) }
        let encrypted = try Self.encrypt(Self.sampleFile(objects: 10), key: key)
        var wrongHMAC = key
        wrongHMAC[40] ^= 1
        #expect { try RealmFile(bytes: encrypted, name: "note.realm", encryptionKey: wrongHMAC) } throws: { error in
            (error as? RealmFileError)?.code == .encryptionKey && "\(error)".contains("does not authenticate")
        }
        // The HMAC half right and the AES half wrong: every page authenticates, the plaintext is garbage.
        var wrongAES = key
        wrongAES[3] ^= 1
        #expect { try RealmFile(bytes: encrypted, name: "note.realm", encryptionKey: wrongAES) } throws: { error in
            (error as? RealmFileError)?.code == .encryptionKey && "\(error)".contains("T-DB")
        }
        #expect { try RealmFile(bytes: encrypted, name: "note.realm") } throws: { error in
            (error as? RealmFileError)?.code == .encryptionKey
        }
        #expect { try RealmFile(bytes: encrypted, name: "note.realm", encryptionKey: Array(key.prefix(32))) } throws: { error in
            (error as? RealmFileError)?.code == .encryptionKey && "\(error)".contains("64")
        }
        #expect { try RealmFile(bytes: Self.sampleFile(objects: 10), name: "plain.realm", encryptionKey: key) } throws: { error in
            (error as? RealmFileError)?.code == .encryptionKey && "\(error)".contains("not encrypted")
        }
    }

    @Test func anUnwrittenPageReadsAsZeros() throws {
        let key = (0..<64).map { UInt8(truncatingIfNeeded: $0 * 5 + 1) }
        let plain = Self.sampleFile(objects: 10)
        let image = try DecryptedRealmImage(
            file: MemoryRealmImage(try Self.encrypt(plain + [UInt8](repeating: 0, count: 8192), key: key, unwritten: [2])),
            key: key, path: "note.realm")
        #expect(try image.bytes(at: 0, length: plain.count) == plain)
        #expect(try image.bytes(at: 8192, length: 4096) == [UInt8](repeating: 0, count: 4096))
    }

    @Test(.enabled(if: SharedFixtures.realmFixturesPresent, "../shared/realm-fixtures is absent"))
    func realmCoresEncryptedFixturesDecrypt() throws {
        // realm-core's own test file: format 9 once decrypted (older than the layout read), so the header is checked.
        let oldKey = Array("1234567890123456789012345678901123456789012345678901234567890123".utf8)
        let path = SharedFixtures.realmFixture("realm-core/test_shared_decrypt_4k_page.realm")
        let region = MemoryRealmImage(try [UInt8](Data(contentsOf: URL(fileURLWithPath: path))))
        let image = try DecryptedRealmImage(file: region, key: oldKey, path: path)
        let header = try image.bytes(at: 0, length: 24)
        #expect(Array(header[16..<20]) == Array("T-DB".utf8))
        #expect { try RealmFile(path: path, encryptionKey: oldKey) } throws: { error in
            (error as? RealmFileError)?.code == .unsupportedFormat && "\(error)".contains("format 9")
        }
        // Today's test key shares the HMAC half: every page authenticates and the header is garbage.
        let todaysKey = [0] + Array("123456789012345678901234567890123456789012345678901234567890123".utf8)
        #expect { try RealmFile(path: path, encryptionKey: todaysKey) } throws: { error in
            (error as? RealmFileError)?.code == .encryptionKey && "\(error)".contains("T-DB")
        }
        let encrypted = SharedFixtures.realmFixture("format-24/all-types-encrypted.realm")
        #expect { try RealmFile(path: encrypted) } throws: { ($0 as? RealmFileError)?.code == .encryptionKey }
        var wrong = Format24FixtureTests.encryptionKey
        wrong[50] ^= 0x80
        #expect { try RealmFile(path: encrypted, encryptionKey: wrong) } throws: { ($0 as? RealmFileError)?.code == .encryptionKey }
    }
}
