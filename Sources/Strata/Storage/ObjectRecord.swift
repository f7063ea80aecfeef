import Engine
import Foundation

/// The byte layout of one object's record (see Strata.docc/RecordFormat.md). Records are written in format 3
/// (`RecordLayout`: fixed slots per type and schema version) whenever their values fit their slots; format 1,
/// self-describing, is what files written before format 2 hold and what a record whose values do not fit is
/// written in:
///
/// ```
/// u8 format (1) · varint schemaVersion · varint fieldCount
/// fieldCount x (varint fieldId · u8 tag)
/// fieldCount x u32 offset of the field's payload, from the start of the data
/// data: payloads
/// ```
/// Fields are found by their stable id, so a renamed property needs no rewrite and a record written before a
/// property was added simply lacks it (the reader supplies the declared default). Reading one property
/// walks the small field table and decodes only that payload.
package enum ObjectRecord {
    static let format: UInt8 = 1
    /// How deep lists may nest (an `AnyRealmValue` holding lists of lists); deeper input is refused as damaged.
    static let maxListDepth = 64

    enum Tag: UInt8 {
        case null = 0, falseValue, trueValue, int, float, double, string, data, date, uuid, objectId, link
        /// varint count, then per element: u8 tag · payload. Elements are lists only inside `AnyRealmValue`'s
        /// nested collections, at most `maxListDepth` deep.
        case list
        /// varint length · the decimal's text (UTF-8, POSIX format)
        case decimal
        /// The `Date`'s own Double (seconds since 2001), which holds every Date exactly. `date` (seconds since
        /// 1970, which rounds half of today's dates by one unit in the last place) is what earlier releases
        /// wrote; it is still read.
        case exactDate
    }

    /// A record of `fields`, written in ascending field-id order (the order every writer uses, so that records
    /// of one type and schema version share one layout whatever order a model declares its properties in).
    /// With a `layout` whose fields are exactly these and whose slots the values fit, in format 2.
    package static func encode(schemaVersion: UInt64, fields: [(id: UInt32, value: StoredValue)], layout: RecordLayout? = nil) -> [UInt8] {
        var out: [UInt8] = []
        let sorted = fields.sorted { $0.id < $1.id }
        if let layout, sorted.count == layout.fields.count, zip(sorted, layout.fields).allSatisfy({ $0.id == $1.id }),
            layout.encode(schemaVersion: schemaVersion, values: sorted.map(\.value), order: Array(sorted.indices), into: &out)
        {
            return out
        }
        encode(schemaVersion: schemaVersion, count: sorted.count, id: { sorted[$0].id }, value: { sorted[$0].value }, into: &out)
        return out
    }

    /// Encodes the record with field `fieldIds[order[i]]` = `values[order[i]]` at position `i` into `out`
    /// (replacing its contents, keeping its capacity: a commit encodes every record into one buffer). `order`
    /// lists the indices of `fieldIds` by ascending field id (`ascendingOrder(of:)`).
    static func encode(schemaVersion: UInt64, fieldIds: [UInt32], values: [StoredValue], order: [Int], into out: inout [UInt8]) {
        // The same layout as `encode(schemaVersion:count:id:value:into:)`, written without closures: every
        // record of a commit goes through here, and each value is visited in place (no copies of it).
        var dataSize = 0
        var headerSize = 1 + varintSize(schemaVersion) + varintSize(UInt64(order.count)) + 5 * order.count
        for j in order {
            headerSize += varintSize(UInt64(fieldIds[j]))
            dataSize += payloadSize(values[j])
        }
        out.removeAll(keepingCapacity: true)
        out.reserveCapacity(headerSize + dataSize)
        out.append(format)
        out.appendVarint(schemaVersion)
        out.appendVarint(UInt64(order.count))
        for j in order {
            out.appendVarint(UInt64(fieldIds[j]))
            out.append(tag(values[j]).rawValue)
        }
        var offset = 0
        for j in order {
            out.appendUInt32LE(UInt32(offset))
            offset += payloadSize(values[j])
        }
        for j in order { appendPayload(values[j], to: &out) }
    }

    /// The indices of `fieldIds` by ascending field id: the order in which a record holds them.
    static func ascendingOrder(of fieldIds: [UInt32]) -> [Int] {
        fieldIds.indices.sorted { fieldIds[$0] < fieldIds[$1] }
    }

    @inline(__always)
    private static func encode(
        schemaVersion: UInt64, count: Int, id: (Int) -> UInt32, value: (Int) -> StoredValue, into out: inout [UInt8]
    ) {
        // Sizes first, so that the record is built without growing.
        var dataSize = 0
        var headerSize = 1 + varintSize(schemaVersion) + varintSize(UInt64(count)) + 5 * count
        for i in 0..<count {
            headerSize += varintSize(UInt64(id(i)))
            dataSize += payloadSize(value(i))
        }
        out.removeAll(keepingCapacity: true)
        out.reserveCapacity(headerSize + dataSize)
        out.append(format)
        out.appendVarint(schemaVersion)
        out.appendVarint(UInt64(count))
        for i in 0..<count {
            out.appendVarint(UInt64(id(i)))
            out.append(tag(value(i)).rawValue)
        }
        var offset = 0
        for i in 0..<count {
            out.appendUInt32LE(UInt32(offset))
            offset += payloadSize(value(i))
        }
        for i in 0..<count {
            let v = value(i)
            appendPayload(v, to: &out)
        }
    }

    /// The payload of a value: a field, or a list element.
    static func appendPayload<Sink: RecordSink>(_ value: StoredValue, to out: inout Sink) {
        switch value {
        case .null, .bool: break
        case .list(let elements):
            out.appendVarint(UInt64(elements.count))
            for e in elements {
                out.append(tag(e).rawValue)
                appendPayload(e, to: &out)
            }
        case .int(let v): out.appendUInt64LE(UInt64(bitPattern: v))
        case .float(let v): out.appendUInt32LE(v.bitPattern)
        case .double(let v): out.appendUInt64LE(v.bitPattern)
        case .string(let s):
            out.appendVarint(UInt64(s.utf8.count))
            // Native strings give their UTF-8 in one piece; others are copied byte by byte.
            var text = s
            text.withUTF8 { out.appendBytes(UnsafeRawBufferPointer($0)) }
        case .data(let d):
            out.appendVarint(UInt64(d.count))
            d.withUnsafeBytes { out.appendBytes($0) }
        case .date(let d): out.appendUInt64LE(d.timeIntervalSinceReferenceDate.bitPattern)
        case .uuid(let u): withUnsafeBytes(of: u.uuid) { out.appendBytes($0) }
        case .objectId(let o):
            // Exactly 12 bytes, as the reader takes (an ObjectId decoded from elsewhere could differ).
            o.bytes.prefix(12).withUnsafeBytes { out.appendBytes($0) }
            for _ in o.bytes.count..<max(o.bytes.count, 12) { out.append(0) }
        case .link(let k): out.appendUInt64LE(UInt64(bitPattern: k))
        case .decimal(let d):
            let text = Array(text(d).utf8)
            out.appendVarint(UInt64(text.count))
            text.withUnsafeBytes { out.appendBytes($0) }
        }
    }

    /// A decimal's stored text: locale-independent, exact (`Decimal128.description`: Foundation's text for what
    /// Decimal holds, `NaN`, `-Inf`, `-0` or `1234E+6100` for the rest).
    static func text(_ d: Decimal128) -> String { d.description }

    @inline(__always)
    static func varintSize(_ v: UInt64) -> Int {
        var n = 1
        var x = v
        while x >= 0x80 {
            x >>= 7
            n += 1
        }
        return n
    }

    static func tag(_ value: StoredValue) -> Tag {
        switch value {
        case .null: .null
        case .bool(let b): b ? .trueValue : .falseValue
        case .int: .int
        case .float: .float
        case .double: .double
        case .string: .string
        case .data: .data
        case .date: .exactDate
        case .uuid: .uuid
        case .objectId: .objectId
        case .link: .link
        case .list: .list
        case .decimal: .decimal
        }
    }

    static func payloadSize(_ value: StoredValue) -> Int {
        switch value {
        case .null, .bool: 0
        case .int, .double, .date, .link: 8
        case .float: 4
        case .string(let s): varintSize(UInt64(s.utf8.count)) + s.utf8.count
        case .data(let d): varintSize(UInt64(d.count)) + d.count
        case .uuid: 16
        case .objectId: 12
        case .decimal(let d): varintSize(UInt64(text(d).utf8.count)) + text(d).utf8.count
        case .list(let elements):
            elements.reduce(varintSize(UInt64(elements.count))) { n, e in n + 1 + payloadSize(e) }
        }
    }

    /// The schema version a record was written under.
    package static func schemaVersion(_ bytes: UnsafeRawBufferPointer) throws -> UInt64 {
        // The usual record: a version below 128, one byte.
        if bytes.count >= 2, bytes[1] < 0x80, bytes[0] == RecordLayout.format || bytes[0] == format || bytes[0] == RecordLayout.legacyFormat {
            return UInt64(bytes[1])
        }
        var r = ByteReader(bytes)
        let f = try r.readUInt8("record format")
        guard f == format || RecordLayout.isLayout(f) else { throw unknownFormat(f) }
        return try r.readVarint("schema version")
    }

    static func unknownFormat(_ f: UInt8) -> StorageError {
        StorageError(.corrupted, "record format \(f) is unknown (expected \(format), \(RecordLayout.legacyFormat) or \(RecordLayout.format))")
    }

    /// The value of field `id`, or nil when the record has no such field. A record of fixed slots (format 2 or
    /// 3) is read in the layout `layouts` gives for its schema version.
    package static func value(of id: UInt32, in bytes: UnsafeRawBufferPointer, layouts: RecordLayouts) throws -> StoredValue? {
        if RecordLayout.isLayout(bytes.first) {
            return try layouts.required(try schemaVersion(bytes)).value(of: id, in: bytes)
        }
        var r = ByteReader(bytes)
        let f = try r.readUInt8("record format")
        guard f == format else { throw unknownFormat(f) }
        _ = try r.readVarint("schema version")
        let count = try r.readLength("field count", limit: 65_535)
        var found: (Int, UInt8)? = nil
        for i in 0..<count {
            let fid = try r.readVarint("field id")
            let tag = try r.readUInt8("field tag")
            if fid == UInt64(id) {
                guard found == nil else { throw StorageError(.corrupted, "record lists field \(id) twice") }
                found = (i, tag)
            }
        }
        guard let (index, tag) = found else { return nil }
        let tableStart = r.position
        guard count <= r.remaining / 4 else { throw StorageError(.corrupted, "record field table is cut short") }
        var t = ByteReader(bytes, position: tableStart + 4 * index)
        let offset = Int(try t.readUInt32LE("field offset"))
        let dataStart = tableStart + 4 * count
        var d = ByteReader(bytes, position: dataStart)
        try d.skip(offset, "field payload offset")
        return try decodePayload(tag: tag, &d)
    }

    /// Every field of a record: its schema version and field id -> value.
    package static func decodeAll(_ bytes: UnsafeRawBufferPointer, layouts: RecordLayouts) throws -> (schemaVersion: UInt64, fields: FieldValues) {
        if RecordLayout.isLayout(bytes.first) {
            let version = try schemaVersion(bytes)
            return (version, try layouts.required(version).decodeAll(bytes))
        }
        var r = ByteReader(bytes)
        let f = try r.readUInt8("record format")
        guard f == format else { throw unknownFormat(f) }
        let version = try r.readVarint("schema version")
        let count = try r.readLength("field count", limit: 65_535)
        var entries: [(UInt32, UInt8)] = []
        entries.reserveCapacity(count)
        // Duplicates: a linear check for the usual handful of fields, a set for long (damaged or hostile) lists.
        var seen: Set<UInt32>? = count > 32 ? Set(minimumCapacity: count) : nil
        for _ in 0..<count {
            let fid = try r.readVarint("field id")
            guard fid <= UInt64(UInt32.max) else { throw StorageError(.corrupted, "field id \(fid) is out of range") }
            let id = UInt32(fid)
            let duplicate = seen != nil ? seen?.insert(id).inserted == false : entries.contains { $0.0 == id }
            guard !duplicate else { throw StorageError(.corrupted, "record lists field \(fid) twice") }
            entries.append((id, try r.readUInt8("field tag")))
        }
        let tableStart = r.position
        guard count <= r.remaining / 4 else { throw StorageError(.corrupted, "record field table is cut short") }
        let dataStart = tableStart + 4 * count
        var fields = FieldValues(minimumCapacity: count)
        for (fid, tag) in entries {
            let offset = Int(try r.readUInt32LE("field offset"))
            var d = ByteReader(bytes, position: dataStart)
            try d.skip(offset, "field payload offset")
            fields.appendNew(fid, try decodePayload(tag: tag, &d))
        }
        return (version, fields)
    }

    static func decodePayload(tag: UInt8, _ d: inout ByteReader, depth: Int = 0) throws -> StoredValue {
        guard let t = Tag(rawValue: tag) else { throw StorageError(.corrupted, "unknown field tag \(tag)") }
        switch t {
        case .null: return .null
        case .falseValue: return .bool(false)
        case .trueValue: return .bool(true)
        case .int: return .int(Int64(bitPattern: try d.readUInt64LE("int")))
        case .float: return .float(Float(bitPattern: try d.readUInt32LE("float")))
        case .double: return .double(Double(bitPattern: try d.readUInt64LE("double")))
        case .string:
            let n = try d.readLength("string length", limit: Limits.maxValueBytes)
            let b = try d.readBytes(count: n, "string")
            return .string(String(decoding: b, as: UTF8.self))
        case .data:
            let n = try d.readLength("data length", limit: Limits.maxValueBytes)
            return .data(Data(try d.readBytes(count: n, "data")))
        case .date: return .date(Date(timeIntervalSince1970: Double(bitPattern: try d.readUInt64LE("date"))))
        case .exactDate: return .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: try d.readUInt64LE("date"))))
        case .uuid:
            let a = [UInt8](try d.readBytes(count: 16, "uuid"))
            return .uuid(UUID(uuid: (a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15])))
        case .objectId: return .objectId(ObjectId(bytes: [UInt8](try d.readBytes(count: 12, "objectId"))))
        case .link: return .link(Int64(bitPattern: try d.readUInt64LE("link")))
        case .list:
            let n = try d.readLength("list length", limit: d.remaining)
            var elements: [StoredValue] = []
            elements.reserveCapacity(min(n, 4096))
            for _ in 0..<n {
                let tag = try d.readUInt8("list element tag")
                guard tag != Tag.list.rawValue || depth < maxListDepth else {
                    throw StorageError(.corrupted, "lists nest more than \(maxListDepth) deep")
                }
                elements.append(try decodePayload(tag: tag, &d, depth: depth + 1))
            }
            return .list(elements)
        case .decimal:
            let n = try d.readLength("decimal length", limit: 256)
            let text = String(decoding: try d.readBytes(count: n, "decimal"), as: UTF8.self)
            guard let value = Decimal128.parse(text) else {
                throw StorageError(.corrupted, "a decimal field holds '\(text.prefix(40))', which is not a decimal number")
            }
            return .decimal(Decimal128(storage: value))
        }
    }
}

