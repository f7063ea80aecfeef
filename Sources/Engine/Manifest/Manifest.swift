/// What a manifest records about one sealed segment.
package struct SegmentInfo: Equatable, Sendable {
    package var fileNumber: UInt64
    package var fileBytes: UInt64
    package var entryCount: UInt64
    package var minSequence: UInt64
    package var maxSequence: UInt64
    package var userMetadata: UInt64

    static let byteCount = 48

    package init(fileNumber: UInt64, fileBytes: UInt64, entryCount: UInt64, minSequence: UInt64, maxSequence: UInt64, userMetadata: UInt64) {
        self.fileNumber = fileNumber
        self.fileBytes = fileBytes
        self.entryCount = entryCount
        self.minSequence = minSequence
        self.maxSequence = maxSequence
        self.userMetadata = userMetadata
    }
}

/// The durable list of live segments per partition and the position in the log from which to replay.
///
/// Layout (little-endian; see Engine.docc/FileFormat.md):
/// `magic "STRATAMF"` · `u32 formatVersion` · `u32 flags` · `u64 nextFileNumber` · `u64 lastFlushedSequence`
/// · `u64 logNumber` · `u64 newestLogNumber` (format 2; format 1 has none) · `u32 partitionCount` · per partition `u32 id, u32 segmentCount, segmentCount x
/// SegmentInfo (6 x u64)` · `u64 checksum` (XXH3-64 of every byte before it).
package struct Manifest: Equatable, Sendable {
    static let magic: UInt64 = 0x464D_4154_4152_5453  // "STRATAMF" little-endian
    /// 2 added `newestLogNumber`, 3 the database's identity; formats 1 and 2 are still read.
    static let formatVersion: UInt32 = 3
    /// The largest file number or sequence number a manifest may hold (2^62).
    static let maxCounter: UInt64 = 1 << 62

    package var nextFileNumber: UInt64
    /// Every commit with a sequence number at or below this one is in the segments.
    package var lastFlushedSequence: UInt64
    /// Log files numbered at or above this one are replayed at open.
    package var logNumber: UInt64
    /// The newest log file created: it and `logNumber`'s must exist at open (they may hold acknowledged
    /// commits), so that a deleted log is an error rather than lost commits. A format-1 manifest did not
    /// record it (it reads as `logNumber`).
    package var newestLogNumber: UInt64
    /// Each partition's segments, newest first.
    package var partitions: [UInt32: [SegmentInfo]]
    /// The database's identity, chosen at random when it was created and written into every segment and
    /// log it writes, so that a file from another database is recognised. 0 in manifests before format 3
    /// (such a database gets one at its next open).
    package var databaseID: UInt64

    package init(
        nextFileNumber: UInt64, lastFlushedSequence: UInt64, logNumber: UInt64, newestLogNumber: UInt64? = nil,
        partitions: [UInt32: [SegmentInfo]], databaseID: UInt64 = 0
    ) {
        self.databaseID = databaseID
        self.nextFileNumber = nextFileNumber
        self.lastFlushedSequence = lastFlushedSequence
        self.logNumber = logNumber
        self.newestLogNumber = max(newestLogNumber ?? logNumber, logNumber)
        self.partitions = partitions
    }

    package func encoded() -> [UInt8] {
        var out: [UInt8] = []
        out.appendUInt64LE(Self.magic)
        out.appendUInt32LE(Self.formatVersion)
        out.appendUInt32LE(0)
        out.appendUInt64LE(nextFileNumber)
        out.appendUInt64LE(lastFlushedSequence)
        out.appendUInt64LE(logNumber)
        out.appendUInt64LE(newestLogNumber)
        out.appendUInt64LE(databaseID)
        out.appendUInt32LE(UInt32(partitions.count))
        for id in partitions.keys.sorted() {
            let segments = partitions[id]!
            out.appendUInt32LE(id)
            out.appendUInt32LE(UInt32(segments.count))
            for s in segments {
                out.appendUInt64LE(s.fileNumber)
                out.appendUInt64LE(s.fileBytes)
                out.appendUInt64LE(s.entryCount)
                out.appendUInt64LE(s.minSequence)
                out.appendUInt64LE(s.maxSequence)
                out.appendUInt64LE(s.userMetadata)
            }
        }
        out.appendUInt64LE(Checksum.xxh3(out))
        return out
    }

    /// Parses and checks a manifest; every problem is a `.corrupted` error naming `file` and the offset.
    package static func decode(_ bytes: UnsafeRawBufferPointer, file: String) throws -> Manifest {
        do {
            guard bytes.count >= 8 + 44 else {
                throw StorageError.corrupted(
                    "manifest is \(bytes.count) bytes, shorter than its 52-byte header and checksum", file: nil, offset: 0)
            }
            let body = UnsafeRawBufferPointer(rebasing: bytes[0..<(bytes.count - 8)])
            var tail = ByteReader(bytes, position: bytes.count - 8)
            let stored = try tail.readUInt64LE()
            let computed = Checksum.xxh3(body)
            guard stored == computed else {
                throw StorageError.corrupted(
                    "manifest checksum mismatch (stored 0x\(String(stored, radix: 16)), computed 0x\(String(computed, radix: 16))); "
                        + "the file was damaged after it was written. Restore the directory from a backup.",
                    file: nil, offset: bytes.count - 8)
            }
            var r = ByteReader(body)
            let magic = try r.readUInt64LE("magic")
            guard magic == Self.magic else {
                throw StorageError.corrupted("not a Strata manifest (bad magic number)", file: nil, offset: 0)
            }
            let version = try r.readUInt32LE("format version")
            guard version <= Self.formatVersion else {
                throw StorageError(
                    .formatTooNew,
                    "manifest format version \(version) is newer than this build's \(Self.formatVersion); use a newer Strata",
                    file: nil, offset: 8)
            }
            _ = try r.readUInt32LE("flags")
            let nextFile = try r.readUInt64LE("next file number")
            let lastSeq = try r.readUInt64LE("last flushed sequence")
            let logNumber = try r.readUInt64LE("log number")
            let newestLog = version >= 2 ? try r.readUInt64LE("newest log number") : logNumber
            let databaseID = version >= 3 ? try r.readUInt64LE("database identity") : 0
            let partitionCount = Int(try r.readUInt32LE("partition count"))
            guard partitionCount <= r.remaining / 8 else {
                throw StorageError.corrupted(
                    "partition count \(partitionCount) does not fit in the \(r.remaining) remaining bytes", file: nil,
                    offset: r.position - 4)
            }
            var partitions: [UInt32: [SegmentInfo]] = [:]
            for _ in 0..<partitionCount {
                let at = r.position
                let id = try r.readUInt32LE("partition id")
                let count = Int(try r.readUInt32LE("segment count"))
                guard count <= r.remaining / SegmentInfo.byteCount else {
                    throw StorageError.corrupted(
                        "segment count \(count) of partition \(id) does not fit in the file", file: nil, offset: at + 4)
                }
                guard partitions[id] == nil else {
                    throw StorageError.corrupted("partition \(id) is listed twice", file: nil, offset: at)
                }
                var segments: [SegmentInfo] = []
                segments.reserveCapacity(count)
                for _ in 0..<count {
                    let info = SegmentInfo(
                        fileNumber: try r.readUInt64LE(), fileBytes: try r.readUInt64LE(),
                        entryCount: try r.readUInt64LE(), minSequence: try r.readUInt64LE(),
                        maxSequence: try r.readUInt64LE(), userMetadata: try r.readUInt64LE())
                    guard info.fileNumber < nextFile else {
                        throw StorageError.corrupted(
                            "segment file number \(info.fileNumber) is not below the next file number \(nextFile)",
                            file: nil, offset: r.position - SegmentInfo.byteCount)
                    }
                    segments.append(info)
                }
                partitions[id] = segments
            }
            guard r.isAtEnd else {
                throw StorageError.corrupted("\(r.remaining) unexpected bytes after the last partition", file: nil, offset: r.position)
            }
            // Far below the top of the range, so that counting up from them can never overflow.
            guard nextFile <= Manifest.maxCounter, lastSeq <= Manifest.maxCounter else {
                throw StorageError.corrupted(
                    "next file number \(nextFile) or last sequence \(lastSeq) is beyond \(Manifest.maxCounter)", file: nil, offset: 16)
            }
            guard logNumber < nextFile else {
                throw StorageError.corrupted("log number \(logNumber) is not below the next file number \(nextFile)", file: nil, offset: 32)
            }
            guard newestLog >= logNumber, newestLog < nextFile else {
                throw StorageError.corrupted(
                    "newest log number \(newestLog) is not between the log number \(logNumber) and the next file number \(nextFile)",
                    file: nil, offset: 40)
            }
            return Manifest(
                nextFileNumber: nextFile, lastFlushedSequence: lastSeq, logNumber: logNumber, newestLogNumber: newestLog, partitions: partitions,
                databaseID: databaseID)
        } catch let error as StorageError {
            throw error.located(file: file)
        }
    }
}
