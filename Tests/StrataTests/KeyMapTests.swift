import Foundation
import Testing
import TestSupport

@testable import Strata

/// The map of a write's pending keys (`KeyMap`): sorted without a table while keys arrive in increasing order,
/// hashed from the first key out of order, and in both forms it answers as a dictionary does.
@Suite struct KeyMapTests {
    @Test func keysInIncreasingOrderNeedNoTableAndAreFound() {
        var map = KeyMap()
        for k in stride(from: Int64(-500), to: 500, by: 3) { map.append(k) }
        #expect(map.isSorted)
        for (position, k) in stride(from: Int64(-500), to: 500, by: 3).enumerated() { #expect(map.find(k) == position) }
        for k in stride(from: Int64(-499), to: 500, by: 3) { #expect(map.find(k) == nil) }
        #expect(map.find(.min) == nil)
        #expect(map.find(.max) == nil)
    }

    @Test(arguments: Seeds.environmentOr([0x4B3E, 0x91F0_22]))
    func keysInAnyOrderAreFoundAtThePositionTheyWereAddedAt(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        var map = KeyMap()
        var oracle: [Int64: Int] = [:]
        let scale = Seeds.scale
        // Increasing runs, then a key out of order, then random keys: both forms, and the change between them.
        var next = Int64.random(in: -1_000...1_000, using: &rng)
        for step in 0..<(3_000 * scale) {
            let key: Int64
            if step < 1_000 * scale {
                next += Int64.random(in: 1...5, using: &rng)
                key = next
            } else {
                key = Int64.random(in: -5_000...Int64(10_000 * scale), using: &rng)
            }
            if oracle[key] == nil {
                oracle[key] = map.count
                #expect(map.append(key) == oracle[key])
            }
            if step % 97 == 0 {
                for _ in 0..<20 {
                    let probe = Int64.random(in: -6_000...Int64(11_000 * scale), using: &rng)
                    #expect(map.find(probe) == oracle[probe], "seed \(seed), step \(step), key \(probe)")
                }
            }
        }
        #expect(!map.isSorted)
        for (key, position) in oracle { #expect(map.find(key) == position) }
        #expect(map.keys.count == oracle.count)
    }
}
