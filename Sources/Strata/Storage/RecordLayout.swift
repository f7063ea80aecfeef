import Engine
import Foundation

/// Record format 3: the fields of one type at one schema version at fixed places, computed once from the
/// stored type (never from the record):
///
/// ```
/// u8 format (3) · varint schemaVersion · u16 layout check
/// null bitmap: one bit per fixed field that may be nil (set: nil), rounded up to bytes
/// fixed area: each fixed-width field in ascending field id (Int, Date, Double and links 8 bytes, Float 4,
///             Bool 1, ObjectId 12, UUID 16)
/// u32 start of each variable field but the first, from the start of the variable area
/// variable area: per variable field (String, Data, Decimal128, AnyRealmValue, List, MutableSet, Map),
///                in ascending field id: u8 tag · payload, as in format 1
/// ```
/// Reading a fixed field is a bounds check and a load; a variable one adds one offset load. The layout check
/// (a hash of the field list) guards against reading a record under another layout: a reader that finds
/// another value refuses the record as damaged. A record whose values do not fit their slots (a value of
/// another kind, which only older writers and damaged input give) is written in format 1, which every reader
/// still reads.
///
/// Format 2, written by earlier releases, is the same but for its dates: a Date slot holds seconds since 1970
/// as a Double, which cannot hold every `Date` (a `Date` is a Double of seconds since 2001, and the sum rounds
/// half of today's dates by one unit in the last place). Format 3 keeps the `Date`'s own Double. Readers take
/// both (`Places.legacyDates`); the background migrator rewrites format-2 records in format 3.
package struct RecordLayout: Sendable, Equatable {
    enum Kind: UInt8, Sendable {
        case int = 1, bool, float, double, date, uuid, objectId, link, variable

        var width: Int {
            switch self {
            case .int, .double, .date, .link: 8
            case .float: 4
            case .bool: 1
            case .objectId: 12
            case .uuid: 16
            case .variable: 0
            }
        }

        /// The format-1 tag a fixed field's value has (Bool's depends on the value).
        var tag: UInt8 {
            switch self {
            case .int: ObjectRecord.Tag.int.rawValue
            case .bool: ObjectRecord.Tag.falseValue.rawValue
            case .float: ObjectRecord.Tag.float.rawValue
            case .double: ObjectRecord.Tag.double.rawValue
            case .date: ObjectRecord.Tag.exactDate.rawValue
            case .uuid: ObjectRecord.Tag.uuid.rawValue
            case .objectId: ObjectRecord.Tag.objectId.rawValue
            case .link: ObjectRecord.Tag.link.rawValue
            case .variable: 0
            }
        }
    }

    struct Field: Sendable, Equatable {
        let id: UInt32
        let kind: Kind
        /// For a fixed field that may be nil, its bit in the null bitmap; -1 otherwise.
        let nullBit: Int
        /// A fixed field's place in the fixed area; a variable field's index among the variable fields.
        let position: Int
    }

    package static let format: UInt8 = 3
    /// The format of earlier releases: this one with dates as seconds since 1970.
    package static let legacyFormat: UInt8 = 2
    /// `StoredType.recordFormat` of a type whose records no longer need the background upgrade.
    static let storedFormat = 3

    /// Whether `format` (a record's first byte) is one of fixed slots, this release's or the earlier one.
    @inline(__always)
    package static func isLayout(_ format: UInt8?) -> Bool { format == Self.format || format == legacyFormat }

    /// The fields, by ascending id.
    let fields: [Field]
    let check: UInt16
    let nullBytes: Int
    let fixedSize: Int
    let variableCount: Int

    package init(_ properties: [StoredSchema.StoredProperty]) {
        let sorted = properties.sorted { $0.fieldId < $1.fieldId }
        var fields: [Field] = []
        var nullable = 0, fixed = 0, variable = 0
        // FNV-1a over (id, kind, nullable) of every field.
        var hash: UInt32 = 2_166_136_261
        func mix(_ byte: UInt8) { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
        for p in sorted {
            let kind = Self.kind(p)
            let mayBeNil = kind != .variable && (p.isOptional || kind == .link)
            if kind == .variable {
                fields.append(Field(id: p.fieldId, kind: kind, nullBit: -1, position: variable))
                variable += 1
            } else {
                fields.append(Field(id: p.fieldId, kind: kind, nullBit: mayBeNil ? nullable : -1, position: fixed))
                if mayBeNil { nullable += 1 }
                fixed += kind.width
            }
            for shift in stride(from: 0, to: 32, by: 8) { mix(UInt8(truncatingIfNeeded: p.fieldId >> UInt32(shift))) }
            mix(kind.rawValue)
            mix(mayBeNil ? 1 : 0)
        }
        self.fields = fields
        check = UInt16(truncatingIfNeeded: hash ^ (hash >> 16))
        nullBytes = (nullable + 7) / 8
        fixedSize = fixed
        variableCount = variable
    }

    /// A stored property's slot: fixed for single values of a fixed width, variable for the rest.
    static func kind(_ p: StoredSchema.StoredProperty) -> Kind {
        if p.isList == true || p.isMap == true { return .variable }
        switch p.type {
        case .int: return .int
        case .bool: return .bool
        case .float: return .float
        case .double: return .double
        case .date: return .date
        case .UUID: return .uuid
        case .objectId: return .objectId
        case .object: return .link
        case .string, .data, .any, .decimal128, .linkingObjects: return .variable
        }
    }

    /// The record's fixed places once its header length is known (it depends on the schema version's varint).
    struct Places {
        let fixedStart: Int
        let tableStart: Int
        let variableStart: Int
        /// The shortest record of this layout: every variable field has at least its tag.
        let minimumLength: Int
        /// A record of format 2, whose Date slots hold seconds since 1970.
        var legacyDates = false
    }

    func places(headerLength: Int, legacyDates: Bool = false) -> Places {
        let fixedStart = headerLength + nullBytes
        let tableStart = fixedStart + fixedSize
        let variableStart = tableStart + 4 * max(0, variableCount - 1)
        return Places(
            fixedStart: fixedStart, tableStart: tableStart, variableStart: variableStart, minimumLength: variableStart + variableCount,
            legacyDates: legacyDates)
    }

    static func headerLength(schemaVersion: UInt64) -> Int { 3 + ObjectRecord.varintSize(schemaVersion) }

    // MARK: Writing

    /// How to write records of this layout from values by property index: per fixed field (in place order)
    /// the value's index, kind and null bit, then the value index of each variable field. Built once per
    /// binding, so that encoding is one pass over the values.
    struct EncodePlan: Sendable {
        struct Fixed: Sendable {
            let value: Int
            let kind: Kind
            /// The null bitmap byte (from the bitmap's start) and bit of a field that may be nil; mask 0: it may not.
            let nullByte: Int
            let nullMask: UInt8
        }
        let fixed: [Fixed]
        let variable: [Int]
    }

    /// The plan for values whose property `order[i]` holds field `fields[i]`; nil when `order` does not cover
    /// the fields.
    func plan(order: [Int]) -> EncodePlan? {
        guard order.count == fields.count else { return nil }
        var fixed: [EncodePlan.Fixed] = [], variable: [Int] = []
        for (i, f) in fields.enumerated() {
            if f.kind == .variable {
                variable.append(order[i])
            } else {
                let mask: UInt8 = f.nullBit >= 0 ? 1 << UInt8(f.nullBit % 8) : 0
                fixed.append(.init(value: order[i], kind: f.kind, nullByte: max(0, f.nullBit) / 8, nullMask: mask))
            }
        }
        return EncodePlan(fixed: fixed, variable: variable)
    }

    /// Encodes the record whose field `fields[i]` has the value `values[order[i]]` into `out` (replacing its
    /// contents). False when the values are not exactly this layout's fields or one does not fit its slot: the
    /// caller writes format 1 then.
    func encode(schemaVersion: UInt64, values: [StoredValue], order: [Int], into out: inout [UInt8]) -> Bool {
        guard let plan = plan(order: order) else { return false }
        return encode(schemaVersion: schemaVersion, StoredValues(values: values), plan: plan, into: &out)
    }

    /// A record of another layout whose bytes fields take unchanged (a migrated object viewing its old record):
    /// per value index, the index in `layout.fields` of the field to copy, or -1 where the value is given.
    /// A field is copied only into a slot of the same kind and the same nil-ness.
    struct RowCopy {
        let record: UnsafeRawBufferPointer
        let layout: RecordLayout
        let places: Places
        let sources: [Int]
    }

    /// Whether field `a` of one layout can take the bytes of field `b` of another as they are.
    static func sameSlot(_ a: Field, _ b: Field) -> Bool { a.id == b.id && a.kind == b.kind && (a.nullBit >= 0) == (b.nullBit >= 0) }

    /// Where variable field `f` (its tag and payload) lies in `record`; nil when the record's start table
    /// points outside it or backwards.
    func variableRange(_ f: Field, in record: UnsafeRawBufferPointer, _ p: Places) -> Range<Int>? {
        func start(_ position: Int) -> Int {
            if position == 0 { return p.variableStart }
            if position >= variableCount { return record.count }
            return p.variableStart + Int(record.loadUnaligned(fromByteOffset: p.tableStart + 4 * (position - 1), as: UInt32.self).littleEndian)
        }
        let a = start(f.position), b = start(f.position + 1)
        guard a < b, b <= record.count else { return nil }
        return a..<b
    }

    /// Whether field `i` holds the same bytes in records `a` and `b` of this layout (places `p`): the same null
    /// bit and, when not nil, the same slot or variable payload. Equal bytes are an equal value; unequal bytes may
    /// still be one (NaNs of other payloads), which a caller decodes to tell. Nil when a record's start table is
    /// damaged.
    func sameBytes(_ i: Int, _ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer, _ p: Places) -> Bool? {
        let f = fields[i]
        let x: Range<Int>, y: Range<Int>
        if f.kind == .variable {
            guard let ra = variableRange(f, in: a, p), let rb = variableRange(f, in: b, p) else { return nil }
            (x, y) = (ra, rb)
        } else {
            if f.nullBit >= 0 {
                let byte = p.fixedStart - nullBytes + f.nullBit / 8, mask: UInt8 = 1 << UInt8(f.nullBit % 8)
                let nullA = a[byte] & mask != 0, nullB = b[byte] & mask != 0
                if nullA || nullB { return nullA == nullB }
            }
            let at = p.fixedStart + f.position
            guard at + f.kind.width <= min(a.count, b.count) else { return nil }
            (x, y) = (at..<(at + f.kind.width), at..<(at + f.kind.width))
        }
        return x.count == y.count && Bytes.compare(UnsafeRawBufferPointer(rebasing: a[x]), UnsafeRawBufferPointer(rebasing: b[y])) == 0
    }

    /// Encodes a record of `values` (by property index; nil writes as nil) as `plan` places them into `out`,
    /// replacing its contents, in one pass; fields `row` names are copied from its record instead. False, with
    /// `out` holding a partial record, when a value does not fit its slot (a value of another kind, or nil where
    /// the field may not be nil) or a copied field's place in its record is damaged.
    func encode<V: RecordValues, Sink: RecordSink>(
        schemaVersion: UInt64, _ values: V, plan: EncodePlan, copying row: RowCopy? = nil, into out: inout Sink
    ) -> Bool {
        out.removeAll()
        out.append(Self.format)
        out.appendVarint(schemaVersion)
        out.append(UInt8(truncatingIfNeeded: check))
        out.append(UInt8(truncatingIfNeeded: check >> 8))
        // Null bitmap, then the fixed values, nil ones as zeros.
        let bitmap = out.count
        for _ in 0..<nullBytes { out.append(0) }
        for f in plan.fixed {
            if let row, case let j = row.sources[f.value], j >= 0 {
                let source = row.layout.fields[j]
                let bitmapStart = row.places.fixedStart - row.layout.nullBytes
                if source.nullBit >= 0, row.record[bitmapStart + source.nullBit / 8] & (1 << UInt8(source.nullBit % 8)) != 0 {
                    out.orByte(at: bitmap + f.nullByte, f.nullMask)
                    for _ in 0..<f.kind.width { out.append(0) }
                } else {
                    let at = row.places.fixedStart + source.position
                    if f.kind == .date && row.places.legacyDates {
                        // A format-2 date (seconds since 1970) becomes the Date's own Double.
                        let w = UInt64(littleEndian: row.record.loadUnaligned(fromByteOffset: at, as: UInt64.self))
                        out.appendUInt64LE(Date(timeIntervalSince1970: Double(bitPattern: w)).timeIntervalSinceReferenceDate.bitPattern)
                    } else {
                        out.appendBytes(UnsafeRawBufferPointer(rebasing: row.record[at..<at + f.kind.width]))
                    }
                }
                continue
            }
            switch values[f.value] {
            case nil, .null?:
                guard f.nullMask != 0 else { return false }
                out.orByte(at: bitmap + f.nullByte, f.nullMask)
                switch f.kind.width {
                case 8: out.appendUInt64LE(0)
                case 4: out.appendUInt32LE(0)
                default: for _ in 0..<f.kind.width { out.append(0) }
                }
            case .int(let v)?:
                guard f.kind == .int else { return false }
                out.appendUInt64LE(UInt64(bitPattern: v))
            case .bool(let b)?:
                guard f.kind == .bool else { return false }
                out.append(b ? 1 : 0)
            case .double(let v)?:
                guard f.kind == .double else { return false }
                out.appendUInt64LE(v.bitPattern)
            case .float(let v)?:
                guard f.kind == .float else { return false }
                out.appendUInt32LE(v.bitPattern)
            case .date(let d)?:
                guard f.kind == .date else { return false }
                out.appendUInt64LE(d.timeIntervalSinceReferenceDate.bitPattern)
            case .link(let k)?:
                guard f.kind == .link else { return false }
                out.appendUInt64LE(UInt64(bitPattern: k))
            case .uuid(let u)?:
                guard f.kind == .uuid else { return false }
                withUnsafeBytes(of: u.uuid) { out.appendBytes($0) }
            case .objectId(let o)?:
                guard f.kind == .objectId, o.bytes.count == 12 else { return false }
                o.bytes.withUnsafeBytes { out.appendBytes($0) }
            default:
                return false
            }
        }
        // The variable fields' starts (but the first's), then their tags and payloads.
        let variable = plan.variable
        /// The bytes of value `i` in `row`'s record when it is copied from there.
        func copied(_ i: Int) -> Range<Int>?? {
            guard let row, case let j = row.sources[i], j >= 0 else { return .none }
            return .some(row.layout.variableRange(row.layout.fields[j], in: row.record, row.places))
        }
        if variable.count > 1 {
            var start = 0
            for i in variable.dropLast() {
                if case .some(let range) = copied(i) {
                    guard let range else { return false }
                    start += range.count
                } else {
                    start += 1 + ObjectRecord.payloadSize(values[i] ?? .null)
                }
                out.appendUInt32LE(UInt32(start))
            }
        }
        for i in variable {
            if let row, case .some(let range) = copied(i) {
                guard let range else { return false }
                out.appendBytes(UnsafeRawBufferPointer(rebasing: row.record[range]))
                continue
            }
            switch values[i] {
            case .string(let s)?:
                // The common variable field, written without the general switch.
                out.append(ObjectRecord.Tag.string.rawValue)
                out.appendVarint(UInt64(s.utf8.count))
                var text = s
                text.withUTF8 { out.appendBytes(UnsafeRawBufferPointer($0)) }
            case let v?:
                out.append(ObjectRecord.tag(v).rawValue)
                ObjectRecord.appendPayload(v, to: &out)
            case nil:
                out.append(ObjectRecord.Tag.null.rawValue)
            }
        }
        return true
    }

    // MARK: Reading

    /// The places of `record` after checking its header against this layout; a typed error when it is not a
    /// record of this layout.
    func checkedPlaces(_ record: UnsafeRawBufferPointer) throws -> Places {
        // The usual header (a version below 128) checked without a reader; anything else takes the one below.
        if record.count >= 4, record[0] == Self.format, record[1] < 0x80, UInt16(record[2]) | UInt16(record[3]) << 8 == check {
            let p = places(headerLength: 4)
            if record.count >= p.minimumLength { return p }
        }
        var r = ByteReader(record)
        let f = try r.readUInt8("record format")
        guard Self.isLayout(f) else { throw StorageError(.corrupted, "record format \(f) is not \(Self.format) or \(Self.legacyFormat)") }
        _ = try r.readVarint("schema version")
        let lo = try r.readUInt8("layout check"), hi = try r.readUInt8("layout check")
        let found = UInt16(lo) | UInt16(hi) << 8
        guard found == check else {
            throw StorageError(.corrupted, "record's layout check is \(found), but its type's fields at its schema version give \(check)")
        }
        let p = places(headerLength: r.position, legacyDates: f == Self.legacyFormat)
        guard record.count >= p.minimumLength else {
            throw StorageError(.corrupted, "record of \(record.count) bytes is shorter than its layout's \(p.minimumLength)")
        }
        return p
    }

    /// The value of field `i` (an index into `fields`) of a record whose places are `p`.
    func value(_ i: Int, in record: UnsafeRawBufferPointer, _ p: Places) throws -> StoredValue {
        let f = fields[i]
        if f.kind == .variable {
            var start = 0
            if f.position > 0 {
                var t = ByteReader(record, position: p.tableStart + 4 * (f.position - 1))
                start = Int(try t.readUInt32LE("variable field start"))
            }
            var d = ByteReader(record, position: p.variableStart)
            try d.skip(start, "variable field start")
            let tag = try d.readUInt8("field tag")
            return try ObjectRecord.decodePayload(tag: tag, &d)
        }
        if f.nullBit >= 0, record[p.fixedStart - nullBytes + f.nullBit / 8] & (1 << UInt8(f.nullBit % 8)) != 0 { return .null }
        let at = p.fixedStart + f.position
        if f.kind == .bool {
            switch record[at] {
            case 0: return .bool(false)
            case 1: return .bool(true)
            case let b: throw StorageError(.corrupted, "a Bool field (byte \(at) of the record) holds \(b)")
            }
        }
        var d = ByteReader(record, position: at)
        return try ObjectRecord.decodePayload(tag: f.kind == .date && p.legacyDates ? ObjectRecord.Tag.date.rawValue : f.kind.tag, &d)
    }

    /// Every field of a record of this layout.
    func decodeAll(_ record: UnsafeRawBufferPointer) throws -> FieldValues {
        let p = try checkedPlaces(record)
        var out = FieldValues(minimumCapacity: fields.count)
        for i in fields.indices { out.appendNew(fields[i].id, try value(i, in: record, p)) }
        return out
    }

    /// The value of field `id`, or nil when the layout has no such field.
    func value(of id: UInt32, in record: UnsafeRawBufferPointer) throws -> StoredValue? {
        let p = try checkedPlaces(record)
        guard let i = fields.firstIndex(where: { $0.id == id }) else { return nil }
        return try value(i, in: record, p)
    }
}
