// Invariants:
// (1) An iterator holds the Version it reads, so every run arena and segment mapping it points into stays
//     alive while it does; the key and value views it lends are valid until it moves.
// (2) Among sources positioned at the same key, the one with the lowest index (the newest) decides it.
// (3) The heap holds exactly the valid sources, ordered by (key, index); the root is `current` after `settle`.

/// A position in one memtable run.
struct RunIterator {
    let run: MemRun
    var index: Int

    init(run: MemRun, from key: UnsafeRawBufferPointer?) {
        self.run = run
        self.index = key.map { run.lowerBound($0) } ?? 0
    }
    var isValid: Bool { index < run.count }
    var key: UnsafeRawBufferPointer { run.key(index) }
    var value: UnsafeRawBufferPointer? { run.value(index) }
    mutating func next() { index += 1 }
}

/// A position in one segment; decompresses into its own scratch buffer.
// A class, not a struct: the merging iterator steps its sources in place, and a struct in an array was checked for
// uniqueness (a runtime call) at every step. Used by one thread at a time: dynamic exclusivity checks are off.
package final class SegmentIterator {
    let segment: SegmentReader
    private let scratch = GrowableBuffer(capacity: Tuning.blockBytes + 1024)
    @exclusivity(unchecked) private var block = -1
    @exclusivity(unchecked) private var view: BlockView? = nil
    @exclusivity(unchecked) private var position = 0
    @exclusivity(unchecked) private var nextPosition = 0
    @exclusivity(unchecked) package private(set) var key = UnsafeRawBufferPointer(start: nil, count: 0)
    @exclusivity(unchecked) package private(set) var value: UnsafeRawBufferPointer? = nil
    @exclusivity(unchecked) package private(set) var isValid = false

    package init(segment: SegmentReader, from key: UnsafeRawBufferPointer?) throws {
        self.segment = segment
        guard segment.blockCount > 0 else { return }
        if let key {
            let b = try segment.blockIndex(for: key) ?? 0
            try load(b)
            guard let view else { return }
            // The first entry at or after `key` in this block (binary search over the offset table).
            var lo = 0, hi = view.entryCount
            while lo < hi {
                let mid = (lo + hi) >> 1
                let e = try view.entry(at: try view.entryOffset(mid))
                if Bytes.compare(e.key, key) < 0 { lo = mid + 1 } else { hi = mid }
            }
            if lo < view.entryCount {
                nextPosition = try view.entryOffset(lo)
                try decode()
            } else {
                try advanceBlock()
            }
        } else {
            try load(0)
            try decode()
        }
    }

    private func load(_ b: Int) throws {
        block = b
        // The block view borrows the segment's mapping or `scratch`, both kept alive by `self`.
        view = try segment.withBlock(b, scratch: scratch) { $0 }
        nextPosition = 0
    }

    private func advanceBlock() throws {
        if block + 1 < segment.blockCount {
            try load(block + 1)
            try decode()
        } else {
            isValid = false
            view = nil
        }
    }

    private func decode() throws {
        guard let view else { isValid = false; return }
        if nextPosition >= view.entriesEnd {
            try advanceBlock()
            return
        }
        position = nextPosition
        let e = try view.entry(at: position)
        key = e.key
        value = e.value
        nextPosition = e.next
        isValid = true
    }

    package func next() throws { try decode() }
}

