import Engine
import Testing
import TestSupport

/// Large transactions (`WriteTransaction.spill()`): what a spilled transaction commits is what the same
/// operations commit in one batch, the transaction's view reads what it spilled, readers see none of it before the
/// commit, and an abort leaves no spilled file.
@Suite struct SpillTests {
    static var options: Database.Options {
        var o = Database.Options()
        o.backgroundMaintenance = false
        return o
    }

    static func segmentFiles(_ fs: MemoryFileSystem) throws -> Set<String> {
        Set(try fs.listDirectory(atPath: "/db").filter { $0.hasSuffix(".seg") })
    }

    /// Random transactions of random parts, spilled between parts, against a model; with earlier commits in
    /// the memtable and in segments below them, drops inside the transaction, and a reopen at the end.
    @Test(arguments: Seeds.environmentOr([21, 22, 23]))
    func spilledTransactionsCommitWhatTheirOperationsSay(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let fs = MemoryFileSystem()
        let db = try Database.open(at: "/db", options: Self.options, fileSystem: fs)
        var model = ReferenceStore()
        func randomOps(_ n: Int) -> [(UInt32, [UInt8], [UInt8]?)] {
            (0..<n).map { _ in (UInt32(rng.next() % 3), key(Int(rng.next() % 200)), rng.next() % 6 == 0 ? nil : rng.bytes(Int(rng.next() % 40))) }
        }
        for round in 0..<12 {
            // An ordinary commit, sometimes flushed, so that the spilled one lands above memtable and segments.
            let plain = randomOps(Int(rng.next() % 30) + 1)
            try db.write { tx in for (p, k, v) in plain { if let v { try tx.put(k, v, in: p) } else { try tx.delete(k, in: p) } } }
            for (p, k, v) in plain { if let v { model.put(k, v, in: p) } else { model.delete(k, in: p) } }
            if round % 3 == 1 { try db.flush() }

            let before = try db.snapshot()
            let modelBefore = model
            let filesBefore = try Self.segmentFiles(fs)
            let tx = try db.beginWrite()
            var pending = model
            // What the spills alone say of each key (a value, or nil for a deletion), per partition.
            var spilledOnly: [UInt32: [[UInt8]: [UInt8]?]] = [:]
            var part: [UInt32: [[UInt8]: [UInt8]?]] = [:]
            for n in 0..<Int(rng.next() % 4) + 1 {
                if rng.next() % 5 == 0 {
                    let p = UInt32(rng.next() % 3)
                    try tx.dropPartition(p)
                    pending.drop(p)
                    part[p] = [:]
                    spilledOnly[p] = [:]
                }
                for (p, k, v) in randomOps(Int(rng.next() % 60) + 1) {
                    if let v { try tx.put(k, v, in: p) } else { try tx.delete(k, in: p) }
                    if let v { pending.put(k, v, in: p) } else { pending.delete(k, in: p) }
                    part[p, default: [:]][k] = .some(v)
                }
                if n % 2 == 0 || rng.next() % 2 == 0 {
                    try tx.spill()
                    #expect(tx.batchBytes == 0)
                    for (p, entries) in part { spilledOnly[p, default: [:]].merge(entries) { _, new in new } }
                    part = [:]
                    // The transaction's view reads the state as of this spill: what came before, with the
                    // spills above it.
                    try expectSame(tx.view, pending, partitions: 0..<3, "seed \(seed) round \(round): the view after a spill")
                }
            }
            // What the spills hold reads back from the transaction.
            for _ in 0..<20 {
                let p = UInt32(rng.next() % 3), k = key(Int(rng.next() % 200))
                let got = try k.withUnsafeBytes { raw in try tx.withSpilledValue(forKey: raw, in: p) { $0.map { [UInt8]($0) } } }
                let expected: [UInt8]? = spilledOnly[p]?[k] ?? nil
                #expect(got == expected, "seed \(seed) round \(round): spilled value of key in partition \(p)")
            }
            // Nothing is visible before the commit.
            try expectSame(try db.snapshot(), model, partitions: 0..<3, "seed \(seed) round \(round), before commit")
            if rng.next() % 4 == 0 {
                tx.abort()
                // A spill flushes the memtable first (its segments stay, named by the manifest); no spilled
                // file does.
                let files = try Self.segmentFiles(fs)
                #expect(files.isSuperset(of: filesBefore) && files.count == db.statistics().segmentCount, "seed \(seed) round \(round): an abort leaves no spilled file")
            } else {
                try tx.commit()
                model = pending
            }
            try expectSame(before, modelBefore, partitions: 0..<3, "seed \(seed) round \(round), snapshot from before")
            before.close()
            try expectSame(try db.snapshot(), model, partitions: 0..<3, "seed \(seed) round \(round), after commit")
            #expect(db.checkConsistency() == [])
        }
        try db.close()
        let reopened = try Database.open(at: "/db", options: Self.options, fileSystem: fs)
        try expectSame(try reopened.snapshot(), model, partitions: 0..<3, "seed \(seed), reopened")
        #expect(reopened.checkConsistency() == [])
        try reopened.close()
    }
}
