/// Writes one sealed segment: sorted entries in, a finished, synced file out.
///
/// Used by one thread; its methods do not re-enter, so dynamic exclusivity checks are off for its state.
final class SegmentWriter {
    private let file: any WritableFile
    private let partition: UInt32
    @exclusivity(unchecked) private var output = GrowableBuffer(capacity: 1 << 20)
    @exclusivity(unchecked) private var written = 0
    private let block = GrowableBuffer(capacity: Tuning.blockBytes + 1024)
    private let compressed = GrowableBuffer(capacity: Tuning.blockBytes + 1024)
    private let sealedBlock = GrowableBuffer(capacity: Tuning.blockBytes + 1024)
    @exclusivity(unchecked) private var entryOffsets: [UInt32] = []
    @exclusivity(unchecked) private var blockFirstKey: [UInt8] = []
    @exclusivity(unchecked) private var index = GrowableBuffer(capacity: 4096)
    @exclusivity(unchecked) private var blockCount = 0
    @exclusivity(unchecked) private(set) var entryCount = 0
    private let compress: Bool
    /// The format the header declares: `SegmentFormat.formatVersion`, or, for a merge resumed from a partial
    /// file an earlier build began, that file's (2: the flat index), so that footer and index agree with it.
    private let format: UInt32
    private let fileNumber: UInt64
    private let databaseID: UInt64
    private let cipher: Cipher?
    /// A random word of an encrypted segment's header, authenticated with each of its units: a segment written
    /// again under a file number a crash left unrecorded does not accept the other's blocks.
    private let salt: UInt32

    @exclusivity(unchecked) private var filter: KeyFilter
    /// The last key of the last finished block (what a suspended merge resumes after; `suspend()` finishes the
    /// block being built first). Kept per block, not per entry: copying every key would cost a flush.
    @exclusivity(unchecked) private var lastKey: [UInt8] = []

    /// `expectedEntries` sizes the key filter (at most this many entries keep its false-positive rate).
    /// `cipher`: seal every block and the index (an encrypted database's segments).
    init(
        file: any WritableFile, fileNumber: UInt64, partition: UInt32, databaseID: UInt64, expectedEntries: Int, compress: Bool = true,
        cipher: Cipher? = nil
    ) throws {
        self.file = file
        self.fileNumber = fileNumber
        self.partition = partition
        self.databaseID = databaseID
        self.compress = compress
        self.cipher = cipher
        format = SegmentFormat.formatVersion
        salt = cipher == nil ? 0 : UInt32.random(in: 1...UInt32.max)
        filter = KeyFilter(expectedKeys: expectedEntries)
        output.appendUInt64LE(SegmentFormat.headerMagic)
        output.appendUInt32LE(SegmentFormat.formatVersion)
        output.appendUInt32LE(SegmentFormat.flagKeyFilter | (cipher == nil ? 0 : SegmentFormat.flagEncrypted))
        output.appendUInt32LE(partition)
        output.appendUInt32LE(salt)
        // The database's identity, in what was a reserved field (0 in segments written before identities).
        output.appendUInt64LE(databaseID)
    }

    /// Adds one entry; keys must arrive strictly increasing. A nil value is a deletion.
    func add(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer?) throws {
        if entryOffsets.isEmpty {
            blockFirstKey = [UInt8](key)
        }
        filter.insert(hash: KeyFilter.hash(key))
        let offset = block.appendEntry(key: key, value: value)
        entryOffsets.append(UInt32(offset))
        entryCount += 1
        if offset >= Tuning.blockBytes - 64 && block.count >= Tuning.blockBytes { try finishBlock() }
    }

