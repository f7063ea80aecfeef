import Engine
import Foundation

/// Object key -> position, by open addressing with linear probing (a multiplicative hash, no `Hasher`): a write
/// looks up and inserts every key it touches, and a general dictionary's hashing was a tenth of an insert.
struct KeyMap {
    /// Slots of keys and positions + 1 (0: empty); the capacity is a power of two, at most half full.
    private var keys: [Int64] = []
    private var positions: [Int32] = []
    private var count = 0
    private var shift = 64

    @inline(__always)
    private func home(_ key: Int64) -> Int {
        Int(truncatingIfNeeded: (UInt64(bitPattern: key) &* 0x9E37_79B9_7F4A_7C15) >> UInt64(shift))
    }

    @inline(__always)
    func find(_ key: Int64) -> Int? {
        guard count > 0 else { return nil }
        let mask = keys.count - 1
        var i = home(key)
        while true {
            let p = positions[i]
            if p == 0 { return nil }
            if keys[i] == key { return Int(p) - 1 }
            i = (i + 1) & mask
        }
    }

    /// Adds `key` (not present) at `position`.
    mutating func insert(_ key: Int64, _ position: Int) {
        if (count + 1) * 2 > keys.count { grow() }
        let mask = keys.count - 1
        var i = home(key)
        while positions[i] != 0 { i = (i + 1) & mask }
        keys[i] = key
        positions[i] = Int32(position + 1)
        count += 1
    }

    private mutating func grow() {
        let capacity = max(16, keys.count * 2)
        let oldKeys = keys, oldPositions = positions
        keys = Array(repeating: 0, count: capacity)
        positions = Array(repeating: 0, count: capacity)
        shift = 64 - capacity.trailingZeroBitCount
        count = 0
        for (k, p) in zip(oldKeys, oldPositions) where p != 0 { insert(k, Int(p) - 1) }
    }
}
