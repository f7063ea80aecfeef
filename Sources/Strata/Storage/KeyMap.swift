import Engine
import Foundation

/// The keys of one partition's pending objects in the order first added, and the position of each. While the
/// keys arrive in increasing order (a bulk insert, a loop over a type's objects) the list is sorted and a key is
/// found by comparing it with the last one, then by binary search: no table at all. The first key out of order
/// builds an open-addressing table with linear probing (a multiplicative hash, no `Hasher`) whose slots hold
/// positions only, the keys being in the list. A write looks up and inserts every key it touches, and a
/// general dictionary's hashing was a tenth of an insert; one list of keys and four bytes a slot keep it small.
struct KeyMap {
    /// The keys, in the order they were added: a key's position is its index here.
    private(set) var keys: [Int64] = []
    /// Positions + 1 (0: empty); the capacity is a power of two, at most half full. Empty while `keys` is
    /// sorted (strictly increasing).
    private var slots: [Int32] = []
    private var shift = 64

    var isEmpty: Bool { keys.isEmpty }
    var count: Int { keys.count }
    /// Whether the keys were added in increasing order (no table).
    var isSorted: Bool { slots.isEmpty }

    @inline(__always)
    private func home(_ key: Int64) -> Int {
        Int(truncatingIfNeeded: (UInt64(bitPattern: key) &* 0x9E37_79B9_7F4A_7C15) >> UInt64(shift))
    }

    /// The position of `key`, nil when it has none.
    @inline(__always)
    func find(_ key: Int64) -> Int? {
        guard let last = keys.last else { return nil }
        if slots.isEmpty {
            // Sorted: most lookups are of a key above every one (the next object of a loop).
            if key > last { return nil }
            if key == last { return keys.count - 1 }
            return sortedPosition(key)
        }
        let mask = slots.count - 1
        var i = home(key)
        while true {
            let p = Int(slots[i])
            if p == 0 { return nil }
            if keys[p - 1] == key { return p - 1 }
            i = (i + 1) & mask
        }
    }

    /// Binary search of the sorted keys.
    private func sortedPosition(_ key: Int64) -> Int? {
        var low = 0, high = keys.count
        while low < high {
            let mid = (low + high) >> 1
            if keys[mid] < key { low = mid + 1 } else { high = mid }
        }
        return low < keys.count && keys[low] == key ? low : nil
    }

    /// Adds `key` (not present) at the next position, which it returns.
    @discardableResult
    @inline(__always)
    mutating func append(_ key: Int64) -> Int {
        if slots.isEmpty {
            if keys.last.map({ key > $0 }) ?? true {
                keys.append(key)
                return keys.count - 1
            }
            // The first key out of order: the table is built for every key so far.
            keys.append(key)
            grow()
            return keys.count - 1
        }
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

    /// A table (twice as large, or the first) holding every key of the list.
    private mutating func grow() {
        var capacity = max(16, slots.count * 2)
        while keys.count * 2 > capacity { capacity *= 2 }
        require(capacity <= Int(Int32.max), "more than \(Int32.max / 2) pending objects of one type in one write")
        slots = Array(repeating: 0, count: capacity)
        shift = 64 - capacity.trailingZeroBitCount
        for position in keys.indices { place(position) }
    }
}
