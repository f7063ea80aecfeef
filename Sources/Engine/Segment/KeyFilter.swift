/// A Bloom filter of a segment's keys, built as the segment is written: a point lookup skips a segment whose
/// filter says the key is not there, so that it reads about one segment whatever the partition's count.
///
/// A filter is built in memory as the segment is written and read in place from the mapping afterwards
/// (`mayContain(hash:words:wordCount:probeCount:)`). Ten bits per key and seven probes give about 1% false positives. The probes are derived from one XXH3 of
/// the key (double hashing: bit `(h1 + i * h2) % bits` for probe `i`), computed once per lookup for all
/// segments. The bits are found by stepping, with two divisions per key rather than one per probe (a 64-bit
/// division costs tens of cycles): `h1 + i * h2` stays below 2^64 for every probe count, so adding
/// `h2 % bits` and wrapping once gives the same bit as dividing.
package struct KeyFilter: Sendable {
    static let bitsPerKey = 10
    static let probes: UInt32 = 7

    private(set) var words: [UInt64]
    let probeCount: UInt32

    /// An empty filter for about `expectedKeys` keys.
    package init(expectedKeys: Int) {
        words = Array(repeating: 0, count: max(1, (expectedKeys * Self.bitsPerKey + 63) / 64))
        probeCount = Self.probes
    }

    /// A filter as `suspend()` of a segment writer left it.
    init(words: [UInt64], probeCount: UInt32) {
        self.words = words
        self.probeCount = probeCount
    }

    package static func hash(_ key: UnsafeRawBufferPointer) -> UInt64 { Checksum.xxh3(key, seed: 0x6B65_7966_696C_7472) }

    /// Probe 0's bit of hash `h` in a filter of `bits` bits, and the step from one probe's bit to the next.
    @inline(__always)
    static func firstProbe(_ h: UInt64, bits: UInt64) -> (bit: UInt64, step: UInt64) {
        let h1 = h & 0xFFFF_FFFF, h2 = (h >> 32) | 1
        return (h1 % bits, h2 % bits)
    }

    /// The bit of the probe after the one at `bit` (both below `bits`, so one subtraction wraps the sum).
    @inline(__always)
    static func nextProbe(_ bit: UInt64, _ step: UInt64, bits: UInt64) -> UInt64 {
        let next = bit &+ step
        return next >= bits ? next &- bits : next
    }

    package mutating func insert(hash h: UInt64) {
        let bits = UInt64(words.count) * 64
        var (bit, step) = Self.firstProbe(h, bits: bits)
        for _ in 0..<probeCount {
            words[Int(bit >> 6)] |= 1 << (bit & 63)
            bit = Self.nextProbe(bit, step, bits: bits)
        }
    }

    /// False only when the key is certainly not in the segment.
    package func mayContain(hash h: UInt64) -> Bool {
        let bits = UInt64(words.count) * 64
        var (bit, step) = Self.firstProbe(h, bits: bits)
        for _ in 0..<probeCount {
            if words[Int(bit >> 6)] & (1 << (bit & 63)) == 0 { return false }
            bit = Self.nextProbe(bit, step, bits: bits)
        }
        return true
    }

    /// `mayContain` of a filter read in place from a segment's bytes (`wordCount` little-endian words at the
    /// start of `bytes`): a segment's filter is not copied when its index is loaded.
    static func mayContain(hash h: UInt64, words bytes: UnsafeRawBufferPointer, wordCount: Int, probeCount: UInt32) -> Bool {
        let bits = UInt64(wordCount) * 64
        var (bit, step) = firstProbe(h, bits: bits)
        for _ in 0..<probeCount {
            defer { bit = nextProbe(bit, step, bits: bits) }
            let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: Int(bit >> 6) * 8, as: UInt64.self))
            if word & (1 << (bit & 63)) == 0 { return false }
        }
        return true
    }
}
