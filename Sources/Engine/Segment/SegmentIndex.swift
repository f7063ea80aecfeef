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
