import Engine
import Foundation
import RealmFile

extension RealmFileImport {
    /// The copy of one Realm file: its schema as a `StoredSchema`, then every object as a record.
    struct Converter {
        let file: RealmFile
        let source: String
        /// Per Realm table index: the Strata type it became (nil for tables that are not RealmSwift classes).
        private var types: [Int: StoredSchema.StoredType] = [:]
        /// Per table with an `Int` primary key: Realm object key → Strata key (the key value).
        private var intKeys: [Int: [Int64: Int64]] = [:]
        private(set) var copied: [(className: String, count: Int)] = []
        /// The record written with the data.
        private(set) var report: RealmFileConversion?
        var narrowed: [String] = []

        init(file: RealmFile, source: String) {
            self.file = file
            self.source = source
        }

        // MARK: Schema

        /// The Realm file's classes as Strata's stored schema, at the file's schema version.
        mutating func schema() throws -> StoredSchema {
            var partition: UInt32 = 1
            var stored: [StoredSchema.StoredType] = []
            for table in file.classes {
                guard let className = table.className else { continue }
                let primary = table.primaryKeyIndex.map { table.properties[$0] }
                let properties = table.properties.enumerated().map { i, p in
                    StoredSchema.StoredProperty(
                        fieldId: UInt32(i + 1), name: p.name, type: Self.propertyType(p.type),
                        isOptional: p.collection == .none && p.isOptional, isPrimaryKey: p.isPrimaryKey,
                        isIndexed: p.isIndexed || p.isPrimaryKey,
                        objectClassName: p.targetTable.flatMap { file.tables[$0].className },
                        isList: p.collection == .none ? nil : true, isMap: p.collection == .map ? true : nil,
                        isSet: p.collection == .list ? false : p.collection == .set ? true : nil,
                        hasOptionalElements: p.collection == .none ? nil : p.isOptional)
                }
                var type = StoredSchema.StoredType(
                    name: className, partition: partition, primaryKeyPartition: nil,
                    nextFieldId: UInt32(properties.count + 1), properties: properties)
                partition += 1
                if let primary, primary.type != .int {
                    type.primaryKeyPartition = partition
                    partition += 1
                }
                type.isEmbedded = table.isEmbedded ? true : nil
                type.recordFormat = RecordLayout.storedFormat
                types[table.index] = type
                stored.append(type)
            }
            return StoredSchema(schemaVersion: file.schemaVersion ?? 0, nextPartition: partition, types: stored)
        }

        static func propertyType(_ t: RealmFilePropertyType) -> PropertyType {
            switch t {
            case .int: .int
            case .bool: .bool
            case .string: .string
            case .data: .data
            case .date: .date
            case .float: .float
            case .double: .double
            case .decimal128: .decimal128
            case .objectId: .objectId
            case .uuid: .UUID
            case .mixed: .any
            case .object: .object
            }
        }

        // MARK: Objects

        /// Copies every object, then the key counters and the schema, in one transaction that spills to disk as it
        /// grows (so memory stays bounded) and commits atomically.
        mutating func copy(
            into db: Database, schema: StoredSchema, progress: ((Int, Int) -> Void)?,
            makeReport: ([(className: String, count: Int)], [String]) -> RealmFileConversion
        ) throws {
            // Types keyed by an Int primary key store objects under the key value: links to them need the map.
            for table in file.classes {
                guard let pk = table.primaryKeyIndex, table.properties[pk].type == .int else { continue }
                var map: [Int64: Int64] = [:]
                try file.forEachObject(in: table) { object in
                    if case .int(let v) = object.values[pk] { map[object.key] = v } else { map[object.key] = RealmCore.nilIntPrimaryKey }
                }
                intKeys[table.index] = map
            }
            let total = file.classes.reduce(0) { $0 + $1.objectCount }
            var done = 0
            let tx = try db.beginWrite()
            var record: [UInt8] = []
            for table in file.classes {
                guard let type = types[table.index] else { continue }
                let layout = RecordLayout(type.properties)
                let fieldIds = type.properties.map(\.fieldId)
                let order = ObjectRecord.ascendingOrder(of: fieldIds)
                let plan = layout.plan(order: order)
                let pk = table.primaryKeyIndex
                var maxKey: Int64 = -1
                var count = 0
                let className = type.name
                let intKey = pk.flatMap { table.properties[$0].type == .int ? $0 : nil }
                try file.forEachObject(in: table) { object in
                    // An object keyed by its Int primary key: the key is the value (no lookup in the map).
                    let key: Int64
                    if let intKey {
                        if case .int(let v) = object.values[intKey] { key = v } else { key = RealmCore.nilIntPrimaryKey }
                    } else {
                        key = object.key
                    }
                    var values: [StoredValue] = []
                    values.reserveCapacity(object.values.count)
                    for (i, value) in object.values.enumerated() {
                        let property = table.properties[i]
                        values.append(try stored(value, property, zeroForNull: !property.isOptional && property.collection == .none,
                                                 at: "\(className)[\(object.key)].\(property.name)"))
                    }
                    let encodedFormat2 = plan.map {
                        layout.encode(schemaVersion: schema.schemaVersion, StoredValues(values: values), plan: $0, into: &record)
                    } ?? false
                    if !encodedFormat2 {
                        ObjectRecord.encode(schemaVersion: schema.schemaVersion, fieldIds: fieldIds, values: values, order: order, into: &record)
                    }
                    try tx.put(ObjectKey.bytes(key), record, in: type.partition)
                    if let pk, let pkPartition = type.primaryKeyPartition {
                        try tx.put(PrimaryKeyIndex.entry(values[pk]), ObjectKey.bytes(key), in: pkPartition)
                    }
                    maxKey = max(maxKey, key)
                    count += 1
                    done += 1
                    if tx.batchBytes >= spillBytes {
                        try tx.spill()
                        progress?(done, total)
                    } else if done % 4096 == 0 {
                        progress?(done, total)
                    }
                }
                if pk == nil || table.properties[pk!].type != .int {
                    try tx.put(StoredSchema.nextKeyKey(type.partition), ObjectKey.bytes(maxKey + 1), in: StoredSchema.metadataPartition)
                }
                copied.append((type.name, count))
            }
            let report = makeReport(copied, narrowed)
            self.report = report
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            try tx.put(RealmFileImport.reportKey, Array(try encoder.encode(report)), in: StoredSchema.metadataPartition)
            try tx.put(StoredSchema.schemaKey, schema.encoded(), in: StoredSchema.metadataPartition)
            _ = try tx.commit()
            progress?(done, total)
        }

        /// The Strata key of the Realm object `key` of table `table`.
        func strataKey(_ table: Int, _ key: Int64) -> Int64 {
            if let map = intKeys[table] { return map[key] ?? key }
            return key
        }
    }
}
