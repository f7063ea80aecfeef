import Engine
import Testing
import TestSupport

/// Scans over many sources (`MergingIterator`): segments with disjoint key ranges (a bulk write's, stepped
/// without comparing every source), overlapping ones, deletions in any of them, a memtable above, and scans
/// that start in the middle agree with a model; so do point reads in key order (`OrderedLookup`).
@Suite struct MergingScanTests {
    static var options: Database.Options {
        var o = Database.Options()
        o.backgroundMaintenance = false
        return o
    }

    @Test(arguments: Seeds.environmentOr([31, 32, 33, 34]))
    func scansOverManySourcesAgreeWithTheModel(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let db = try Database.open(at: "/db", options: Self.options, fileSystem: MemoryFileSystem())
        var model = ReferenceStore()
        var next = 0
        for round in 0..<10 {
            try db.write { tx in
                if rng.next() % 3 != 0 {
                    // A block of new keys above every other: disjoint from the segments below.
                    let n = Int(rng.next() % 300) + 1
                    for k in next..<(next + n) {
                        let v = rng.bytes(Int(rng.next() % 20))
                        try tx.put(key(k), v, in: 0)
                        model.put(key(k), v, in: 0)
                    }
                    next += n
                } else {
                    // Changes and deletions anywhere below.
                    for _ in 0..<Int(rng.next() % 60) {
                        let k = key(Int(rng.next() % UInt64(max(next, 1))))
                        if rng.next() % 3 == 0 {
                            try tx.delete(k, in: 0)
                            model.delete(k, in: 0)
                        } else {
                            let v = rng.bytes(Int(rng.next() % 20))
                            try tx.put(k, v, in: 0)
                            model.put(k, v, in: 0)
                        }
                    }
                }
            }
            if round < 9 { try db.flush() }
            let snapshot = try db.snapshot()
            try expectSame(snapshot, model, partitions: [0], "seed \(seed) round \(round)")
            // From a start key, with a pull iterator.
            let start = key(Int(rng.next() % UInt64(max(next, 1))))
            var seen: [[UInt8]] = []
            try snapshot.scan(0, from: start) { k, _ in
                seen.append([UInt8](k))
                return true
            }
            let expected = model.entries(0).map(\.0).filter { !$0.lexicographicallyPrecedes(start) }
            #expect(seen == expected, "seed \(seed) round \(round): a scan from a key")
            let it = try snapshot.makeIterator(0)
            var n = 0
            while it.isValid {
                n += 1
                try it.next()
            }
            #expect(n == model.entries(0).count, "seed \(seed) round \(round): a pull iterator")
            // Point reads in ascending order by one iterator (`OrderedLookup`): gaps of one key (a step), of a few
            // and of many (a seek), keys never written or deleted, now and then a key out of order (a lookup).
            let ordered = OrderedLookup(snapshot, partition: 0)
            var k = 0
            while k < next + 5 {
                let asked = rng.next() % 10 == 0 ? Int(rng.next() % UInt64(max(k, 1))) : k
                var found: [UInt8]?
                try key(asked).withUnsafeBytes { raw in try ordered.visitValue(forKey: raw) { found = $0.map { [UInt8]($0) } } }
                #expect(found == model.partitions[0]?[key(asked)], "seed \(seed) round \(round): ordered read of \(asked)")
                switch rng.next() % 4 {
                case 0: k += 1
                case 1: k += Int(rng.next() % 6)
                case 2: k += Int(rng.next() % 40)
                default: k += 1 + Int(rng.next() % 3)
                }
            }
        }
        try db.close()
    }

    /// A dozen overlapping sources (every write flushed, nothing merged), a memtable above them, and keys of
    /// every length from 0 to 11 bytes over a tiny alphabet: many keys share their first eight bytes or differ
    /// only by trailing zeros, which the heap's eight-byte prefixes cannot tell apart alone.
    @Test(arguments: Seeds.environmentOr([41, 42, 43]))
    func scansOverManyOverlappingSourcesWithKeysOfEveryLength(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let db = try Database.open(at: "/db", options: Self.options, fileSystem: MemoryFileSystem())
        var model = ReferenceStore()
        let alphabet: [UInt8] = [0, 1, 255]
        func randomKey() -> [UInt8] {
            let n = Int(rng.next() % 12)
            // Mostly one shared 8-byte prefix, so that longer keys differ only past it.
            let shared = rng.next() % 2 == 0
            return (0..<n).map { i in shared && i < 8 ? 1 : alphabet[Int(rng.next() % 3)] }
        }
        for round in 0..<14 {
            try db.write { tx in
                for _ in 0..<Int(rng.next() % 80 + 1) {
                    let k = randomKey()
                    if rng.next() % 4 == 0 {
                        try tx.delete(k, in: 0)
                        model.delete(k, in: 0)
                    } else {
                        let v = rng.bytes(Int(rng.next() % 12))
                        try tx.put(k, v, in: 0)
                        model.put(k, v, in: 0)
                    }
                }
            }
            if round < 13 { try db.flush() }
            let snapshot = try db.snapshot()
            try expectSame(snapshot, model, partitions: [0], "seed \(seed) round \(round)")
            let start = randomKey()
            var seen: [[UInt8]] = []
            try snapshot.scan(0, from: start) { k, v in
                seen.append([UInt8](k))
                #expect([UInt8](v) == model.partitions[0]?[[UInt8](k)], "seed \(seed) round \(round): the newest value of \([UInt8](k))")
                return true
            }
            let expected = model.entries(0).map(\.0).filter { !$0.lexicographicallyPrecedes(start) }
            #expect(seen == expected, "seed \(seed) round \(round): a scan from \(start)")
        }
        try db.close()
    }
}
