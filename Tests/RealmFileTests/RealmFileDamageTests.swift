import Foundation
import Testing
import TestSupport
@testable import RealmFile
import RealmFileTesting

/// Damaged and hostile Realm files end in a `RealmFileError` or in values, never in a trap, a hang or another
/// error: cuts, flipped bytes, refs past the end and refs back to an ancestor (a loop), on files of the project's
/// writer and on small files realm-core wrote. Each test takes a deterministic sample of its mutations (the header
/// always whole); `STRATA_TEST_SCALE=N` takes N times as many, and at 100 every mutation is tried (a run of an hour).
@Suite struct RealmFileDamageTests {
    /// Reads `bytes` as far as it goes; records anything but success or a RealmFileError.
    static func expectTypedOutcome(_ bytes: [UInt8], _ what: @autoclosure () -> String, key: [UInt8]? = nil) {
        do {
            let file = try RealmFile(bytes: bytes, name: "damaged.realm", encryptionKey: key)
            _ = try RealmFileFuzzing.readEverything(file)
        } catch let e as RealmFileError {
            if e.file != "damaged.realm" { Issue.record("\(what()): the error names \(e.file)") }
        } catch {
            Issue.record("\(what()): \(error) is not a RealmFileError")
        }
    }

    static func files() -> [(String, [UInt8])] {
        var out = RealmFileFuzzing.seedFiles().enumerated().map { ("writer seed \($0.offset)", $0.element) }
        if SharedFixtures.realmFixturesPresent {
            for name in ["realm-core/test_upgrade_database_20.realm", "realm-core/test_upgrade_database_4_22.realm", "realm-swift/migration-example-default-v5.realm"] {
                // try?: the fixtures are checked to be present above; a missing one leaves it out of the sweep.
                if let bytes = try? Data(contentsOf: URL(fileURLWithPath: SharedFixtures.realmFixture(name))) { out.append((name, [UInt8](bytes))) }
            }
        }
        return out
    }

    /// The offsets of a file to damage: the header and first nodes whole, then a sample of `perFile` (every
    /// offset when the scale is 100 or more).
    static func offsets(_ count: Int, perFile: Int, seed: UInt64, stride step: Int = 1) -> [Int] {
        let all = Array(Swift.stride(from: 0, to: count, by: step))
        if Seeds.scale >= 100 { return all }
        var rng = SplitMix64(seed: seed)
        let head = all.filter { $0 < 96 }
        let rest = all.filter { $0 >= 96 }
        return head + (0..<min(rest.count, perFile * Seeds.scale)).map { _ in rest[Int(rng.next() % UInt64(rest.count))] }
    }

    @Test func cutsEndInATypedError() {
        for (i, (name, bytes)) in Self.files().enumerated() {
            for length in Self.offsets(bytes.count, perFile: 150, seed: UInt64(i)) {
                Self.expectTypedOutcome(Array(bytes.prefix(length)), "\(name) cut at \(length)")
            }
        }
    }

    @Test func flippedBytesEndInValuesOrATypedError() {
        for (i, (name, bytes)) in Self.files().enumerated() {
            for offset in Self.offsets(bytes.count, perFile: 120, seed: UInt64(100 + i)) {
                for mask: UInt8 in [0xff, 0x01, 0x80] {
                    var damaged = bytes
                    damaged[offset] ^= mask
                    Self.expectTypedOutcome(damaged, "\(name), byte \(offset) ^ \(mask)")
                }
            }
        }
    }

    /// Each 2-, 4- and 8-byte little-endian field overwritten with a ref past the end, with the top ref (an
    /// ancestor of everything: a loop), with the file's first node and with an odd value.
    @Test func refsPastTheEndAndLoopsEndInATypedError() {
        for (name, bytes) in Self.files() {
            let top = bytes.count >= 8 ? Int((0..<4).reduce(0) { $0 | Int(bytes[$1]) << (8 * $1) }) : 0
            for offset in Self.offsets(bytes.count, perFile: 60, seed: UInt64(bytes.count), stride: 2) where offset >= 24 {
                for width in [2, 4, 8] where offset + width <= bytes.count {
                    for value in [bytes.count + 64, top, 24, 0x7fff_ffff, 1_000_001] {
                        var damaged = bytes
                        for i in 0..<width { damaged[offset + i] = UInt8(truncatingIfNeeded: value >> (8 * i)) }
                        Self.expectTypedOutcome(damaged, "\(name), \(width) bytes at \(offset) = \(value)")
                    }
                }
            }
        }
    }

    /// A node whose child is the node itself, and a mixed list that contains itself: a loop is an error.
    @Test func aRefToItselfIsAnError() throws {
        var w = RealmFileWriter()
        let leaf = w.array([5, 6, 7])
        _ = leaf
        let bytes = RealmFileFuzzing.seedFiles()[2]
        // Point every has-refs array's first element at that array itself.
        var damaged = 0
        for offset in stride(from: 24, to: bytes.count - 8, by: 8) where Array(bytes[offset..<(offset + 4)]) == [0x41, 0x41, 0x41, 0x41] {
            let flags = bytes[offset + 4]
            guard flags & 0x40 != 0, flags & 7 >= 4 else { continue }  // has refs, 8 bits or wider
            var copy = bytes
            let width = (1 << Int(flags & 7)) >> 1
            for i in 0..<(width / 8) { copy[offset + 8 + i] = UInt8(truncatingIfNeeded: offset >> (8 * i)) }
            Self.expectTypedOutcome(copy, "node at \(offset) referring to itself")
            damaged += 1
        }
        #expect(damaged > 10)
    }

    /// Flipped bytes of an encrypted file: the page no longer authenticates, or (in the IV table) says it was never
    /// written; either way a typed error, never decrypted garbage taken for data.
    @Test func damagedEncryptedFilesEndInATypedError() throws {
        let encrypted = try RealmFileFuzzing.encryptedSeedFiles()[2]
        var rng = SplitMix64(seed: 35)
        for _ in 0..<(60 * Seeds.scale) {
            var damaged = encrypted
            let offset = Int(rng.next() % UInt64(damaged.count))
            damaged[offset] ^= UInt8(truncatingIfNeeded: rng.next() | 1)
            Self.expectTypedOutcome(damaged, "encrypted, byte \(offset)", key: RealmFileFuzzing.key)
        }
    }

    /// A file of a format before clusters (9) or after the last RealmSwift release (25): a clear refusal.
    @Test(arguments: [9, 12, 19, 25])
    func unreadableFormatsAreRefusedByName(format: UInt8) throws {
        var bytes = RealmFileFuzzing.seedFiles()[0]
        bytes[20] = format
        #expect { try RealmFile(bytes: bytes, name: "old.realm") } throws: { error in
            (error as? RealmFileError)?.code == .unsupportedFormat && "\(error)".contains("file format \(format)")
                // Every Realm SDK of a realm-core release writes the same format: the message names the fix, no SDK.
                && "\(error)".contains(format < 10 ? "any Realm SDK built on realm-core 6 to 13" : format < 20 ? "pre-release builds of realm-core 10" : "newer than any Realm SDK wrote")
        }
    }
}
