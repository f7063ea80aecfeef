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
    }

    struct StoredType: Codable, Equatable, Sendable {
        var name: String
        var partition: UInt32
        /// The partition mapping primary-key values to object keys (absent for Int primary keys, which are
        /// the object keys themselves, and for types without a primary key).
        var primaryKeyPartition: UInt32?
        var nextFieldId: UInt32
        var properties: [StoredProperty]
    }

    var formatVersion = 1
    var schemaVersion: UInt64
    var nextPartition: UInt32
    var types: [StoredType]

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
final class TypeBinding: @unchecked Sendable {
    let info: TypeInfo
    let partition: UInt32
    let primaryKeyPartition: UInt32?
    /// Field id per property index.
    let fieldIds: [UInt32]
    /// Whether the primary key is an Int, used as the object key itself.
    let intPrimaryKey: Bool

    /// Where each field sits in records written by this binding (all share one field list), so reading a
    /// property skips parsing the header.
    struct RecordLayout {
        var prefix: [UInt8]
        var headerLength: Int
        var tagPositions: [Int]
        var offsetTable: Int
    }
    let layout: RecordLayout?

    init(info: TypeInfo, stored: StoredSchema.StoredType, schemaVersion: UInt64) {
        self.info = info
        self.partition = stored.partition
        self.primaryKeyPartition = stored.primaryKeyPartition
        self.fieldIds = info.schema.properties.map { p in stored.properties.first { $0.name == p.columnName }?.fieldId ?? UInt32.max }
        if let pk = info.primaryKeyIndex {
            intPrimaryKey = info.schema.properties[pk].type == .int
        } else {
            intPrimaryKey = false
        }
        if fieldIds.contains(UInt32.max) {
            layout = nil
        } else {
            var prefix: [UInt8] = [ObjectRecord.format]
            prefix.appendVarint(schemaVersion)
            prefix.appendVarint(UInt64(fieldIds.count))
            var position = prefix.count
            var tags: [Int] = []
            for id in fieldIds {
                var v: [UInt8] = []
                v.appendVarint(UInt64(id))
                position += v.count
                tags.append(position)
                position += 1
            }
            layout = RecordLayout(prefix: prefix, headerLength: position + 4 * fieldIds.count, tagPositions: tags, offsetTable: position)
        }
    }

    @inline(__always)
    static func startsWith(_ record: UnsafeRawBufferPointer, _ prefix: [UInt8]) -> Bool {
        guard record.count >= prefix.count else { return false }
        for i in prefix.indices where record[i] != prefix[i] { return false }
        return true
    }

    /// The value of property `index` in a record.
    @inline(__always)
    func value(_ index: Int, in record: UnsafeRawBufferPointer) -> StoredValue {
        if let layout, record.count >= layout.headerLength, Self.startsWith(record, layout.prefix),
            let offset = Bytes.loadUInt32LE(record, at: layout.offsetTable + 4 * index)
        {
            var d = ByteReader(record, position: layout.headerLength)
            if (try? d.skip(Int(offset))) != nil, let v = try? ObjectRecord.decodePayload(tag: record[layout.tagPositions[index]], &d) {
                if v.isNull && !info.schema.properties[index].isOptional { return info.defaults[index] }
                return v
            }
        }
        do {
            let v = try ObjectRecord.value(of: fieldIds[index], in: record) ?? info.defaults[index]
            // A property made required keeps every value but nil, which becomes the declared default.
            if v.isNull && !info.schema.properties[index].isOptional { return info.defaults[index] }
            return v
        } catch {
            preconditionFailure(
                "a record of \(info.schema.className) is damaged (\(error)); run `strata verify` on the file")
        }
    }
}
