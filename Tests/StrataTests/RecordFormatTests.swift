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
            let read = try bytes.withUnsafeBytes { try ObjectRecord.value(of: 1, in: $0) }
            #expect(read == Self.nested(depth), "depth \(depth)")
            #expect(try bytes.withUnsafeBytes { try ObjectRecord.value(of: 2, in: $0) } == .int(1))
        }
    }

    @Test func deeperNestingIsRefusedAsDamage() throws {
        let bytes = ObjectRecord.encode(schemaVersion: 3, fields: [(id: 1, value: Self.nested(ObjectRecord.maxListDepth + 1))])
        #expect {
            _ = try bytes.withUnsafeBytes { try ObjectRecord.value(of: 1, in: $0) }
        } throws: { error in
            "\(error)".contains("lists nest more than \(ObjectRecord.maxListDepth) deep")
        }
    }
}
