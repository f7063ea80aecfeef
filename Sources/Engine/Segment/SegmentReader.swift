
// Invariants:
// (1) A segment file is never written again once sealed; its mapping is read-only.
// (2) A block's bytes are used only after its checksum matched (once per block, remembered in `verified`).
// (2a) The block index is parsed on first use, only after its checksum matched; open reads only the header
//      and the footer, so that its cost does not grow with the segment. From format 3 that checksum covers the
//      index's directory, and each index page and key-filter chunk is used only after its own matched (once
//      each, remembered in `SegmentIndex`), so that neither does a point read's.
// (3) Every offset read from the file is bounds-checked before use, so a damaged file gives `.corrupted`,
//     never a trap.

/// An open, mapped, sealed segment.
package final class SegmentReader: Sendable {
    let fileNumber: UInt64
    let name: String
    let partition: UInt32
    let region: MappedRegion
    let entryCount: Int
    let minSequence: UInt64
    let maxSequence: UInt64
    let userMetadata: UInt64
    let blockCount: Int
    let indexOffset: Int
    let indexBytes: Int
    let indexSum: UInt64
    /// Whether the index area holds a key filter (from format 2).
    let hasFilter: Bool
    /// The segment's format (`SegmentFormat.formatVersion`): from 3 the index is paged.
    let formatVersion: UInt32
    /// The block index, read and checked on first use: open reads only headers and footers, so that its cost
    /// does not grow with the data (an index has one entry per 4 KiB block, and a key filter of 10 bits a key).
    let lazyIndex = LazyReference<SegmentIndex>()
    /// The largest key, read from the last block on first use (`lastKey()`).
    let lastKeyCache = Locked<(known: Bool, key: [UInt8]?)>((false, nil))
    let cache: BlockCache?
    /// The cipher that opens this segment's blocks and index (header flag bit 1); nil for a plain segment.
    let cipher: Cipher?
    /// The identity in the segment's header: what its sealed units are bound to.
    let identity: UInt64
    /// The header's salt (its reserved word: random in an encrypted segment, authenticated with every unit).
    let salt: UInt32
    var fileBytes: Int { region.count }
    var info: SegmentInfo {
        SegmentInfo(
            fileNumber: fileNumber, fileBytes: UInt64(region.count), entryCount: UInt64(entryCount),
            minSequence: minSequence, maxSequence: maxSequence, userMetadata: userMetadata)
    }

    /// Checks the header and footer of a mapped segment. The index is checked when first used, and each block
    /// when first read.
    /// `cipher`: the database's (an encrypted segment needs it; a plain one in an encrypted database is refused).
    package init(
        region: MappedRegion, fileNumber: UInt64, expectedPartition: UInt32?, databaseID: UInt64 = 0, cache: BlockCache? = nil,
        cipher: Cipher? = nil
    ) throws {
        let name = FileName.segment(fileNumber).name
        self.cache = cache
        self.name = name
        self.fileNumber = fileNumber
        self.region = region
        let bytes = region.unsafeBytes
        let fail = { (message: String, offset: Int) in StorageError.corrupted(message, file: name, offset: offset) }
        guard bytes.count >= SegmentFormat.headerBytes + SegmentFormat.footerBytes else {
            throw fail("segment is \(bytes.count) bytes, shorter than a header and footer (\(SegmentFormat.headerBytes + SegmentFormat.footerBytes))", 0)
        }
        do {
            var h = ByteReader(bytes)
            guard try h.readUInt64LE() == SegmentFormat.headerMagic else { throw fail("not a Strata segment (bad header magic)", 0) }
            let version = try h.readUInt32LE()
            let flags = try h.readUInt32LE()
            hasFilter = version >= 2 && flags & SegmentFormat.flagKeyFilter != 0
            formatVersion = version
            guard version <= SegmentFormat.formatVersion else {
                throw StorageError(.formatTooNew, "segment format version \(version) is newer than this build's \(SegmentFormat.formatVersion)", file: name, offset: 8)
            }
            var saltReader = ByteReader(bytes, position: 20)
            salt = try saltReader.readUInt32LE("salt")
            var idReader = ByteReader(bytes, position: 24)
            let fileID = try idReader.readUInt64LE("database identity")
            identity = fileID
            let encrypted = flags & SegmentFormat.flagEncrypted != 0
            switch (encrypted, cipher) {
            case (true, nil):
                throw StorageError(.decryptionFailed, "the segment is encrypted and no encryption key was given", file: name, offset: 12)
            case (false, _?):
                throw StorageError(
                    .decryptionFailed, "the segment is not encrypted, in an encrypted database: it was replaced or copied in", file: name,
                    offset: 12)
            default:
                self.cipher = cipher
            }
            // 0 on either side: a segment or a database from before identities.
            if databaseID != 0, fileID != 0, fileID != databaseID {
                throw fail(
                    "segment belongs to another database (identity \(String(fileID, radix: 16)), this database's is "
                        + "\(String(databaseID, radix: 16))): it was copied in from elsewhere. Restore the directory from one backup.", 24)
            }
            let footerAt = bytes.count - SegmentFormat.footerBytes
            let footerBody = UnsafeRawBufferPointer(rebasing: bytes[footerAt..<(bytes.count - 8)])
            var f = ByteReader(bytes, position: footerAt)
            guard try f.readUInt64LE() == SegmentFormat.footerMagic else {
                throw fail("bad footer magic; the file was cut short or overwritten", footerAt)
            }
            var tail = ByteReader(bytes, position: bytes.count - 8)
            let storedFooterSum = try tail.readUInt64LE()
            let footerSum = Checksum.xxh3(footerBody)
            guard storedFooterSum == footerSum else {
                throw fail("footer checksum mismatch (stored 0x\(String(storedFooterSum, radix: 16)), computed 0x\(String(footerSum, radix: 16)))", bytes.count - 8)
            }
            _ = try f.readUInt32LE()
            let partition = try f.readUInt32LE()
            let indexOffset = Int(clamping: try f.readUInt64LE())
            let indexBytes = Int(clamping: try f.readUInt64LE())
            let blockCount = Int(clamping: try f.readUInt64LE())
            let entryCount = Int(clamping: try f.readUInt64LE())
            minSequence = try f.readUInt64LE()
            maxSequence = try f.readUInt64LE()
            userMetadata = try f.readUInt64LE()
            let indexSum = try f.readUInt64LE()
            if let expectedPartition, partition != expectedPartition {
                throw fail("segment belongs to partition \(partition), the manifest lists it under \(expectedPartition)", footerAt + 12)
            }
            self.partition = partition
            self.entryCount = entryCount
            guard indexOffset >= SegmentFormat.headerBytes, indexBytes >= 0, indexOffset <= footerAt, indexBytes == footerAt - indexOffset else {
                throw fail("index at \(indexOffset) of \(indexBytes) bytes does not end at the footer (\(footerAt))", footerAt + 16)
            }
            guard blockCount <= indexBytes / 9 + 1 else { throw fail("block count \(blockCount) cannot fit in a \(indexBytes)-byte index", footerAt + 32) }
            guard blockCount > 0 || entryCount == 0 else { throw fail("\(entryCount) entries but no blocks", footerAt + 40) }
            self.indexOffset = indexOffset
            self.indexBytes = indexBytes
            self.indexSum = indexSum
            self.blockCount = blockCount
        } catch let error as StorageError {
            throw error.file == nil ? error.located(file: name) : error
        }
    }

    /// The block index, parsed and checked the first time it is needed (by whichever thread gets there first;
    /// a thread that loses the race uses the winner's).
    @inline(__always)
    func index() throws -> SegmentIndex {
        if let index = lazyIndex.load() { return index }
        return lazyIndex.storeIfNil(try loadIndex())
    }

    @inline(never)
    func loadIndex() throws -> SegmentIndex {
        do {
            let stored = UnsafeRawBufferPointer(rebasing: region.unsafeBytes[indexOffset..<(indexOffset + indexBytes)])
            // A plain segment of format 3 checks its directory here and each page and filter chunk on first use; an
            // encrypted area is sealed, and checked, whole.
            let checked = cipher == nil ? try SegmentIndex.checkedRange(of: stored, version: formatVersion) : 0..<stored.count
            let computed = Checksum.xxh3(UnsafeRawBufferPointer(rebasing: stored[checked]))
            guard computed == indexSum else {
                throw StorageError.corrupted(
                    "index checksum mismatch (stored 0x\(String(indexSum, radix: 16)), computed 0x\(String(computed, radix: 16)))",
                    file: nil, offset: indexOffset + checked.lowerBound)
            }
            guard let cipher else {
                return try SegmentIndex(
                    area: stored, areaOffset: indexOffset, blocksEnd: indexOffset, blockCount: blockCount, hasFilter: hasFilter,
                    version: formatVersion, plainArea: nil)
            }
            let footer = SegmentFormat.authenticatedFooter(
                partition: partition, blockCount: blockCount, entryCount: entryCount, minSequence: minSequence, maxSequence: maxSequence,
                userMetadata: userMetadata, salt: salt)
            let plain = try opening(offset: indexOffset) {
                try cipher.open(stored, at: .index(file: fileNumber, offset: indexOffset), database: identity, authenticating: footer)
            }
            let area = plain.withUnsafeBytes { MappedRegion(copying: $0) }
            return try SegmentIndex(
                area: area.unsafeBytes, areaOffset: indexOffset, blocksEnd: indexOffset, blockCount: blockCount, hasFilter: hasFilter,
                version: formatVersion, plainArea: area)
        } catch let error as StorageError {
            throw error.file == nil ? error.located(file: name) : error
        }
    }

    /// The index area as the index reads it: opened (encrypted segments) or in place in the mapping.
    @inline(__always)
    func indexArea(_ index: SegmentIndex) -> UnsafeRawBufferPointer {
        index.plainArea?.unsafeBytes ?? UnsafeRawBufferPointer(rebasing: region.unsafeBytes[indexOffset..<(indexOffset + indexBytes)])
    }

    /// Where block `i` starts.
    func blockOffset(_ i: Int, _ index: SegmentIndex) throws -> Int {
        try index.blockOffset(i, in: indexArea(index))
    }

    /// The last block whose first key is at or before `key`, or nil when `key` precedes them all.
    func blockIndex(for key: UnsafeRawBufferPointer) throws -> Int? {
        let index = try index()
        do {
            return try index.lastBlock(atOrBefore: key, in: indexArea(index))
        } catch let error as StorageError {
            throw error.file == nil ? error.located(file: name) : error
        }
    }

    /// Where block `i`'s bytes are and what its header declares; checks the header and, once, the checksum.
    struct BlockLocation {
        var start: Int
        var stored: Range<Int>
        var rawCount: Int
        var entryCount: Int
        var compressed: Bool
        /// Whether the stored bytes are sealed (`Cipher`): opened before they are decompressed or read.
        var encrypted: Bool
        var entriesEnd: Int { rawCount - 4 * entryCount }
    }

    func locate(_ i: Int) throws -> BlockLocation {
        let index = try index()
        let start = try blockOffset(i, index)
        // The block's end is its header's (which its checksum covers), not the next block's offset: a block
        // reads without the next block's index page. `verify()` checks that the blocks follow one another.
        guard start >= SegmentFormat.headerBytes, start <= indexOffset - BlockHeader.byteCount else {
            throw StorageError.corrupted("block \(i) at \(start) leaves no room for its header before the index", file: name, offset: start)
        }
        let bytes = region.unsafeBytes
        var h = ByteReader(UnsafeRawBufferPointer(rebasing: bytes[start..<(start + BlockHeader.byteCount)]))
        let storedCount = try h.readUInt32LE("block stored length")
        let rawCount = try h.readUInt32LE("block raw length")
        let entryCount = try h.readUInt32LE("block entry count")
        let flags = try h.readUInt32LE("block flags")
        let checksum = try h.readUInt64LE("block checksum")
        let end = start + BlockHeader.byteCount + Int(storedCount)
        guard end <= indexOffset else {
            throw StorageError.corrupted(
                "block \(i) declares \(storedCount) stored bytes, the index leaves room for \(indexOffset - start - BlockHeader.byteCount)",
                file: name, offset: start)
        }
        guard flags & ~(BlockHeader.flagLZ4 | BlockHeader.flagEncrypted) == 0 else {
            throw StorageError.corrupted("block \(i) has unknown flags 0x\(String(flags, radix: 16))", file: name, offset: start + 12)
        }
        guard Int(rawCount) <= Limits.maxBlockBytes, UInt64(entryCount) * 4 <= UInt64(rawCount), entryCount > 0 else {
            throw StorageError.corrupted(
                "block \(i) declares \(rawCount) raw bytes and \(entryCount) entries, which cannot be", file: name, offset: start + 4)
        }
        let compressed = flags & BlockHeader.flagLZ4 != 0
        let encrypted = flags & BlockHeader.flagEncrypted != 0
        guard encrypted == (cipher != nil) else {
            throw StorageError.corrupted(
                "block \(i) is \(encrypted ? "" : "not ")encrypted, in a\(encrypted ? " plain" : "n encrypted") segment", file: name, offset: start + 12)
        }
        let plainStored = Int(storedCount) - (encrypted ? Cipher.overhead : 0)
        guard compressed || rawCount == plainStored else {
            throw StorageError.corrupted(
                "uncompressed block \(i) declares \(rawCount) raw bytes but stores \(storedCount)", file: name, offset: start + 4)
        }
        let storedRange = (start + BlockHeader.byteCount)..<end
        let word = i >> 6, bit = UInt64(1) << UInt64(i & 63)
        if index.verified.withLock({ $0[word] & bit }) == 0 {
            let stored = UnsafeRawBufferPointer(rebasing: bytes[storedRange])
            let computed = BlockHeader.checksum(stored: stored, storedCount: storedCount, rawCount: rawCount, entryCount: entryCount, flags: flags)
            guard computed == checksum else {
                throw StorageError.corrupted(
                    "block \(i) checksum mismatch (stored 0x\(String(checksum, radix: 16)), computed 0x\(String(computed, radix: 16))); "
                        + "the segment was damaged on disk. Restore it from a backup, or delete this partition's data.",
                    file: name, offset: start)
            }
            index.verified.withLock { $0[word] |= bit }
        }
        return BlockLocation(
            start: start, stored: storedRange, rawCount: Int(rawCount), entryCount: Int(entryCount), compressed: compressed, encrypted: encrypted)
    }

    /// Adds this segment's file name and the block's offset to an error from a block's bytes.
    func locating<R>(_ i: Int, _ body: () throws -> R) throws -> R {
        do {
            return try body()
        } catch let error as StorageError {
            if error.file != nil { throw error }
            let offset = (try? index()).flatMap { try? blockOffset(i, $0) }  // try?: the error being reported names the damage
            var e = error
            e.file = name
            e.message = "block \(i) at offset \(offset.map(String.init) ?? "?"): " + e.message
            e.offset = offset
            throw e
        }
    }

    /// What `salvageEntries` could not read: a block (its offset and the keys from its first up to the next
    /// block's first, nil at the end) or, when `offset` is nil, the whole index.
    struct UnreadableBlock {
        var offset: Int?
        var firstKey: [UInt8]?
        var endKey: [UInt8]?
        var error: any Error
    }

    /// Calls `body` with block `i`'s raw bytes, decompressing into `scratch` when the block is compressed.
    func withBlock<R>(_ i: Int, scratch: GrowableBuffer, _ body: (BlockView) throws -> R) throws -> R {
        try locating(i) {
            let b = try locate(i)
            let stored = UnsafeRawBufferPointer(rebasing: region.unsafeBytes[b.stored])
            if b.encrypted {
                let plain = try open(i, b, stored)
                if b.compressed {
                    try plain.withUnsafeBytes { try LZ4.decompress($0, originalCount: b.rawCount, into: scratch) }
                } else {
                    scratch.removeAll()
                    plain.withUnsafeBytes { scratch.append($0) }
                }
                return try scratch.withUnsafeBytes { try body(BlockView(raw: $0, entryCount: b.entryCount, entriesEnd: b.entriesEnd)) }
            }
            if !b.compressed {
                return try body(BlockView(raw: stored, entryCount: b.entryCount, entriesEnd: b.entriesEnd))
            }
            try LZ4.decompress(stored, originalCount: b.rawCount, into: scratch)
            return try scratch.withUnsafeBytes { try body(BlockView(raw: $0, entryCount: b.entryCount, entriesEnd: b.entriesEnd)) }
        }
    }

    /// Calls `body` with block `i` prepared for point reads (from the cache, or read and cached now).
    func withPointBlock<R>(_ i: Int, _ body: (BlockView, [UInt64]) throws -> R) throws -> R {
        try locating(i) {
            let cacheKey = BlockCache.Key(file: fileNumber, block: i)
            let block: CachedBlock
            if let cached = cache?.get(cacheKey) {
                block = cached
            } else {
                let b = try locate(i)
                var decompressed: MappedRegion? = nil
                let stored = UnsafeRawBufferPointer(rebasing: region.unsafeBytes[b.stored])
                if b.encrypted {
                    // Opened (and decompressed) into memory of its own: nothing decrypted is ever written out.
                    let plain = try open(i, b, stored)
                    let out = GrowableBuffer(capacity: b.rawCount)
                    if b.compressed {
                        try plain.withUnsafeBytes { try LZ4.decompress($0, originalCount: b.rawCount, into: out) }
                    } else {
                        plain.withUnsafeBytes { out.append($0) }
                    }
                    decompressed = MappedRegion(adopting: out)
                } else if b.compressed {
                    let out = GrowableBuffer(capacity: b.rawCount)
                    try LZ4.decompress(stored, originalCount: b.rawCount, into: out)
                    decompressed = MappedRegion(adopting: out)
                }
                let raw = decompressed?.unsafeBytes ?? UnsafeRawBufferPointer(rebasing: region.unsafeBytes[b.stored])
                let view = BlockView(raw: raw, entryCount: b.entryCount, entriesEnd: b.entriesEnd)
                var prefixes: [UInt64] = []
                prefixes.reserveCapacity(b.entryCount)
                for j in 0..<b.entryCount { prefixes.append(Bytes.prefix64(try view.entry(at: try view.entryOffset(j)).key)) }
                block = CachedBlock(region: decompressed, prefixes: prefixes, entryCount: b.entryCount, entriesEnd: b.entriesEnd)
                cache?.insert(cacheKey, block)
            }
            return try withExtendedLifetime(block) {
                let raw: UnsafeRawBufferPointer
                if let r = block.region {
                    raw = r.unsafeBytes
                } else {
                    let start = try blockOffset(i, try index()) + BlockHeader.byteCount
                    raw = UnsafeRawBufferPointer(rebasing: region.unsafeBytes[start..<(start + block.entriesEnd + 4 * block.entryCount)])
                }
                return try body(BlockView(raw: raw, entryCount: block.entryCount, entriesEnd: block.entriesEnd), block.prefixes)
            }
        }
    }
}
