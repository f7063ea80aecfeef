import Engine
import Foundation

/// The schema as persisted in the file's metadata partition: every type's partition and properties with
/// their stable field ids. Written through ordinary transactions, so it commits atomically with the data.
struct StoredSchema: Codable, Equatable, Sendable {
    struct StoredProperty: Codable, Equatable, Sendable {
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

    /// The pending migrations of a type, oldest first.
    func pending(for typeName: String) -> [PendingMigration] {
        (pending ?? []).filter { $0.typeName == typeName }.sorted { $0.fromVersion < $1.fromVersion }
    }

    /// The metadata partition and its keys.
    static let metadataPartition: UInt32 = 0
    static let schemaKey = Array("schema".utf8)
    static func nextKeyKey(_ partition: UInt32) -> [UInt8] { Array("nextkey/\(partition)".utf8) }

    func type(named name: String) -> StoredType? { types.first { $0.name == name } }

    static func decode(_ bytes: [UInt8], file: String) throws -> StoredSchema {
        do {
            return try JSONDecoder().decode(StoredSchema.self, from: Data(bytes))
        } catch {
            throw Realm.Error(.invalidDatabase, "the schema stored in \(file) cannot be read (\(error)); the file is damaged")
        }
    }

    func encoded() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        // Encoding plain structs of strings and numbers cannot fail.
        return (try? Array(encoder.encode(self))) ?? []
    }
}

/// How one model class maps onto one file: its partition and the field id of each property.
@usableFromInline
final class TypeBinding: @unchecked Sendable {
    @usableFromInline let info: TypeInfo
    let partition: UInt32
    let primaryKeyPartition: UInt32?
    /// The secondary index of each indexed property that has one, by property index.
    let indexPartitions: [Int: UInt32]
    /// Field id per property index.
    let fieldIds: [UInt32]
    /// Whether the primary key is an Int, used as the object key itself.
    let intPrimaryKey: Bool

    /// Where each field sits in records written by this binding. Records hold their fields in ascending
    /// field-id order (`ObjectRecord.ascendingOrder`), so every writer of one type at one schema version gives
    /// the same layout, whatever order the model declares its properties in; `slots` maps a property index to
    /// its position in the record.
    struct RecordLayout {
        var prefix: [UInt8]
        var headerLength: Int
        var tagPositions: [Int]
        var offsetTable: Int
    }
    let layout: RecordLayout?
    /// Property index -> position of its field in a record (ascending field id).
    let slots: [Int]
    /// Record position -> property index: the order `encode` writes values in.
    let recordOrder: [Int]
    // The layout again, flattened for the read path (no optional struct of arrays to copy per read):
    // the prefix as one little-endian word when it fits in 8 bytes and every field id is one byte long
    // (`fastPrefixCount` 0 otherwise).
    private let fastPrefix: UInt64
    private let fastPrefixMask: UInt64
    private let fastPrefixCount: Int
    private let fastHeaderLength: Int
    private let fastOffsetTable: Int
    /// Per property index: where its tag byte sits, and its field id (one byte), checked against the byte
    /// before the tag: a record of the same version written in another field order (by a release that
    /// followed the declaration order) is read by id, never by position.
    private let fastTagPositions: [Int]
    private let fastFieldIds: [UInt8]
    /// Per property: whether it is optional (a nil stored in a required property reads as its default).
    private let isOptional: [Bool]
    /// Per property index, for direct reads: where the payload's offset sits in the offset table, where its
    /// tag sits, and its one-byte field id (checked as above). Empty without a fast layout.
    private struct DirectField {
        let offsetPosition: Int32
        let tagPosition: Int32
        let fieldId: UInt8
    }
    private let directFields: ContiguousArray<DirectField>
    /// The model class, for making objects.
    let objectClass: Object.Type
    let schemaVersion: UInt64
    /// How records from before a pending online migration are read (nil when the type has none).
    let migration: TypeMigration?

