import Foundation
import Testing

@testable import Strata

@Suite struct RecordFormatTests {
    static func nested(_ depth: Int) -> StoredValue {
        var v = StoredValue.list([.int(7)])
        for _ in 0..<depth { v = .list([.string("x"), v]) }
        return v
    }

    @Test func nestedListsRoundTripUpToTheDepthLimit() throws {
        for depth in [0, 1, 5, ObjectRecord.maxListDepth] {
            let bytes = ObjectRecord.encode(schemaVersion: 3, fields: [(id: 1, value: Self.nested(depth)), (id: 2, value: .int(1))])
            let read = try bytes.withUnsafeBytes { try ObjectRecord.value(of: 1, in: $0, layouts: RecordLayouts()) }
            #expect(read == Self.nested(depth), "depth \(depth)")
            #expect(try bytes.withUnsafeBytes { try ObjectRecord.value(of: 2, in: $0, layouts: RecordLayouts()) } == .int(1))
        }
    }

    @Test func deeperNestingIsRefusedAsDamage() throws {
        let bytes = ObjectRecord.encode(schemaVersion: 3, fields: [(id: 1, value: Self.nested(ObjectRecord.maxListDepth + 1))])
        #expect {
            _ = try bytes.withUnsafeBytes { try ObjectRecord.value(of: 1, in: $0, layouts: RecordLayouts()) }
        } throws: { error in
            "\(error)".contains("lists nest more than \(ObjectRecord.maxListDepth) deep")
        }
    }

    /// M034 at the record level: a binding reads by field id whatever order a record lists its fields in,
    /// including records that releases before ascending field-id order wrote in a model's declared order.
    @Test func M034_aBindingReadsFieldsByIdInEitherOrder() throws {
        let stored = StoredSchema.StoredType(
            name: "Pair", partition: 1, primaryKeyPartition: nil, nextFieldId: 3,
            properties: [
                .init(fieldId: 1, name: "col1", type: .int, isOptional: false, isPrimaryKey: false, isIndexed: false, objectClassName: nil),
                .init(fieldId: 2, name: "col2", type: .int, isOptional: false, isPrimaryKey: false, isIndexed: false, objectClassName: nil),
            ])
        // The model declares col2 first.
        let binding = TypeBinding(info: TypeRegistry.info(for: SC1.Pair.self), stored: stored, schemaVersion: 0)
        #expect(binding.fieldIds == [2, 1])
        // What this release writes: ascending ids.
        let current = binding.encode([.int(20), .int(10)])
        #expect(current.first == RecordLayout.format)
        #expect(try current.withUnsafeBytes { try ObjectRecord.value(of: 1, in: $0, layouts: binding.layouts) } == .int(10))
        current.withUnsafeBytes { raw in
            #expect(binding.value(0, in: raw) == .int(20))
            #expect(binding.value(1, in: raw) == .int(10))
        }
        // What an earlier release wrote for a model declaring col1 first, and for one declaring col2 first.
        for (ids, values) in [([UInt32(1), 2], [StoredValue.int(10), .int(20)]), ([2, 1], [.int(20), .int(10)])] {
            var legacy: [UInt8] = []
            ObjectRecord.encode(schemaVersion: 0, fieldIds: ids, values: values, order: [0, 1], into: &legacy)
            legacy.withUnsafeBytes { raw in
                #expect(binding.value(0, in: raw) == .int(20), "fields \(ids)")
                #expect(binding.value(1, in: raw) == .int(10), "fields \(ids)")
            }
        }
    }
}
