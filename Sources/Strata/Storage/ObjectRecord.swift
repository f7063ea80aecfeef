import Engine
import Foundation

/// The byte layout of one object's record (see Engine.docc's neighbour, Strata.docc/RecordFormat.md):
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
enum ObjectRecord {
    static let format: UInt8 = 1

    enum Tag: UInt8 {
        case null = 0, falseValue, trueValue, int, float, double, string, data, date, uuid, objectId, link
    }

    static func encode(schemaVersion: UInt64, fields: [(id: UInt32, value: StoredValue)]) -> [UInt8] {
        var header: [UInt8] = [format]
        header.appendVarint(schemaVersion)
        header.appendVarint(UInt64(fields.count))
        var data: [UInt8] = []
        var offsets: [UInt32] = []
        for (id, value) in fields {
            header.appendVarint(UInt64(id))
            offsets.append(UInt32(data.count))
            switch value {
            case .null: header.append(Tag.null.rawValue)
            case .bool(let b): header.append(b ? Tag.trueValue.rawValue : Tag.falseValue.rawValue)
            case .int(let v):
                header.append(Tag.int.rawValue)
                data.appendUInt64LE(UInt64(bitPattern: v))
            case .float(let v):
                header.append(Tag.float.rawValue)
                data.appendUInt32LE(v.bitPattern)
            case .double(let v):
                header.append(Tag.double.rawValue)
                data.appendUInt64LE(v.bitPattern)
            case .string(let s):
                header.append(Tag.string.rawValue)
                let utf8 = Array(s.utf8)
                data.appendVarint(UInt64(utf8.count))
                data.append(contentsOf: utf8)
            case .data(let d):
                header.append(Tag.data.rawValue)
                data.appendVarint(UInt64(d.count))
                data.append(contentsOf: d)
            case .date(let d):
                header.append(Tag.date.rawValue)
                data.appendUInt64LE(d.timeIntervalSince1970.bitPattern)
            case .uuid(let u):
                header.append(Tag.uuid.rawValue)
                withUnsafeBytes(of: u.uuid) { data.append(contentsOf: $0) }
            case .objectId(let o):
                header.append(Tag.objectId.rawValue)
                data.append(contentsOf: o.bytes)
            case .link(let k):
                header.append(Tag.link.rawValue)
                data.appendUInt64LE(UInt64(bitPattern: k))
            }
        }
        for o in offsets { header.appendUInt32LE(o) }
        return header + data
    }

    /// The schema version a record was written under.
    static func schemaVersion(_ bytes: UnsafeRawBufferPointer) throws -> UInt64 {
        var r = ByteReader(bytes)
        let f = try r.readUInt8("record format")
        guard f == format else { throw StorageError(.corrupted, "record format \(f) is unknown (expected \(format))") }
        return try r.readVarint("schema version")
    }

    /// The value of field `id`, or nil when the record has no such field.
    static func value(of id: UInt32, in bytes: UnsafeRawBufferPointer) throws -> StoredValue? {
        var r = ByteReader(bytes)
        let f = try r.readUInt8("record format")
        guard f == format else { throw StorageError(.corrupted, "record format \(f) is unknown (expected \(format))") }
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
    static func decodeAll(_ bytes: UnsafeRawBufferPointer) throws -> (schemaVersion: UInt64, fields: [UInt32: StoredValue]) {
        var r = ByteReader(bytes)
        let f = try r.readUInt8("record format")
        guard f == format else { throw StorageError(.corrupted, "record format \(f) is unknown (expected \(format))") }
        let version = try r.readVarint("schema version")
        let count = try r.readLength("field count", limit: 65_535)
        var entries: [(UInt32, UInt8)] = []
        var ids = Set<UInt32>()
        for _ in 0..<count {
            let fid = try r.readVarint("field id")
            guard fid <= UInt64(UInt32.max) else { throw StorageError(.corrupted, "field id \(fid) is out of range") }
            guard ids.insert(UInt32(fid)).inserted else { throw StorageError(.corrupted, "record lists field \(fid) twice") }
            entries.append((UInt32(fid), try r.readUInt8("field tag")))
        }
        let tableStart = r.position
        var offsets: [Int] = []
        for _ in 0..<count { offsets.append(Int(try r.readUInt32LE("field offset"))) }
        let dataStart = tableStart + 4 * count
        var fields: [UInt32: StoredValue] = [:]
        for (i, (fid, tag)) in entries.enumerated() {
            var d = ByteReader(bytes, position: dataStart)
            try d.skip(offsets[i], "field payload offset")
            fields[fid] = try decodePayload(tag: tag, &d)
        }
        return (version, fields)
    }

    static func decodePayload(tag: UInt8, _ d: inout ByteReader) throws -> StoredValue {
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
        case .uuid:
            let a = [UInt8](try d.readBytes(count: 16, "uuid"))
            return .uuid(UUID(uuid: (a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15])))
        case .objectId: return .objectId(ObjectId(bytes: [UInt8](try d.readBytes(count: 12, "objectId"))))
        case .link: return .link(Int64(bitPattern: try d.readUInt64LE("link")))
        }
    }
}

/// Object keys as engine keys: 8 bytes, big-endian, sign bit flipped so that order is numeric order.
enum ObjectKey {
    static func bytes(_ key: Int64) -> [UInt8] {
        withUnsafeBytes(of: (UInt64(bitPattern: key) ^ (1 << 63)).bigEndian) { Array($0) }
    }
    static func decode(_ b: UnsafeRawBufferPointer) -> Int64? {
        guard b.count == 8 else { return nil }
        var x: UInt64 = 0
        for byte in b { x = x << 8 | UInt64(byte) }
        return Int64(bitPattern: x ^ (1 << 63))
    }
}
