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

/// The per-segment key filter: never a false negative, about 1% false positives.
@Suite struct KeyFilterTests {
    @Test func noFalseNegativesAndFewFalsePositives() {
        var filter = KeyFilter(expectedKeys: 10_000)
        for i in 0..<10_000 { key(i).withUnsafeBytes { filter.insert(hash: KeyFilter.hash($0)) } }
        for i in 0..<10_000 { #expect(key(i).withUnsafeBytes { filter.mayContain(hash: KeyFilter.hash($0)) }) }
        let falsePositives = (10_000..<110_000).filter { i in key(i).withUnsafeBytes { filter.mayContain(hash: KeyFilter.hash($0)) } }.count
        #expect(falsePositives < 2_000, "\(falsePositives) false positives in 100,000")
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

/// Space comes back: after an insert and three rounds of updating every key, then after deleting half of
/// them, the files stay within 1.5 times the size of a compacted copy, with background maintenance alone
/// doing the merges.
@Suite struct SpaceReclaimTests {
    static func bytes(_ fs: MemoryFileSystem) throws -> Int {
        try fs.listDirectory(atPath: "/db").filter { $0.hasSuffix(".seg") }.reduce(0) { $0 + (fs.contents(ofFile: "/db/" + $1)?.count ?? 0) }
    }

    /// Bytes on disk now (after a flush and the merges it starts) over bytes once compacted.
    static func amplification(_ db: Database, _ fs: MemoryFileSystem) throws -> Double {
        try db.flush()
        db.waitForMaintenance()
        let before = try bytes(fs)
        try db.compact()
        return Double(before) / Double(try bytes(fs))
    }

    @Test func overwrittenAndDeletedValuesAreDroppedByMerges() throws {
        let fs = MemoryFileSystem()
        var options = Database.Options()
        options.memtableFlushBytes = 256 * 1024
        var rng = SplitMix64(seed: 3)
        let db = try Database.open(at: "/db", options: options, fileSystem: fs)
        let keys = 20_000
        func round(deleting: Bool) throws {
            for start in stride(from: 0, to: keys, by: 1000) {
                try db.write { tx in
                    for i in start..<(start + 1000) {
                        if deleting { if i % 2 == 0 { try tx.delete(key(i), in: 1) } } else { try tx.put(key(i), rng.bytes(60), in: 1) }
                    }
                }
            }
        }
        for _ in 0..<4 { try round(deleting: false) }
        let updated = try Self.amplification(db, fs)
        #expect(updated <= 1.5, "after three rounds of updates: \(updated)x a compacted copy")
        for _ in 0..<2 { try round(deleting: false) }
        try round(deleting: true)
        let deleted = try Self.amplification(db, fs)
        #expect(deleted <= 1.5, "after deleting half: \(deleted)x a compacted copy")
        #expect(try db.snapshot().get(key(1), in: 1)?.count == 60)
        #expect(try db.snapshot().get(key(2), in: 1) == nil)
        try db.close()
    }
}
