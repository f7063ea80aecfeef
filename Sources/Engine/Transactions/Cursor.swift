// Invariants:
// (1) An iterator holds the Version it reads, so every run arena and segment mapping it points into stays
//     alive while it does; the key and value views it lends are valid until it moves.
// (2) Among sources positioned at the same key, the one with the lowest index (the newest) decides it.

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
package final class MergingIterator {
    private let version: Version
    // Used by one thread at a time, without re-entry: dynamic exclusivity checks are off.
    @exclusivity(unchecked) private var runs: [RunIterator] = []
    private let segments: [SegmentIterator]
    /// `segments`, unretained (`segments` keeps them): a step reads and moves them without a retain and a release
    /// of the iterator around each call, which an element of `segments` needs (the call could change the array).
    private let segmentRefs: [Unmanaged<SegmentIterator>]
    @exclusivity(unchecked) private var current = -1
    /// Set by `settle`: the source with the smallest key after `current`'s when that key is strictly larger
    /// (then `next()` moves `current` alone while it stays below it: sources with disjoint key ranges, such
    /// as a large write's spilled segments, step at the cost of one comparison); `noRival` when `current` is
    /// the only valid source; `tie` when another source is at `current`'s key (every step settles).
    @exclusivity(unchecked) private var rival = MergingIterator.tie
    private static let tie = -1
    private static let noRival = -2
    /// When `current` is a segment that `next()` moves alone (`rival` is not `tie`): that segment, and the rival's
    /// key (nil: no rival), which does not move meanwhile. A step is then one call into the segment and one
    /// comparison. Unretained: `segments` keeps it.
    @exclusivity(unchecked) private var stepping: Unmanaged<SegmentIterator>? = nil
    @exclusivity(unchecked) private var rivalKey: UnsafeRawBufferPointer? = nil
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
        try settle(skipCurrentKey: false)
    }

    convenience init(version: Version, partition: UInt32, from key: UnsafeRawBufferPointer?) throws {
        let p = version.partitions[partition]
        try self.init(version: version, runs: (p?.active ?? []) + (p?.frozen ?? []), segments: p?.segments ?? [], from: key)
    }

    private var sourceCount: Int { runs.count + segments.count }

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

    /// Moves every valid source positioned at source `s`'s key past it, `s` last: the key compared is its own
    /// (each source's key lies in that source's memory, which other sources moving leave alone), so none is
    /// copied.
    private func skip(at s: Int) throws {
        let k = key(s)
        for i in 0..<sourceCount where i != s && valid(i) && Bytes.compare(key(i), k) == 0 { try advance(i) }
        try advance(s)
    }

    /// Positions `current` at the smallest key; with `skipCurrentKey`, first moves every source past it.
    private func settle(skipCurrentKey: Bool) throws {
        if skipCurrentKey && current >= 0 { try skip(at: current) }
        while true {
            // The smallest key (the newest source among equals) and the smallest of the others, in one pass.
            var best = -1, second = -1
            for i in 0..<sourceCount where valid(i) {
                if best < 0 {
                    best = i
                } else if Bytes.compare(key(i), key(best)) < 0 {
                    second = best
                    best = i
                } else if second < 0 || Bytes.compare(key(i), key(second)) < 0 {
                    second = i
                }
            }
            current = best
            stepping = nil
            if best < 0 { return }
            if includeTombstones || value != nil {
                rival = second < 0 ? Self.noRival : Bytes.compare(key(best), key(second)) < 0 ? second : Self.tie
                if rival != Self.tie && best >= runs.count {
                    stepping = segmentRefs[best - runs.count]
                    rivalKey = rival >= 0 ? key(rival) : nil
                }
                return
            }
            // A tombstone: skip this key everywhere and look again.
            try skip(at: best)
        }
    }

    package var isValid: Bool { current >= 0 }

    /// The current key; valid until the iterator moves.
    package var currentKey: UnsafeRawBufferPointer { key(current) }

    /// The current value (nil for a deletion, reported only with `includeTombstones`); valid until the
    /// iterator moves.
    package var value: UnsafeRawBufferPointer? {
        current < runs.count ? runs[current].value : segmentRefs[current - runs.count]._withUnsafeGuaranteedRef { $0.value }
    }

    /// The current key and value (a nil value: a deletion, reported only with `includeTombstones`); nil at the
    /// end. Valid until the iterator moves. One call for what a step reads.
    package var entry: (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer?)? {
        if let stepping { return stepping._withUnsafeGuaranteedRef { ($0.key, $0.value) } }
        guard current >= 0 else { return nil }
        if current < runs.count { return (runs[current].key, runs[current].value) }
        return segmentRefs[current - runs.count]._withUnsafeGuaranteedRef { ($0.key, $0.value) }
    }

    package func next() throws {
        if let stepping {
            // The current source is a segment no other source reaches yet (below, in general).
            let moved = try stepping._withUnsafeGuaranteedRef { s -> Bool in
                while true {
                    try s.next()
                    guard s.isValid else { return false }
                    if let rivalKey, Bytes.compare(s.key, rivalKey) >= 0 { return false }
                    if includeTombstones || s.value != nil { return true }
                }
            }
            if moved { return }
            return try settle(skipCurrentKey: false)
        }
        guard current >= 0 else { return }
        if sourceCount == 1 {
            // One source: its keys are unique and ordered already.
            try advance(0)
            if !valid(0) { current = -1; return }
            if !includeTombstones && value == nil { try settle(skipCurrentKey: false) }
            return
        }
        if rival != Self.tie {
            // No other source has the current key: move the current source on while it stays below the rival's
            // (which does not move). A deletion there hides nothing older, and is passed over.
            while true {
                try advance(current)
                guard valid(current) else { break }
                if rival >= 0 && Bytes.compare(key(current), key(rival)) >= 0 { break }
                if includeTombstones || value != nil { return }
            }
            // The old key was the current source's alone: nothing else to move past it.
            return try settle(skipCurrentKey: false)
        }
        try settle(skipCurrentKey: true)
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
