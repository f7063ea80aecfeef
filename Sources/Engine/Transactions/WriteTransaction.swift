/// A write transaction: puts, deletes and partition drops that become visible together at `commit()`.
///
/// One write transaction is open at a time per database, across threads: `Database.beginWrite()` waits for
/// the previous one to end. Reads inside the transaction go through `snapshot`, the state when it began, or
/// through `view`, which adds what the transaction spilled; the rest of its writes are visible to nobody until
/// it commits.
package final class WriteTransaction: @unchecked Sendable {
    private let database: Database
    let batch = WriteBatch()
    @exclusivity(unchecked) private var finished = false
    /// What the transaction spilled to segments (`spill()`), nil until it does.
    @exclusivity(unchecked) private var spilled: SpillState?
    /// The state when this transaction began.
    package let snapshot: Snapshot
    /// What reads in the transaction see below its batch: `snapshot` until the first `spill()`, then the
    /// committed state with every spilled segment above it (what the commit will install). The operations in
    /// the batch since the last spill are not in it: a caller that reads its own writes keeps track of those.
    package private(set) var view: Snapshot

    init(database: Database, snapshot: Snapshot) {
        self.database = database
        self.snapshot = snapshot
        self.view = snapshot
    }

    deinit {
        if !finished {
            if let spilled { database.abandonSpill(spilled) }
            database.endWrite()
        }
    }

    private func checkOpen(_ function: String) {
        require(!finished, "WriteTransaction.\(function) called after commit() or abort()")
    }

    /// Sets `key` to `value` in `partition`.
    package func put(_ key: some ByteContainer, _ value: some ByteContainer, in partition: UInt32) throws {
        checkOpen("put")
        try key.withUnsafeBytes { k in try value.withUnsafeBytes { v in try batch.put(k, v, partition: partition) } }
    }

    /// `put` of borrowed bytes, not generic: other modules' calls (a record per object of a commit) run code
    /// specialized here rather than generic code that looks its types' metadata up at run time.
    package func putBytes(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer, in partition: UInt32) throws {
        checkOpen("put")
        try batch.put(key, value, partition: partition)
    }

    /// `put`, returning where the value's bytes sit in the transaction's batch: until the transaction ends they
    /// can be read (`visitPendingBytes`) and overwritten in place (`setPendingByte`, `setPendingWord`), so that
    /// a caller can keep a value it will change again before commit in the batch itself, with no copy of its
    /// own. The batch is sealed (checksummed) at commit, after any overwrite.
    package func putPending(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer, in partition: UInt32) throws -> Range<Int> {
        checkOpen("put")
        try batch.put(key, value, partition: partition)
        return batch.lastValueOffset..<(batch.lastValueOffset + value.count)
    }

    /// Calls `body` with bytes `putPending` returned (valid during the call).
    package func visitPendingBytes(_ range: Range<Int>, _ body: (UnsafeRawBufferPointer) -> Void) {
        checkOpen("visitPendingBytes")
        batch.buffer.withUnsafeBytes { all in body(UnsafeRawBufferPointer(rebasing: all[range])) }
    }

    /// Overwrites one byte of a value `putPending` returned.
    package func setPendingByte(_ byte: UInt8, at offset: Int) {
        checkOpen("setPendingByte")
        batch.buffer.setUInt8(byte, at: offset)
    }

    /// Overwrites `width` (at most 8) little-endian bytes of `word` at `offset` in a value `putPending` returned.
    package func setPendingWord(_ word: UInt64, width: Int, at offset: Int) {
        checkOpen("setPendingWord")
        // A whole word in one store (a record's Int and Double slots); narrower ones byte by byte.
        if width == 8 { return batch.buffer.setUInt64LE(word, at: offset) }
        for i in 0..<width { batch.buffer.setUInt8(UInt8(truncatingIfNeeded: word >> (8 * UInt64(i))), at: offset + i) }
    }

    /// Removes `key` from `partition` (a no-op when it is absent).
    package func delete(_ key: some ByteContainer, in partition: UInt32) throws {
        checkOpen("delete")
        try key.withUnsafeBytes { try batch.delete($0, partition: partition) }
    }

    /// `delete` of a borrowed key, not generic (other modules' calls run code specialized here).
    package func deleteBytes(_ key: UnsafeRawBufferPointer, in partition: UInt32) throws {
        checkOpen("delete")
        try batch.delete(key, partition: partition)
    }

    /// Removes every key of `partition`, in O(1): its segments are released at the next manifest switch.
    package func dropPartition(_ partition: UInt32) throws {
        checkOpen("dropPartition")
        try batch.drop(partition: partition)
    }

    /// Sets the value stamped on segments written for `partition` from now on (a segment written from several
    /// commits carries the smallest of their values; a compacted segment the smallest of its inputs').
    package func setUserMetadata(_ value: UInt64, for partition: UInt32) throws {
        checkOpen("setUserMetadata")
        try batch.setUserMetadata(value, partition: partition)
    }

    /// Whether the transaction has written anything to `partition` so far: an operation in its batch, or in
    /// what it spilled. False means no operation of the transaction touches the partition yet (a caller that
    /// keeps writes of its own outside the batch, as the object layer's pending objects, answers for those).
    package func hasWritten(in partition: UInt32) -> Bool {
        checkOpen("hasWritten")
        if batch.touches(partition) { return true }
        guard let spilled else { return false }
        return spilled.dropped.contains(partition) || spilled.keyRanges[partition] != nil || spilled.metadata[partition] != nil
    }

    /// The number of operations in the batch (since the last `spill()`).
    package var operationCount: Int { batch.operationCount }

    /// Bytes of keys and values in the batch (since the last `spill()`).
    package var batchBytes: Int { batch.payloadBytes }

    /// Writes the operations so far to segments private to this transaction and empties the batch, so that a
    /// transaction of any size holds a bounded amount of memory. Ranges `putPending` returned before are no
    /// longer valid; what was spilled is read back with `withSpilledValue`. The commit then installs the
    /// segments with one manifest switch instead of going through the log (see `Database+Spill`). `view` then
    /// reads the spilled operations.
    package func spill() throws {
        checkOpen("spill")
        lastSpilledPartition = nil
        let state = spilled ?? SpillState()
        spilled = state
        // What can fail comes first: the flush below the spilled segments, then the spill (which changes
        // nothing when it fails). Once the batch is spilled, making the view cannot fail.
        try database.flushBelowSpill()
        try database.beginSpill(batch, into: state)
        if view !== snapshot { view.close() }
        view = database.spillView(state, base: snapshot)
        spills += 1
    }

    /// What the transaction spilled, alone: its spilled segments and the spills in flight, without the committed
    /// state below them; nil when it spilled nothing. A reader that already has a key's committed value reads
    /// only the write's own version here (one source per spill instead of every segment). It reflects the spills
    /// made so far; the operations in the batch since the last spill are not in it.
    package func spillsOnlyView() -> Snapshot? {
        checkOpen("spillsOnlyView")
        guard let spilled, !spilled.isEmpty else { return nil }
        return database.spillView(spilled, base: snapshot, spillsOnly: true)
    }

    /// How many times the transaction has spilled: what `spilledExtent(in:)` answers holds until it changes.
    /// A method, not the stored property: another module reading a class's stored property checks the access at
    /// run time (about 80 instructions, `@exclusivity(unchecked)` or not), which a read in every getter and
    /// setter of a spilled write paid.
    package func spillCount() -> Int { spills }
    @exclusivity(unchecked) private var spills = 0

    /// What the spills hold of a partition, as `spilledExtent(in:)` tells it.
    package enum SpilledExtent {
        /// No entry of the partition.
        case none
        /// Entries of keys from `low` to `high` (inclusive) only.
        case keys(low: [UInt8], high: [UInt8])
        /// The partition was dropped: any key may be affected.
        case dropped
    }

    /// The range of keys the spills may hold entries of in `partition`: a caller that asks about many keys
    /// answers most of them from it (a key outside it is certainly not spilled), and asks `spillMayHold` for
    /// the rest.
    package func spilledExtent(in partition: UInt32) -> SpilledExtent {
        guard let spilled else { return .none }
        if spilled.dropped.contains(partition) { return .dropped }
        guard let range = spilled.keyRanges[partition] else { return .none }
        return .keys(low: range.low, high: range.high)
    }

    /// Whether `spill()` wrote anything.
    package var hasSpilled: Bool { spilled.map { !$0.isEmpty } ?? false }

    /// Calls `body` with the value the spilled operations give `key` in `partition`: nil when the newest of them
    /// deleted it or none has it (the batch since the last spill and the snapshot are not consulted).
    package func withSpilledValue<R>(forKey key: UnsafeRawBufferPointer, in partition: UInt32, _ body: (UnsafeRawBufferPointer?) throws -> R) throws -> R {
        checkOpen("withSpilledValue")
        // Spills in flight are newer than the installed ones.
        for job in (spilled?.inFlight ?? []).reversed() {
            for r in job.runs where r.partition == partition {
                if let i = r.run.find(key) { return try body(r.run.value(i)) }
            }
        }
        return try SegmentReader.newestValue(of: key, in: spilled?.segments[partition] ?? [], body)
    }

    /// Whether the spills may hold an entry (a value or a deletion) of `key` in `partition`, or dropped the
    /// partition: false means for certain that what the transaction's snapshot says of the key still stands
    /// below the batch. Checks the spilled key range, then each spilled segment's key filter; reads no block.
    package func spillMayHold(_ key: UnsafeRawBufferPointer, in partition: UInt32) -> Bool {
        guard let spilled else { return false }
        // What the spills hold of the partition, looked up once per partition between spills (a loop over one
        // type's objects asks for each).
        let held: SpilledPartition
        if let last = lastSpilledPartition, last.partition == partition {
            held = last
        } else {
            held = SpilledPartition(partition, spilled)
            lastSpilledPartition = held
        }
        return held.mayHold(key)
    }

    /// The partition `spillMayHold` was last asked about; reset by each spill.
    @exclusivity(unchecked) private var lastSpilledPartition: SpilledPartition?

    /// What the spills hold of one partition, for `spillMayHold`.
    private final class SpilledPartition {
        let partition: UInt32
        let dropped: Bool
        /// Whether anything of the partition was spilled since its last drop, and the smallest and largest key.
        let spilledAny: Bool
        let low: [UInt8]
        let high: [UInt8]
        let segments: [SegmentReader]
        /// Spills in flight, read exactly (their runs are sorted).
        let runs: [MemRun]

        init(_ partition: UInt32, _ spilled: SpillState) {
            runs = spilled.runsInFlight(partition)
            self.partition = partition
            dropped = spilled.dropped.contains(partition)
            let range = spilled.keyRanges[partition]
            spilledAny = range != nil
            low = range?.low ?? []
            high = range?.high ?? []
            segments = spilled.segments[partition] ?? []
        }

        /// Checks the spilled key range, then each spilled segment's key filter.
        func mayHold(_ key: UnsafeRawBufferPointer) -> Bool {
            if dropped { return true }
            guard spilledAny, low.withUnsafeBytes({ Bytes.compare($0, key) <= 0 }), high.withUnsafeBytes({ Bytes.compare($0, key) >= 0 })
            else { return false }
            if runs.contains(where: { $0.find(key) != nil }) { return true }
            return SegmentReader.mayHold(key, in: segments)
        }
    }

    /// Makes the transaction durable (per the durability mode) and visible. Returns its sequence number.
    @discardableResult
    package func commit() throws -> UInt64 {
        checkOpen("commit")
        finished = true
        defer { database.endWrite() }
        if view !== snapshot { view.close() }
        if let spilled, !spilled.isEmpty { return try database.commit(batch, spilled: spilled) }
        return try database.commit(batch)
    }

    /// Discards the transaction.
    package func abort() {
        guard !finished else { return }
        finished = true
        if view !== snapshot { view.close() }
        if let spilled { database.abandonSpill(spilled) }
        database.endWrite()
    }
}

/// Byte containers that can lend their contents.
package protocol ByteContainer {
    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R
}

extension Array: ByteContainer where Element == UInt8 {}
extension ArraySlice: ByteContainer where Element == UInt8 {}
extension GrowableBuffer: ByteContainer {}
extension UnsafeRawBufferPointer: ByteContainer {
    package func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R { try body(self) }
}
