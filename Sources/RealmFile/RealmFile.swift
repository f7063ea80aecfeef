import Engine

/// A RealmSwift `.realm` file opened for reading: its format, schema version, tables and objects.
///
/// Reads the cluster-table formats realm-core has written since 2020: 10 and 11 (Realm Cocoa 5), 20 to 24
/// (RealmSwift 10.0 to 10.54), plain or encrypted with a 64-byte key. It knows nothing of Strata: it hands out the
/// file's schema and values as they are stored, and never writes to the file.
///
/// A damaged or hostile file gives a ``RealmFileError`` naming the file and offset, never a trap, a hang or a
/// wrong value: every ref, size and width is checked, tree depth is bounded, and the total work is bounded by a
/// multiple of the file's size.
///
/// Not thread-safe: use one instance from one thread at a time.
public final class RealmFile {
    /// Formats read: the cluster layout of realm-core 6 and later (10, 11) and RealmSwift 10's (20-24).
    public static let readableFormats: Set<Int> = [10, 11, 20, 21, 22, 23, 24]

    public let path: String
    /// The file format of the current top ref (0 for a file that holds no commit yet).
    public let formatVersion: Int
    /// Whether the file is in streaming form (`writeCopy`, compaction, bundled files): its top ref is in a footer.
    public let isStreamingForm: Bool
    public let isEncrypted: Bool
    /// The app's schema version, from the object store's `metadata` table; nil when the file has none (a file
    /// realm-core wrote without RealmSwift) or is not versioned.
    public private(set) var schemaVersion: UInt64? = nil
    /// Every table of the group, in group order.
    public let tables: [RealmFileTable]

    let reader: RealmFileReader
    var tableIndexByKey: [UInt32: Int] = [:]
    /// The decoded columns of the cluster leaves read last, for lookups of embedded objects by key.
    var leafCache: [Int: DecodedLeaf] = [:]
    var leafCacheOrder: [Int] = []
    /// log2 of realm-core's cluster node size (8 in production builds, 2 in its node-size-4 test builds), learned
    /// from the first full compact cluster the reader meets.
    var clusterShift: Int64?

    /// The RealmSwift classes: the tables named `class_…`, asymmetric (sync-only) tables left out.
    public var classes: [RealmFileTable] { tables.filter { $0.className != nil && !$0.isAsymmetric } }

    /// Opens `path` for reading, decrypting it with `encryptionKey` (64 bytes) when it is encrypted.
    public convenience init(path: String, encryptionKey: [UInt8]? = nil) throws {
        let region: MappedRegion
        do {
            region = try PosixFileSystem().map(atPath: path)
        } catch {
            throw RealmFileError(.io, "cannot read the file: \(error)", file: path, underlying: error)
        }
        try self.init(image: MappedRealmImage(region: region), path: path, encryptionKey: encryptionKey)
    }

    /// Reads a Realm file held in memory (`name` stands for its path in errors).
    public convenience init(bytes: [UInt8], name: String, encryptionKey: [UInt8]? = nil) throws {
        try self.init(image: MemoryRealmImage(bytes), path: name, encryptionKey: encryptionKey)
    }

    init(image fileImage: any RealmImage, path: String, encryptionKey: [UInt8]?) throws {
        self.path = path
        let plainHeader = fileImage.count >= 24 ? try fileImage.bytes(at: 0, length: 24) : []
        let hasMnemonic = plainHeader.count == 24 && Array(plainHeader[16..<20]) == Array("T-DB".utf8)
        let image: any RealmImage
        if let encryptionKey {
            if hasMnemonic {
                throw RealmFileError(.encryptionKey, "an encryption key was given, but the file is not encrypted", file: path)
            }
            image = try DecryptedRealmImage(file: fileImage, key: encryptionKey, path: path)
            isEncrypted = true
        } else {
            guard hasMnemonic else {
                if fileImage.count >= 8192, fileImage.count % 4096 == 0 {
                    throw RealmFileError(
                        .encryptionKey,
                        "the file has no T-DB header: it is encrypted (open it with its 64-byte key) or it is not a Realm file",
                        file: path, offset: 16)
                }
                throw RealmFileError(.notRealmFile, "no T-DB mnemonic at offset 16: not a Realm file", file: path, offset: 16)
            }
            image = fileImage
            isEncrypted = false
        }
        let header = try image.count >= 24 ? image.bytes(at: 0, length: 24) : []
        guard header.count == 24, Array(header[16..<20]) == Array("T-DB".utf8) else {
            throw RealmFileError(
                .encryptionKey,
                "the decrypted file has no T-DB header: the encryption key is wrong (its authentication half matches, the encryption half does not)",
                file: path, offset: 16)
        }
        func word(_ offset: Int) -> UInt64 {
            (0..<8).reduce(UInt64(0)) { $0 | UInt64(header[offset + $1]) << UInt64(8 * $1) }
        }
        let select = Int(header[23] & 1)
        var topRef = word(select * 8)
        var format = Int(header[20 + select])
        isStreamingForm = select == 0 && word(0) == UInt64.max
        if isStreamingForm {
            guard image.count >= 40 else {
                throw RealmFileError(.corrupted, "a streaming-form file too short for its footer", file: path, offset: image.count)
            }
            let footer = try image.bytes(at: image.count - 16, length: 16)
            let footerTop = (0..<8).reduce(UInt64(0)) { $0 | UInt64(footer[$1]) << UInt64(8 * $1) }
            let cookie = (0..<8).reduce(UInt64(0)) { $0 | UInt64(footer[8 + $1]) << UInt64(8 * $1) }
            guard cookie == 0x3034_1252_37E5_26C8 else {
                throw RealmFileError(
                    .corrupted, "a streaming-form file whose footer cookie is 0x\(String(cookie, radix: 16))",
                    file: path, offset: image.count - 8)
            }
            topRef = footerTop
            format = Int(header[20])
        }
        formatVersion = format
        reader = RealmFileReader(image: image, path: path, formatVersion: format)
        if topRef == 0 {
            tables = []
            return
        }
        guard Self.readableFormats.contains(format) else {
            // realm-core 14 (RealmSwift 10.49 and later) dropped the upgrade from formats before 10; 13 and older
            // upgrade them (its CHANGELOG, "Compatibility"). Every SDK of one realm-core writes the same format.
            // Formats 12 to 19 were development formats of realm-core 10, which no release accepts.
            let advice: String
            if format < 10 {
                advice = "file format \(format) is from realm-core 5 or older (before 2020, whichever Realm SDK wrote it), and only formats 10, 11 and 20-24 convert: open the file once with any Realm SDK built on realm-core 6 to 13 (RealmSwift 5.0 to 10.48, for one), which upgrades it in place to format 11 or 20-23, then convert it"
            } else if format < 20 {
                advice = "file format \(format) was written only by pre-release builds of realm-core 10 (2020), which no Realm release reads: the file cannot be converted; recreate its data from its source"
            } else {
                advice = "file format \(format) is newer than any Realm SDK wrote (24 is the last): it is not a file this reader can convert"
            }
            throw RealmFileError(.unsupportedFormat, advice, file: path)
        }
        guard topRef < UInt64(image.count) else {
            throw RealmFileError(.corrupted, "the top ref \(topRef) is past the end of the file (\(image.count) bytes)", file: path, offset: select * 8)
        }
        tables = try Self.loadTables(reader, topRef: Int(topRef))
        for table in tables { tableIndexByKey[table.key] = table.index }
        schemaVersion = try readSchemaVersion()
    }
}
