import Synchronization

// Invariants:
// (1) A segment file is never written again once sealed; its mapping is read-only.
// (2) A block's bytes are used only after its checksum matched (once per block, remembered in `verified`).
// (2a) The block index is parsed on first use, only after its checksum matched; open reads only the header
//      and the footer, so that its cost does not grow with the segment.
// (3) Every offset read from the file is bounds-checked before use, so a damaged file gives `.corrupted`,
//     never a trap.

/// A borrowed view of one block's raw (decompressed) bytes.
struct BlockView {
    let raw: UnsafeRawBufferPointer
    let entryCount: Int
    /// Where the entries end and the offset table begins.
    let entriesEnd: Int

    /// The offset of entry `j`, checked against the entries area.
    @inline(__always)
    func entryOffset(_ j: Int) throws -> Int {
        guard let o = Bytes.loadUInt32LE(raw, at: entriesEnd + 4 * j), Int(o) < entriesEnd else {
            throw StorageError.corrupted("entry \(j)'s offset is outside the block's \(entriesEnd) entry bytes", file: nil, offset: nil)
        }
        return Int(o)
    }

    /// Decodes the entry at `offset`: its key, its value (nil for a deletion) and where the next one starts.
    @inline(__always)
    func entry(at offset: Int) throws -> (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer?, next: Int) {
        // The common case: both lengths fit one varint byte.
        if offset >= 0, offset + 2 <= entriesEnd {
            let keyCount = Int(raw[offset]), tag = Int(raw[offset + 1])
            if keyCount < 0x80 && tag < 0x80 {
                let keyStart = offset + 2
                let valueStart = keyStart + keyCount
                let end = valueStart + (tag == 0 ? 0 : tag - 1)
                guard end <= entriesEnd else {
                    throw StorageError.corrupted("entry at \(offset) runs past the block's entries", file: nil, offset: offset)
                }
                let key = UnsafeRawBufferPointer(rebasing: raw[keyStart..<valueStart])
                return (key, tag == 0 ? nil : UnsafeRawBufferPointer(rebasing: raw[valueStart..<end]), end)
            }
        }
        return try slowEntry(at: offset)
    }

    @inline(never)
    func slowEntry(at offset: Int) throws -> (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer?, next: Int) {
        var r = ByteReader(UnsafeRawBufferPointer(rebasing: raw[0..<entriesEnd]), position: offset)
        let keyCount = try r.readLength("key length", limit: Limits.maxKeyBytes)
        let tag = try r.readVarint("value length")
        guard tag <= UInt64(Limits.maxValueBytes) + 1 else {
            throw StorageError.corrupted("value length \(tag &- 1) exceeds \(Limits.maxValueBytes)", file: nil, offset: offset)
        }
        let key = try r.readBytes(count: keyCount, "key")
        let value: UnsafeRawBufferPointer? = tag == 0 ? nil : try r.readBytes(count: Int(tag - 1), "value")
        return (key, value, r.position)
    }
}

/// The result of looking a key up in one source.
enum Lookup {
    case absent
    case deleted
    case found(UnsafeRawBufferPointer)
}

/// An open, mapped, sealed segment.
final class SegmentReader: Sendable {
    let fileNumber: UInt64
    let name: String
    let partition: UInt32
    let region: MappedRegion
    let entryCount: Int
    let minSequence: UInt64
    let maxSequence: UInt64
    let userMetadata: UInt64
    let blockCount: Int
    private let indexOffset: Int
    private let indexBytes: Int
    private let indexSum: UInt64
    /// Whether the index area ends with a key filter (format 2).
    private let hasFilter: Bool
    /// The block index, read and checked on first use: open reads only headers and footers, so that its cost
    /// does not grow with the data (an index has one entry per 32 KiB block).
    private let lazyIndex = LazyReference<SegmentIndex>()
    /// The largest key, read from the last block on first use (`lastKey()`).
    private let lastKeyCache = Locked<(known: Bool, key: [UInt8]?)>((false, nil))
    private let cache: BlockCache?
    var fileBytes: Int { region.count }
    var info: SegmentInfo {
        SegmentInfo(
            fileNumber: fileNumber, fileBytes: UInt64(region.count), entryCount: UInt64(entryCount),
            minSequence: minSequence, maxSequence: maxSequence, userMetadata: userMetadata)
    }

