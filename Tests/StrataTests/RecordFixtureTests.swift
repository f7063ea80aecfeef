import Foundation
import Testing

@testable import Strata

/// Byte-exact fixtures of the object record format (`ObjectRecord`, format 1): a change to the format that
/// would leave existing files unreadable fails here first. `Tests/Fixtures/record-v1.hex` holds one record
/// with a field of every kind in format 1 as earlier releases wrote it (its date as seconds since 1970),
/// `record-v1-exact-dates.hex` the same as this release writes it (the date's tag says it is the `Date`'s own
/// Double), `record-v2.hex` the record in format 2 (`RecordLayout` with dates since 1970) and `record-v3.hex`
/// in format 3, this release's.
@Suite struct RecordFixtureTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/record-v1.hex")

    /// Every kind of field, with fixed ids (ascending, as every writer orders them).
    static let fields: [(id: UInt32, value: StoredValue)] = [
        (1, .null),
        (2, .bool(false)),
        (3, .bool(true)),
        (4, .int(-1_234_567_890_123)),
        (5, .float(1.5)),
        (6, .double(-2.25)),
        (7, .string("Strata ✓ é")),
        (8, .string("")),
        (9, .data(Data([0, 1, 2, 254, 255]))),
        (10, .date(Date(timeIntervalSince1970: 1_700_000_000.5))),
        (11, .uuid(UUID(uuidString: "12345678-9ABC-DEF0-1234-56789ABCDEF0")!)),
        (12, .objectId(try! ObjectId(string: "0123456789abcdef01234567"))),
        (13, .link(42)),
        (14, .list([.int(1), .string("two"), .null, .list([.bool(true)])])),
        (15, .decimal(Decimal128(value: Decimal(string: "-123.456", locale: Locale(identifier: "en_US_POSIX"))!))),
        (200, .int(7)),
    ]

    /// The layout of the format-2 and format-3 fixtures: a property of each field's kind.
    static let layout = RecordLayout([
        property(1, .int, optional: true), property(2, .bool), property(3, .bool), property(4, .int), property(5, .float),
        property(6, .double), property(7, .string), property(8, .string), property(9, .data), property(10, .date), property(11, .UUID),
        property(12, .objectId), property(13, .object, optional: true), property(14, .any, list: true), property(15, .decimal128),
        property(200, .int),
    ])

    static func property(_ id: UInt32, _ type: PropertyType, optional: Bool = false, list: Bool = false) -> StoredSchema.StoredProperty {
        .init(fieldId: id, name: "p\(id)", type: type, isOptional: optional, isPrimaryKey: false, isIndexed: false, objectClassName: nil, isList: list ? true : nil)
    }

    static func readHex(_ name: String) throws -> [UInt8] {
        let url = fixture.deletingLastPathComponent().appendingPathComponent(name)
        let text = try String(contentsOf: url, encoding: .utf8).filter { !$0.isWhitespace }
        var bytes: [UInt8] = []
        var i = text.startIndex
        while i < text.endIndex {
            let j = text.index(i, offsetBy: 2)
            bytes.append(try #require(UInt8(text[i..<j], radix: 16)))
            i = j
        }
        return bytes
    }

    /// Writes the fixtures of this release's formats (the earlier ones are kept as those releases wrote them).
    @Test(.enabled(if: ProcessInfo.processInfo.environment["STRATA_WRITE_FIXTURES"] == "1"))
    func writeCurrentRecordFixtures() throws {
        let directory = Self.fixture.deletingLastPathComponent()
        let v3 = ObjectRecord.encode(schemaVersion: 3, fields: Self.fields, layout: Self.layout)
        try (Self.hex(v3) + "\n").write(to: directory.appendingPathComponent("record-v3.hex"), atomically: true, encoding: .utf8)
        let v1 = ObjectRecord.encode(schemaVersion: 3, fields: Self.fields)
        try (Self.hex(v1) + "\n").write(to: directory.appendingPathComponent("record-v1-exact-dates.hex"), atomically: true, encoding: .utf8)
    }

    func decodesToTheFields(_ name: String, format: UInt8) throws -> [UInt8] {
        let bytes = try Self.readHex(name)
        #expect(bytes.first == format)
        let decoded = try bytes.withUnsafeBytes { try ObjectRecord.decodeAll($0, layouts: RecordLayouts([3: Self.layout])) }
        #expect(decoded.schemaVersion == 3)
        for (id, value) in Self.fields {
            #expect(decoded.fields[id] == value, "\(name): field \(id)")
        }
        #expect(decoded.fields.count == Self.fields.count)
        return bytes
    }

    @Test func theV3FixtureDecodesToItsFields() throws {
        let bytes = try decodesToTheFields("record-v3.hex", format: RecordLayout.format)
        // This release writes the same bytes for the same fields.
        #expect(Self.hex(ObjectRecord.encode(schemaVersion: 3, fields: Self.fields, layout: Self.layout)) == Self.hex(bytes))
    }

    @Test func theV2FixtureDecodesToItsFields() throws {
        let bytes = try decodesToTheFields("record-v2.hex", format: RecordLayout.legacyFormat)
        // Written again, it is the format-3 record: only the format byte and the date's slot differ.
        let again = ObjectRecord.encode(schemaVersion: 3, fields: Self.fields, layout: Self.layout)
        #expect(again.count == bytes.count)
        let differing = zip(bytes, again).enumerated().filter { $0.element.0 != $0.element.1 }.map(\.offset)
        #expect(differing.first == 0 && differing.count > 1 && differing[differing.count - 1] - differing[1] < 8, "\(differing)")
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    @Test func theV1FixturesDecodeToTheirFields() throws {
        let earlier = try decodesToTheFields("record-v1.hex", format: ObjectRecord.format)
        let current = try decodesToTheFields("record-v1-exact-dates.hex", format: ObjectRecord.format)
        // This release writes the same bytes for the same fields; they differ from an earlier release's only in
        // the date's tag and payload.
        #expect(Self.hex(ObjectRecord.encode(schemaVersion: 3, fields: Self.fields)) == Self.hex(current))
        #expect(earlier.count == current.count)
        #expect(zip(earlier, current).filter { $0 != $1 }.count <= 9)
    }
}
