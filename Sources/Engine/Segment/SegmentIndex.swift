/// A segment's block index: where each block starts and its first key. Parsed from the index area the first
/// time a reader needs it, after the area's checksum matched (and, in an encrypted segment, after it was opened).
final class SegmentIndex: Sendable {
    let blockOffsets: [Int]
    /// Where each block's first key lies in the index area, and its length.
    let firstKeyOffsets: [Int]
    let firstKeyCounts: [Int]
    let firstKeyPrefixes: [UInt64]
    /// Blocks whose checksum matched, one bit each.
    let verified: Locked<[UInt64]>
    /// Blocks of an encrypted segment that authenticated, one bit each.
    let authenticated: Locked<[UInt64]>
    /// Where the segment's key filter lies in the index area (nil in format-1 segments): read in place.
    let filter: (offset: Int, wordCount: Int, probeCount: UInt32)?
    /// The opened index area of an encrypted segment; nil when the area is read in place from the mapping.
    let plainArea: MappedRegion?

    /// Parses the index area `area` (at `areaOffset` in the segment, whose blocks end at `blocksEnd`; the
    /// footer already checked that `blockCount` fits). `plainArea` owns `area` when it is not the mapping's.
    /// Errors carry offsets in the segment (the area's own offset for an encrypted area), not yet its file name.
    init(area: UnsafeRawBufferPointer, areaOffset: Int, blocksEnd: Int, blockCount: Int, hasFilter: Bool, plainArea: MappedRegion?) throws {
        // Offsets inside an opened (decrypted) area do not exist in the file: errors point at the area.
        let at = { (relative: Int) in plainArea == nil ? areaOffset + relative : areaOffset }
        let fail = { (message: String, relative: Int) in StorageError.corrupted(message, file: nil, offset: at(relative)) }
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
            filter = (start, wordCount, probes)
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
        blockOffsets = offsets
        firstKeyOffsets = keyOffsets
        firstKeyCounts = keyCounts
        firstKeyPrefixes = zip(keyOffsets, keyCounts).map { o, c in
            Bytes.prefix64(UnsafeRawBufferPointer(rebasing: area[o..<(o + c)]))
        }
        verified = Locked(Array(repeating: 0, count: (blockCount + 63) / 64))
        authenticated = Locked(Array(repeating: 0, count: (blockCount + 63) / 64))
        self.plainArea = plainArea
    }
}