/// A record's fields by stable id: a short list searched linearly. Records have a handful of fields, and one
/// small array per object costs far less than a dictionary (hashing, buckets) in migrations, which handle
/// every object of a type.
package struct FieldValues: Sequence, Equatable {
    private(set) var entries: [(id: UInt32, value: StoredValue)] = []

    init() {}
    init(minimumCapacity: Int) { entries.reserveCapacity(minimumCapacity) }

    package var count: Int { entries.count }

    package subscript(id: UInt32) -> StoredValue? {
        get {
            for e in entries where e.id == id { return e.value }
            return nil
        }
        set {
            if let i = entries.firstIndex(where: { $0.id == id }) {
                if let newValue { entries[i].value = newValue } else { entries.remove(at: i) }
            } else if let newValue {
                entries.append((id, newValue))
            }
        }
    }

    /// Takes `other`'s fields, keeping this buffer (when unique) and its capacity.
    mutating func replaceAll(with other: FieldValues) {
        entries.removeAll(keepingCapacity: true)
        entries.append(contentsOf: other.entries)
    }

    /// Forgets every field, keeping the buffer (when unique) and its capacity.
    mutating func removeAll() {
        if !entries.isEmpty { entries.removeAll(keepingCapacity: true) }
    }

    /// Adds a field known not to be present.
    mutating func appendNew(_ id: UInt32, _ value: StoredValue) { entries.append((id, value)) }

    package func makeIterator() -> IndexingIterator<[(id: UInt32, value: StoredValue)]> { entries.makeIterator() }

    package static func == (a: FieldValues, b: FieldValues) -> Bool {
        a.count == b.count && a.entries.allSatisfy { e in b[e.id] == e.value }
    }
}

/// Object keys as engine keys: 8 bytes, big-endian, sign bit flipped so that order is numeric order.
enum ObjectKey {
    static func bytes(_ key: Int64) -> [UInt8] {
        withUnsafeBytes(of: (UInt64(bitPattern: key) ^ (1 << 63)).bigEndian) { Array($0) }
    }
    /// Calls `body` with the key's bytes, without allocating them.
    @inline(__always)
    static func withBytes<R>(_ key: Int64, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withUnsafeBytes(of: (UInt64(bitPattern: key) ^ (1 << 63)).bigEndian, body)
    }
    @inline(__always)
    static func decode(_ b: UnsafeRawBufferPointer) -> Int64? {
        guard b.count == 8 else { return nil }
        return Int64(bitPattern: UInt64(bigEndian: b.loadUnaligned(as: UInt64.self)) ^ (1 << 63))
    }
}
