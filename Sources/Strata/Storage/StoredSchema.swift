import Engine
import Foundation

/// The schema as persisted in the file's metadata partition: every type's partition and properties with
/// their stable field ids. Written through ordinary transactions, so it commits atomically with the data.
package struct StoredSchema: Codable, Equatable, Sendable {
    package struct StoredProperty: Codable, Equatable, Sendable {
        var fieldId: UInt32
        var name: String
        var type: PropertyType
        var isOptional: Bool
        var isPrimaryKey: Bool
        var isIndexed: Bool
        var objectClassName: String?
        /// A `List` property (absent, meaning no, in files written before lists existed).
        var isList: Bool? = nil
        /// A `Map` property (stored as a list of keys and values; absent: no).
        var isMap: Bool? = nil
        /// For a `List` or `MutableSet` property, whether it is a set (absent in files written before the two
        /// were told apart, where either kind matches).
        var isSet: Bool? = nil
        /// For a collection, whether its elements (a map's values) may be null: `List<Int?>`, `Map<String, Dog?>`,
        /// any collection of `AnyRealmValue` (``isOptional`` is false for every collection). Absent in files
        /// written before it was recorded: there any element may be null, and the next open records it.
        var hasOptionalElements: Bool? = nil

        /// Whether an element of this collection may be null (any element, where the file does not say).
        var elementsMayBeNull: Bool { hasOptionalElements ?? true }
    }

    struct StoredType: Codable, Equatable, Sendable {
        var name: String
        var partition: UInt32
        /// The partition mapping primary-key values to object keys (absent for Int primary keys, which are
        /// the object keys themselves, and for types without a primary key).
        var primaryKeyPartition: UInt32?
        var nextFieldId: UInt32
        var properties: [StoredProperty]
        /// The built secondary indexes (absent in files written before indexes existed).
        var indexes: [StoredIndex]? = nil
        /// An embedded type (absent: no).
        var isEmbedded: Bool? = nil
        /// 2 once every record of the type was written, or rewritten by the background migrator, by a release
        /// that writes record format 2 (`RecordLayout`); absent in files of earlier releases, whose records the
        /// migrator then upgrades (format 1 stays readable meanwhile).
        var recordFormat: Int? = nil
    }

    /// A secondary index of one property: a partition whose keys are the property's value followed by the
    /// object key (`SecondaryIndex`). It is listed only while it holds exactly one entry per object of the type,
    /// for the value a read gives; anything that writes the type's records without keeping it so (a
    /// migration) removes it from the list, and the next open builds it again.
    struct StoredIndex: Codable, Equatable, Sendable {
        var fieldId: UInt32
        var partition: UInt32
        /// The property as it was when the index was built: a change of type, optionality or declared default
        /// (which records written before the property existed read as) means building it again.
        var type: PropertyType
        var isOptional: Bool
        var defaultValue: String
    }

    /// Objects of a type that an online migration has not rewritten yet: records of `fromVersion` or older
    /// pass through the transforms that the migration block registers when called with `fromVersion`, and
    /// are read under `oldType` (the type as it was at `fromVersion`).
    struct PendingMigration: Codable, Equatable, Sendable {
        var typeName: String
        var fromVersion: UInt64
        var oldType: StoredType
    }

    var formatVersion = 1
    var schemaVersion: UInt64
    var nextPartition: UInt32
    var types: [StoredType]
    /// Online migrations still under way (absent in files that never had one).
    var pending: [PendingMigration]? = nil
    /// The schemas of earlier versions, oldest first, as they were when a higher version replaced them
    /// (absent in files written before the history was kept). For `strata schema`.
    var history: [Version]? = nil

    /// One earlier schema version.
    struct Version: Codable, Equatable, Sendable {
        var schemaVersion: UInt64
        var types: [StoredType]
    }

    /// This schema's history with this schema itself appended, for the version that replaces it.
    var historyIncludingSelf: [Version] { (history ?? []) + [Version(schemaVersion: schemaVersion, types: types)] }

    init(schemaVersion: UInt64, nextPartition: UInt32, types: [StoredType], pending: [PendingMigration]? = nil) {
        self.schemaVersion = schemaVersion
        self.nextPartition = nextPartition
        self.types = types
        self.pending = pending
    }

    /// This schema with the element optionality of each collection that does not record it (a file written
    /// before it was recorded) taken from the declared property of the same name: what the migration block's
    /// old objects show (`List<Int?>` rather than `List<Int>` for a list the code declares optional).
    func fillingElementOptionality(from declared: [TypeInfo]) -> StoredSchema {
        var copy = self
        for (ti, t) in copy.types.enumerated() {
            guard let info = declared.first(where: { $0.schema.className == t.name }) else { continue }
            for (pi, p) in t.properties.enumerated() where (p.isList ?? false) && p.hasOptionalElements == nil {
                if let d = info.schema.properties.first(where: { $0.columnName == p.name && $0.isCollection }) {
                    copy.types[ti].properties[pi].hasOptionalElements = d.hasOptionalElements
                }
            }
        }
        return copy
    }

    /// The pending migrations of a type, oldest first.
    func pending(for typeName: String) -> [PendingMigration] {
        (pending ?? []).filter { $0.typeName == typeName }.sorted { $0.fromVersion < $1.fromVersion }
    }

    /// The metadata partition and its keys.
    static let metadataPartition: UInt32 = 0
    static let schemaKey = Array("schema".utf8)
    static func nextKeyKey(_ partition: UInt32) -> [UInt8] { Array("nextkey/\(partition)".utf8) }

    func type(named name: String) -> StoredType? { types.first { $0.name == name } }

    /// The schemas decoded last, with their bytes (a decode is a function of them alone): an open reads the
    /// stored schema three times (the file's, the latest as it registers its types, the index check), and an
    /// app opens the same file again and again. JSON decoding was a third of an open's time.
    private static let recentlyDecoded = Locked<[(bytes: [UInt8], schema: StoredSchema)]>([])

    package static func decode(_ bytes: [UInt8], file: String) throws -> StoredSchema {
        if let known = recentlyDecoded.withLock({ $0.first { $0.bytes == bytes }?.schema }) { return known }
        do {
            let schema = try JSONDecoder().decode(StoredSchema.self, from: Data(bytes))
            recentlyDecoded.withLock { recent in
                recent.insert((bytes, schema), at: 0)
                if recent.count > 8 { recent.removeLast() }
            }
            return schema
        } catch {
            throw Realm.Error(.invalidDatabase, "the schema stored in \(file) cannot be read (\(error)); the file is damaged")
        }
    }

    func encoded() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        do {
            return Array(try encoder.encode(self))
        } catch {
            // Writing an empty schema would lose the file's types: a stop is the only safe answer.
            fatalError("encoding the stored schema (version \(schemaVersion)) failed: \(error)")
        }
    }
}
