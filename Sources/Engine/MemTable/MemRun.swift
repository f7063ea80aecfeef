// Invariants:
// (1) A MemRun is immutable once built: snapshots share it without locks.
// (2) Its slots are sorted by key, strictly increasing (one entry per key, the newest operation).
// (3) Every slot's key and value lie inside `arena`.

/// A sorted, immutable run of the memtable: the keys and values of one or more commits to one partition.
///
/// The memtable of a partition is a short list of runs, newest first. A commit adds one run; runs of similar
/// size are merged (like a binary counter), so a partition has O(log n) runs and each entry is copied
/// O(log n) times. A snapshot holds the list it saw, so merging never disturbs a reader.
package final class MemRun: Sendable {
    let arena: MappedRegion
    let slots: [Slot]
    let minSequence: UInt64
    let maxSequence: UInt64
    /// The partition's user metadata when these entries were committed.
    let userMetadata: UInt64
    /// Bytes of keys and values (the arena may be shared with runs of other partitions).
    let byteCount: Int

    init(arena: MappedRegion, sortedSlots: [Slot], minSequence: UInt64, maxSequence: UInt64, userMetadata: UInt64) {
        self.arena = arena
        self.slots = sortedSlots
        self.minSequence = minSequence
        self.maxSequence = maxSequence
        self.userMetadata = userMetadata
        var bytes = 0
        for s in sortedSlots { bytes += Int(s.keyCount) + max(Int(s.valueCount), 0) + 16 }
        self.byteCount = bytes
    }

    var count: Int { slots.count }

    @inline(__always)
    func key(_ i: Int) -> UnsafeRawBufferPointer {
        let s = slots[i]
        return UnsafeRawBufferPointer(rebasing: arena.unsafeBytes[s.keyOffset..<(s.keyOffset + Int(s.keyCount))])
    }

    /// The value of entry `i`, or nil for a tombstone.
    @inline(__always)
    func value(_ i: Int) -> UnsafeRawBufferPointer? {
        let s = slots[i]
        if s.isTombstone { return nil }
        let start = s.valueOffset
        return UnsafeRawBufferPointer(rebasing: arena.unsafeBytes[start..<(start + Int(s.valueCount))])
    }

    /// The first index whose key is at or after `key`.
    func lowerBound(_ key: UnsafeRawBufferPointer) -> Int {
        var lo = 0, hi = slots.count
        while lo < hi {
            let mid = (lo + hi) >> 1
            if Bytes.compare(self.key(mid), key) < 0 { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    /// The index of `key`, or nil.
    func find(_ key: UnsafeRawBufferPointer) -> Int? {
        let i = lowerBound(key)
        return i < slots.count && Bytes.compare(self.key(i), key) == 0 ? i : nil
    }

    /// Builds a run from operations in commit order: sorts them by key and keeps the last one for each key.
    static func build(arena: MappedRegion, operations: [Slot], sequence: UInt64, userMetadata: UInt64) -> MemRun {
        let bytes = arena.unsafeBytes
        @inline(__always) func key(_ s: Slot) -> UnsafeRawBufferPointer {
            UnsafeRawBufferPointer(rebasing: bytes[s.keyOffset..<(s.keyOffset + Int(s.keyCount))])
        }
        var increasing = true
        if operations.count > 1 {
            for i in 1..<operations.count where Bytes.compare(key(operations[i - 1]), key(operations[i])) >= 0 {
                increasing = false
                break
            }
        }
        if increasing {
            return withExtendedLifetime(arena) {
                MemRun(arena: arena, sortedSlots: operations, minSequence: sequence, maxSequence: sequence, userMetadata: userMetadata)
            }
        }
        // Stable order: by key, then by position, so the last operation on a key is last among equals.
        var order = Array(0..<operations.count)
        order.sort { a, b in
            let c = Bytes.compare(key(operations[a]), key(operations[b]))
            return c != 0 ? c < 0 : a < b
        }
        var sorted: [Slot] = []
        sorted.reserveCapacity(order.count)
        for (n, i) in order.enumerated() {
            if n + 1 < order.count, Bytes.compare(key(operations[i]), key(operations[order[n + 1]])) == 0 { continue }
            sorted.append(operations[i])
        }
        return withExtendedLifetime(arena) {
            MemRun(arena: arena, sortedSlots: sorted, minSequence: sequence, maxSequence: sequence, userMetadata: userMetadata)
        }
    }

    /// Merges two runs into one; on equal keys `newer` wins. Tombstones are kept: they hide older segments.
    ///
    /// Entries are copied a span at a time: consecutive entries taken from one run whose bytes lie back to back
    /// in its arena (every merged run's do) are one copy, and their slots are moved by one offset. A newer run
    /// whose keys all follow the older's (keys that only grow, the usual insert) is two such spans. A commit of a
    /// few entries into a large memtable copied each entry with calls of its own, about a third of a small
    /// transaction's instructions.
    static func merge(newer: MemRun, older: MemRun) -> MemRun {
        let out = GrowableBuffer(capacity: newer.byteCount + older.byteCount + 16)
        var slots: [Slot] = []
        slots.reserveCapacity(newer.count + older.count)
        withExtendedLifetime((newer, older)) {
            if newer.count == 0 || older.count == 0 || Bytes.compare(older.key(older.count - 1), newer.key(0)) < 0 {
                older.copy(0..<older.count, into: out, slots: &slots)
                newer.copy(0..<newer.count, into: out, slots: &slots)
                return
            }
            if Bytes.compare(newer.key(newer.count - 1), older.key(0)) < 0 {
                newer.copy(0..<newer.count, into: out, slots: &slots)
                older.copy(0..<older.count, into: out, slots: &slots)
                return
            }
            // Each side's pending span starts at its `from`; a span is copied when the other side takes a turn
            // (or, for the older run, when an entry of it is dropped for an equal newer key).
            var a = 0, b = 0, fromA = 0, fromB = 0
            while a < newer.count && b < older.count {
                let c = Bytes.compare(newer.key(a), older.key(b))
                if c < 0 {
                    if fromB < b { older.copy(fromB..<b, into: out, slots: &slots) }
                    a += 1
                    fromB = b
                } else if c > 0 {
                    if fromA < a { newer.copy(fromA..<a, into: out, slots: &slots) }
                    b += 1
                    fromA = a
                } else {
                    if fromB < b { older.copy(fromB..<b, into: out, slots: &slots) }
                    a += 1
                    b += 1
                    fromB = b
                }
            }
            // One side's span is still pending, and the other side may have entries left: both come in order.
            if fromA < a { newer.copy(fromA..<a, into: out, slots: &slots) }
            if fromB < b { older.copy(fromB..<b, into: out, slots: &slots) }
            newer.copy(a..<newer.count, into: out, slots: &slots)
            older.copy(b..<older.count, into: out, slots: &slots)
        }
        return MemRun(
            arena: MappedRegion(adopting: out), sortedSlots: slots,
            minSequence: min(newer.minSequence, older.minSequence), maxSequence: max(newer.maxSequence, older.maxSequence),
            userMetadata: min(newer.userMetadata, older.userMetadata))
    }

    /// Appends entries `range` (keys and values) to `out` and their slots, at their new offsets, to `slots`:
    /// one copy per stretch of entries that lie back to back in the arena.
    private func copy(_ range: Range<Int>, into out: GrowableBuffer, slots: inout [Slot]) {
        let bytes = arena.unsafeBytes
        var i = range.lowerBound
        while i < range.upperBound {
            let first = self.slots[i]
            var end = first.keyOffset + first.entryBytes
            var j = i + 1
            while j < range.upperBound, self.slots[j].keyOffset == end {
                end += self.slots[j].entryBytes
                j += 1
            }
            let delta = out.count - first.keyOffset
            out.append(UnsafeRawBufferPointer(rebasing: bytes[first.keyOffset..<end]))
            for k in i..<j {
                var s = self.slots[k]
                s.keyOffset += delta
                slots.append(s)
            }
            i = j
        }
    }
}
