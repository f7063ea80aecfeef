/// The engine's size limits. Each is checked where a caller's data enters, with an error naming the limit.
public enum Limits {
    /// The largest key, in bytes.
    public static let maxKeyBytes = 65_535
    /// The largest value, in bytes.
    public static let maxValueBytes = 16 * 1024 * 1024
    /// The largest write transaction, in bytes of keys, values and framing.
    public static let maxTransactionBytes = 1 << 30
    /// The largest uncompressed segment block (one maximal entry fits).
    public static let maxBlockBytes = maxKeyBytes + maxValueBytes + 64
    /// The largest manifest or `CURRENT` file the engine will read.
    public static let maxManifestBytes = 64 * 1024 * 1024
    /// The largest partition identifier.
    public static let maxPartition = UInt32.max
}

/// Tuning constants: each says what it changes and why it has its value.
enum Tuning {
    /// Target uncompressed size of a segment block: a point read that misses the block cache decompresses one
    /// block, about a page, as RocksDB's 4 KiB blocks and LMDB's pages. Was 32 KiB, for LZ4's matches and long
    /// scan stretches; measured at 4 KiB (Bench, one machine): sustained lookups over 3M records 94k -> 190k/s,
    /// scans unchanged (blocks lie one after another in the mapped file), files 10% larger, a lookup of a
    /// cached record 15% slower (8 KiB sat between: 174k/s, 7%, 10%). Files written with any block size read
    /// the same.
    static let blockBytes = 4 * 1024
    /// A block is stored compressed only when LZ4 saves at least this fraction (in 1/16ths) of its bytes;
    /// otherwise it is stored raw and read in place without a copy.
    static let minCompressionSavingsSixteenths = 2
    /// Memtable size that triggers a flush to segments. Bounds replay time at open and the memory of writes.
    static let memtableFlushBytes = 64 * 1024 * 1024
    /// The fewest segments a size-tiered compaction merges: runs of this many segments of similar size are
    /// merged into one, so each byte is rewritten about once per tier, log base 4 of (partition / memtable)
    /// times, and a partition keeps about 4 segments per tier.
    static let compactionSegmentTrigger = 4
    /// A segment joins the newer ones being merged when it is at most this many times their total size
    /// (RocksDB's universal compaction calls it the size ratio; 1.25 is its default of 1% plus slack for
    /// compression differences).
    static let compactionSizeRatio = 1.25
    /// A partition whose newer segments together reach this fraction of its oldest (largest) one is merged
    /// whole, so that deleted and overwritten values are dropped and the size on disk stays within about
    /// 1 + this of the live data (1.5x after rewriting every object, `SpaceReclaimTests`). Growth pays for it
    /// with about one more rewrite per byte (simulated: 3.7 writes per byte at 40 memtables, 5.6 at 400).
    static let compactionSpaceAmplification = 0.5
    /// Bytes of decompressed blocks kept for point reads (scans do not use the cache). A miss costs a whole
    /// block's decompression and key-prefix table (about 15 µs for 32 KiB), so the cache must hold the hot
    /// set: at 64 MiB, random lookups over a million small compressed records (about 60 MB decompressed)
    /// missed often enough to run at 0.24M/s instead of 0.77M/s. Memory is taken only as blocks are read.
    static let blockCacheBytes = 256 * 1024 * 1024
    /// Bytes of segments a close (or an open after a session that did not close) may merge before it returns
    /// (`mergeSmallSegmentsNow`): small merges
    /// cost a close a few milliseconds (merging runs at well over 100 MB/s), and keep short sessions from
    /// leaving one segment each; larger ones are left to background maintenance.
    static let closeCompactionBudgetBytes = 4 * 1024 * 1024
    /// How many entries a background merge writes between two looks at whether the database is closing (a
    /// close waits at most this long for it to stop and suspend).
    static let mergeCloseCheckEntries = 4096
    /// The least merging a close does after its flush, in bytes of merge input (tens of milliseconds), on merges
    /// it then suspends for the next session (`advanceMergesAtClose`).
    static let closeMergeShareBytes = 8 * 1024 * 1024
    /// The block cache and memtable of a Realm on iOS, tvOS, watchOS and visionOS, where heap counts against
    /// a per-process limit (jetsam): an app extension may have as little as 24-30 MB in all. Mapped segment
    /// pages are not counted (they are clean and file-backed); what these hold is.
    static let mobileBlockCacheBytes = 32 * 1024 * 1024
    static let mobileMemtableFlushBytes = 16 * 1024 * 1024
}

/// The engine's default memory sizes on the platform it was built for.
package enum MemoryDefaults {
    /// iOS, tvOS, watchOS and visionOS, where heap counts against a per-process limit.
    private static let isMobile: Bool = {
        #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
        return true
        #else
        return false
        #endif
    }()

    package static var blockCacheBytes: Int { isMobile ? Tuning.mobileBlockCacheBytes : Tuning.blockCacheBytes }
    package static var memtableFlushBytes: Int { isMobile ? Tuning.mobileMemtableFlushBytes : Tuning.memtableFlushBytes }
}
