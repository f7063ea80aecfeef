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
struct SegmentIterator {
    let segment: SegmentReader
    private let scratch = GrowableBuffer(capacity: Tuning.blockBytes + 1024)
    private var block = -1
    private var view: BlockView? = nil
    private var position = 0
    private var nextPosition = 0
    private(set) var key = UnsafeRawBufferPointer(start: nil, count: 0)
    private(set) var value: UnsafeRawBufferPointer? = nil
    private(set) var isValid = false

    init(segment: SegmentReader, from key: UnsafeRawBufferPointer?) throws {
        self.segment = segment
        guard segment.blockCount > 0 else { return }
        if let key {
            let b = segment.blockIndex(for: key) ?? 0
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

    private mutating func load(_ b: Int) throws {
        block = b
        // The block view borrows the segment's mapping or `scratch`, both kept alive by `self`.
        view = try segment.withBlock(b, scratch: scratch) { $0 }
        nextPosition = 0
    }

    private mutating func advanceBlock() throws {
        if block + 1 < segment.blockCount {
            try load(block + 1)
            try decode()
        } else {
            isValid = false
            view = nil
        }
    }

    private mutating func decode() throws {
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

    mutating func next() throws { try decode() }
}

/// Merges a partition's sources into one ordered view with the newest version of each key.
package final class MergingIterator {
    private enum Source {
        case run(RunIterator)
        case segment(SegmentIterator)
    }
    private let version: Version
    private var sources: [Source] = []
    private var current = -1
    private var includeTombstones: Bool

    /// - Parameter includeTombstones: Whether deletions are reported (as nil values); flush needs them.
    init(version: Version, runs: [MemRun], segments: [SegmentReader], from key: UnsafeRawBufferPointer?, includeTombstones: Bool = false) throws {
        self.version = version
        self.includeTombstones = includeTombstones
        for r in runs {
            let it = RunIterator(run: r, from: key)
            if it.isValid { sources.append(.run(it)) }
        }
        for s in segments {
            let it = try SegmentIterator(segment: s, from: key)
            if it.isValid { sources.append(.segment(it)) }
        }
        try settle(skipCurrentKey: false)
    }

    convenience init(version: Version, partition: UInt32, from key: UnsafeRawBufferPointer?) throws {
        let p = version.partitions[partition]
        try self.init(version: version, runs: (p?.active ?? []) + (p?.frozen ?? []), segments: p?.segments ?? [], from: key)
    }

    @inline(__always)
    private func key(_ i: Int) -> UnsafeRawBufferPointer {
        switch sources[i] {
        case .run(let r): r.key
        case .segment(let s): s.key
        }
    }

    @inline(__always)
    private func valid(_ i: Int) -> Bool {
        switch sources[i] {
        case .run(let r): r.isValid
        case .segment(let s): s.isValid
        }
    }

    private func advance(_ i: Int) throws {
        switch sources[i] {
        case .run(var r):
            r.next()
            sources[i] = .run(r)
        case .segment(var s):
            try s.next()
            sources[i] = .segment(s)
        }
    }

    /// Positions `current` at the smallest key; with `skipCurrentKey`, first moves every source past it.
    private func settle(skipCurrentKey: Bool) throws {
        if skipCurrentKey && current >= 0 {
            let k = [UInt8](key(current))
            try k.withUnsafeBytes { kb in
                for i in sources.indices where valid(i) && Bytes.compare(key(i), kb) == 0 { try advance(i) }
            }
        }
        while true {
            var best = -1
            for i in sources.indices where valid(i) {
                if best < 0 || Bytes.compare(key(i), key(best)) < 0 { best = i }
            }
            current = best
            if best < 0 || includeTombstones || value != nil { return }
            // A tombstone: skip this key everywhere and look again.
            let k = [UInt8](key(best))
            try k.withUnsafeBytes { kb in
                for i in sources.indices where valid(i) && Bytes.compare(key(i), kb) == 0 { try advance(i) }
            }
        }
    }

    package var isValid: Bool { current >= 0 }

    /// The current key; valid until the iterator moves.
    package var currentKey: UnsafeRawBufferPointer { key(current) }

    /// The current value (nil for a deletion, reported only with `includeTombstones`); valid until the
    /// iterator moves.
    package var value: UnsafeRawBufferPointer? {
        switch sources[current] {
        case .run(let r): r.value
        case .segment(let s): s.value
        }
    }

    package func next() throws {
        guard current >= 0 else { return }
        if sources.count == 1 {
            try advance(0)
            if !valid(0) { current = -1; return }
            if !includeTombstones && value == nil { try settle(skipCurrentKey: false) }
            return
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
