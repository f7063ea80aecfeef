import Engine
import Testing
import TestSupport

/// Crashes at every sync point of a workload: after reopening, every acknowledged commit is there and
/// nothing that was never attempted appears.
@Suite struct CrashRecoveryTests {
    enum Step {
        case commit([(UInt32, [UInt8], [UInt8]?)])
        /// One transaction spilled between its parts (`WriteTransaction.spill()`); nil drops partition 2.
        case spilled([[(UInt32, [UInt8], [UInt8]?)]?])
        case drop(UInt32)
        case flush
        case compact
    }

    /// A deterministic workload over three partitions with flushes and compactions between commits.
    static func workload(seed: UInt64) -> [Step] {
        var rng = SplitMix64(seed: seed)
        var steps: [Step] = []
        for i in 0..<36 {
            var ops: [(UInt32, [UInt8], [UInt8]?)] = []
            for _ in 0..<Int(rng.next() % 6 + 1) {
                let p = UInt32(rng.next() % 3)
                let k = key(Int(rng.next() % 40))
                ops.append((p, k, rng.next() % 5 == 0 ? nil : rng.bytes(Int(rng.next() % 50))))
            }
            steps.append(.commit(ops))
            if i == 10 || i == 28 {
                var parts: [[(UInt32, [UInt8], [UInt8]?)]?] = []
                for part in 0..<3 {
                    if part == 1 && i == 28 { parts.append(nil) }
                    parts.append((0..<Int(rng.next() % 8 + 1)).map { _ in
                        (UInt32(rng.next() % 3), key(Int(rng.next() % 40)), rng.next() % 5 == 0 ? nil : rng.bytes(Int(rng.next() % 50)))
                    })
                }
                steps.append(.spilled(parts))
            }
            if i % 9 == 8 { steps.append(.flush) }
            if i == 20 { steps.append(.drop(1)) }
            if i % 18 == 17 { steps.append(.compact) }
        }
        return steps
    }

    static func apply(_ step: Step, to model: inout ReferenceStore) {
        switch step {
        case .commit(let ops):
            for (p, k, v) in ops {
                if let v { model.put(k, v, in: p) } else { model.delete(k, in: p) }
            }
        case .spilled(let parts):
            for part in parts {
                guard let part else {
                    model.drop(2)
                    continue
                }
                for (p, k, v) in part {
                    if let v { model.put(k, v, in: p) } else { model.delete(k, in: p) }
                }
            }
        case .drop(let p): model.drop(p)
        case .flush, .compact: break
        }
    }

    static func options(encrypted: Bool) -> Database.Options {
        var o = Database.Options()
        o.backgroundMaintenance = false
        if encrypted { o.encryptionKey = EncryptionTests.key }
        return o
    }

    /// Runs the workload until the file system fails; returns the models after 0...n acknowledged commits and
    /// how many were acknowledged (the last model may be the in-flight commit's).
    static func run(_ steps: [Step], on fs: any FileSystem, options: Database.Options) -> (models: [ReferenceStore], acknowledged: Int) {
        var models = [ReferenceStore()]
        var acknowledged = 0
        guard let db = try? Database.open(at: "/db", options: options, fileSystem: fs) else { return (models, 0) }
        for step in steps {
            var next = models.last!
            apply(step, to: &next)
            do {
                switch step {
                case .commit(let ops):
                    models.append(next)
                    try db.write { tx in
                        for (p, k, v) in ops {
                            if let v { try tx.put(k, v, in: p) } else { try tx.delete(k, in: p) }
                        }
                    }
                    acknowledged += 1
                case .spilled(let parts):
                    models.append(next)
                    try db.write { tx in
                        for part in parts {
                            guard let part else {
                                try tx.dropPartition(2)
                                continue
                            }
                            for (p, k, v) in part {
                                if let v { try tx.put(k, v, in: p) } else { try tx.delete(k, in: p) }
                            }
                            try tx.spill()
                        }
                    }
                    acknowledged += 1
                case .drop(let p):
                    models.append(next)
                    try db.write { try $0.dropPartition(p) }
                    acknowledged += 1
                case .flush: try db.flush()
                case .compact: try db.compact()
                }
            } catch {
                return (models, acknowledged)
            }
        }
        try? db.close()
        return (models, acknowledged)
    }

    @Test(arguments: Seeds.environmentOr([11, 12]))
    func everyAcknowledgedCommitSurvivesACrashAtEverySyncPoint(seed: UInt64) throws {
        try Self.crashAtEverySyncPoint(seed: seed, options: Self.options(encrypted: false))
    }

    /// The same with encryption on: sealed log records, blocks and indexes, and an authenticated manifest.
    @Test(arguments: Seeds.environmentOr([13]))
    func everyAcknowledgedCommitSurvivesACrashAtEverySyncPointEncrypted(seed: UInt64) throws {
        try Self.crashAtEverySyncPoint(seed: seed, options: Self.options(encrypted: true))
    }

    static func crashAtEverySyncPoint(seed: UInt64, options: Database.Options) throws {
        let steps = Self.workload(seed: seed)
        // A dry run counts the sync points.
        let counter = FaultyFileSystem(base: MemoryFileSystem())
        let full = Self.run(steps, on: counter, options: options)
        #expect(full.acknowledged == full.models.count - 1)
        let syncPoints = counter.syncCount
        #expect(syncPoints > 50)
        var rng = SplitMix64(seed: seed)
        for k in 1...syncPoints {
            for torn in [false, true] {
                let memory = MemoryFileSystem()
                let faulty = FaultyFileSystem(base: memory, faults: [.crash(atSync: k)])
                let outcome = Self.run(steps, on: faulty, options: options)
                let context = "seed \(seed), crash at sync \(k) of \(syncPoints)\(torn ? ", torn tail" : "")"
                // A torn write keeps a random part of what was not synced.
                var tornRng = SplitMix64(seed: seed &+ UInt64(k))
                memory.simulateCrash { _, unsynced in torn ? Int(tornRng.next() % UInt64(unsynced + 1)) : 0 }
                // Sometimes crash again during recovery, then recover for real.
                if rng.next() % 3 == 0 {
                    let again = FaultyFileSystem(base: memory, faults: [.crash(atSync: Int(rng.next() % 6) + 1)])
                    _ = try? Database.open(at: "/db", options: options, fileSystem: again)
                    memory.simulateCrash()
                }
                let db: Database
                do {
                    db = try Database.open(at: "/db", options: options, fileSystem: memory)
                } catch {
                    Issue.record("\(context): reopen failed: \(error)")
                    continue
                }
                let seen = try contents(of: try db.snapshot(), partitions: [0, 1, 2])
                let acceptable = Array(outcome.models[outcome.acknowledged...].prefix(2))
                if !acceptable.contains(seen) {
                    Issue.record("\(context): recovered state matches no acceptable prefix (acknowledged \(outcome.acknowledged))")
                }
                #expect(db.checkConsistency() == [], "\(context)")
                try db.close()
            }
        }
    }
}
