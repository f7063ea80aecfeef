/// A segment's block index: where each block starts and its first key, and the key filter. Read from the index
/// area the first time a reader needs it, after the checksum that covers it matched (and, in an encrypted
/// segment, after the area was opened).
///
/// Two layouts (`SegmentFormat`):
/// - **Flat** (formats 1 and 2): one checksum covers the whole area, entries and filter, so the first use
///   hashes all of it and parses every entry into arrays. For a segment of a million keys that is 1.5 MB.
/// - **Paged** (format 3): the footer's checksum covers a small directory only: each index page's place,
///   checksum and first key, and a checksum per filter chunk. A page (64 blocks) or a filter chunk (4 KiB) is
///   hashed and checked the first time it is used, and read in place; nothing is copied. A page holds its
///   entries' key prefixes as fixed-width words, so a search in it reads keys only to break ties. A point read after
///   open checks the directory, about seven filter chunks and one page.
///
/// Methods take the area (`SegmentReader.indexArea`: the mapping's bytes, or an encrypted area's opened copy).
/// Their errors carry offsets in the segment, not yet its file name.
final class SegmentIndex: Sendable {
    let blockCount: Int
    /// Blocks whose checksum matched, one bit each.
    let verified: Locked<[UInt64]>
    /// Blocks of an encrypted segment that authenticated, one bit each.
    let authenticated: Locked<[UInt64]>
    /// The opened index area of an encrypted segment; nil when the area is read in place from the mapping.
    let plainArea: MappedRegion?
    /// The area's offset in the segment, for errors (an opened area's offsets do not exist in the file: errors
    /// then point at the area's start).
    private let areaOffset: Int

    // The layout's fields are stored flat (no enum or struct of arrays): a lookup reads them without copying
    // and retaining arrays.

    /// Format 3: the index is read page by page; before, `keyOffsets` and the rest hold every block's entry.
    private let paged: Bool
    /// Flat: each block's first key (its place in the area, length and prefix). Paged: each page's, as the
    /// directory holds it.
    private let keyOffsets: [Int]
    private let keyCounts: [Int]
    private let keyPrefixes: [UInt64]
    /// Flat: where each block starts in the segment. Paged: where each page starts in the area, then where the
    /// last one ends.
    private let starts: [Int]
    /// Paged: each page's checksum, and the pages whose checksum matched and whose entries were checked.
    private let pageSums: [UInt64]
    private let pagesChecked: AtomicBits
    /// Where the blocks end (the index area's offset in the segment): no block offset reaches past it.
    private let blocksEnd: Int

    /// Whether the segment has a key filter (from format 2), where it lies in the area, and its shape.
    let hasFilter: Bool
    private let filterOffset: Int
    private let filterWordCount: Int
    private let filterProbes: UInt32
    /// Format 3: a checksum per `SegmentFormat.filterChunkWords` words, and the chunks that matched.
    private let chunkSums: [UInt64]
    private let chunksChecked: AtomicBits