    /// Checks the header and footer of a mapped segment. The index is checked when first used, and each block
    /// when first read.
    init(region: MappedRegion, fileNumber: UInt64, expectedPartition: UInt32?, databaseID: UInt64 = 0, cache: BlockCache? = nil) throws {
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
            guard version <= SegmentFormat.formatVersion else {
                throw StorageError(.formatTooNew, "segment format version \(version) is newer than this build's \(SegmentFormat.formatVersion)", file: name, offset: 8)
            }
            var idReader = ByteReader(bytes, position: 24)
            let fileID = try idReader.readUInt64LE("database identity")
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
    private func index() throws -> SegmentIndex {
        if let index = lazyIndex.load() { return index }
        return lazyIndex.storeIfNil(try loadIndex())
    }

    @inline(never)
    private func loadIndex() throws -> SegmentIndex {
        do {
            return try SegmentIndex(
                segment: region.unsafeBytes, indexOffset: indexOffset, indexBytes: indexBytes, indexSum: indexSum, blockCount: blockCount,
                hasFilter: hasFilter)
        } catch let error as StorageError {
            throw error.file == nil ? error.located(file: name) : error
        }
    }

    /// The first key of block `i`.
    @inline(__always)
    private func firstKey(_ i: Int, _ index: SegmentIndex) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: region.unsafeBytes[index.firstKeyOffsets[i]..<(index.firstKeyOffsets[i] + index.firstKeyCounts[i])])
    }

    /// The last block whose first key is at or before `key`, or nil when `key` precedes them all.
    func blockIndex(for key: UnsafeRawBufferPointer) throws -> Int? {
        let index = try index()
        let p = Bytes.prefix64(key)
        var lo = 0, hi = index.blockOffsets.count
        while lo < hi {
            let mid = (lo + hi) >> 1
            let fp = index.firstKeyPrefixes[mid]
            let atOrBefore = fp != p ? fp < p : Bytes.compare(firstKey(mid, index), key) <= 0
            if atOrBefore { lo = mid + 1 } else { hi = mid }
        }
        return lo == 0 ? nil : lo - 1
    }

    /// Where block `i`'s bytes are and what its header declares; checks the header and, once, the checksum.
    private struct BlockLocation {
        var start: Int
        var stored: Range<Int>
        var rawCount: Int
        var entryCount: Int
        var compressed: Bool
        var entriesEnd: Int { rawCount - 4 * entryCount }
    }

    private func locate(_ i: Int) throws -> BlockLocation {
        let index = try index()
        let blockOffsets = index.blockOffsets
        let start = blockOffsets[i]
        let end = i + 1 < blockOffsets.count ? blockOffsets[i + 1] : indexOffset
        let bytes = region.unsafeBytes
        var h = ByteReader(UnsafeRawBufferPointer(rebasing: bytes[start..<end]))
        let storedCount = try h.readUInt32LE("block stored length")
        let rawCount = try h.readUInt32LE("block raw length")
        let entryCount = try h.readUInt32LE("block entry count")
        let flags = try h.readUInt32LE("block flags")
        let checksum = try h.readUInt64LE("block checksum")
        guard Int(storedCount) == end - start - BlockHeader.byteCount else {
            throw StorageError.corrupted(
                "block \(i) declares \(storedCount) stored bytes, the index leaves room for \(end - start - BlockHeader.byteCount)",
                file: name, offset: start)
        }
        guard flags & ~BlockHeader.flagLZ4 == 0 else {
            throw StorageError.corrupted("block \(i) has unknown flags 0x\(String(flags, radix: 16))", file: name, offset: start + 12)
        }
        guard Int(rawCount) <= Limits.maxBlockBytes, UInt64(entryCount) * 4 <= UInt64(rawCount), entryCount > 0 else {
            throw StorageError.corrupted(
                "block \(i) declares \(rawCount) raw bytes and \(entryCount) entries, which cannot be", file: name, offset: start + 4)
        }
        let compressed = flags & BlockHeader.flagLZ4 != 0
        guard compressed || rawCount == storedCount else {
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
        return BlockLocation(start: start, stored: storedRange, rawCount: Int(rawCount), entryCount: Int(entryCount), compressed: compressed)
    }

    /// Adds this segment's file name and the block's offset to an error from a block's bytes.
    private func locating<R>(_ i: Int, _ body: () throws -> R) throws -> R {
        do {
            return try body()
        } catch let error as StorageError {
            if error.file != nil { throw error }
            let offset = (try? index())?.blockOffsets[i]
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

    /// Every entry of every block that passes its checks, in key order (a nil value is a deletion); the blocks
    /// that do not are skipped and returned. For `Database.salvage`.
    func salvageEntries(_ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer?) -> Void) -> [UnreadableBlock] {
        let index: SegmentIndex
        do {
            index = try self.index()
        } catch {
            return [UnreadableBlock(offset: nil, firstKey: nil, endKey: nil, error: error)]
        }
        var unreadable: [UnreadableBlock] = []
        let scratch = GrowableBuffer(capacity: Tuning.blockBytes + 1024)
        for i in 0..<blockCount {
            do {
                try withBlock(i, scratch: scratch) { view in
                    for j in 0..<view.entryCount {
                        let e = try view.entry(at: try view.entryOffset(j))
                        body(e.key, e.value)
                    }
                }
            } catch {
                unreadable.append(UnreadableBlock(
                    offset: index.blockOffsets[i], firstKey: [UInt8](firstKey(i, index)),
                    endKey: i + 1 < blockCount ? [UInt8](firstKey(i + 1, index)) : nil, error: error))
            }
        }
        return unreadable
    }

    /// Checks the index and every block's checksum (those not checked before).
    func checkAllBlocks() throws {
        for i in 0..<blockCount { _ = try locating(i) { try locate(i) } }
    }

    /// Calls `body` with block `i`'s raw bytes, decompressing into `scratch` when the block is compressed.
    func withBlock<R>(_ i: Int, scratch: GrowableBuffer, _ body: (BlockView) throws -> R) throws -> R {
        try locating(i) {
            let b = try locate(i)
            let stored = UnsafeRawBufferPointer(rebasing: region.unsafeBytes[b.stored])
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
                if b.compressed {
                    let out = GrowableBuffer(capacity: b.rawCount)
                    try LZ4.decompress(UnsafeRawBufferPointer(rebasing: region.unsafeBytes[b.stored]), originalCount: b.rawCount, into: out)
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
                    let start = try index().blockOffsets[i] + BlockHeader.byteCount
                    raw = UnsafeRawBufferPointer(rebasing: region.unsafeBytes[start..<(start + block.entriesEnd + 4 * block.entryCount)])
                }
                return try body(BlockView(raw: raw, entryCount: block.entryCount, entriesEnd: block.entriesEnd), block.prefixes)
            }
        }
    }

    /// The segment's largest key (a deletion's too); nil for a segment without entries. One block read, once.
    func lastKey() throws -> [UInt8]? {
        let cached = lastKeyCache.withLock { $0 }
        if cached.known { return cached.key }
        var key: [UInt8]? = nil
        if blockCount > 0 {
            key = try withPointBlock(blockCount - 1) { view, _ in
                guard view.entryCount > 0 else { return nil }
                return [UInt8](try view.entry(at: try view.entryOffset(view.entryCount - 1)).key)
            }
        }
        lastKeyCache.withLock { $0 = (true, key) }
        return key
    }

    /// Looks `key` up: at most one block read.
    func lookup<R>(_ key: UnsafeRawBufferPointer, hash: UInt64? = nil, _ body: (Lookup) throws -> R) throws -> R {
        if let filter = try index().filter,
            !KeyFilter.mayContain(
                hash: hash ?? KeyFilter.hash(key), words: UnsafeRawBufferPointer(rebasing: region.unsafeBytes[filter.offset...]),
                wordCount: filter.wordCount, probeCount: filter.probeCount)
        {
            return try body(.absent)
        }
        guard let b = try blockIndex(for: key) else { return try body(.absent) }
        let p = Bytes.prefix64(key)
        return try withPointBlock(b) { view, prefixes in
            var lo = 0, hi = prefixes.count
            while lo < hi {
                let mid = (lo + hi) >> 1
                if prefixes[mid] < p { lo = mid + 1 } else { hi = mid }
            }
            while lo < prefixes.count && prefixes[lo] == p {
                let e = try view.entry(at: try view.entryOffset(lo))
                let c = Bytes.compare(e.key, key)
                if c == 0 { return try body(e.value.map { .found($0) } ?? .deleted) }
                if c > 0 { break }
                lo += 1
            }
            return try body(.absent)
        }
    }

    /// Calls `body` with the value of `key` in the first of `segments` (newest first) that has it, nil when that
    /// one deleted it or none has it. The key's filter hash is computed once for all of them.
    static func newestValue<R>(of key: UnsafeRawBufferPointer, in segments: [SegmentReader], _ body: (UnsafeRawBufferPointer?) throws -> R) throws -> R {
        let hash = segments.isEmpty ? 0 : KeyFilter.hash(key)
        for segment in segments {
            let step: LookupStep<R> = try segment.lookup(key, hash: hash) { lookup in
                switch lookup {
                case .absent: return .next
                case .deleted: return .done(try body(nil))
                case .found(let v): return .done(try body(v))
                }
            }
            if case .done(let r) = step { return r }
        }
        return try body(nil)
    }

    /// Reads every block and entry, checking checksums and key order. Returns the problems found.
    func verify() -> [String] {
        var problems: [String] = []
        var previous: [UInt8]? = nil
        let scratch = GrowableBuffer()
        var seen = 0
        let blockOffsets: [Int]
        do {
            blockOffsets = try index().blockOffsets
        } catch {
            return ["\(error)"]
        }
        for i in 0..<blockOffsets.count {
            do {
                try withBlock(i, scratch: scratch) { view in
                    var pos = 0
                    for j in 0..<view.entryCount {
                        guard try view.entryOffset(j) == pos else {
                            throw StorageError.corrupted("block \(i) entry \(j) offset table disagrees with the entries", file: name, offset: blockOffsets[i])
                        }
                        let e = try view.entry(at: pos)
                        if let p = previous, p.withUnsafeBytes({ Bytes.compare($0, e.key) }) >= 0 {
                            throw StorageError.corrupted("block \(i) entry \(j) key is not after the previous key", file: name, offset: blockOffsets[i])
                        }
                        previous = [UInt8](e.key)
                        pos = e.next
                        seen += 1
                    }
                    guard pos == view.entriesEnd else {
                        throw StorageError.corrupted("block \(i) has \(view.entriesEnd - pos) bytes after its last entry", file: name, offset: blockOffsets[i])
                    }
                }
            } catch {
                problems.append("\(error)")
            }
        }
        if problems.isEmpty && seen != entryCount {
            problems.append("\(name): footer declares \(entryCount) entries, the blocks hold \(seen)")
        }
        return problems
    }
}

