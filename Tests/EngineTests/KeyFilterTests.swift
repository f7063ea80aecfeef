import Engine
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
