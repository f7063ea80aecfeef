import Atomics

/// Keeps the versions that live snapshots hold, so that their cost can be reported and limited.
final class SnapshotRegistry: Sendable {
    private struct State {
        var next = 0
        var live: [Int: Version] = [:]
    }
    private let state = Locked(State())

    /// Registers a snapshot that no limit applies to (cannot fail).
    func register(_ version: Version) -> Int {
        state.withLock { s in
            s.next += 1
            s.live[s.next] = version
            return s.next
        }
    }

    func register(_ version: Version, limit: Int?) throws -> Int {
        try state.withLock { s in
            if let limit, s.live.count >= limit {
                throw StorageError(
                    .tooManySnapshots,
                    "\(s.live.count) snapshots are alive, the limit is \(limit) (maximumLiveSnapshots). "
                        + "Close snapshots you no longer need, or raise the limit; each keeps old data on disk and in memory.")
            }
            s.next += 1
            s.live[s.next] = version
            return s.next
        }
    }

    func unregister(_ id: Int) { state.withLock { _ = $0.live.removeValue(forKey: id) } }

    var versions: [Version] { state.withLock { Array($0.live.values) } }
    var count: Int { state.withLock { $0.live.count } }
}

/// A consistent, read-only view of the database at one sequence number (MVCC).
///
/// A snapshot reads exactly what was committed at or before `sequence`, however many commits follow, and
/// never blocks the writer. It keeps the memtable runs and segments it can see alive: release it (`close()`,
/// or let it go) promptly, since `Database.statistics()` counts what old snapshots pin.
package final class Snapshot: @unchecked Sendable {
    let version: Version
    private let registry: SnapshotRegistry
    private let id: Int
    private let closed = ManagedAtomic<Bool>(false)

    init(version: Version, registry: SnapshotRegistry, limit: Int?) throws {
        self.version = version
        self.registry = registry
        self.id = try registry.register(version, limit: limit)
    }

    /// A snapshot outside the limit on live snapshots (a write transaction's view).
    init(unlimited version: Version, registry: SnapshotRegistry) {
        self.version = version
        self.registry = registry
        self.id = registry.register(version)
    }

    deinit { close() }

    /// The sequence number of the last commit this snapshot sees.
    package var sequence: UInt64 { version.sequence }

    /// Another snapshot of the same version, with its own lifetime (a frozen view that outlives this one).
    package func duplicate() throws -> Snapshot {
        checkOpen("duplicate")
        return try Snapshot(version: version, registry: registry, limit: nil)
    }

    /// Releases the snapshot's hold on old data. Using it afterwards traps.
    package func close() {
        if !closed.exchange(true, ordering: .relaxed) { registry.unregister(id) }
    }

    private func checkOpen(_ function: String) {
        require(!closed.load(ordering: .relaxed), "Snapshot.\(function) called after close()")
    }

    /// The partitions that have data (or had it since their last compaction).
    package var partitions: [UInt32] { version.partitions.keys.sorted() }

    /// Calls `body` with the value of `key` in `partition`, or nil when it is absent or deleted.
    ///
    /// The bytes point into a mapped segment or the memtable and are valid only until `body` returns.
    /// - Complexity: A binary search per memtable run and, per segment, an index probe and at most one block.
    package func withValue<R>(forKey key: some ByteContainer, in partition: UInt32, _ body: (UnsafeRawBufferPointer?) throws -> R) throws -> R {
        checkOpen("withValue")
        guard let p = version.partitions[partition] else { return try body(nil) }
        return try key.withUnsafeBytes { k in
            for run in p.active {
                if let i = run.find(k) { return try body(run.value(i)) }
            }
            for run in p.frozen {
                if let i = run.find(k) { return try body(run.value(i)) }
            }
            return try SegmentReader.newestValue(of: k, in: p.segments, body)
        }
    }

    /// Where this snapshot reads the value of `key` in `partition` from, for messages about a value that does
    /// not decode: "the memtable" (committed, not yet flushed), or a segment file and the offset of its block;
    /// nil when the key has no value here.
    package func location(ofKey key: some ByteContainer, in partition: UInt32) throws -> String? {
        checkOpen("location")
        guard let p = version.partitions[partition] else { return nil }
        return try key.withUnsafeBytes { k in
            for run in p.active + p.frozen {
                if let i = run.find(k) { return run.value(i) == nil ? nil : "the memtable (not yet flushed)" }
            }
            return try SegmentReader.location(of: k, in: p.segments).map { "segment \($0.file), the block at offset \($0.blockOffset)" }
        }
    }

    /// Checks every block of `partition`'s segments not checked before (its index, and each block's checksum;
    /// nothing is decoded), so that a caller about to read them through paths that cannot throw learns of
    /// damage first. Costs a checksum pass the first time, almost nothing after.
    package func checkBlocks(in partition: UInt32) throws {
        checkOpen("checkBlocks")
        for segment in version.partitions[partition]?.segments ?? [] { try segment.checkAllBlocks() }
    }

    /// The largest key of `partition` in any source of this snapshot, deleted ones included (so a key above it
    /// is certainly absent); nil when the partition holds nothing. Reads at most the last block of each segment.
    package func largestKey(in partition: UInt32) throws -> [UInt8]? {
        checkOpen("largestKey")
        guard let p = version.partitions[partition] else { return nil }
        var best: [UInt8]? = nil
        func consider(_ k: UnsafeRawBufferPointer) {
            if let b = best, b.withUnsafeBytes({ Bytes.compare($0, k) }) >= 0 { return }
            best = [UInt8](k)
        }
        for run in p.active + p.frozen where run.count > 0 { consider(run.key(run.count - 1)) }
        for segment in p.segments {
            if let k = try segment.lastKey() { k.withUnsafeBytes { consider($0) } }
        }
        return best
    }

    /// A copy of the value of `key` in `partition`, or nil.
    package func get(_ key: some ByteContainer, in partition: UInt32) throws -> [UInt8]? {
        try withValue(forKey: key, in: partition) { $0.map { [UInt8]($0) } }
    }

    /// Whether `key` has a live value in `partition` (not generic, as `get(_:in:)` for `[UInt8]`).
    package func contains(_ key: UnsafeRawBufferPointer, in partition: UInt32) throws -> Bool {
        try withValue(forKey: key, in: partition) { $0 != nil }
    }

    /// `get` for the usual key type, not generic: callers in other modules (every object lookup) run code
    /// specialized here instead of generic code that looks its types' metadata up at run time.
    package func get(_ key: [UInt8], in partition: UInt32) throws -> [UInt8]? {
        try withValue(forKey: key, in: partition) { $0.map { [UInt8]($0) } }
    }

    /// `withValue` for a borrowed key and a body that returns nothing, not generic: other modules' calls run
    /// code specialized here (a generic call from another module looks its types' metadata up per call).
    package func visitValue(forKey key: UnsafeRawBufferPointer, in partition: UInt32, _ body: (UnsafeRawBufferPointer?) throws -> Void) throws {
        try withValue(forKey: key, in: partition, body)
    }

    /// `get` for a borrowed key, not generic either (an object lookup by key).
    package func get(_ key: UnsafeRawBufferPointer, in partition: UInt32) throws -> [UInt8]? {
        try withValue(forKey: key, in: partition) { $0.map { [UInt8]($0) } }
    }

    /// Calls `body` with each live entry of `partition` in key order, from `start` (inclusive) on, until it
    /// returns false. The views are valid only during each call.
    package func scan(
        _ partition: UInt32, from start: [UInt8]? = nil,
        _ body: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        checkOpen("scan")
        guard let p = version.partitions[partition] else { return }
        if start == nil && p.active.isEmpty && p.frozen.isEmpty && p.segments.count == 1 {
            try Self.scanWhole(p.segments[0], body)
            return
        }
        try withExtendedLifetime(version) {
            let it: MergingIterator
            if let start {
                it = try start.withUnsafeBytes { try MergingIterator(version: version, partition: partition, from: $0) }
            } else {
                it = try MergingIterator(version: version, partition: partition, from: nil)
            }
            while it.isValid {
                if let v = it.value, try !body(it.currentKey, v) { return }
                try it.next()
            }
        }
    }

    /// The fast path of a compacted partition: one segment, walked block by block.
    private static func scanWhole(_ segment: SegmentReader, _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool) throws {
        let scratch = GrowableBuffer(capacity: Tuning.blockBytes + 1024)
        for b in 0..<segment.blockCount {
            let more = try segment.withBlock(b, scratch: scratch) { view -> Bool in
                var pos = 0
                while pos < view.entriesEnd {
                    let e = try view.entry(at: pos)
                    pos = e.next
                    if let v = e.value, try !body(e.key, v) { return false }
                }
                return true
            }
            if !more { return }
        }
    }

    /// A cursor over `partition` from `start` (inclusive), yielding copies.
    package func cursor(_ partition: UInt32, from start: [UInt8]? = nil) throws -> Cursor {
        checkOpen("cursor")
        if let start {
            return Cursor(iterator: try start.withUnsafeBytes { try MergingIterator(version: version, partition: partition, from: $0) })
        }
        return Cursor(iterator: try MergingIterator(version: version, partition: partition, from: nil))
    }

    /// A pull iterator over the live entries of `partition`; its key and value views are valid until it moves.
    /// It holds this snapshot's version alive.
    package func makeIterator(_ partition: UInt32) throws -> MergingIterator {
        checkOpen("makeIterator")
        return try MergingIterator(version: version, partition: partition, from: nil)
    }

    /// `makeIterator` from `key` (inclusive).
    package func makeIterator(_ partition: UInt32, from key: UnsafeRawBufferPointer) throws -> MergingIterator {
        checkOpen("makeIterator")
        return try MergingIterator(version: version, partition: partition, from: key)
    }

    /// The number of live keys in `partition` (a full scan).
    package func count(_ partition: UInt32) throws -> Int {
        var n = 0
        try scan(partition) { _, _ in n += 1; return true }
        return n
    }

    /// The user metadata of each segment of `partition`, newest first (the object layer reads it).
    package func segmentMetadata(_ partition: UInt32) -> [UInt64] {
        version.partitions[partition]?.segments.map(\.userMetadata) ?? []
    }
}

/// Whether a source decided a lookup.
enum LookupStep<R> {
    case next
    case done(R)
}
