import Crypto
import Engine
import _CryptoExtras

/// The bytes of a Realm file as realm-core would see them in memory: the file itself, or the plaintext of an
/// encrypted one, decrypted page by page as the reader asks for them.
///
/// Callers check every range against ``count`` before they ask for it; an image throws only for what its own
/// layer finds (a page that does not authenticate).
protocol RealmImage: AnyObject {
    /// The size of the (decrypted) image in bytes.
    var count: Int { get }
    /// `length` bytes from `offset`, within `0..<count`.
    func bytes(at offset: Int, length: Int) throws -> [UInt8]
}

/// A plain Realm file, mapped read-only: reading it costs page cache, never heap that grows with the file.
final class MappedRealmImage: RealmImage {
    private let region: MappedRegion
    var count: Int { region.count }

    init(region: MappedRegion) { self.region = region }

    func bytes(at offset: Int, length: Int) throws -> [UInt8] {
        region.withUnsafeBytes(in: offset..<(offset + length)) { Array($0) }
    }
}

/// Bytes already in memory: files the tests build, fuzz inputs.
final class MemoryRealmImage: RealmImage {
    private let storage: [UInt8]
    var count: Int { storage.count }

    init(_ storage: [UInt8]) { self.storage = storage }

    func bytes(at offset: Int, length: Int) throws -> [UInt8] { Array(storage[offset..<(offset + length)]) }
}

/// The plaintext of an encrypted Realm file (realm-core's `encrypted_file_mapping.cpp` layout).
///
/// The file is a run of blocks, each one 4096-byte page of 64 IV-table entries followed by up to 64 data pages of
/// 4096 bytes. An entry is `iv1: u32, hmac1: [28], iv2: u32, hmac2: [28]`. A page is authenticated with
/// HMAC-SHA224 over its ciphertext (key bytes 32-63), against `hmac1` and then `hmac2` (a write interrupted between
/// the IV table and the page), and decrypted with AES-256-CBC without padding (key bytes 0-31) under the IV
/// `iv ‖ data position (u64) ‖ 0 (u32)`, all little-endian. An entry whose `iv1` is 0 is a page never written: zeros.
/// The HMAC proves only its half of the key: the caller checks the `T-DB` mnemonic after decrypting page 0.
final class DecryptedRealmImage: RealmImage {
    static let pageBytes = 4096
    static let pagesPerBlock = 64
    static let keyBytes = 64
    /// Decrypted pages kept for reuse (4 MiB): a cluster leaf's columns and collections are spread over the
    /// file, and each page costs an HMAC and a decryption.
    static let cachedPages = 1024

    private let file: any RealmImage
    private let path: String
    private let aesKey: SymmetricKey
    private let hmacKey: [UInt8]
    let count: Int
    private var cache: [Int: [UInt8]] = [:]
    private var cacheOrder: [Int] = []

    init(file: any RealmImage, key: [UInt8], path: String) throws {
        guard key.count == Self.keyBytes else {
            throw RealmFileError(.encryptionKey, "the encryption key has \(key.count) bytes; a Realm key has 64", file: path)
        }
        guard file.count % Self.pageBytes == 0, file.count >= 2 * Self.pageBytes else {
            throw RealmFileError(
                .encryptionKey,
                "the file is \(file.count) bytes, not a whole number of 4096-byte pages of an encrypted Realm file (is it encrypted?)",
                file: path)
        }
        let filePages = file.count / Self.pageBytes
        let blocks = (filePages + Self.pagesPerBlock) / (Self.pagesPerBlock + 1)
        self.file = file
        self.path = path
        self.aesKey = SymmetricKey(data: key[0..<32])
        self.hmacKey = Array(key[32..<64])
        self.count = (filePages - blocks) * Self.pageBytes
    }

    func bytes(at offset: Int, length: Int) throws -> [UInt8] {
        var result = [UInt8]()
        result.reserveCapacity(length)
        var position = offset
        let end = offset + length
        while position < end {
            let page = position / Self.pageBytes
            let plain = try self.page(page)
            let start = position - page * Self.pageBytes
            let stop = min(Self.pageBytes, end - page * Self.pageBytes)
            result += plain[start..<stop]
            position = (page + 1) * Self.pageBytes
        }
        return result
    }

    private func page(_ index: Int) throws -> [UInt8] {
        if let cached = cache[index] { return cached }
        let plain = try decrypt(page: index)
        if cacheOrder.count >= Self.cachedPages {
            cache[cacheOrder.removeFirst()] = nil
        }
        cache[index] = plain
        cacheOrder.append(index)
        return plain
    }

    private func decrypt(page index: Int) throws -> [UInt8] {
        let block = index / Self.pagesPerBlock
        let tableOffset = block * (Self.pagesPerBlock + 1) * Self.pageBytes
        let entry = try file.bytes(at: tableOffset + (index % Self.pagesPerBlock) * 64, length: 64)
        let iv1 = Array(entry[0..<4]), hmac1 = Array(entry[4..<32])
        let iv2 = Array(entry[32..<36]), hmac2 = Array(entry[36..<64])
        if iv1 == [0, 0, 0, 0] { return [UInt8](repeating: 0, count: Self.pageBytes) }
        let fileOffset = tableOffset + (1 + index % Self.pagesPerBlock) * Self.pageBytes
        let cipher = try file.bytes(at: fileOffset, length: Self.pageBytes)
        let mac = SHA224.hmac(key: hmacKey, message: cipher)
        let iv: [UInt8]
        if mac == hmac1 {
            iv = iv1
        } else if iv2 != [0, 0, 0, 0], mac == hmac2 {
            iv = iv2
        } else if cipher.allSatisfy({ $0 == 0 }) {
            return [UInt8](repeating: 0, count: Self.pageBytes)  // realm-core: a file shrunk and grown again
        } else {
            throw RealmFileError(
                .encryptionKey,
                "page \(index) does not authenticate (HMAC-SHA224 mismatch): the encryption key is wrong or the file is damaged",
                file: path, offset: fileOffset)
        }
        var ivBytes = iv
        let position = UInt64(index * Self.pageBytes)
        for shift in stride(from: 0, to: 64, by: 8) { ivBytes.append(UInt8(truncatingIfNeeded: position >> UInt64(shift))) }
        ivBytes += [0, 0, 0, 0]
        do {
            let plain = try AES._CBC.decrypt(cipher, using: aesKey, iv: AES._CBC.IV(ivBytes: ivBytes), noPadding: true)
            return Array(plain)
        } catch {
            throw RealmFileError(.encryptionKey, "page \(index) could not be decrypted: \(error)", file: path, offset: fileOffset)
        }
    }
}
