@testable @_spi(EngineInternals) import Engine
import Foundation
import TestSupport
import Testing

/// The memtable's runs: a merge keeps every key once, the newer run's entry on equal keys, in key order, whatever
/// the runs' overlap and however their bytes lie in their arenas.
@Suite struct MemRunTests {
    /// An entry of a model run: a key and its value (nil: a tombstone).
    typealias Entry = (key: [UInt8], value: [UInt8]?)

    /// A run of `entries` (sorted, unique keys). With `gaps`, filler bytes lie between some entries, as a write
    /// batch's operation headers do, so that they are not back to back in the arena.
    static func run(_ entries: [Entry], gaps: Bool, rng: inout SplitMix64, sequence: UInt64) -> MemRun {
        let buffer = GrowableBuffer()
        var slots: [Slot] = []
        for e in entries {
            if gaps && rng.next() % 3 == 0 {
                for _ in 0..<(1 + rng.next() % 5) { buffer.append(UInt8(0xEE)) }
            }
            let offset = buffer.count
            e.key.withUnsafeBytes { buffer.append($0) }
            if let v = e.value { v.withUnsafeBytes { buffer.append($0) } }
            slots.append(Slot(keyOffset: offset, keyCount: Int32(e.key.count), valueCount: e.value.map { Int32($0.count) } ?? -1))
        }
        return MemRun(arena: MappedRegion(adopting: buffer), sortedSlots: slots, minSequence: sequence, maxSequence: sequence, userMetadata: 0)
    }

    static func entries(of run: MemRun) -> [Entry] {
        (0..<run.count).map { ([UInt8](run.key($0)), run.value($0).map { [UInt8]($0) }) }
    }

    /// Sorted entries with unique keys drawn from `keys`, about `density` of them, some tombstones.
    static func randomEntries(_ keys: Range<Int>, density: UInt64, rng: inout SplitMix64) -> [Entry] {
        var out: [Entry] = []
        for k in keys where rng.next() % 100 < density {
            // Big-endian so that byte order is numeric order; some keys longer, to vary the lengths.
            var key = withUnsafeBytes(of: UInt32(k).bigEndian) { [UInt8]($0) }
            if k % 7 == 0 { key.append(UInt8(k % 251)) }
            let value: [UInt8]? = rng.next() % 10 == 0 ? nil : (0..<Int(rng.next() % 24)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            out.append((key, value))
        }
        return out
    }

    /// What a merge must give: every key once, the newer entry on equal keys.
    static func model(newer: [Entry], older: [Entry]) -> [Entry] {
        var byKey: [[UInt8]: [UInt8]?] = [:]
        for e in older { byKey[e.key] = e.value }
        for e in newer { byKey[e.key] = e.value }
        return byKey.keys.sorted { $0.lexicographicallyPrecedes($1) }.map { ($0, byKey[$0]!) }
    }

    static func same(_ a: [Entry], _ b: [Entry]) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }

    @Test(arguments: Seeds.environmentOr([0x4D45_4D52, 11]))
    func mergesAgreeWithTheModelForEveryOverlap(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        let rounds = 300 * Seeds.scale
        for round in 0..<rounds {
            // Key ranges that lie before, after, inside or across each other.
            let lowA = Int(rng.next() % 200), lowB = Int(rng.next() % 200)
            let newer = Self.randomEntries(lowA..<(lowA + 1 + Int(rng.next() % 150)), density: 20 + rng.next() % 80, rng: &rng)
            let older = Self.randomEntries(lowB..<(lowB + 1 + Int(rng.next() % 150)), density: 20 + rng.next() % 80, rng: &rng)
            let gapsNewer = rng.next() % 2 == 0, gapsOlder = rng.next() % 2 == 0
            let a = Self.run(newer, gaps: gapsNewer, rng: &rng, sequence: 2)
            let b = Self.run(older, gaps: gapsOlder, rng: &rng, sequence: 1)
            let merged = MemRun.merge(newer: a, older: b)
            let expected = Self.model(newer: newer, older: older)
            let agrees = Self.same(Self.entries(of: merged), expected)
            #expect(agrees, "seed \(seed), round \(round)")
            #expect(merged.minSequence == 1 && merged.maxSequence == 2)
            // A merged run's entries lie back to back: merge it again with a third run, as the memtable does.
            let third = Self.randomEntries(Int(rng.next() % 300)..<(300 + Int(rng.next() % 50)), density: 10, rng: &rng)
            let again = MemRun.merge(newer: Self.run(third, gaps: true, rng: &rng, sequence: 3), older: merged)
            let againAgrees = Self.same(Self.entries(of: again), Self.model(newer: third, older: expected))
            #expect(againAgrees, "seed \(seed), round \(round)")
            #expect(again.byteCount == Self.entries(of: again).reduce(0) { $0 + $1.key.count + ($1.value?.count ?? 0) + 16 })
        }
    }

    @Test func runsOfGrowingKeysAreConcatenated() {
        var rng = SplitMix64(seed: 7)
        // Commits of keys that only grow, merged as the memtable merges them (newer on top).
        var model: [Entry] = []
        var active: MemRun? = nil
        for commit in 0..<40 {
            let entries = Self.randomEntries((commit * 50)..<(commit * 50 + 50), density: 60, rng: &rng)
            let run = Self.run(entries, gaps: true, rng: &rng, sequence: UInt64(commit))
            active = active.map { MemRun.merge(newer: run, older: $0) } ?? run
            model += entries
        }
        let concatenated = Self.same(Self.entries(of: active!), model)
        #expect(concatenated)
        // And a run below all of them (keys smaller than every older key).
        let low: [Entry] = [([0, 0, 0, 0], [1]), ([0, 0, 0, 1], nil)]
        let merged = MemRun.merge(newer: Self.run(low, gaps: false, rng: &rng, sequence: 99), older: active!)
        let agrees = Self.same(Self.entries(of: merged), Self.model(newer: low, older: model))
        #expect(agrees)
        #expect([UInt8]([0, 0, 0, 1]).withUnsafeBytes { merged.find($0) } == 1)
    }
}
