import Engine
import Foundation

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
    /// Change capture: the stored names of the properties in schema order (LinkingObjects left out), and whether
    /// any is a `List` (whose elements have ids in the sync metadata).
    let syncFieldNames: [String]
    let hasListProperties: Bool
    /// The same names sorted (the order sync's encodings write fields in), each with its property index; and
    /// whether every property holds a plain value (no link, collection, embedded object or `AnyRealmValue`), for
    /// capture's direct path.
    let syncSortedFields: [(name: String, index: Int)]
    let syncPlainValues: Bool
    /// Whether property `index` holds embedded objects (a link, List or Map of an embedded type).
    func holdsEmbedded(_ index: Int) -> Bool { info.embeddedTargets[index] != nil }

    /// Property index -> position of its field in a record (ascending field id).
    let slots: [Int]
    /// Record position -> property index: the order `encode` writes values in.
    let recordOrder: [Int]
    /// The layout of records of this type at this binding's schema version (format 3), and those of the
    /// type's other versions, for records written before a migration that did not rewrite them.
    let recordLayout: RecordLayout
    let layouts: RecordLayouts
    /// How records are written in format 3; nil when the declared properties are not exactly the stored
    /// type's (records are written in format 1 then).
    private let encodePlan: RecordLayout.EncodePlan?
    // The layout again, flattened for the read path: the header (format, schema version, layout check) as one
    // little-endian word when it fits in 8 bytes (`fastPrefixCount` 0 otherwise), the shortest record of the
    // layout, and where the variable area starts.
    // (Read by the getters' inlined fast path.)
    @usableFromInline let fastPrefix: UInt64
    @usableFromInline let fastPrefixMask: UInt64
    @usableFromInline let fastPrefixCount: Int
    @usableFromInline let fastMinimumLength: Int
    private let fastPlaces: RecordLayout.Places
    /// Per property index: where its value sits in a record of this layout, for direct reads.
    @usableFromInline struct DirectField {
        @usableFromInline enum Mode: UInt8 { case absent, fixed, bool, variable }
        @usableFromInline let mode: Mode
        /// A fixed field's tag (format 1's, which direct readers take).
        @usableFromInline let tag: UInt8
        /// A fixed field's place in the record; a variable field's start-table entry (-1: the first variable field).
        @usableFromInline let at: Int32
        /// The null bitmap byte and bit of a fixed field that may be nil (byte -1: it may not).
        @usableFromInline let nullByte: Int32
        let nullMask: UInt8
        /// The field's index in `recordLayout.fields` (-1: absent).
        let layoutIndex: Int32
    }
    @usableFromInline let directFields: ContiguousArray<DirectField>
    /// Per property: whether it is optional (a nil stored in a required property reads as its default).
    let isOptional: [Bool]
    /// The model class, for making objects.
    let objectClass: Object.Type
    let schemaVersion: UInt64
    /// How records from before a pending online migration are read (nil when the type has none).
    let migration: TypeMigration?

    /// `objectClass`: the class of the objects it makes, when not the model's (`DynamicObject` for the dynamic API).
    /// `layouts`: those of the type's records at every version (`RecordLayouts(partition:in:)`); without, only
    /// this version's.
    init(
        info: TypeInfo, stored: StoredSchema.StoredType, schemaVersion: UInt64, migration: TypeMigration? = nil, objectClass: Object.Type? = nil,
        layouts: RecordLayouts? = nil
    ) {
        self.info = info
        self.migration = migration
        self.schemaVersion = schemaVersion
        syncFieldNames = info.schema.properties.filter { $0.type != .linkingObjects }.map(\.columnName)
        hasListProperties = info.schema.properties.contains { $0.isArray && $0.type != .linkingObjects }
        syncSortedFields = info.schema.properties.indices.filter { info.schema.properties[$0].type != .linkingObjects }
            .map { (info.schema.properties[$0].columnName, $0) }.sorted { $0.name < $1.name }
        syncPlainValues = info.schema.properties.allSatisfy { p in
            p.type == .linkingObjects || (!p.isCollection && p.type != .object && p.type != .any)
        }
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
        self.objectClass = objectClass ?? info.objectClass
        isOptional = info.schema.properties.map(\.isNullable)
        let layout = RecordLayout(stored.properties)
        recordLayout = layout
        self.layouts = layouts ?? RecordLayouts([schemaVersion: layout])
        encodePlan = order.map { fieldIds[$0] } == layout.fields.map(\.id) ? layout.plan(order: order) : nil
        var prefix: [UInt8] = [RecordLayout.format]
        prefix.appendVarint(schemaVersion)
        prefix.append(UInt8(truncatingIfNeeded: layout.check))
        prefix.append(UInt8(truncatingIfNeeded: layout.check >> 8))
        let places = layout.places(headerLength: prefix.count)
        fastPlaces = places
        fastMinimumLength = max(8, places.minimumLength)
        if prefix.count <= 8 {
            var word: UInt64 = 0
            for (i, b) in prefix.enumerated() { word |= UInt64(b) << (8 * UInt64(i)) }
            fastPrefix = word
            fastPrefixMask = prefix.count == 8 ? .max : (1 << (8 * UInt64(prefix.count))) - 1
            fastPrefixCount = prefix.count
        } else {
            fastPrefix = 0
            fastPrefixMask = 0
            fastPrefixCount = 0
        }
        directFields = ContiguousArray(fieldIds.map { id in
            guard let li = layout.fields.firstIndex(where: { $0.id == id }) else {
                return DirectField(mode: .absent, tag: 0, at: 0, nullByte: -1, nullMask: 0, layoutIndex: -1)
            }
            let f = layout.fields[li]
            let nullByte = f.nullBit >= 0 ? Int32(prefix.count + f.nullBit / 8) : -1
            let nullMask = f.nullBit >= 0 ? UInt8(1) << UInt8(f.nullBit % 8) : 0
            switch f.kind {
            case .variable:
                return DirectField(
                    mode: .variable, tag: 0, at: f.position == 0 ? -1 : Int32(places.tableStart + 4 * (f.position - 1)),
                    nullByte: -1, nullMask: 0, layoutIndex: Int32(li))
            case .bool:
                return DirectField(mode: .bool, tag: 0, at: Int32(places.fixedStart + f.position), nullByte: nullByte, nullMask: nullMask, layoutIndex: Int32(li))
            default:
                return DirectField(
                    mode: .fixed, tag: f.kind.tag, at: Int32(places.fixedStart + f.position), nullByte: nullByte, nullMask: nullMask,
                    layoutIndex: Int32(li))
            }
        })
    }

    /// Whether `record` is in this binding's layout (format 3, its schema version and field list), long enough
    /// for every fixed field and the variable fields' start table.
    @inlinable @inline(__always)
    func hasCurrentLayout(_ record: UnsafeRawBufferPointer) -> Bool {
        guard fastPrefixCount > 0, record.count >= fastMinimumLength else { return false }
        return record.loadUnaligned(as: UInt64.self).littleEndian & fastPrefixMask == fastPrefix
    }

    /// The record `record` becomes when it must pass through an online migration's transforms (its version is
    /// older than the schema's and a pending generation covers it), encoded at the current version as the
    /// background rewrite will store it; nil when it reads as it is.
    @inline(__always)
    func migratedRecord(_ record: UnsafeRawBufferPointer) -> [UInt8]? {
        guard let migration else { return nil }
        if hasCurrentLayout(record) { return nil }
        return slowMigratedRecord(record, migration)
    }

    private func slowMigratedRecord(_ record: UnsafeRawBufferPointer, _ migration: TypeMigration) -> [UInt8]? {
        do {
            // A record of a version no pending generation covers reads as it is (nil, nothing decoded).
            return try migration.migratedRecord(record, layouts: layouts)
        } catch {
            fatalError("a record of \(info.schema.className) is damaged (\(error))\(RealmCore.damageAdvice)")
        }
    }

    /// A record's values by property index when it must pass through an online migration's transforms; nil
    /// when it reads as it is.
    func migratedValues(_ record: UnsafeRawBufferPointer) -> [StoredValue]? {
        guard let migrated = migratedRecord(record) else { return nil }
        return migrated.withUnsafeBytes { raw in info.schema.properties.indices.map { value($0, in: raw) } }
    }

    /// A record as the current schema reads it: re-encoded at the current version when it had to pass
    /// through transforms, so that later reads take the fast path.
    func upgraded(_ record: [UInt8]) -> [UInt8] {
        guard migration != nil else { return record }
        return record.withUnsafeBytes { migratedRecord($0) } ?? record
    }

    /// A record of this binding's values (by property index) at its schema version.
    func encode(_ values: [StoredValue]) -> [UInt8] {
        var out: [UInt8] = []
        encode(values, schemaVersion: schemaVersion, into: &out)
        return out
    }

    /// Encodes a record of this binding's values (by property index) into `out`: in format 3 at the binding's
    /// own version when the values fit the layout, in format 1 otherwise.
    func encode(_ values: [StoredValue], schemaVersion: UInt64, into out: inout [UInt8]) {
        if let encodePlan, schemaVersion == self.schemaVersion,
            recordLayout.encode(schemaVersion: schemaVersion, StoredValues(values: values), plan: encodePlan, into: &out)
        {
            return
        }
        ObjectRecord.encode(schemaVersion: schemaVersion, fieldIds: fieldIds, values: values, order: recordOrder, into: &out)
    }

    /// Encodes a record of these values (by property index) at this binding's version in format 2 into `out`;
    /// false when the declared properties are not exactly the stored ones or a value does not fit its slot.
    func encodeFormat2(_ values: [StoredValue], into out: inout [UInt8]) -> Bool {
        guard let encodePlan else { return false }
        return recordLayout.encode(schemaVersion: schemaVersion, StoredValues(values: values), plan: encodePlan, into: &out)
    }

    /// `encodeFormat2` of an unmanaged object's setter values (nil: nil).
    func encodeFormat2<Sink: RecordSink>(setter values: [StoredValue?], into out: inout Sink) -> Bool {
        guard let encodePlan else { return false }
        return recordLayout.encode(schemaVersion: schemaVersion, SetterValues(values: values), plan: encodePlan, into: &out)
    }

    /// Where property `index`'s payload starts in `record`, and its tag (format 1's, which fixed fields do not
    /// store: it comes from the layout), when the record has this binding's layout; nil otherwise (the general
    /// path reads it). A direct reader then decodes the payload in place.
    /// A fixed field that cannot be nil is compiled into the getter; the rest is a call.
    @inlinable @inline(__always)
    func directPayload(_ index: Int, in record: UnsafeRawBufferPointer) -> (tag: UInt8, start: Int)? {
        guard hasCurrentLayout(record), index < directFields.count else { return nil }
        let f = directFields[index]
        if f.mode == .fixed && f.nullByte < 0 { return (f.tag, Int(f.at)) }
        return directPayload(of: f, in: record)
    }

    /// `directPayload` of the other fields.
    @usableFromInline
    func directPayload(of f: DirectField, in record: UnsafeRawBufferPointer) -> (tag: UInt8, start: Int)? {
        switch f.mode {
        case .fixed:
            if f.nullByte >= 0, record[Int(f.nullByte)] & f.nullMask != 0 { return (DirectTag.null, 0) }
            return (f.tag, Int(f.at))
        case .bool:
            if f.nullByte >= 0, record[Int(f.nullByte)] & f.nullMask != 0 { return (DirectTag.null, 0) }
            switch record[Int(f.at)] {
            case 0: return (DirectTag.falseValue, Int(f.at))
            case 1: return (DirectTag.trueValue, Int(f.at))
            default: return nil
            }
        case .variable:
            var start = fastPlaces.variableStart
            if f.at >= 0 {
                guard let offset = Bytes.loadUInt32LE(record, at: Int(f.at)) else { return nil }
                start += Int(offset)
            }
            guard start < record.count else { return nil }
            return (record[start], start + 1)
        case .absent:
            return nil
        }
    }

    /// Whether property `index` holds the same bytes in two records (`RecordLayout.sameBytes`); nil when a record
    /// is not in this binding's layout or the property has no field in it (the caller compares decoded values).
    func sameStoredBytes(_ index: Int, _ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool? {
        guard hasCurrentLayout(a), hasCurrentLayout(b), index < directFields.count, directFields[index].layoutIndex >= 0 else { return nil }
        return recordLayout.sameBytes(Int(directFields[index].layoutIndex), a, b, fastPlaces)
    }

    /// Where a record of this binding's layout has its variable fields' start table: the end of its header, null
    /// bitmap and fixed-width slots.
    var variableTableStart: Int { fastPlaces.tableStart }

    /// How to write a value into the fixed-width slot of a property, in a record of this binding's layout:
    /// `width` little-endian bytes of `word` at `offset`, and the null bit at `nullByte` (-1: none) set or cleared.
    struct SlotWrite {
        var offset: Int
        var word: UInt64
        var width: Int
        var nullByte: Int
        var nullMask: UInt8
        var isNull: Bool
    }

    /// The write of `value` into property `index`'s slot; nil when the property has no fixed-width slot or the
    /// value does not fit it.
    func slotWrite(_ index: Int, _ value: StoredValue) -> SlotWrite? {
        guard index < directFields.count else { return nil }
        let f = directFields[index]
        let at = Int(f.at)
        func write(_ word: UInt64, _ width: Int) -> SlotWrite {
            SlotWrite(offset: at, word: word, width: width, nullByte: Int(f.nullByte), nullMask: f.nullMask, isNull: false)
        }
        switch (f.mode, value) {
        case (.fixed, .null), (.bool, .null):
            guard f.nullByte >= 0 else { return nil }
            return SlotWrite(offset: at, word: 0, width: 0, nullByte: Int(f.nullByte), nullMask: f.nullMask, isNull: true)
        case (.bool, .bool(let b)):
            return write(b ? 1 : 0, 1)
        case (.fixed, _):
            switch (f.tag, value) {
            case (DirectTag.int, .int(let v)): return write(UInt64(bitPattern: v), 8)
            case (DirectTag.double, .double(let v)): return write(v.bitPattern, 8)
            case (DirectTag.date, .date(let d)): return write(d.timeIntervalSinceReferenceDate.bitPattern, 8)
            case (DirectTag.float, .float(let v)): return write(UInt64(v.bitPattern), 4)
            case (ObjectRecord.Tag.link.rawValue, .link(let k)): return write(UInt64(bitPattern: k), 8)
            default: return nil
            }
        default:
            return nil
        }
    }

    /// The value of property `index` in a record.
    @inline(__always)
    /// A record that passed its checksum but does not decode traps (a getter cannot throw), naming the type, the
    /// property and `object` (the object key and file, where the caller knows them).
    func value(_ index: Int, in record: UnsafeRawBufferPointer, object: @autoclosure () -> String = "a record") -> StoredValue {
        // The usual case: a record in this binding's layout, one load (and one offset for a variable field).
        if hasCurrentLayout(record), index < directFields.count, directFields[index].layoutIndex >= 0 {
            do {
                let v = try recordLayout.value(Int(directFields[index].layoutIndex), in: record, fastPlaces)
                if v.isNull && !isOptional[index] { return info.defaults[index] }
                return v
            } catch {
                // Damaged: the general path reads it again and reports where.
            }
        }
        return slowValue(index, in: record, object: object)
    }

    /// `object` is asked for only when the read traps (naming the object may cost a lookup of where it is stored).
    @inline(never)
    private func slowValue(_ index: Int, in record: UnsafeRawBufferPointer, object: () -> String) -> StoredValue {
        // A record the transforms rewrite reads from its rewritten bytes (at the current version: never again here).
        if let migration, let migrated = slowMigratedRecord(record, migration) {
            return migrated.withUnsafeBytes { value(index, in: $0, object: object()) }
        }
        do {
            let v = try ObjectRecord.value(of: fieldIds[index], in: record, layouts: layouts) ?? info.defaults[index]
            // A property made required keeps every value but nil, which becomes the declared default.
            if v.isNull && !info.schema.properties[index].isNullable { return info.defaults[index] }
            return v
        } catch {
            fatalError(
                "\(object()) of \(info.schema.className) is damaged: its property '\(info.schema.properties[index].name)' does not decode "
                    + "(\(error))\(RealmCore.damageAdvice)")
        }
    }
}

extension TypeBinding {
    /// Whether deleting an object of this type reads nothing of it: it holds values only, has no primary-key
    /// index entry, and embeds nothing (its pending entry just says deleted).
    var deletesWithoutReading: Bool { info.holdsValuesOnly && primaryKeyPartition == nil && !info.schema.isEmbedded }
}
