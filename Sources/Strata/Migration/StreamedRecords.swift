import Engine

/// The new records a blocking migration wrote into its transaction as each `enumerateObjects` (or blocking
/// `transformObjects`) closure returned, for one partition: per object key, where its record sits in the
/// transaction's batch. Nothing else is kept per object: the record is what the block left, and the few
/// operations that need the object again later in the block (a link read through a new object, a second
/// enumeration, a rename, a primary-key rebuild) decode it back from the batch.
///
/// Keys arrive in ascending order from one enumeration and are found by binary search; a second
/// enumeration of the same type adds them again out of order, and a dictionary takes over.
final class StreamedRecords {
    /// The layout the records were encoded in (the new type's at the time; a rename ends this set first).
    let layout: RecordLayout
    let schemaVersion: UInt64
    private var keys: [Int64] = []
    /// The record of `keys[i]` in the batch; empty once it was taken back (`take`).
    private var ranges: [Range<Int>] = []
    /// Key -> index, once keys stopped arriving in order.
    private var positions: [Int64: Int]?
    private(set) var liveCount = 0

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

    /// Records that `key`'s record is `range` of the batch (a later record of the same key replaces it).
    func add(_ key: Int64, _ range: Range<Int>) {
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
        guard let i = index(of: key) else { return false }
        return !ranges[i].isEmpty
    }

    /// The record range of `key`, which from now on the caller keeps as a state (nil when not streamed).
    func take(_ key: Int64) -> Range<Int>? {
        guard let i = index(of: key), !ranges[i].isEmpty else { return nil }
        let r = ranges[i]
        ranges[i] = 0..<0
        liveCount -= 1
        return r
    }

    /// Every streamed key with its record range, in the order they were added.
    var all: [(key: Int64, range: Range<Int>)] {
        zip(keys, ranges).filter { !$0.1.isEmpty }.map { ($0.0, $0.1) }
    }
}