    private func finishBlock() throws {
        guard !entryOffsets.isEmpty else { return }
        // The block's last key: its last entry is `varint keyCount · varint valueCount+1 · key · value`.
        try block.withUnsafeBytes { raw in
            var r = ByteReader(raw, position: Int(entryOffsets[entryOffsets.count - 1]))
            let keyCount = Int(try r.readVarint("key length"))
            _ = try r.readVarint("value length")
            lastKey = [UInt8](try r.readBytes(count: keyCount, "key"))
        }
        for o in entryOffsets { block.appendUInt32LE(o) }
        let blockOffset = written + output.count
        let rawCount = UInt32(block.count)
        let entries = UInt32(entryOffsets.count)
        var flags: UInt32 = 0
        compressed.removeAll()
        if compress, let n = block.withUnsafeBytes({ LZ4.compress($0, into: compressed) }),
            n <= block.count - block.count * Tuning.minCompressionSavingsSixteenths / 16
        {
            flags = BlockHeader.flagLZ4
        }
        var stored = flags == BlockHeader.flagLZ4 ? compressed : block
        if let cipher {
            flags |= BlockHeader.flagEncrypted
            let header = BlockHeader.authenticated(rawCount: rawCount, entryCount: entries, flags: flags, salt: salt)
            let sealed = stored.withUnsafeBytes {
                cipher.seal($0, at: .block(file: fileNumber, offset: blockOffset), database: databaseID, authenticating: header)
            }
            sealedBlock.removeAll()
            sealed.withUnsafeBytes { sealedBlock.append($0) }
            stored = sealedBlock
        }
        stored.withUnsafeBytes { bytes in
            let storedCount = UInt32(bytes.count)
            output.appendUInt32LE(storedCount)
            output.appendUInt32LE(rawCount)
            output.appendUInt32LE(entries)
            output.appendUInt32LE(flags)
            output.appendUInt64LE(
                BlockHeader.checksum(stored: bytes, storedCount: storedCount, rawCount: rawCount, entryCount: entries, flags: flags))
            output.append(bytes)
        }
        index.appendUInt64LE(UInt64(blockOffset))
        index.appendVarint(UInt64(blockFirstKey.count))
        index.append(contentsOf: blockFirstKey)
        blockCount += 1
        block.removeAll()
        entryOffsets.removeAll(keepingCapacity: true)
        if output.count >= 1 << 20 { try drain() }
    }

    /// Ends the blocks written so far, makes them durable and returns what `init(resuming:)` needs to go on
    /// writing this segment after the last key added, in this process or another. The file is left open.
    func suspend() throws -> SuspendedSegment {
        try finishBlock()
        try drain()
        try file.sync(.ordered)
        return SuspendedSegment(
            partition: partition, committedBytes: written, blockCount: blockCount, entryCount: entryCount, salt: salt,
            lastKey: lastKey, index: index.withUnsafeBytes { [UInt8]($0) }, filterWords: filter.words, filterProbes: filter.probeCount)
    }

    /// Goes on writing the segment `state` describes, in `file` (open for appending at `state.committedBytes`),
    /// whose header declares `format`.
    init(
        resuming state: SuspendedSegment, format: UInt32, file: any WritableFile, fileNumber: UInt64, databaseID: UInt64, compress: Bool,
        cipher: Cipher?
    ) {
        self.format = format
        self.file = file
        self.fileNumber = fileNumber
        self.partition = state.partition
        self.databaseID = databaseID
        self.compress = compress
        self.cipher = cipher
        salt = state.salt
        filter = KeyFilter(words: state.filterWords, probeCount: state.filterProbes)
        written = state.committedBytes
        blockCount = state.blockCount
        entryCount = state.entryCount
        lastKey = state.lastKey
        state.index.withUnsafeBytes { index.append($0) }
    }

    private func drain() throws {
        try output.withUnsafeBytes { try file.append($0) }
        written += output.count
        output.removeAll()
    }

    /// Writes the last block, the index and the footer, and syncs the file. Returns the file's size.
    func finish(minSequence: UInt64, maxSequence: UInt64, userMetadata: UInt64) throws -> Int {
        try finishBlock()
        if format >= 3 {
            index = try Self.pagedIndexArea(entries: index, blockCount: blockCount, filter: filter)
        } else {
            for w in filter.words { index.appendUInt64LE(w) }
            index.appendUInt32LE(UInt32(filter.words.count))
            index.appendUInt32LE(filter.probeCount)
        }
        let indexOffset = written + output.count
        if let cipher {
            // The footer's counts are authenticated with the index (the footer itself stays plain).
            let footer = SegmentFormat.authenticatedFooter(
                partition: partition, blockCount: blockCount, entryCount: entryCount, minSequence: minSequence, maxSequence: maxSequence,
                userMetadata: userMetadata, salt: salt)
            let sealed = index.withUnsafeBytes {
                cipher.seal($0, at: .index(file: fileNumber, offset: indexOffset), database: databaseID, authenticating: footer)
            }
            index.removeAll()
            sealed.withUnsafeBytes { index.append($0) }
        }
        // A plain area's checksum covers its directory (which holds the pages' and filter chunks'); a sealed
        // area's covers all of it.
        let indexChecksum = index.withUnsafeBytes { area in
            Checksum.xxh3(cipher == nil && format >= 3 ? UnsafeRawBufferPointer(rebasing: area[(area.count - directoryBytes(area))...]) : area)
        }
        index.withUnsafeBytes { output.append($0) }
        var footer: [UInt8] = []
        footer.appendUInt64LE(SegmentFormat.footerMagic)
        footer.appendUInt32LE(format)
        footer.appendUInt32LE(partition)
        footer.appendUInt64LE(UInt64(indexOffset))
        footer.appendUInt64LE(UInt64(index.count))
        footer.appendUInt64LE(UInt64(blockCount))
        footer.appendUInt64LE(UInt64(entryCount))
        footer.appendUInt64LE(minSequence)
        footer.appendUInt64LE(maxSequence)
        footer.appendUInt64LE(userMetadata)
        footer.appendUInt64LE(indexChecksum)
        footer.appendUInt64LE(Checksum.xxh3(footer))
        output.append(contentsOf: footer)
        try drain()
        // Sync point 6 (Recovery.md, "Sync points"): before a manifest names the segment.
        try file.sync(.ordered)
        file.close()
        return written
    }