    /// `objectClass`: the class of the objects it makes, when not the model's (`DynamicObject` for the dynamic API).
    init(info: TypeInfo, stored: StoredSchema.StoredType, schemaVersion: UInt64, migration: TypeMigration? = nil, objectClass: Object.Type? = nil) {
        self.info = info
        self.migration = migration
        self.schemaVersion = schemaVersion
        self.partition = stored.partition
        self.primaryKeyPartition = stored.primaryKeyPartition
        // Bound by name (the stored name, `propertiesMapping`), never by position.
        let fieldIds = info.schema.properties.map { p in stored.properties.first { $0.name == p.columnName }?.fieldId ?? UInt32.max }
        self.fieldIds = fieldIds
        let order = ObjectRecord.ascendingOrder(of: fieldIds)
        recordOrder = order
        var slots = [Int](repeating: 0, count: fieldIds.count)
        for (position, index) in order.enumerated() { slots[index] = position }
        self.slots = slots
        var indexPartitions: [Int: UInt32] = [:]
        for index in stored.indexes ?? [] {
            if let i = fieldIds.firstIndex(of: index.fieldId), SecondaryIndex.matches(index, info: info, property: i) {
                indexPartitions[i] = index.partition
            }
        }
        self.indexPartitions = indexPartitions
        if let pk = info.primaryKeyIndex {
            intPrimaryKey = info.schema.properties[pk].type == .int
        } else {
            intPrimaryKey = false
        }
        var layout: RecordLayout? = nil
        if !fieldIds.contains(UInt32.max) {
            var prefix: [UInt8] = [ObjectRecord.format]
            prefix.appendVarint(schemaVersion)
            prefix.appendVarint(UInt64(fieldIds.count))
            var position = prefix.count
            var tags: [Int] = []
            for index in order {
                position += ObjectRecord.varintSize(UInt64(fieldIds[index]))
                tags.append(position)
                position += 1
            }
            layout = RecordLayout(prefix: prefix, headerLength: position + 4 * fieldIds.count, tagPositions: tags, offsetTable: position)
        }
        self.layout = layout
        self.objectClass = objectClass ?? info.objectClass
        isOptional = info.schema.properties.map(\.isNullable)
        if let layout, layout.prefix.count <= 8, fieldIds.allSatisfy({ $0 < 0x80 }) {
            var word: UInt64 = 0
            for (i, b) in layout.prefix.enumerated() { word |= UInt64(b) << (8 * UInt64(i)) }
            fastPrefix = word
            fastPrefixMask = layout.prefix.count == 8 ? .max : (1 << (8 * UInt64(layout.prefix.count))) - 1
            fastPrefixCount = layout.prefix.count
            fastHeaderLength = layout.headerLength
            fastOffsetTable = layout.offsetTable
            fastTagPositions = slots.map { layout.tagPositions[$0] }
            fastFieldIds = fieldIds.map { UInt8($0) }
            directFields = ContiguousArray(fieldIds.indices.map { i in
                DirectField(
                    offsetPosition: Int32(layout.offsetTable + 4 * slots[i]), tagPosition: Int32(layout.tagPositions[slots[i]]),
                    fieldId: UInt8(fieldIds[i]))
            })
        } else {
            fastPrefix = 0
            fastPrefixMask = 0
            fastPrefixCount = 0
            fastHeaderLength = 0
            fastOffsetTable = 0
            fastTagPositions = []
            fastFieldIds = []
            directFields = []
        }
    }

    /// Whether `record` was written with this binding's field list (so its field table need not be parsed).
    @inline(__always)
    func hasCurrentLayout(_ record: UnsafeRawBufferPointer) -> Bool {
        guard fastPrefixCount > 0, record.count >= fastHeaderLength, record.count >= 8 else { return false }
        return record.loadUnaligned(as: UInt64.self).littleEndian & fastPrefixMask == fastPrefix
    }

    @inline(__always)
    static func startsWith(_ record: UnsafeRawBufferPointer, _ prefix: [UInt8]) -> Bool {
        guard record.count >= prefix.count else { return false }
        for i in prefix.indices where record[i] != prefix[i] { return false }
        return true
    }

