import Crypto
import Foundation

/// Encryption at rest: AES-256-GCM with a random 96-bit nonce per sealed unit (a segment block, a segment's
/// index, a log record's payload, a manifest's body), and the unit's place in the database bound into the
/// authenticated data, so that a unit cannot be moved to another place, file or database and still open.
///
/// The 64-byte key (RealmSwift's `encryptionKey`) is not used directly: HKDF-SHA256 derives the AES key from
/// it. A sealed unit is `nonce (12) · ciphertext · tag (16)`, 28 bytes longer than its plaintext. A random
/// nonce repeats with negligible probability below 2^32 units per key (NIST SP 800-38D, 8.3); a database of
/// 32 KiB blocks reaches that at 128 TiB.
package struct Cipher: Sendable {
    /// The length RealmSwift requires of an encryption key.
    package static let keyBytes = 64
    /// What sealing adds to a unit: its nonce and its tag.
    package static let overhead = 12 + 16

    /// The derived AES key. `SymmetricKey` is not marked `Sendable` in this swift-crypto, but it is immutable once
    /// made (its bytes are never written after derivation), so one instance is shared by every thread.
    private final class DerivedKey: @unchecked Sendable {
        let key: SymmetricKey
        init(_ key: SymmetricKey) { self.key = key }
    }
    private let derived: DerivedKey
    private var key: SymmetricKey { derived.key }

    /// Nil when `key` is not 64 bytes long (the caller reports it).
    package init?(key: [UInt8]) {
        guard key.count == Self.keyBytes else { return nil }
        derived = DerivedKey(
            HKDF<SHA256>.deriveKey(
                inputKeyMaterial: SymmetricKey(data: key), salt: Array("strata encryption at rest".utf8),
                info: Array("AES-256-GCM v1".utf8), outputByteCount: 32))
    }

    /// Where a sealed unit belongs; authenticated with it.
    package enum Place {
        /// Block at `offset` of segment `file`.
        case block(file: UInt64, offset: Int)
        /// The index area of segment `file`, at `offset`.
        case index(file: UInt64, offset: Int)
        /// The payload of log record `sequence` in log `file`.
        case logRecord(file: UInt64, sequence: UInt64)
        /// A manifest (its bytes are authenticated, not encrypted: they hold file numbers and counts only).
        case manifest

        var bytes: [UInt8] {
            var out: [UInt8] = []
            switch self {
            case .block(let file, let offset):
                out.append(1)
                out.appendUInt64LE(file)
                out.appendUInt64LE(UInt64(offset))
            case .index(let file, let offset):
                out.append(2)
                out.appendUInt64LE(file)
                out.appendUInt64LE(UInt64(offset))
            case .logRecord(let file, let sequence):
                out.append(3)
                out.appendUInt64LE(file)
                out.appendUInt64LE(sequence)
            case .manifest:
                out.append(4)
            }
            return out
        }
    }

    /// `plain` sealed for `place` in `database` (and `extra`, authenticated but not stored): nonce · ciphertext · tag.
    package func seal(_ plain: UnsafeRawBufferPointer, at place: Place, database: UInt64, authenticating extra: [UInt8] = []) -> [UInt8] {
        var aad = place.bytes
        aad.appendUInt64LE(database)
        aad.append(contentsOf: extra)
        do {
            let box = try AES.GCM.seal(plain, using: key, nonce: AES.GCM.Nonce(), authenticating: aad)
            var out: [UInt8] = []
            out.reserveCapacity(plain.count + Self.overhead)
            out.append(contentsOf: box.nonce)
            out.append(contentsOf: box.ciphertext)
            out.append(contentsOf: box.tag)
            return out
        } catch {
            // Sealing fails only for a nonce or key of the wrong size, which this type never makes.
            fatalError("AES-GCM sealing failed: \(error)")
        }
    }

    /// The plaintext of a unit sealed for `place` in `database`; throws `.corrupted` (naming nothing yet: the
    /// caller adds the file and offset) when it does not authenticate: the wrong key, damaged bytes, or a unit
    /// moved from elsewhere.
    package func open(_ sealed: UnsafeRawBufferPointer, at place: Place, database: UInt64, authenticating extra: [UInt8] = []) throws -> [UInt8] {
        guard sealed.count >= Self.overhead else {
            throw StorageError.corrupted("an encrypted unit of \(sealed.count) bytes is shorter than its nonce and tag", file: nil, offset: nil)
        }
        var aad = place.bytes
        aad.appendUInt64LE(database)
        aad.append(contentsOf: extra)
        do {
            let box = try AES.GCM.SealedBox(
                nonce: AES.GCM.Nonce(data: sealed[sealed.startIndex..<(sealed.startIndex + 12)]),
                ciphertext: sealed[(sealed.startIndex + 12)..<(sealed.endIndex - 16)],
                tag: sealed[(sealed.endIndex - 16)...])
            return Array(try AES.GCM.open(box, using: key, authenticating: aad))
        } catch {
            throw StorageError(
                .decryptionFailed,
                "encrypted bytes do not authenticate: the encryption key is not this database's, or the bytes were damaged or moved",
                file: nil, offset: nil)
        }
    }
}
