@testable import Engine
import Testing
import TestSupport

/// The per-segment key filter: never a false negative, about 1% false positives.
@Suite struct KeyFilterTests {
    @Test func noFalseNegativesAndFewFalsePositives() {
        var filter = KeyFilter(expectedKeys: 10_000)
        for i in 0..<10_000 { key(i).withUnsafeBytes { filter.insert(hash: KeyFilter.hash($0)) } }
        for i in 0..<10_000 { #expect(key(i).withUnsafeBytes { filter.mayContain(hash: KeyFilter.hash($0)) }) }
        let falsePositives = (10_000..<110_000).filter { i in key(i).withUnsafeBytes { filter.mayContain(hash: KeyFilter.hash($0)) } }.count
        #expect(falsePositives < 2_000, "\(falsePositives) false positives in 100,000")
    }

    /// The probes are the bits of double hashing, `(h1 + i * h2) % bits`, as every segment written so far set
    /// them: stepping instead of dividing changes no bit, in filters of one word to many, with the probe
    /// counts a segment may declare.
    @Test func theProbesAreTheBitsOfDoubleHashing() {
        var rng = SplitMix64(seed: 41)
        for round in 0..<(400 * Seeds.scale) {
            let wordCount = [1, 2, 3, 7, 64, 1000, 15_625][round % 7]
            let probeCount: UInt32 = [7, 1, 0, 13, 100][round % 5]
            let h = rng.next()
            let bits = UInt64(wordCount) * 64
            let h1 = h & 0xFFFF_FFFF, h2 = (h >> 32) | 1
            var expected = [UInt64](repeating: 0, count: wordCount)
            for i in 0..<UInt64(probeCount) {
                let bit = (h1 + i * h2) % bits
                expected[Int(bit >> 6)] |= 1 << (bit & 63)
            }
            var filter = KeyFilter(words: [UInt64](repeating: 0, count: wordCount), probeCount: probeCount)
            filter.insert(hash: h)
            #expect(filter.words == expected, "round \(round): \(wordCount) words, \(probeCount) probes")
            #expect(filter.mayContain(hash: h))
            let stored = expected.flatMap { w in (0..<8).map { UInt8(truncatingIfNeeded: w >> (8 * $0)) } }
            #expect(stored.withUnsafeBytes { KeyFilter.mayContain(hash: h, words: $0, wordCount: wordCount, probeCount: probeCount) })
            // A filter lacking any one of the probe bits says no.
            if let bit = expected.indices.first(where: { expected[$0] != 0 }) {
                var missing = expected
                missing[bit] &= missing[bit] - 1
                let lacking = KeyFilter(words: missing, probeCount: probeCount)
                #expect(!lacking.mayContain(hash: h), "round \(round)")
            }
        }
    }

    /// Lookups of keys a segment lacks are answered without reading its blocks: many segments of disjoint
    /// keys still give every key and every absence right.
    @Test func lookupsAcrossManySegmentsAreRight() throws {
        let fs = MemoryFileSystem()
        var options = Database.Options()
        options.backgroundMaintenance = false
        options.compactionSegmentTrigger = nil
        let db = try Database.open(at: "/db", options: options, fileSystem: fs)
        for s in 0..<12 {
            try db.write { tx in for i in 0..<200 { try tx.put(key(s * 1000 + i), [UInt8(s)], in: 1) } }
            try db.flush()
        }
        #expect(db.statistics().segmentCount == 12)
        let snapshot = try db.snapshot()
        for s in 0..<12 {
            #expect(try snapshot.get(key(s * 1000 + 7), in: 1) == [UInt8(s)])
            #expect(try snapshot.get(key(s * 1000 + 500), in: 1) == nil)
        }
        snapshot.close()
        try db.close()
    }
}
