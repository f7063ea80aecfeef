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
/// SegmentInfo (6 x u64)` · (encrypted databases, flag bit 0: a 28-byte AES-GCM nonce and tag authenticating
/// every byte before it with the key) · `u64 checksum` (XXH3-64 of every byte before it). Format 5 (written only
/// while a merge is suspended) adds, after the partitions, `u32 count` · per pending merge `u32 partition ·
/// u32 flags (bit 0: reaches the oldest segment) · u64 output · u64 state · u32 inputCount · inputCount x u64`.
package struct Manifest: Equatable, Sendable {
    static let magic: UInt64 = 0x464D_4154_4152_5453  // "STRATAMF" little-endian
    /// 2 added `newestLogNumber`, 3 the database's identity, 4 encryption (written only by encrypted databases),
    /// 5 pending merges (written only while there are some); formats 1 to 4 are still read.
    static let formatVersion: UInt32 = 5
    static let encryptedFormatVersion: UInt32 = 4
    static let plainFormatVersion: UInt32 = 3
    /// Flag bit 0: the database is encrypted (its segments' blocks and its log records are sealed).
    static let flagEncrypted: UInt32 = 1
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
    /// Merges a close suspended, which the next open resumes.
    package var pendingMerges: [PendingMerge] = []

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

    /// The manifest's bytes; with `cipher`, marked encrypted and authenticated with its key.
    package func encoded(cipher: Cipher? = nil) -> [UInt8] {
        var out: [UInt8] = []
        out.appendUInt64LE(Self.magic)
        out.appendUInt32LE(
            !pendingMerges.isEmpty ? Self.formatVersion : cipher == nil ? Self.plainFormatVersion : Self.encryptedFormatVersion)
        out.appendUInt32LE(cipher == nil ? 0 : Self.flagEncrypted)
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
        if !pendingMerges.isEmpty {
            out.appendUInt32LE(UInt32(pendingMerges.count))
            for m in pendingMerges {
                out.appendUInt32LE(m.partition)
                out.appendUInt32LE(m.reachesOldest ? 1 : 0)
                out.appendUInt64LE(m.output)
                out.appendUInt64LE(m.state)
                out.appendUInt32LE(UInt32(m.inputs.count))
                for n in m.inputs { out.appendUInt64LE(n) }
            }
        }
        if let cipher {
            out.append(contentsOf: [UInt8]().withUnsafeBytes { cipher.seal($0, at: .manifest, database: databaseID, authenticating: out) })
        }
        out.appendUInt64LE(Checksum.xxh3(out))
        return out
    }

    /// Parses and checks a manifest; every problem is a `.corrupted` error naming `file` and the offset.
    /// `cipher`: the key the database is opened with; a manifest of an encrypted database needs it (and must
    /// authenticate with it), one of a plain database must not be given one (`.decryptionFailed` either way).
    package static func decode(_ bytes: UnsafeRawBufferPointer, file: String, cipher: Cipher? = nil) throws -> Manifest {
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
            let flags = try r.readUInt32LE("flags")
            let encrypted = version >= 4 && flags & Self.flagEncrypted != 0
            var authentication: UnsafeRawBufferPointer? = nil
            if encrypted {
                guard body.count >= r.position + Cipher.overhead else {
                    throw StorageError.corrupted("an encrypted manifest has no room for its authentication tag", file: nil, offset: r.position)
                }
                authentication = UnsafeRawBufferPointer(rebasing: body[(body.count - Cipher.overhead)...])
                r = ByteReader(UnsafeRawBufferPointer(rebasing: body[0..<(body.count - Cipher.overhead)]), position: r.position)
            }
            switch (encrypted, cipher) {
            case (true, nil):
                throw StorageError(
                    .decryptionFailed, "the database is encrypted: open it with its encryption key", file: nil, offset: nil)
            case (false, _?):
                throw StorageError(
                    .decryptionFailed, "the database is not encrypted, but an encryption key was given: open it without one, or "
                        + "write an encrypted copy of it (Realm.writeCopy(configuration:) with the key)", file: nil, offset: nil)
            default: break
            }
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
            var pending: [PendingMerge] = []
            if version >= 5 {
                let count = Int(try r.readUInt32LE("pending merge count"))
                guard count <= r.remaining / 28 else {
                    throw StorageError.corrupted("pending merge count \(count) does not fit in the file", file: nil, offset: r.position - 4)
                }
                for _ in 0..<count {
                    let at = r.position
                    let partition = try r.readUInt32LE("pending merge partition")
                    let flags = try r.readUInt32LE("pending merge flags")
                    let output = try r.readUInt64LE("pending merge output")
                    let state = try r.readUInt64LE("pending merge state")
                    let inputCount = Int(try r.readUInt32LE("pending merge input count"))
                    guard inputCount >= 2, inputCount <= r.remaining / 8 else {
                        throw StorageError.corrupted("pending merge input count \(inputCount) is not between 2 and what fits", file: nil, offset: at + 24)
                    }
                    var inputs: [UInt64] = []
                    for _ in 0..<inputCount { inputs.append(try r.readUInt64LE("pending merge input")) }
                    guard output < nextFile, state < nextFile, inputs.allSatisfy({ $0 < nextFile }) else {
                        throw StorageError.corrupted("a pending merge names a file number not below the next file number \(nextFile)", file: nil, offset: at)
                    }
                    pending.append(PendingMerge(partition: partition, inputs: inputs, reachesOldest: flags & 1 != 0, output: output, state: state))
                }
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
            if let cipher, let authentication {
                let covered = [UInt8](UnsafeRawBufferPointer(rebasing: body[0..<(body.count - Cipher.overhead)]))
                do {
                    _ = try cipher.open(authentication, at: .manifest, database: databaseID, authenticating: covered)
                } catch {
                    throw StorageError(
                        .decryptionFailed, "the encryption key is not this database's (its manifest does not authenticate with it)",
                        file: nil, offset: body.count - Cipher.overhead)
                }
            }
            var manifest = Manifest(
                nextFileNumber: nextFile, lastFlushedSequence: lastSeq, logNumber: logNumber, newestLogNumber: newestLog, partitions: partitions,
                databaseID: databaseID)
            manifest.pendingMerges = pending
            return manifest
        } catch let error as StorageError {
            throw error.located(file: file)
        }
    }
}
