import Dispatch
import Foundation
import Engine
import Atomics
import Testing
import TestSupport

/// Readers iterate snapshots while a writer commits and flushes and compactions run in the background: each
/// reader sees exactly its snapshot.
@Suite struct ConcurrencyTests {
    /// Every commit sets all keys of partition 0 to the same generation number, so a consistent snapshot has
    /// one generation throughout and it equals the snapshot's sequence.
    @Test(arguments: Seeds.environmentOr([21]))
    func readersSeeExactlyTheirSnapshotWhileWritesFlushesAndCompactionsRun(seed: UInt64) throws {
        let temp = try TemporaryDirectory()
        var options = Database.Options()
        options.memtableFlushBytes = 4 * 1024
        options.compactionSegmentTrigger = 3
        options.durability = .deferred
        let db = try Database.open(at: temp.child("db"), options: options)
        let keys = 200
        try db.write { tx in
            for i in 0..<keys { try tx.put(key(i), generationValue(0), in: 0) }
        }
        let generations = 300 * Seeds.scale
        let stop = ManagedAtomic<Bool>(false)
        let failures = Locked<[String]>([])
        let checks = ManagedAtomic<Int>(0)
        let group = DispatchGroup()
        for reader in 0..<3 {
            group.enter()
            // Real threads: the shared pools may be busy with other tests.
            Thread.detachNewThread {
                defer { group.leave() }
                while !stop.load(ordering: .relaxed) {
                    do {
                        let s = try db.snapshot()
                        let base = try db.snapshot().sequence  // any later sequence
                        var seen: Set<UInt64> = []
                        var count = 0
                        try s.scan(0) { _, v in
                            seen.insert(v.prefix(8).reduce(0) { $0 << 8 | UInt64($1) })
                            count += 1
                            return true
                        }
                        let point = try s.get(key(Int(base % UInt64(keys))), in: 0)
                        let expected = s.sequence - 1  // generation g was written by commit g + 1
                        if count != keys || seen != [expected] || point != generationValue(expected) {
                            failures.withLock {
                                $0.append("reader \(reader): snapshot \(s.sequence) saw \(count) keys, generations \(seen.sorted())")
                            }
                        }
                        checks.wrappingIncrement(by: 1, ordering: .relaxed)
                    } catch {
                        failures.withLock { $0.append("reader \(reader): \(error)") }
                    }
                }
            }
        }
        for g in 1...generations {
            try db.write { tx in
                for i in 0..<keys { try tx.put(key(i), generationValue(UInt64(g)), in: 0) }
            }
            if g % 97 == 0 { try db.compact() }
            if g % 50 == 0 {
                // Let the readers keep up, so that they read while the writes go on.
                let target = checks.load(ordering: .relaxed) + 3
                var waited = 0
                while checks.load(ordering: .relaxed) < target && waited < 2_000 {
                    SystemProcess.sleep(microseconds: 1_000)
                    waited += 1
                }
            }
        }
        stop.store(true, ordering: .relaxed)
        group.wait()
        #expect(failures.withLock { Array($0.prefix(5)) } == [])
        #expect(checks.load(ordering: .relaxed) > 10)
        #expect(db.statistics().flushes > 0)
        #expect(db.statistics().backgroundError == nil)
        #expect(db.checkConsistency() == [])
        try db.close()
    }
}

func generationValue(_ g: UInt64) -> [UInt8] {
    withUnsafeBytes(of: g.bigEndian) { Array($0) } + [UInt8](repeating: UInt8(truncatingIfNeeded: g), count: 24)
}
