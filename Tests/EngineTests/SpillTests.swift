import Engine
import Testing
import TestSupport

/// Large transactions (`WriteTransaction.spill()`): what a spilled transaction commits is what the same
/// operations commit in one batch, the transaction's view reads what it spilled, readers see none of it before the
/// commit, and an abort leaves no spilled file.
@Suite struct SpillTests {
    static var options: Database.Options { options(inBackground: false) }

    static func options(inBackground: Bool) -> Database.Options {
        var o = Database.Options()
        o.backgroundMaintenance = false
        o.spillInBackground = inBackground
        return o
    }

    static func segmentFiles(_ fs: MemoryFileSystem) throws -> Set<String> {
        Set(try fs.listDirectory(atPath: "/db").filter { $0.hasSuffix(".seg") })
    }

    /// Random transactions of random parts, spilled between parts, against a model; with earlier commits in
    /// the memtable and in segments below them, drops inside the transaction, and a reopen at the end. With
    /// `inBackground`, spills are written by the worker while the transaction goes on: reads see their runs
    /// until they are installed.
    @Test(arguments: Seeds.environmentOr([21, 22, 23]), [false, true])
    func spilledTransactionsCommitWhatTheirOperationsSay(seed: UInt64, inBackground: Bool) throws {
        var rng = SplitMix64(seed: seed)
        let fs = MemoryFileSystem()
        let db = try Database.open(at: "/db", options: Self.options(inBackground: inBackground), fileSystem: fs)
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

    /// Invariant 4 of `Database+Spill`: a spill whose worker fails (here its segment's sync) fails its
    /// transaction. The error comes back at the next spill or at the commit, nothing of the transaction is
    /// committed, no spilled file stays, and the database takes the next write.
    @Test func aSpillWhoseWorkerFailsFailsItsTransaction() throws {
        // The syncs an open makes, counted on a probe: the next one is the spilled segment's.
        let probeFileSystem = FaultyFileSystem(base: MemoryFileSystem())
        let probe = try Database.open(at: "/db", options: Self.options(inBackground: true), fileSystem: probeFileSystem)
        let syncsAtOpen = probeFileSystem.syncCount
        try probe.close()

        let memory = MemoryFileSystem()
        let faulty = FaultyFileSystem(base: memory, faults: [.failSync(at: syncsAtOpen + 1, errno: SystemErrno.ioError.code)])
        let db = try Database.open(at: "/db", options: Self.options(inBackground: true), fileSystem: faulty)
        let tx = try db.beginWrite()
        for i in 0..<100 { try tx.put(key(i), [1], in: 0) }
        try tx.spill()
        for i in 100..<200 { try tx.put(key(i), [2], in: 0) }
        // The second spill throws if the worker failed by then; the commit throws whatever came first.
        try? tx.spill()  // try?: either outcome is right here; the commit below must throw
        #expect(throws: (any Error).self, "a transaction whose spill failed committed") { try tx.commit() }
        #expect(faulty.faultsFired == 1, "the fault did not fire where the spill syncs")
        try expectSame(try db.snapshot(), ReferenceStore(), partitions: [0], "after the failed transaction")
        #expect(try Self.segmentFiles(memory).count == db.statistics().segmentCount, "a spilled file stayed")
        try db.write { try $0.put(key(1), [9], in: 0) }
        var model = ReferenceStore()
        model.put(key(1), [9], in: 0)
        try expectSame(try db.snapshot(), model, partitions: [0], "the next write")
        try db.close()
    }


    /// A scan of the transaction's view begun while a spill was in flight reads that spill's runs until it
    /// ends, whatever later spills do: the memory of an installed spill's batch is not reused while anything
    /// still reads it.
    @Test func aScanOfAnEarlierViewReadsItsSpillToTheEnd() throws {
        let db = try Database.open(at: "/db", options: Self.options(inBackground: true), fileSystem: MemoryFileSystem())
        let tx = try db.beginWrite()
        for i in 0..<2_000 { try tx.put(key(i), [UInt8](repeating: 1, count: 40), in: 0) }
        try tx.spill()
        let early = try tx.view.makeIterator(0)
        // Later spills overwrite every key, several times over: their batches would take the early one's memory.
        for round in 2...6 {
            for i in 0..<2_000 { try tx.put(key(i), [UInt8](repeating: UInt8(round), count: 40), in: 0) }
            try tx.spill()
        }
        var seen = 0
        while early.isValid {
            #expect(early.value.map([UInt8].init) == [UInt8](repeating: 1, count: 40), "entry \(seen) changed under the scan")
            seen += 1
            try early.next()
        }
        #expect(seen == 2_000)
        try tx.commit()
        #expect(try db.snapshot().get(key(7), in: 0) == [UInt8](repeating: 6, count: 40))
        try db.close()
    }


    /// `hasWritten(in:)`: whether a partition still stands as the snapshot has it, through the batch and spills.
    @Test func aTransactionTellsWhichPartitionsItHasWritten() throws {
        let db = try Database.open(at: "/db", options: Self.options(inBackground: true), fileSystem: MemoryFileSystem())
        let tx = try db.beginWrite()
        #expect(!tx.hasWritten(in: 1) && !tx.hasWritten(in: 2) && !tx.hasWritten(in: 3))
        try tx.put(key(1), [1], in: 1)
        try tx.delete(key(2), in: 2)
        #expect(tx.hasWritten(in: 1) && tx.hasWritten(in: 2) && !tx.hasWritten(in: 3))
        // Spilled: the batch no longer holds them, the spills do.
        try tx.spill()
        #expect(tx.hasWritten(in: 1) && tx.hasWritten(in: 2) && !tx.hasWritten(in: 3))
        try tx.dropPartition(3)
        #expect(tx.hasWritten(in: 3))
        try tx.spill()
        #expect(tx.hasWritten(in: 3) && !tx.hasWritten(in: 4))
        tx.abort()
        try db.close()
    }
}
