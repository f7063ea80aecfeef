/// The byte layout of a sealed segment (see Engine.docc/FileFormat.md).
///
/// ```
/// header (32)  magic "STRATASG" u64 · formatVersion u32 · flags u32 · partition u32 · reserved u32 · identity u64
/// block*       BlockHeader (24) · stored bytes (raw, or LZ4 when that saved space)
/// index        format 3: pages of up to 64 blocks, each `n x u32` entry offsets (from the page's start) ·
///              `n x u64` first-key prefixes (a key's first 8 bytes, zero-padded, as a big-endian number) · `n`
///              entries (u64 block offset · varint firstKeyCount · first key); then the key filter, wordCount x
///              u64 (flag bit 0); then the directory: per page u32 offset in the area · u64 checksum (XXH3-64
///              of the page) · varint firstKeyCount · first key, and per 512 filter words a u64 checksum; then
///              the trailer: u32 pageCount · u32 wordCount · u32 probeCount · u32 directoryBytes (with trailer)
///              formats 1-2: per block u64 block offset · varint firstKeyCount · first key; then, with flag
///              bit 0 (format 2), the key filter: wordCount x u64 · u32 wordCount · u32 probeCount
/// footer (88)  magic "STRATASF" u64 · formatVersion u32 · partition u32 · indexOffset u64 · indexBytes u64
///              · blockCount u64 · entryCount u64 · minSequence u64 · maxSequence u64 · userMetadata u64
///              · indexChecksum u64 · footerChecksum u64 (XXH3-64 of the 80 bytes before it)
/// ```
/// The index checksum covers the whole index area before format 3, and the directory and trailer from format 3
/// on: a reader then checks a page or a filter chunk the first time it uses it, so that opening a segment and
/// reading one key does not hash an index that grows with the segment (1.5 MB for a million keys).
/// In an encrypted segment (header flag bit 1) each block's stored bytes and the index area are sealed
/// (`Cipher`: nonce · AES-GCM ciphertext · tag, bound to the file number and offset), and a block header's flag
/// bit 1 says so; checksums cover the sealed bytes. Header and footer stay plain (counts and offsets only).
/// A block's raw bytes are its entries, `varint keyCount · varint (valueCount + 1, or 0 for a deletion) · key ·
/// value`, sorted by key, then `entryCount x u32` entry offsets for binary search.
package enum SegmentFormat {
    static let headerMagic: UInt64 = 0x4753_4154_4152_5453  // "STRATASG"
    static let footerMagic: UInt64 = 0x4653_4154_4152_5453  // "STRATASF"
    /// 2 added the key filter (header flag bit 0); format 1 segments still read, without one. 3 split the index
    /// into pages and the filter into chunks with checksums of their own (a paged index, `SegmentIndex`).
    static let formatVersion: UInt32 = 3
    /// Blocks per index page, and filter words per checksummed chunk (4 KiB), in format 3.
    static let indexPageBlocks = 64
    static let filterChunkWords = 512
    /// The trailer at the end of a format-3 index area: page count, filter words, probes, directory length.
    static let indexTrailerBytes = 16
    static let flagKeyFilter: UInt32 = 1
    static let flagEncrypted: UInt32 = 2
    package static let headerBytes = 32
    package static let footerBytes = 88

    /// What an encrypted segment's index area authenticates besides its place: the footer's counts and the
    /// header's salt (the header's reserved word, random in an encrypted segment).
    static func authenticatedFooter(
        partition: UInt32, blockCount: Int, entryCount: Int, minSequence: UInt64, maxSequence: UInt64, userMetadata: UInt64, salt: UInt32
    ) -> [UInt8] {
        var out: [UInt8] = []
        out.appendUInt32LE(partition)
        out.appendUInt64LE(UInt64(blockCount))
        out.appendUInt64LE(UInt64(entryCount))
        out.appendUInt64LE(minSequence)
        out.appendUInt64LE(maxSequence)
        out.appendUInt64LE(userMetadata)
        out.appendUInt32LE(salt)
        return out
    }
}

/// The fixed header in front of every block.
package struct BlockHeader {
    package static let byteCount = 24
    static let flagLZ4: UInt32 = 1
    static let flagEncrypted: UInt32 = 2

    var storedCount: UInt32
    var rawCount: UInt32
    var entryCount: UInt32
    var flags: UInt32
    var checksum: UInt64

    /// What an encrypted block authenticates besides its place: its header's fields (the stored length is the
    /// sealed bytes' own) and the segment's salt, so that an edited count or flag fails like edited bytes.
    static func authenticated(rawCount: UInt32, entryCount: UInt32, flags: UInt32, salt: UInt32) -> [UInt8] {
        var out: [UInt8] = []
        out.appendUInt32LE(rawCount)
        out.appendUInt32LE(entryCount)
        out.appendUInt32LE(flags)
        out.appendUInt32LE(salt)
        return out
    }

    /// The checksum covers the stored bytes and, through the seed, the four fields before it.
    package static func checksum(stored: UnsafeRawBufferPointer, storedCount: UInt32, rawCount: UInt32, entryCount: UInt32, flags: UInt32) -> UInt64 {
        let seed = (UInt64(storedCount) | UInt64(rawCount) << 32) ^ ((UInt64(entryCount) | UInt64(flags) << 32) &* 0xC2B2_AE3D_27D4_EB4F)
        return Checksum.xxh3(stored, seed: seed)
    }
}