/// Merges a partition's sources into one ordered view with the newest version of each key.
///
/// Sources are numbered newest first: runs (0..<runs.count), then segments. Among sources at the same key
/// the lowest number wins.
///
/// The valid sources are kept in a binary min-heap ordered by (key, number), each with its key's first eight
/// bytes (`Bytes.prefix64`) beside it: the root is the current entry's source, a key shared with the root is
/// at one of the root's children, and most comparisons are one of two integers (an object key is eight
/// bytes: its prefix is the key). A step costs a few comparisons however many sources there are: a large
/// write's spilled segments over the segments they change, before a merge combines them, are a dozen.
package final class MergingIterator {
    private let version: Version
    // Used by one thread at a time, without re-entry: dynamic exclusivity checks are off.
    @exclusivity(unchecked) private var runs: [RunIterator] = []
    private let segments: [SegmentIterator]
    /// `segments`, unretained (`segments` keeps them): a step reads and moves them without a retain and a release
    /// of the iterator around each call, which an element of `segments` needs (the call could change the array).
    private let segmentRefs: [Unmanaged<SegmentIterator>]

    /// A valid source in the heap: its number and its key's prefix; `whole`: the key is exactly eight bytes,
    /// so equal prefixes mean equal keys.
    private struct Head {
        var prefix: UInt64
        var source: Int
        var whole: Bool
    }
    @exclusivity(unchecked) private var heap: [Head] = []
    /// The current source (the heap's root), -1 at the end.
    @exclusivity(unchecked) private var current = -1
    /// Set by `settle`: the current key is the current source's alone, and the smallest key of the other sources
    /// (`rivalKey`, nil: no other source) lies strictly above it. `next()` then moves the current source alone
    /// while it stays below the rival (sources with disjoint key ranges, such as a large write's spilled
    /// segments, step at the cost of one comparison), without touching the heap.
    @exclusivity(unchecked) private var alone = false
    @exclusivity(unchecked) private var rivalKey: UnsafeRawBufferPointer? = nil
    /// When the current source is a segment and `alone`: that segment. Unretained: `segments` keeps it.
    @exclusivity(unchecked) private var stepping: Unmanaged<SegmentIterator>? = nil
    private let includeTombstones: Bool

    /// - Parameter includeTombstones: Whether deletions are reported (as nil values); flush needs them.
    init(version: Version, runs: [MemRun], segments: [SegmentReader], from key: UnsafeRawBufferPointer?, includeTombstones: Bool = false) throws {
        self.version = version
        self.includeTombstones = includeTombstones
        for r in runs {
            let it = RunIterator(run: r, from: key)
            if it.isValid { self.runs.append(it) }
        }
        var iterators: [SegmentIterator] = []
        for s in segments {
            let it = try SegmentIterator(segment: s, from: key)
            if it.isValid { iterators.append(it) }
        }
        self.segments = iterators
        segmentRefs = iterators.map { Unmanaged.passUnretained($0) }
        let count = self.runs.count + iterators.count
        heap.reserveCapacity(count)
        for i in 0..<count { heap.append(head(i)) }
        var p = heap.count / 2 - 1
        while p >= 0 {
            siftDown(p)
            p -= 1
        }
        try settle()
    }

    convenience init(version: Version, partition: UInt32, from key: UnsafeRawBufferPointer?) throws {
        let p = version.partitions[partition]
        try self.init(version: version, runs: (p?.active ?? []) + (p?.frozen ?? []), segments: p?.segments ?? [], from: key)
    }

    @inline(__always)
    private func key(_ i: Int) -> UnsafeRawBufferPointer {
        i < runs.count ? runs[i].key : segmentRefs[i - runs.count]._withUnsafeGuaranteedRef { $0.key }
    }

    @inline(__always)
    private func valid(_ i: Int) -> Bool {
        i < runs.count ? runs[i].isValid : segmentRefs[i - runs.count]._withUnsafeGuaranteedRef { $0.isValid }
    }

    @inline(__always)
    private func advance(_ i: Int) throws {
        if i < runs.count { runs[i].next() } else { try segmentRefs[i - runs.count]._withUnsafeGuaranteedRef { try $0.next() } }
    }

    @inline(__always)
    private func head(_ i: Int) -> Head {
        let k = key(i)
        return Head(prefix: Bytes.prefix64(k), source: i, whole: k.count == 8)
    }

    /// Whether `a`'s key sorts before `b`'s, or they are the same key and `a` is the newer source.
    @inline(__always)
    private func precedes(_ a: Head, _ b: Head) -> Bool {
        if a.prefix != b.prefix { return a.prefix < b.prefix }
        if !(a.whole && b.whole) {
            let c = Bytes.compare(key(a.source), key(b.source))
            if c != 0 { return c < 0 }
        }
        return a.source < b.source
    }

    /// Whether `a` and `b` are at the same key.
    @inline(__always)
    private func sameKey(_ a: Head, _ b: Head) -> Bool {
        a.prefix == b.prefix && ((a.whole && b.whole) || Bytes.compare(key(a.source), key(b.source)) == 0)
    }

    private func siftDown(_ start: Int) {
        let n = heap.count
        var p = start
        let moving = heap[p]
        while true {
            let l = 2 * p + 1
            if l >= n { break }
            var c = l
            if l + 1 < n && precedes(heap[l + 1], heap[l]) { c = l + 1 }
            if !precedes(heap[c], moving) { break }
            heap[p] = heap[c]
            p = c
        }
        heap[p] = moving
    }

    private func siftUp(_ start: Int) {
        var p = start
        let moving = heap[p]
        while p > 0 {
            let parent = (p - 1) / 2
            if !precedes(moving, heap[parent]) { break }
            heap[p] = heap[parent]
            p = parent
        }
        heap[p] = moving
    }

    /// Moves the source at heap position `p` to its next entry and restores the heap (its key only grows, so
    /// it moves down; at its end it leaves the heap).
    private func advance(at p: Int) throws {
        let s = heap[p].source
        try advance(s)
        if valid(s) {
            heap[p] = head(s)
            siftDown(p)
        } else {
            let last = heap.removeLast()
            if p < heap.count {
                heap[p] = last
                siftDown(p)
                siftUp(p)
            }
        }
    }

    /// The heap position of the root's smaller child, nil when the root has none.
    @inline(__always)
    private func rivalPosition() -> Int? {
        let n = heap.count
        if n < 2 { return nil }
        return n > 2 && precedes(heap[2], heap[1]) ? 2 : 1
    }

    /// Moves every source at the root's key past it, the root last: the key compared is the root's own (each
    /// source's key lies in that source's memory, which other sources moving leave alone), so none is copied.
    /// Another source at that key is always one of the root's children, the smaller.
    private func skipRootKey() throws {
        let root = heap[0]
        while let r = rivalPosition(), sameKey(heap[r], root) { try advance(at: r) }
        try advance(at: 0)
    }

    /// Positions `current` at the smallest live key (any key, with `includeTombstones`).
    private func settle() throws {
        while let root = heap.first {
            if includeTombstones || value(of: root.source) != nil {
                current = root.source
                let r = rivalPosition()
                alone = r.map { !sameKey(heap[$0], root) } ?? true
                rivalKey = alone ? r.map { key(heap[$0].source) } : nil
                stepping = alone && current >= runs.count ? segmentRefs[current - runs.count] : nil
                return
            }
            // A tombstone: skip this key everywhere and look again.
            try skipRootKey()
        }
        current = -1
        alone = false
        rivalKey = nil
        stepping = nil
    }

    @inline(__always)
    private func value(of i: Int) -> UnsafeRawBufferPointer? {
        i < runs.count ? runs[i].value : segmentRefs[i - runs.count]._withUnsafeGuaranteedRef { $0.value }
    }

    package var isValid: Bool { current >= 0 }

    /// The current key; valid until the iterator moves.
    package var currentKey: UnsafeRawBufferPointer { key(current) }

    /// The current value (nil for a deletion, reported only with `includeTombstones`); valid until the
    /// iterator moves.
    package var value: UnsafeRawBufferPointer? { value(of: current) }

    /// The current key and value (a nil value: a deletion, reported only with `includeTombstones`); nil at the
    /// end. Valid until the iterator moves. One call for what a step reads.
    package var entry: (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer?)? {
        if let stepping { return stepping._withUnsafeGuaranteedRef { ($0.key, $0.value) } }
        guard current >= 0 else { return nil }
        if current < runs.count { return (runs[current].key, runs[current].value) }
        return segmentRefs[current - runs.count]._withUnsafeGuaranteedRef { ($0.key, $0.value) }
    }

    package func next() throws {
        guard current >= 0 else { return }
        if !alone {
            // Another source has the current key: move every source past it.
            try skipRootKey()
            return try settle()
        }
        // No other source has the current key: move the current source on while it stays below the rival's
        // (which does not move). A deletion there hides nothing older, and is passed over.
        if let stepping {
            let found = try stepping._withUnsafeGuaranteedRef { s -> Bool in
                while true {
                    try s.next()
                    guard s.isValid else { return false }
                    if let rivalKey, Bytes.compare(s.key, rivalKey) >= 0 { return false }
                    if includeTombstones || s.value != nil { return true }
                }
            }
            if found { return }
        } else {
            while true {
                try advance(current)
                guard valid(current) else { break }
                if let rivalKey, Bytes.compare(key(current), rivalKey) >= 0 { break }
                if includeTombstones || value(of: current) != nil { return }
            }
        }
        // The current source reached the rival's key or its end: back into the heap.
        if valid(current) {
            heap[0] = head(current)
            siftDown(0)
        } else {
            let last = heap.removeLast()
            if !heap.isEmpty {
                heap[0] = last
                siftDown(0)
            }
        }
        try settle()
    }
}

/// A forward cursor over one partition of a snapshot, yielding copies of keys and values.
package final class Cursor {
    private let iterator: MergingIterator
    private var started = false

    init(iterator: MergingIterator) {
        self.iterator = iterator
    }

    /// The next entry, or nil at the end.
    package func next() throws -> (key: [UInt8], value: [UInt8])? {
        if started { try iterator.next() } else { started = true }
        guard iterator.isValid, let v = iterator.value else { return nil }
        return ([UInt8](iterator.currentKey), [UInt8](v))
    }
}