    /// Parses the index area `area` (at `areaOffset` in the segment, whose blocks end at `blocksEnd`; the footer
    /// already checked that `blockCount` fits) of a segment of format `version`. `plainArea` owns `area` when it
    /// is not the mapping's. The checksum the footer holds was checked by the caller over the bytes
    /// `SegmentIndex.checkedRange` names.
    init(
        area: UnsafeRawBufferPointer, areaOffset: Int, blocksEnd: Int, blockCount: Int, hasFilter: Bool, version: UInt32,
        plainArea: MappedRegion?
    ) throws {
        self.areaOffset = areaOffset
        self.blockCount = blockCount
        self.plainArea = plainArea
        self.blocksEnd = blocksEnd
        self.hasFilter = hasFilter
        let at = { (relative: Int) in plainArea == nil ? areaOffset + relative : areaOffset }
        let fail = { (message: String, relative: Int) in StorageError.corrupted(message, file: nil, offset: at(relative)) }
        verified = Locked(Array(repeating: 0, count: (blockCount + 63) / 64))
        authenticated = Locked(Array(repeating: 0, count: (blockCount + 63) / 64))
        if version >= 3 {
            paged = true
            // The directory: per page `u32 offset · u64 checksum · varint firstKeyCount · first key`, per filter
            // chunk `u64 checksum`, then the trailer `u32 pageCount · u32 filterWordCount · u32 probeCount ·
            // u32 directoryBytes` (the directory and trailer together).
            let directory = try Self.checkedRange(of: area, version: 3)
            var t = ByteReader(area, position: area.count - SegmentFormat.indexTrailerBytes)
            let pageCount = Int(try t.readUInt32LE("index page count"))
            let wordCount = Int(try t.readUInt32LE("filter word count"))
            let probes = try t.readUInt32LE("filter probe count")
            let perPage = SegmentFormat.indexPageBlocks
            guard pageCount == (blockCount + perPage - 1) / perPage else {
                throw fail("index has \(pageCount) pages, \(blockCount) blocks need \((blockCount + perPage - 1) / perPage)", area.count - 16)
            }
            let filterStart = directory.lowerBound - wordCount * 8
            if hasFilter {
                guard wordCount > 0, filterStart >= 0, probes > 0, probes <= 30 else {
                    throw fail("key filter of \(wordCount) words and \(probes) probes does not fit the index", area.count - 12)
                }
            } else {
                guard wordCount == 0 else { throw fail("index of a segment without a key filter declares \(wordCount) filter words", area.count - 12) }
            }
            var r = ByteReader(UnsafeRawBufferPointer(rebasing: area[..<(area.count - SegmentFormat.indexTrailerBytes)]), position: directory.lowerBound)
            var starts: [Int] = [], sums: [UInt64] = [], keyOffsets: [Int] = [], keyCounts: [Int] = [], prefixes: [UInt64] = []
            starts.reserveCapacity(pageCount + 1)
            sums.reserveCapacity(pageCount)
            keyOffsets.reserveCapacity(pageCount)
            keyCounts.reserveCapacity(pageCount)
            prefixes.reserveCapacity(pageCount)
            for p in 0..<pageCount {
                let entryAt = r.position
                let start = Int(try r.readUInt32LE("index page offset"))
                guard p == 0 ? start == 0 : start > starts[p - 1], start < filterStart else {
                    throw fail("index page \(p) offset \(start) is out of order or past the pages", entryAt)
                }
                starts.append(start)
                sums.append(try r.readUInt64LE("index page checksum"))
                let keyCount = try r.readLength("page first key length", limit: Limits.maxKeyBytes)
                keyOffsets.append(r.position)
                keyCounts.append(keyCount)
                prefixes.append(Bytes.prefix64(try r.readBytes(count: keyCount, "page first key")))
            }
            guard pageCount > 0 || filterStart == 0 else { throw fail("an index without blocks holds \(filterStart) bytes of pages", 0) }
            starts.append(filterStart)
            var chunkSums: [UInt64] = []
            if hasFilter {
                let chunkCount = (wordCount + SegmentFormat.filterChunkWords - 1) / SegmentFormat.filterChunkWords
                chunkSums.reserveCapacity(chunkCount)
                for _ in 0..<chunkCount { chunkSums.append(try r.readUInt64LE("filter chunk checksum")) }
            }
            guard r.isAtEnd else { throw fail("\(r.remaining) unexpected bytes at the end of the index directory", r.position) }
            self.starts = starts
            self.keyOffsets = keyOffsets
            self.keyCounts = keyCounts
            self.keyPrefixes = prefixes
            pageSums = sums
            pagesChecked = AtomicBits(count: pageCount)
            filterOffset = filterStart
            filterWordCount = wordCount
            filterProbes = probes
            self.chunkSums = chunkSums
            chunksChecked = AtomicBits(count: chunkSums.count)
            return
        }
        paged = false
        pageSums = []
        // Nothing to check page by page: empty sets, full from the start.
        pagesChecked = AtomicBits(count: 0)
        chunkSums = []
        chunksChecked = AtomicBits(count: 0)
        var index = area
        if hasFilter {
            guard index.count >= 8 else { throw fail("index of \(index.count) bytes has no room for its key filter", 0) }
            var t = ByteReader(index, position: index.count - 8)
            let wordCount = Int(try t.readUInt32LE("filter word count"))
            let probes = try t.readUInt32LE("filter probe count")
            guard wordCount > 0, wordCount <= (index.count - 8) / 8, probes > 0, probes <= 30 else {
                throw fail("key filter of \(wordCount) words and \(probes) probes does not fit the index", index.count - 8)
            }
            let start = index.count - 8 - wordCount * 8
            filterOffset = start
            filterWordCount = wordCount
            filterProbes = probes
            index = UnsafeRawBufferPointer(rebasing: index[0..<start])
        } else {
            filterOffset = 0
            filterWordCount = 0
            filterProbes = 0
        }
        var offsets: [Int] = [], keyOffsets: [Int] = [], keyCounts: [Int] = []
        offsets.reserveCapacity(blockCount)
        keyOffsets.reserveCapacity(blockCount)
        keyCounts.reserveCapacity(blockCount)
        var r = ByteReader(index)
        var previousEnd = SegmentFormat.headerBytes
        for i in 0..<blockCount {
            let entryAt = r.position
            let offset = Int(clamping: try r.readUInt64LE("block offset"))
            guard offset == previousEnd || (i > 0 && offset > previousEnd), offset <= blocksEnd - BlockHeader.byteCount else {
                throw fail("block \(i) offset \(offset) is out of order or past the index", entryAt)
            }
            if i == 0 && offset != SegmentFormat.headerBytes {
                throw fail("first block starts at \(offset), expected \(SegmentFormat.headerBytes)", entryAt)
            }
            let keyCount = try r.readLength("first key length", limit: Limits.maxKeyBytes)
            let keyAt = r.position
            try r.skip(keyCount, "first key")
            offsets.append(offset)
            keyOffsets.append(keyAt)
            keyCounts.append(keyCount)
            previousEnd = offset + BlockHeader.byteCount
        }
        guard r.isAtEnd else { throw fail("\(r.remaining) unexpected bytes at the end of the index", r.position) }
        starts = offsets
        self.keyOffsets = keyOffsets
        self.keyCounts = keyCounts
        keyPrefixes = zip(keyOffsets, keyCounts).map { o, c in Bytes.prefix64(UnsafeRawBufferPointer(rebasing: area[o..<(o + c)])) }
    }

