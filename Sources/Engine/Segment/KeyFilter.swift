/// A Bloom filter of a segment's keys, built as the segment is written: a point lookup skips a segment whose
/// filter says the key is not there, so that it reads about one segment whatever the partition's count.
///
/// A filter is built in memory as the segment is written and read in place from the mapping afterwards
/// (`mayContain(hash:words:wordCount:probeCount:)`). Ten bits per key and seven probes give about 1% false positives. The probes are derived from one XXH3 of
/// the key (double hashing: `h1 + i * h2`), computed once per lookup for all segments.
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

    package mutating func insert(hash h: UInt64) {
        let bits = UInt64(words.count) * 64
        let h1 = h & 0xFFFF_FFFF, h2 = (h >> 32) | 1
        for i in 0..<UInt64(probeCount) {
            let bit = (h1 &+ i &* h2) % bits
            words[Int(bit >> 6)] |= 1 << (bit & 63)
        }
    }

    /// False only when the key is certainly not in the segment.
    package func mayContain(hash h: UInt64) -> Bool {
        let bits = UInt64(words.count) * 64
        let h1 = h & 0xFFFF_FFFF, h2 = (h >> 32) | 1
        for i in 0..<UInt64(probeCount) {
            let bit = (h1 &+ i &* h2) % bits
            if words[Int(bit >> 6)] & (1 << (bit & 63)) == 0 { return false }
        }
        return true
    }

    /// `mayContain` of a filter read in place from a segment's bytes (`wordCount` little-endian words at the
    /// start of `bytes`): a segment's filter is not copied when its index is loaded.
    static func mayContain(hash h: UInt64, words bytes: UnsafeRawBufferPointer, wordCount: Int, probeCount: UInt32) -> Bool {
        let bits = UInt64(wordCount) * 64
        let h1 = h & 0xFFFF_FFFF, h2 = (h >> 32) | 1
        for i in 0..<UInt64(probeCount) {
            let bit = (h1 &+ i &* h2) % bits
            let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: Int(bit >> 6) * 8, as: UInt64.self))
            if word & (1 << (bit & 63)) == 0 { return false }
        }
        return true
    }
}