/// A segment's block index: where each block starts and its first key. Parsed from the index area the first
/// time a reader needs it, after the area's checksum matched.
final class SegmentIndex: Sendable {
    let blockOffsets: [Int]
    let firstKeyOffsets: [Int]
    let firstKeyCounts: [Int]
    let firstKeyPrefixes: [UInt64]
    /// Blocks whose checksum matched, one bit each.
    let verified: Locked<[UInt64]>

    /// Checks and parses the index of `segment` (its footer already checked: the index area ends at the footer
    /// and `blockCount` fits in it). Errors carry offsets in the segment, not yet its file name.
    /// Where the segment's key filter lies in the segment (nil in format-1 segments): read in place.
    let filter: (offset: Int, wordCount: Int, probeCount: UInt32)?

    init(segment bytes: UnsafeRawBufferPointer, indexOffset: Int, indexBytes: Int, indexSum: UInt64, blockCount: Int, hasFilter: Bool) throws {
        let fail = { (message: String, offset: Int) in StorageError.corrupted(message, file: nil, offset: offset) }
        var index = UnsafeRawBufferPointer(rebasing: bytes[indexOffset..<(indexOffset + indexBytes)])
        let computedIndexSum = Checksum.xxh3(index)
        guard computedIndexSum == indexSum else {
            throw fail("index checksum mismatch (stored 0x\(String(indexSum, radix: 16)), computed 0x\(String(computedIndexSum, radix: 16)))", indexOffset)
        }
        if hasFilter {
            guard index.count >= 8 else { throw fail("index of \(index.count) bytes has no room for its key filter", indexOffset) }
            var t = ByteReader(index, position: index.count - 8)
            let wordCount = Int(try t.readUInt32LE("filter word count"))
            let probes = try t.readUInt32LE("filter probe count")
            guard wordCount > 0, wordCount <= (index.count - 8) / 8, probes > 0, probes <= 30 else {
                throw fail("key filter of \(wordCount) words and \(probes) probes does not fit the index", indexOffset + index.count - 8)
            }
            let start = index.count - 8 - wordCount * 8
            filter = (indexOffset + start, wordCount, probes)
            index = UnsafeRawBufferPointer(rebasing: index[0..<start])
        } else {
            filter = nil
        }
        var offsets: [Int] = [], keyOffsets: [Int] = [], keyCounts: [Int] = []
        offsets.reserveCapacity(blockCount)
        keyOffsets.reserveCapacity(blockCount)
        keyCounts.reserveCapacity(blockCount)
        var r = ByteReader(index)
        var previousEnd = SegmentFormat.headerBytes
        for i in 0..<blockCount {
            let at = r.position
            let offset = Int(clamping: try r.readUInt64LE("block offset"))
            guard offset == previousEnd || (i > 0 && offset > previousEnd), offset <= indexOffset - BlockHeader.byteCount else {
                throw fail("block \(i) offset \(offset) is out of order or past the index", indexOffset + at)
            }
            if i == 0 && offset != SegmentFormat.headerBytes {
                throw fail("first block starts at \(offset), expected \(SegmentFormat.headerBytes)", indexOffset + at)
            }
            let keyCount = try r.readLength("first key length", limit: Limits.maxKeyBytes)
            let keyAt = r.position
            try r.skip(keyCount, "first key")
            offsets.append(offset)
            keyOffsets.append(indexOffset + keyAt)
            keyCounts.append(keyCount)
            previousEnd = offset + BlockHeader.byteCount
        }
        guard r.isAtEnd else { throw fail("\(r.remaining) unexpected bytes at the end of the index", indexOffset + r.position) }
        blockOffsets = offsets
        firstKeyOffsets = keyOffsets
        firstKeyCounts = keyCounts
        firstKeyPrefixes = zip(keyOffsets, keyCounts).map { o, c in
            Bytes.prefix64(UnsafeRawBufferPointer(rebasing: bytes[o..<(o + c)]))
        }
        verified = Locked(Array(repeating: 0, count: (blockCount + 63) / 64))
    }
}