    /// The bytes of a plain index area that the footer's checksum covers: all of them before format 3, the
    /// directory and its trailer from format 3 on (the pages and filter chunks carry checksums of their own).
    static func checkedRange(of area: UnsafeRawBufferPointer, version: UInt32) throws -> Range<Int> {
        guard version >= 3 else { return 0..<area.count }
        guard area.count >= SegmentFormat.indexTrailerBytes else {
            throw StorageError.corrupted("index of \(area.count) bytes has no room for its trailer", file: nil, offset: 0)
        }
        var t = ByteReader(area, position: area.count - 4)
        let directoryBytes = Int(try t.readUInt32LE("index directory length"))
        guard directoryBytes >= SegmentFormat.indexTrailerBytes, directoryBytes <= area.count else {
            throw StorageError.corrupted(
                "index directory of \(directoryBytes) bytes does not fit an index of \(area.count)", file: nil, offset: area.count - 4)
        }
        return (area.count - directoryBytes)..<area.count
    }

    private func segmentOffset(_ relative: Int) -> Int { plainArea == nil ? areaOffset + relative : areaOffset }

    /// Flat: block `i`'s first key. Paged: page `i`'s, from the directory.
    @inline(__always)
    private func listedKey(_ i: Int, _ area: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: area[keyOffsets[i]..<(keyOffsets[i] + keyCounts[i])])
    }

    // MARK: Reading

    /// Where block `i` starts in the segment.
    func blockOffset(_ i: Int, in area: UnsafeRawBufferPointer) throws -> Int {
        guard paged else { return starts[i] }
        let (page, j) = i.quotientAndRemainder(dividingBy: SegmentFormat.indexPageBlocks)
        return try Self.pageEntry(j, of: try checkedPage(page, area)).blockOffset
    }

    /// The first key of block `i`.
    func firstKey(_ i: Int, in area: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer {
        guard paged else { return listedKey(i, area) }
        let (page, j) = i.quotientAndRemainder(dividingBy: SegmentFormat.indexPageBlocks)
        return try Self.pageEntry(j, of: try checkedPage(page, area)).key
    }

    /// The last block whose first key is at or before `key`, or nil when `key` precedes them all.
    func lastBlock(atOrBefore key: UnsafeRawBufferPointer, in area: UnsafeRawBufferPointer) throws -> Int? {
        let prefix = Bytes.prefix64(key)
        // Flat: the block. Paged: the page, whose first key (checked with the page to be the directory's) is at
        // or before `key`, so the block is in it.
        var lo = 0, hi = keyPrefixes.count
        while lo < hi {
            let mid = (lo + hi) >> 1
            let fp = keyPrefixes[mid]
            if fp != prefix ? fp < prefix : Bytes.compare(listedKey(mid, area), key) <= 0 { lo = mid + 1 } else { hi = mid }
        }
        guard lo > 0 else { return nil }
        guard paged else { return lo - 1 }
        let page = lo - 1
        let bytes = try checkedPage(page, area)
        let n = Self.blocks(inPage: page, blockCount)
        lo = 1
        hi = n
        while lo < hi {
            let mid = (lo + hi) >> 1
            let fp = Self.pagePrefix(mid, n, of: bytes)
            if fp != prefix ? fp < prefix : Bytes.compare(try Self.pageEntry(mid, of: bytes).key, key) <= 0 { lo = mid + 1 } else { hi = mid }
        }
        return page * SegmentFormat.indexPageBlocks + lo - 1
    }

    /// Whether the key whose filter hash is `hash` may be in the segment (true without a filter). In format 3,
    /// each filter chunk a probe reads is checked the first time.
    func mayContain(hash: UInt64, in area: UnsafeRawBufferPointer) throws -> Bool {
        guard hasFilter else { return true }
        let words = UnsafeRawBufferPointer(rebasing: area[filterOffset...])
        if chunksChecked.isFull {
            return KeyFilter.mayContain(hash: hash, words: words, wordCount: filterWordCount, probeCount: filterProbes)
        }
        let checked = chunksChecked
        let bits = UInt64(filterWordCount) * 64
        var (bit, step) = KeyFilter.firstProbe(hash, bits: bits)
        for _ in 0..<filterProbes {
            defer { bit = KeyFilter.nextProbe(bit, step, bits: bits) }
            let w = Int(bit >> 6)
            let chunk = w / SegmentFormat.filterChunkWords
            if !checked.contains(chunk) { try checkFilterChunk(chunk, words, checked) }
            let word = UInt64(littleEndian: words.loadUnaligned(fromByteOffset: w * 8, as: UInt64.self))
            if word & (1 << (bit & 63)) == 0 { return false }
        }
        return true
    }

    /// Checks every page and filter chunk not checked yet (`strata verify`).
    func checkAll(in area: UnsafeRawBufferPointer) throws {
        guard paged else { return }
        for page in 0..<pageSums.count { _ = try checkedPage(page, area) }
        let words = UnsafeRawBufferPointer(rebasing: area[filterOffset...])
        for chunk in 0..<chunkSums.count where !chunksChecked.contains(chunk) { try checkFilterChunk(chunk, words, chunksChecked) }
    }

    /// What a block that cannot be read loses (`salvageEntries`): its offset and keys, up to the next block's
    /// first key (nil: to the end), and the block to go on with. When the damage is in the block's index page,
    /// the loss is the whole page's, as the directory gives it.
    func loss(ofBlock i: Int, in area: UnsafeRawBufferPointer) -> (offset: Int?, firstKey: [UInt8]?, endKey: [UInt8]?, next: Int) {
        guard paged else {
            return (starts[i], [UInt8](listedKey(i, area)), i + 1 < blockCount ? [UInt8](listedKey(i + 1, area)) : nil, i + 1)
        }
        let perPage = SegmentFormat.indexPageBlocks
        let page = i / perPage
        let listed = { (page: Int) in page < self.keyOffsets.count ? [UInt8](self.listedKey(page, area)) : nil }
        // try?: a damaged page loses all of its blocks, whose keys the directory bounds.
        guard let offset = try? blockOffset(i, in: area), let key = try? firstKey(i, in: area) else {
            return (segmentOffset(starts[page]), listed(page), listed(page + 1), (page + 1) * perPage)
        }
        let end = (i + 1) % perPage == 0 ? listed(page + 1) : (try? firstKey(i + 1, in: area)).map { [UInt8]($0) }
        return (offset, [UInt8](key), i + 1 < blockCount ? end : nil, i + 1)
    }

    // MARK: Format 3's pages and chunks

    private static func blocks(inPage page: Int, _ blockCount: Int) -> Int {
        min(SegmentFormat.indexPageBlocks, blockCount - page * SegmentFormat.indexPageBlocks)
    }

    /// A page's bytes: `n x u32` entry offsets (from the page's start), `n x u64` first-key prefixes
    /// (`Bytes.prefix64`), then `n` entries `u64 block offset · varint firstKeyCount · first key`.
    /// Checked (checksum, then every entry's bounds, order and prefix) on first use.
    @inline(__always)
    private func checkedPage(_ page: Int, _ area: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer {
        let bytes = UnsafeRawBufferPointer(rebasing: area[starts[page]..<starts[page + 1]])
        if !pagesChecked.contains(page) { try checkPage(page, bytes, area) }
        return bytes
    }

    @inline(never)
    private func checkPage(_ page: Int, _ bytes: UnsafeRawBufferPointer, _ area: UnsafeRawBufferPointer) throws {
        let at = starts[page]
        let computed = Checksum.xxh3(bytes)
        guard computed == pageSums[page] else {
            throw StorageError.corrupted(
                "index page \(page) checksum mismatch (stored 0x\(String(pageSums[page], radix: 16)), computed 0x\(String(computed, radix: 16)))",
                file: nil, offset: segmentOffset(at))
        }
        let n = Self.blocks(inPage: page, blockCount)
        var previousEnd = page == 0 ? SegmentFormat.headerBytes : nil as Int?
        var previousEntryEnd = 12 * n
        for j in 0..<n {
            let entryAt = Int(Bytes.loadUInt32LE(bytes, at: 4 * j) ?? UInt32.max)
            guard entryAt == previousEntryEnd, entryAt < bytes.count else {
                throw StorageError.corrupted("index page \(page) entry \(j) is not where the previous one ends", file: nil, offset: segmentOffset(at + 4 * j))
            }
            var r = ByteReader(bytes, position: entryAt)
            let blockOffset = Int(clamping: try r.readUInt64LE("block offset"))
            let keyCount = try r.readLength("first key length", limit: Limits.maxKeyBytes)
            let key = try r.readBytes(count: keyCount, "first key")
            let i = page * SegmentFormat.indexPageBlocks + j
            let inOrder = previousEnd.map { i == 0 ? blockOffset == $0 : blockOffset >= $0 } ?? true
            guard inOrder, blockOffset >= SegmentFormat.headerBytes, blockOffset <= blocksEnd - BlockHeader.byteCount else {
                throw StorageError.corrupted("block \(i) offset \(blockOffset) is out of order or past the index", file: nil, offset: segmentOffset(at + entryAt))
            }
            guard Self.pagePrefix(j, n, of: bytes) == Bytes.prefix64(key) else {
                throw StorageError.corrupted("index page \(page) entry \(j) has a prefix that is not its key's", file: nil, offset: segmentOffset(at + 4 * n + 8 * j))
            }
            if j == 0 {
                guard Bytes.compare(listedKey(page, area), key) == 0 else {
                    throw StorageError.corrupted(
                        "index page \(page) begins with another key than the directory lists", file: nil, offset: segmentOffset(at + entryAt))
                }
            }
            previousEnd = blockOffset + BlockHeader.byteCount
            previousEntryEnd = r.position
        }
        guard previousEntryEnd == bytes.count else {
            throw StorageError.corrupted(
                "index page \(page) has \(bytes.count - previousEntryEnd) bytes after its last entry", file: nil, offset: segmentOffset(at + previousEntryEnd))
        }
        pagesChecked.insert(page)
    }

    /// Entry `j`'s first-key prefix in a page of `n` entries (0 when out of bounds: only a page not yet checked).
    @inline(__always)
    private static func pagePrefix(_ j: Int, _ n: Int, of page: UnsafeRawBufferPointer) -> UInt64 {
        Bytes.loadUInt64LE(page, at: 4 * n + 8 * j) ?? 0
    }

    /// Entry `j` of a checked page.
    @inline(__always)
    private static func pageEntry(_ j: Int, of page: UnsafeRawBufferPointer) throws -> (blockOffset: Int, key: UnsafeRawBufferPointer) {
        var r = ByteReader(page, position: Int(Bytes.loadUInt32LE(page, at: 4 * j) ?? UInt32.max))
        let blockOffset = Int(clamping: try r.readUInt64LE("block offset"))
        let keyCount = try r.readLength("first key length", limit: Limits.maxKeyBytes)
        return (blockOffset, try r.readBytes(count: keyCount, "first key"))
    }

    @inline(never)
    private func checkFilterChunk(_ chunk: Int, _ words: UnsafeRawBufferPointer, _ checked: AtomicBits) throws {
        let first = chunk * SegmentFormat.filterChunkWords
        let end = min(filterWordCount, first + SegmentFormat.filterChunkWords)
        let computed = Checksum.xxh3(UnsafeRawBufferPointer(rebasing: words[(first * 8)..<(end * 8)]))
        guard computed == chunkSums[chunk] else {
            throw StorageError.corrupted(
                "key filter chunk \(chunk) checksum mismatch (stored 0x\(String(chunkSums[chunk], radix: 16)), computed 0x\(String(computed, radix: 16)))",
                file: nil, offset: segmentOffset(filterOffset + first * 8))
        }
        checked.insert(chunk)
    }
}
