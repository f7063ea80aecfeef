@_spi(EngineInternals) import Engine
import Foundation
import Testing
import TestSupport

@testable import Strata

/// Record format 2 (`RecordLayout`): every kind of field, required and optional, nil and not, empty and huge
/// strings; records whose values do not fit their slots fall back to format 1; damaged bytes are typed errors.
@Suite struct RecordLayoutTests {
    static func property(_ id: UInt32, _ type: PropertyType, optional: Bool = false, list: Bool = false, map: Bool = false)
        -> StoredSchema.StoredProperty
    {
        .init(
            fieldId: id, name: "p\(id)", type: type, isOptional: optional, isPrimaryKey: false, isIndexed: false, objectClassName: nil,
            isList: list ? true : nil, isMap: map ? true : nil)
    }

    /// One property of every kind, required then optional, in an order other than their ids.
    static let properties: [StoredSchema.StoredProperty] = {
        let kinds: [PropertyType] = [.int, .bool, .float, .double, .string, .data, .date, .objectId, .decimal128, .UUID, .any]
        var out: [StoredSchema.StoredProperty] = []
        var id: UInt32 = 40
        for optional in [false, true] {
            for k in kinds where !(optional && k == .any) {
                out.append(property(id, k, optional: optional))
                id -= 1
            }
        }
        out.append(property(100, .object, optional: true))
        out.append(property(101, .int, list: true))
        out.append(property(102, .string, optional: true, map: true))
        return out
    }()

    static func sample(_ type: PropertyType, _ seed: Int) -> StoredValue {
        switch type {
        case .int: .int(Int64(seed) * -1_000_000_007)
        case .bool: .bool(seed % 2 == 0)
        case .float: .float(Float(seed) + 0.5)
        case .double: .double(-Double(seed) / 3)
        case .string: .string(seed % 3 == 0 ? "" : "text \(seed) ✓")
        case .data: .data(Data((0..<(seed % 5)).map { UInt8($0) }))
        case .date: .date(Date(timeIntervalSince1970: 1_000_000 + Double(seed)))
        case .objectId: .objectId(try! ObjectId(string: String(format: "%024x", seed + 1)))
        case .decimal128: .decimal(Decimal128(value: Decimal(seed) / 8))
        case .UUID: .uuid(UUID(uuid: (UInt8(seed & 0xFF), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)))
        case .any: seed % 2 == 0 ? .string("any") : .int(Int64(seed))
        case .object: .link(Int64(seed))
        case .linkingObjects: .null
        }
    }

    static func values(seed: Int, nils: Bool) -> [StoredValue] {
        properties.map { p in
            if p.isList == true { return .list((0..<seed % 4).map { .int(Int64($0)) }) }
            if p.isMap == true { return .list([.string("k"), nils ? .null : .string("v")]) }
            if p.isOptional && nils { return .null }
            return sample(p.type, seed)
        }
    }

    func encode(_ values: [StoredValue], version: UInt64 = 7) -> [UInt8] {
        ObjectRecord.encode(
            schemaVersion: version, fields: zip(Self.properties, values).map { ($0.fieldId, $1) }, layout: RecordLayout(Self.properties))
    }

    @Test func everyKindRoundTripsRequiredOptionalAndNil() throws {
        let layout = RecordLayout(Self.properties)
        let layouts = RecordLayouts([7: layout])
        for seed in 0..<12 {
            for nils in [false, true] {
                let values = Self.values(seed: seed, nils: nils)
                let bytes = encode(values)
                #expect(bytes.first == RecordLayout.format)
                let decoded = try bytes.withUnsafeBytes { try ObjectRecord.decodeAll($0, layouts: layouts) }
                #expect(decoded.schemaVersion == 7)
                #expect(decoded.fields.count == values.count)
                for (p, v) in zip(Self.properties, values) {
                    #expect(decoded.fields[p.fieldId] == v, "seed \(seed) nils \(nils) field \(p.fieldId) \(p.type)")
                    #expect(try bytes.withUnsafeBytes { try ObjectRecord.value(of: p.fieldId, in: $0, layouts: layouts) } == v)
                }
            }
        }
    }

    /// A record encoded into a `GrowableBuffer` (how a new object's setter values are written) has the bytes of
    /// one encoded into an array, for every kind of field, nil or not, and for several records into one buffer.
    @Test func aGrowableBufferGetsTheBytesOfAnArray() throws {
        let layout = RecordLayout(Self.properties)
        // Field i of the layout (ascending ids) holds the value of this property.
        let order = layout.fields.map { f in Self.properties.firstIndex { $0.fieldId == f.id }! }
        let plan = try #require(layout.plan(order: order))
        var buffer = GrowableBuffer(capacity: 16)
        for seed in 0..<12 {
            for nils in [false, true] {
                let values = Self.values(seed: seed, nils: nils)
                var array: [UInt8] = [9, 9]
                let intoArray = layout.encode(schemaVersion: 7, SetterValues(values: values), plan: plan, into: &array)
                let intoBuffer = layout.encode(schemaVersion: 7, SetterValues(values: values), plan: plan, into: &buffer)
                #expect(intoArray && intoBuffer, "seed \(seed) nils \(nils)")
                #expect(buffer.withUnsafeBytes { [UInt8]($0) } == array, "seed \(seed) nils \(nils)")
            }
        }
    }