    /// A record's values by property index when it must pass through an online migration's transforms (its
    /// version is older than the schema's and a pending generation covers it); nil when it reads as it is.
    @inline(__always)
    func migratedValues(_ record: UnsafeRawBufferPointer) -> [StoredValue]? {
        guard let migration else { return nil }
        if hasCurrentLayout(record) { return nil }
        if let layout, Self.startsWith(record, layout.prefix) { return nil }
        return slowMigratedValues(record, migration)
    }

    private func slowMigratedValues(_ record: UnsafeRawBufferPointer, _ migration: TypeMigration) -> [StoredValue]? {
        let decoded: (schemaVersion: UInt64, fields: FieldValues)
        do {
            decoded = try ObjectRecord.decodeAll(record)
        } catch {
            fatalError("a record of \(info.schema.className) is damaged (\(error)); run `strata verify` on the file")
        }
        guard let fields = migration.migrate(fields: decoded.fields, version: decoded.schemaVersion) else { return nil }
        return info.schema.properties.indices.map { i in
            let v = fields[fieldIds[i]] ?? info.defaults[i]
            return v.isNull && !info.schema.properties[i].isNullable ? info.defaults[i] : v
        }
    }

    /// A record as the current schema reads it: re-encoded at the current version when it had to pass
    /// through transforms, so that later reads take the fast path.
    func upgraded(_ record: [UInt8]) -> [UInt8] {
        guard migration != nil, let values = record.withUnsafeBytes({ migratedValues($0) }) else { return record }
        return encode(values)
    }

    /// A record of this binding's values (by property index) at its schema version.
    func encode(_ values: [StoredValue]) -> [UInt8] {
        var out: [UInt8] = []
        encode(values, schemaVersion: schemaVersion, into: &out)
        return out
    }

    /// Encodes a record of this binding's values (by property index) into `out`, in the layout's field order.
    func encode(_ values: [StoredValue], schemaVersion: UInt64, into out: inout [UInt8]) {
        ObjectRecord.encode(schemaVersion: schemaVersion, fieldIds: fieldIds, values: values, order: recordOrder, into: &out)
    }

    /// Where property `index`'s payload starts in `record`, and its tag, when the record has this binding's
    /// layout; nil otherwise (the general path reads it). A direct reader then decodes the payload in place.
    @usableFromInline
    func directPayload(_ index: Int, in record: UnsafeRawBufferPointer) -> (tag: UInt8, start: Int)? {
        guard hasCurrentLayout(record), index < directFields.count else { return nil }
        let f = directFields[index]
        let tagPosition = Int(f.tagPosition)
        guard record[tagPosition - 1] == f.fieldId, let offset = Bytes.loadUInt32LE(record, at: Int(f.offsetPosition)) else { return nil }
        return (record[tagPosition], fastHeaderLength + Int(offset))
    }

    /// The value of property `index` in a record.
    @inline(__always)
    func value(_ index: Int, in record: UnsafeRawBufferPointer) -> StoredValue {
        // The usual case: a record written with this binding's layout; one offset and one payload read. The
        // prefix fixes the version and field count, hence the field set; the id before the tag fixes the order.
        if hasCurrentLayout(record), record[fastTagPositions[index] - 1] == fastFieldIds[index],
            let offset = Bytes.loadUInt32LE(record, at: fastOffsetTable + 4 * slots[index])
        {
            var d = ByteReader(record, position: fastHeaderLength)
            if (try? d.skip(Int(offset))) != nil, let v = try? ObjectRecord.decodePayload(tag: record[fastTagPositions[index]], &d) {
                if v.isNull && !isOptional[index] { return info.defaults[index] }
                return v
            }
        }
        return slowValue(index, in: record)
    }

    @inline(never)
    private func slowValue(_ index: Int, in record: UnsafeRawBufferPointer) -> StoredValue {
        if let migration, let values = slowMigratedValues(record, migration) { return values[index] }
        do {
            let v = try ObjectRecord.value(of: fieldIds[index], in: record) ?? info.defaults[index]
            // A property made required keeps every value but nil, which becomes the declared default.
            if v.isNull && !info.schema.properties[index].isNullable { return info.defaults[index] }
            return v
        } catch {
            fatalError(
                "a record of \(info.schema.className) is damaged (\(error)); run `strata verify` on the file")
        }
    }
}
