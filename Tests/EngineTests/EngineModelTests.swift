import Engine
import Testing
import TestSupport

/// The engine against an in-memory model: random puts, deletes, multi-operation transactions, aborted
/// transactions, snapshots held across commits, drops, flushes, compactions and reopens.
@Suite struct EngineModelTests {
    struct Config: CustomTestStringConvertible, Sendable {
        var seed: UInt64
        var realFiles: Bool
        var background: Bool
        var testDescription: String { "seed \(seed), \(realFiles ? "real files" : "memory"), \(background ? "background" : "manual") maintenance" }
    }

    static let configs: [Config] = Seeds.environmentOr([1, 2, 3, 0xDEAD_BEEF]).flatMap { seed in
        [Config(seed: seed, realFiles: false, background: false), Config(seed: seed, realFiles: seed % 2 == 1, background: true)]
    }

    @Test(arguments: configs)
    func engineMatchesReferenceStore(config: Config) throws {
        var rng = SplitMix64(seed: config.seed)
        let temp = try TemporaryDirectory()
        let fs: any FileSystem = config.realFiles ? PosixFileSystem() : MemoryFileSystem()
        let path = config.realFiles ? temp.child("db") : "/db"
        var options = Database.Options()
        options.backgroundMaintenance = config.background
        options.memtableFlushBytes = 16 * 1024
        options.compactionSegmentTrigger = 3
        options.durability = rng.next() % 2 == 0 ? .full : .deferred
        var db = try Database.open(at: path, options: options, fileSystem: fs)
        var model = ReferenceStore()
        var held: [(Snapshot, ReferenceStore)] = []
        let partitions: [UInt32] = [0, 1, 2]
        let steps = 2_000 * Seeds.scale

        func randomKey() -> [UInt8] { key(Int(rng.next() % 300)) }
        func randomValue() -> [UInt8] {
            let n = Int(rng.next() % 120)
            return rng.next() % 2 == 0 ? rng.bytes(n) : [UInt8](repeating: UInt8(truncatingIfNeeded: n), count: n)
        }

        for step in 0..<steps {
            let context = "\(config.testDescription), step \(step)"
            switch rng.next() % 100 {
            case 0..<40:
                let (k, v, p) = (randomKey(), randomValue(), partitions.randomElement(using: &rng)!)
                try db.write { try $0.put(k, v, in: p) }
                model.put(k, v, in: p)
            case 40..<55:
                let p = partitions.randomElement(using: &rng)!
                let k = model.partitions[p]?.keys.randomElement(using: &rng) ?? randomKey()
                try db.write { try $0.delete(k, in: p) }
                model.delete(k, in: p)
            case 55..<70:
                var next = model
                try db.write { tx in
                    for _ in 0..<Int(rng.next() % 40 + 1) {
                        let p = partitions.randomElement(using: &rng)!
                        let k = randomKey()
                        if rng.next() % 4 == 0 {
                            try tx.delete(k, in: p)
                            next.delete(k, in: p)
                        } else {
                            let v = randomValue()
                            try tx.put(k, v, in: p)
                            next.put(k, v, in: p)
                        }
                    }
                }
                model = next
            case 70..<74:
                let tx = try db.beginWrite()
                try tx.put(randomKey(), randomValue(), in: 0)
                tx.abort()
            case 74..<82:
                if held.count < 6 { held.append((try db.snapshot(), model)) }
            case 82..<87:
                if !held.isEmpty { held.remove(at: Int(rng.next() % UInt64(held.count))).0.close() }
            case 87..<89:
                let p = partitions.randomElement(using: &rng)!
                try db.write { try $0.dropPartition(p) }
                model.drop(p)
            case 89..<93:
                try db.flush()
            case 93..<96:
                try db.compact()
            default:
                for (s, _) in held { s.close() }
                held = []
                try db.close()
                db = try Database.open(at: path, options: options, fileSystem: fs)
            }
            if step % 100 == 99 {
                try expectSame(try db.snapshot(), model, partitions: partitions, context)
                for (i, (s, m)) in held.enumerated() {
                    try expectSame(s, m, partitions: partitions, "\(context), held snapshot \(i) at sequence \(s.sequence)")
                }
            }
        }
        for (s, m) in held { try expectSame(s, m, partitions: partitions, "\(config.testDescription), held at end") }
        #expect(db.checkConsistency() == [])
        held = []
        try db.close()
        db = try Database.open(at: path, options: options, fileSystem: fs)
        try expectSame(try db.snapshot(), model, partitions: partitions, "\(config.testDescription), after final reopen")
        #expect(db.checkConsistency() == [])
        #expect(db.statistics().backgroundError == nil)
    }
}