    @Test func emptyAndHugeStrings() throws {
        let props = [Self.property(1, .string), Self.property(2, .int), Self.property(3, .string, optional: true)]
        let layout = RecordLayout(props)
        for text in ["", "a", String(repeating: "é", count: 300_000)] {
            let bytes = ObjectRecord.encode(schemaVersion: 1, fields: [(1, .string(text)), (2, .int(5)), (3, .string(text))], layout: layout)
            #expect(bytes.first == RecordLayout.format)
            let decoded = try bytes.withUnsafeBytes { try layout.decodeAll($0) }
            #expect(decoded[1] == .string(text))
            #expect(decoded[2] == .int(5))
            #expect(decoded[3] == .string(text))
        }
    }

    /// Fixed fields are at fixed places: the shortest record of a layout is known, and reading one field does
    /// not depend on the others' values.
    @Test func fixedFieldsSitAtConstantOffsets() {
        let layout = RecordLayout(Self.properties)
        let a = encode(Self.values(seed: 1, nils: false))
        let b = encode(Self.values(seed: 9, nils: false))
        let places = layout.places(headerLength: RecordLayout.headerLength(schemaVersion: 7))
        // Everything before the variable area is the same length whatever the values.
        #expect(a.count >= places.variableStart && b.count >= places.variableStart)
        #expect(layout.fields.filter { $0.kind == .variable }.count == layout.variableCount)
        #expect(layout.fixedSize == layout.fields.map(\.kind.width).reduce(0, +))
    }

    @Test func valuesThatDoNotFitTheirSlotsAreWrittenInFormat1() throws {
        let props = [Self.property(1, .int), Self.property(2, .string)]
        let layout = RecordLayout(props)
        // A string in an Int slot, a nil in a required fixed slot, a field the layout lacks.
        for fields: [(id: UInt32, value: StoredValue)] in [
            [(1, .string("x")), (2, .string("y"))], [(1, .null), (2, .string("y"))], [(1, .int(1)), (2, .string("y")), (3, .int(2))],
        ] {
            let bytes = ObjectRecord.encode(schemaVersion: 1, fields: fields, layout: layout)
            #expect(bytes.first == ObjectRecord.format)
            let decoded = try bytes.withUnsafeBytes { try ObjectRecord.decodeAll($0, layouts: RecordLayouts([1: layout])) }
            for (id, v) in fields { #expect(decoded.fields[id] == v) }
        }
    }

    @Test func damagedBytesAreTypedErrors() throws {
        let layout = RecordLayout(Self.properties)
        let layouts = RecordLayouts([7: layout])
        let good = encode(Self.values(seed: 2, nils: false))
        func fails(_ bytes: [UInt8], _ what: String, layouts: RecordLayouts = layouts) {
            #expect(throws: StorageError.self, "\(what)") {
                _ = try bytes.withUnsafeBytes { try ObjectRecord.decodeAll($0, layouts: layouts) }
            }
        }
        // Every cut.
        for n in 0..<good.count - 1 {
            let cut = Array(good.prefix(n))
            do {
                let decoded = try cut.withUnsafeBytes { try ObjectRecord.decodeAll($0, layouts: layouts) }
                Issue.record("a record cut to \(n) of \(good.count) bytes decoded to \(decoded.fields.count) fields")
            } catch {
                #expect(error is StorageError, "cut to \(n)")
            }
        }
        var check = good
        check[2] ^= 0xFF
        fails(check, "layout check")
        fails(good, "no layout for the version", layouts: RecordLayouts([8: layout]))
        var format = good
        format[0] = 9
        fails(format, "unknown format")
        // A Bool slot holding neither 0 nor 1.
        let boolField = try #require(layout.fields.first { $0.kind == .bool && $0.nullBit < 0 })
        var bool = good
        bool[layout.places(headerLength: 4).fixedStart + boolField.position] = 7
        fails(bool, "bool byte")
        // A variable field's start past the end.
        var start = good
        let table = layout.places(headerLength: 4).tableStart
        start[table] = 0xFF
        start[table + 1] = 0xFF
        fails(start, "variable start")
    }

    /// A binding reads a format-2 record directly (no `StoredValue`) and through the general path alike.
    @Test func aBindingReadsFormat2DirectlyAndGenerally() throws {
        let stored = StoredSchema.StoredType(
            name: "Pair", partition: 1, primaryKeyPartition: nil, nextFieldId: 3,
            properties: [Self.property(1, .int), Self.property(2, .int)].enumerated().map { i, p in
                var p = p
                p.name = "col\(i + 1)"
                return p
            })
        let binding = TypeBinding(info: TypeRegistry.info(for: SC1.Pair.self), stored: stored, schemaVersion: 0)
        let bytes = binding.encode([.int(20), .int(10)])
        #expect(bytes.first == RecordLayout.format)
        bytes.withUnsafeBytes { raw in
            #expect(binding.value(0, in: raw) == .int(20))
            #expect(binding.value(1, in: raw) == .int(10))
            let direct = binding.directPayload(1, in: raw)
            #expect(direct?.tag == DirectTag.int)
            #expect(direct.flatMap { Int._decodeDirect(tag: $0.tag, at: $0.start, in: raw) } == 10)
        }
    }
}
