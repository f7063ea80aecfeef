import Engine
import Foundation

/// The keys of one partition's pending objects in the order first added, and the position of each: an
/// open-addressing table with linear probing (a multiplicative hash, no `Hasher`) whose slots hold positions
/// only, the keys being in the list. A write looks up and inserts every key it touches, and a general
/// dictionary's hashing was a tenth of an insert; one list of keys and four bytes a slot keep it small.
struct KeyMap {
    /// The keys, in the order they were added: a key's position is its index here.
    private(set) var keys: [Int64] = []
    /// Positions + 1 (0: empty); the capacity is a power of two, at most half full.
    private var slots: [Int32] = []
    private var shift = 64

    var isEmpty: Bool { keys.isEmpty }
    var count: Int { keys.count }

    @inline(__always)
    private func home(_ key: Int64) -> Int {
        Int(truncatingIfNeeded: (UInt64(bitPattern: key) &* 0x9E37_79B9_7F4A_7C15) >> UInt64(shift))
    }

    /// The position of `key`, nil when it has none.
    @inline(__always)
    func find(_ key: Int64) -> Int? {
        guard !keys.isEmpty else { return nil }
        let mask = slots.count - 1
        var i = home(key)
        while true {
            let p = Int(slots[i])
            if p == 0 { return nil }
            if keys[p - 1] == key { return p - 1 }
            i = (i + 1) & mask
        }
    }

    /// Adds `key` (not present) at the next position, which it returns.
    @discardableResult
    mutating func append(_ key: Int64) -> Int {
        if (keys.count + 1) * 2 > slots.count { grow() }
        keys.append(key)
        place(keys.count - 1)
        return keys.count - 1
    }

    private mutating func place(_ position: Int) {
        let mask = slots.count - 1
        var i = home(keys[position])
        while slots[i] != 0 { i = (i + 1) & mask }
        slots[i] = Int32(position + 1)
    }

    private mutating func grow() {
        let capacity = max(16, slots.count * 2)
        require(capacity <= Int(Int32.max), "more than \(Int32.max / 2) pending objects of one type in one write")
        slots = Array(repeating: 0, count: capacity)
        shift = 64 - capacity.trailingZeroBitCount
        for position in keys.indices { place(position) }
    }
}
