// Invariants:
// (1) A Version is immutable: everything a snapshot reads is reachable from the Version it holds, so a
//     snapshot sees exactly the commits up to its sequence number, whatever happens later.
// (2) In a partition, sources are ordered newest first: active runs, then frozen runs, then segments;
//     the first source that has a key (value or tombstone) decides it.
// (3) `incarnation` changes whenever a partition is dropped, so a flush or compaction that started before
//     a drop never installs its output into the partition's next life.

/// The state of one partition in one version.
final class PartitionState: Sendable {
    let id: UInt32
    let incarnation: UInt64
    /// Memtable runs being written, newest first.
    let active: [MemRun]
    /// Memtable runs being flushed, newest first.
    let frozen: [MemRun]
    /// Sealed segments, newest first.
    let segments: [SegmentReader]
    /// The user metadata set by the latest commit (stamped on segments written from now on).
    let userMetadata: UInt64

    init(id: UInt32, incarnation: UInt64, active: [MemRun] = [], frozen: [MemRun] = [], segments: [SegmentReader] = [], userMetadata: UInt64 = 0) {
        self.id = id
        self.incarnation = incarnation
        self.active = active
        self.frozen = frozen
        self.segments = segments
        self.userMetadata = userMetadata
    }

    func with(active: [MemRun]? = nil, frozen: [MemRun]? = nil, segments: [SegmentReader]? = nil, userMetadata: UInt64? = nil) -> PartitionState {
        PartitionState(
            id: id, incarnation: incarnation, active: active ?? self.active, frozen: frozen ?? self.frozen,
            segments: segments ?? self.segments, userMetadata: userMetadata ?? self.userMetadata)
    }

    var memtableBytes: Int { active.reduce(0) { $0 + $1.byteCount } + frozen.reduce(0) { $0 + $1.byteCount } }
    var isEmpty: Bool { active.isEmpty && frozen.isEmpty && segments.isEmpty }
}

/// One immutable state of the whole database, published after each commit, flush and compaction.
final class Version: Sendable {
    let sequence: UInt64
    let partitions: [UInt32: PartitionState]

    init(sequence: UInt64, partitions: [UInt32: PartitionState]) {
        self.sequence = sequence
        self.partitions = partitions
    }

    var activeBytes: Int { partitions.values.reduce(0) { $0 + $1.active.reduce(0) { $0 + $1.byteCount } } }
    var hasFrozen: Bool { partitions.values.contains { !$0.frozen.isEmpty } }
}
