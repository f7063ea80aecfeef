import Engine
import Testing
import TestSupport

/// The size-tiered compaction policy: bounded segments per partition, logarithmic rewriting, deletions
/// dropped only by merges that reach the oldest data, and every flush (a close's too) counted.
@Suite struct CompactionPolicyTests {
    @Test func theWindowMergesSimilarSizesFromTheNewest() {
        func w(_ sizes: [Int], _ minimum: Int) -> Range<Int>? { Database.compactionWindow(sizes: sizes, minimumSegments: minimum) }
        #expect(w([10, 10, 10], 4) == 0..<3)
        #expect(w([10, 10, 1000], 4) == nil)
        #expect(w([10, 10, 10, 10, 1000], 4) == 0..<4)
        #expect(w([10, 10, 10, 10, 40, 1000], 4) == 0..<5)
        #expect(w([10, 10, 10, 1000], 4) == nil)
        // Newer segments as large as the oldest: everything, so that deletions and old values go.
        #expect(w([300, 300, 300, 200], 4) == 0..<4)
        #expect(w([5], 4) == nil)
        // A round of deletions is small in bytes but many entries: the partition is merged whole.
        #expect(Database.compactionWindow(sizes: [10, 10, 1000], entries: [500, 500, 1000], minimumSegments: 4) == 0..<3)
    }

    /// A simulation of flushes of equal size: the segment count stays logarithmic and each byte is written
    /// a logarithmic number of times.
    @Test func segmentsAndRewritesStayLogarithmic() {
        var sizes: [Int] = []
        var written = 0
        for _ in 0..<1000 {
            sizes.insert(100, at: 0)
            written += 100
            while let window = Database.compactionWindow(sizes: sizes, minimumSegments: 4) {
                let merged = sizes[window].reduce(0, +)
                written += merged
                sizes.replaceSubrange(window, with: [merged])
            }
            #expect(sizes.count <= 16, "\(sizes)")
        }
        let amplification = Double(written) / Double(1000 * 100)
        #expect(amplification < 8, "write amplification \(amplification)")
    }

    /// An app that writes a little at each launch: every close leaves a segment, and the next opens merge
    /// them in the background, so the count stays bounded and every commit is there.
    @Test func manyShortSessionsKeepFewSegments() throws {
        let fs = MemoryFileSystem()
        var model = ReferenceStore()
        var rng = SplitMix64(seed: 5)
        var options = Database.Options()
        options.backgroundMaintenance = true
        for session in 0..<60 {
            let db = try Database.open(at: "/db", options: options, fileSystem: fs)
            try db.write { tx in
                for _ in 0..<20 {
                    let k = key(Int(rng.next() % 500)), v = rng.bytes(20)
                    try tx.put(k, v, in: 1)
                    model.put(k, v, in: 1)
                }
                if session % 7 == 3 {
                    let k = key(Int(rng.next() % 500))
                    try tx.delete(k, in: 1)
                    model.delete(k, in: 1)
                }
            }
            db.waitForMaintenance()
            #expect(db.statistics().segmentCount <= 12, "session \(session): \(db.statistics().segmentCount) segments")
            try expectSame(try db.snapshot(), model, partitions: [1], "session \(session)")
            try db.close()
        }
    }
}
