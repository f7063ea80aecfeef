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
    static func merge(newer: MemRun, older: MemRun) -> MemRun {
        let out = GrowableBuffer(capacity: newer.byteCount + older.byteCount + 16)
        var slots: [Slot] = []
        slots.reserveCapacity(newer.count + older.count)
        func copy(_ run: MemRun, _ i: Int) {
            let k = run.key(i)
            let offset = out.count
            out.append(k)
            let v = run.value(i)
            if let v { out.append(v) }
            slots.append(Slot(keyOffset: offset, keyCount: Int32(k.count), valueCount: v.map { Int32($0.count) } ?? -1))
        }
        withExtendedLifetime((newer, older)) {
            var a = 0, b = 0
            while a < newer.count && b < older.count {
                let c = Bytes.compare(newer.key(a), older.key(b))
                if c < 0 {
                    copy(newer, a); a += 1
                } else if c > 0 {
                    copy(older, b); b += 1
                } else {
                    copy(newer, a); a += 1; b += 1
                }
            }
            while a < newer.count { copy(newer, a); a += 1 }
            while b < older.count { copy(older, b); b += 1 }
        }
        return MemRun(
            arena: MappedRegion(adopting: out), sortedSlots: slots,
            minSequence: min(newer.minSequence, older.minSequence), maxSequence: max(newer.maxSequence, older.maxSequence),
            userMetadata: min(newer.userMetadata, older.userMetadata))
    }
}
