import Engine

/// The new records a blocking migration wrote into its transaction as each `enumerateObjects` (or blocking
/// `transformObjects`) closure returned, for one partition: per object key, where its record sits in the
/// transaction's batch. Nothing else is kept per object: the record is what the block left, and the few
/// operations that need the object again later in the block (a link read through a new object, a second
/// enumeration, a rename, a primary-key rebuild) decode it back from the batch.
///
/// Keys arrive in ascending order from one enumeration and are found by binary search; a second
/// enumeration of the same type adds them again out of order, and a dictionary takes over.
///
/// When the transaction spills its batch to segments (`WriteTransaction.spill()`), the ranges are gone:
/// `spilled()` keeps only which keys were streamed, as runs of consecutive keys (a type's keys are mostly
/// dense, so a few runs stand for millions of objects), and their records are read back by key.
final class StreamedRecords {
    /// What `take` and `all` return for a record that was spilled: read it with `withSpilledValue`.
    static let spilledRange: Range<Int> = -1..<0
    /// The layout the records were encoded in (the new type's at the time; a rename ends this set first).
    let layout: RecordLayout
    let schemaVersion: UInt64
    // One migration on one thread uses a set: dynamic exclusivity checks are off for its state.
    @exclusivity(unchecked) private var keys: [Int64] = []
    /// The record of `keys[i]` in the batch; empty once it was taken back (`take`).
    @exclusivity(unchecked) private var ranges: [Range<Int>] = []
    /// Key -> index, once keys stopped arriving in order.
    @exclusivity(unchecked) private var positions: [Int64: Int]?
    @exclusivity(unchecked) private(set) var liveCount = 0
    /// Keys streamed before the last spill, as sorted, disjoint runs of consecutive keys.
    @exclusivity(unchecked) private var spilledRuns: [ClosedRange<Int64>] = []
    /// Keys of `spilledRuns` taken back or streamed again since.
    @exclusivity(unchecked) private var spilledTaken = Set<Int64>()
    /// The largest key ever added: an enumeration in key order asks for keys above it, which need no search.
    @exclusivity(unchecked) private var largest = Int64.min

    init(layout: RecordLayout, schemaVersion: UInt64) {
        self.layout = layout
        self.schemaVersion = schemaVersion
    }

    var layouts: RecordLayouts { RecordLayouts([schemaVersion: layout]) }

    private func index(of key: Int64) -> Int? {
        if let positions { return positions[key] }
        var lo = 0, hi = keys.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if keys[mid] < key { lo = mid + 1 } else { hi = mid }
        }
        return lo < keys.count && keys[lo] == key ? lo : nil
    }

    private func inSpilledRuns(_ key: Int64) -> Bool {
        var lo = 0, hi = spilledRuns.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if spilledRuns[mid].upperBound < key { lo = mid + 1 } else { hi = mid }
        }
        return lo < spilledRuns.count && spilledRuns[lo].contains(key)
    }

    private func spilledLive(_ key: Int64) -> Bool { inSpilledRuns(key) && !spilledTaken.contains(key) }

    /// The transaction spilled its batch: every record streamed so far is now read back by key.
    func spilled() {
        var live = zip(keys, ranges).filter { !$0.1.isEmpty }.map(\.0)
        if positions != nil { live.sort() }
        keys = []
        ranges = []
        positions = nil
        guard !live.isEmpty else { return }
        var runs: [ClosedRange<Int64>] = []
        for key in live {
            spilledTaken.remove(key)
            if let last = runs.last, last.upperBound &+ 1 == key {
                runs[runs.count - 1] = last.lowerBound...key
            } else {
                runs.append(key...key)
            }
        }
        // Merge with the runs of earlier spills (both sorted, disjoint within themselves).
        var merged: [ClosedRange<Int64>] = []
        merged.reserveCapacity(runs.count + spilledRuns.count)
        var a = 0, b = 0
        while a < runs.count || b < spilledRuns.count {
            let next: ClosedRange<Int64>
            if b == spilledRuns.count || (a < runs.count && runs[a].lowerBound < spilledRuns[b].lowerBound) {
                next = runs[a]; a += 1
            } else {
                next = spilledRuns[b]; b += 1
            }
            if let last = merged.last, next.lowerBound <= last.upperBound &+ 1 {
                merged[merged.count - 1] = last.lowerBound...Swift.max(last.upperBound, next.upperBound)
            } else {
                merged.append(next)
            }
        }
        spilledRuns = merged
    }

    /// Records that `key`'s record is `range` of the batch (a later record of the same key replaces it).
    func add(_ key: Int64, _ range: Range<Int>) {
        if key > largest {
            largest = key
        } else if spilledLive(key) {
            // Streamed again after a spill: the new record supersedes the spilled one.
            spilledTaken.insert(key)
            liveCount -= 1
        }
        if positions == nil, keys.last.map({ key > $0 }) ?? true {
            // The usual case: one enumeration, in key order.
            keys.append(key)
            ranges.append(range)
            liveCount += 1
            return
        }
        if let i = index(of: key) {
            if ranges[i].isEmpty { liveCount += 1 }
            ranges[i] = range
            return
        }
        if positions == nil, let last = keys.last, key < last {
            positions = Dictionary(uniqueKeysWithValues: keys.enumerated().map { ($1, $0) })
        }
        positions?[key] = keys.count
        keys.append(key)
        ranges.append(range)
        liveCount += 1
    }

    func contains(_ key: Int64) -> Bool {
        if key > largest { return false }
        if let i = index(of: key), !ranges[i].isEmpty { return true }
        return spilledLive(key)
    }

    /// The record range of `key` (`spilledRange` when spilled), which from now on the caller keeps as a state
    /// (nil when not streamed).
    func take(_ key: Int64) -> Range<Int>? {
        if key > largest { return nil }
        if spilledLive(key) {
            spilledTaken.insert(key)
            liveCount -= 1
            return Self.spilledRange
        }
        guard let i = index(of: key), !ranges[i].isEmpty else { return nil }
        let r = ranges[i]
        ranges[i] = 0..<0
        liveCount -= 1
        return r
    }

    /// Every streamed key with its record range (`spilledRange` for spilled ones).
    var all: [(key: Int64, range: Range<Int>)] {
        var result: [(key: Int64, range: Range<Int>)] = []
        for run in spilledRuns {
            for key in run where !spilledTaken.contains(key) { result.append((key, Self.spilledRange)) }
        }
        return result + zip(keys, ranges).filter { !$0.1.isEmpty }.map { ($0.0, $0.1) }
    }
}