    private func directoryBytes(_ area: UnsafeRawBufferPointer) -> Int {
        Int(Bytes.loadUInt32LE(area, at: area.count - 4) ?? 0)
    }

    /// The index area of format 3 (`SegmentFormat`) from the blocks' entries as they were written (`u64 block
    /// offset · varint firstKeyCount · first key` each, the form a suspended merge keeps) and the key filter.
    static func pagedIndexArea(entries: GrowableBuffer, blockCount: Int, filter: KeyFilter) throws -> GrowableBuffer {
        let area = GrowableBuffer(capacity: entries.count + blockCount * 12 + filter.words.count * 8 + 4096)
        var directory: [UInt8] = []
        try entries.withUnsafeBytes { bytes in
            var r = ByteReader(bytes)
            var page: [Int] = []  // where each of the page's entries starts in `bytes`
            func flush() {
                guard let first = page.first else { return }
                let pageStart = area.count
                let end = r.position
                var table: [UInt8] = []
                table.reserveCapacity(12 * page.count)
                for start in page { table.appendUInt32LE(UInt32(12 * page.count + start - first)) }
                for start in page {
                    // The first key's prefix (`Bytes.prefix64`): what a lookup compares first.
                    var k = ByteReader(bytes, position: start + 8)
                    let keyCount = Int((try? k.readVarint()) ?? 0)  // try?: entries this writer wrote itself
                    table.appendUInt64LE(Bytes.prefix64(UnsafeRawBufferPointer(rebasing: bytes[k.position..<(k.position + keyCount)])))
                }
                area.append(contentsOf: table)
                area.append(UnsafeRawBufferPointer(rebasing: bytes[first..<end]))
                directory.appendUInt32LE(UInt32(pageStart))
                directory.appendUInt64LE(area.withUnsafeBytes { Checksum.xxh3(UnsafeRawBufferPointer(rebasing: $0[pageStart...])) })
                // The page's first key: its first entry's, after the block offset.
                var k = ByteReader(bytes, position: first + 8)
                let keyCount = Int((try? k.readVarint()) ?? 0)  // try?: entries this writer wrote itself
                directory.appendVarint(UInt64(keyCount))
                directory.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[k.position..<(k.position + keyCount)]))
                page.removeAll(keepingCapacity: true)
            }
            for _ in 0..<blockCount {
                if page.count == SegmentFormat.indexPageBlocks { flush() }
                page.append(r.position)
                try r.skip(8)
                try r.skip(Int(try r.readVarint()))
            }
            flush()
        }
        var words: [UInt8] = []
        words.reserveCapacity(filter.words.count * 8)
        for w in filter.words { words.appendUInt64LE(w) }
        area.append(contentsOf: words)
        words.withUnsafeBytes { bytes in
            var chunk = 0
            while chunk < bytes.count {
                let end = min(bytes.count, chunk + SegmentFormat.filterChunkWords * 8)
                directory.appendUInt64LE(Checksum.xxh3(UnsafeRawBufferPointer(rebasing: bytes[chunk..<end])))
                chunk = end
            }
        }
        directory.appendUInt32LE(UInt32((blockCount + SegmentFormat.indexPageBlocks - 1) / SegmentFormat.indexPageBlocks))
        directory.appendUInt32LE(UInt32(filter.words.count))
        directory.appendUInt32LE(filter.probeCount)
        directory.appendUInt32LE(UInt32(directory.count + 4))
        area.append(contentsOf: directory)
        return area
    }
}
