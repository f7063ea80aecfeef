import Foundation
import RealmFile
import RealmFileTesting
@testable import Strata
import Testing
import TestSupport

/// The check every conversion test makes: the converted database passes `strata verify`, its stored schema is the
/// Realm file's (every property's type, collection kind and optionality, element optionality included), and its
/// full dump (`strata dump`: every object of every class, every value) is what the Realm file holds, value for
/// value, as RealmSwift would read it.
///
/// The expected dump is written here from the reader's values, independently of the converter's code: dates as
/// RealmSwift's `RLMTimestampToNSDate` gives them, links by their target's primary key (or key), sets and maps
/// compared as sets and by key.
enum RealmFileConversionCheck {
    /// Converts `bytes` (a Realm file) in a temporary directory, then checks the database against the file.
    /// Returns the conversion's record.
    @discardableResult
    static func convertAndCheck(_ bytes: [UInt8], encryptionKey: [UInt8]? = nil, _ what: String) throws -> RealmFileConversion {
        let dir = try TemporaryDirectory()
        let source = dir.child("source.realm")
        try Data(bytes).write(to: URL(fileURLWithPath: source))
        return try convertAndCheck(path: source, encryptionKey: encryptionKey, into: dir.child("converted.strata"), what)
    }

    /// Converts the Realm file at `path` into `destination`, then checks the database against the file.
    @discardableResult
    static func convertAndCheck(path: String, encryptionKey: [UInt8]? = nil, into destination: String, _ what: String) throws -> RealmFileConversion {
        let report = try Realm.convertRealmFile(at: path, to: destination, encryptionKey: encryptionKey)
        let file = try RealmFile(path: path, encryptionKey: encryptionKey)
        let inspector = try DatabaseInspector(path: destination, encryptionKey: encryptionKey)
        defer { _ = try? inspector.close() }  // try?: a read-only inspector's close loses nothing.
        let problems = inspector.verify()
        #expect(problems.isEmpty, "\(what): verify: \(problems.prefix(5))")
        let schema = try #require(inspector.schema, "\(what): no stored schema")
        #expect(schema.schemaVersion == (file.schemaVersion ?? 0), "\(what): schema version")
        var mismatches = 0
        for table in file.classes {
            let name = try #require(table.className)
            guard let stored = schema.type(named: name) else {
                Issue.record("\(what): class \(name) is not in the converted schema")
                continue
            }
            #expect((stored.isEmbedded ?? false) == table.isEmbedded, "\(what): \(name) embeddedness")
            #expect(stored.properties.map(\.name) == table.properties.map(\.name), "\(what): \(name) properties")
            for (s, p) in zip(stored.properties, table.properties) {
                let expected = expectedSchema(p, file)
                let actual = "\(s.type) list:\(s.isList ?? false) set:\(s.isSet ?? false) map:\(s.isMap ?? false) optional:\(s.isOptional) elements:\(s.hasOptionalElements.map { "\($0)" } ?? "-") target:\(s.objectClassName ?? "-") pk:\(s.isPrimaryKey)"
                #expect(actual == expected, "\(what): \(name).\(p.name)")
            }
            let dump = try inspector.objects(ofType: name, limit: nil)
            var actual: [Int64: [String]] = [:]
            for row in dump.rows { actual[row.key] = zip(row.values, table.properties).map { text($0.0, $0.1) } }
            var expectedCount = 0
            try file.forEachObject(in: table) { object in
                expectedCount += 1
                let key = strataKey(object, table)
                let expected = zip(object.values, table.properties).map { expectedText($0.0, $0.1, file) }
                guard let row = actual[key] else {
                    mismatches += 1
                    if mismatches <= 10 { Issue.record("\(what): \(name) object \(object.key) (key \(key)) is missing") }
                    return
                }
                for (i, p) in table.properties.enumerated() where row[i] != expected[i] {
                    mismatches += 1
                    if mismatches <= 10 { Issue.record("\(what): \(name)[\(object.key)].\(p.name): \(row[i]), expected \(expected[i])") }
                }
            }
            #expect(dump.rows.count == expectedCount, "\(what): \(name) holds \(dump.rows.count) objects for \(expectedCount)")
        }
        return report
    }

    /// The stored property a Realm property must become, as text.
    static func expectedSchema(_ p: RealmFileProperty, _ file: RealmFile) -> String {
        let type: PropertyType
        switch p.type {
        case .int: type = .int
        case .bool: type = .bool
        case .string: type = .string
        case .data: type = .data
        case .date: type = .date
        case .float: type = .float
        case .double: type = .double
        case .decimal128: type = .decimal128
        case .objectId: type = .objectId
        case .uuid: type = .UUID
        case .mixed: type = .any
        case .object: type = .object
        }
        let isCollection = p.collection != .none
        // RealmSwift's rules: a link and an AnyRealmValue are optional; a list or set of objects has required
        // elements; a map's values of objects and every collection of AnyRealmValue optional ones.
        let optional = !isCollection && (p.isOptional || p.type == .object || p.type == .mixed)
        let elements: String = isCollection
            ? "\(p.type == .mixed || (p.type == .object ? p.collection == .map : p.isOptional))" : "-"
        let target = p.targetTable.flatMap { file.tables[$0].className } ?? "-"
        return "\(type) list:\(isCollection) set:\(p.collection == .set) map:\(p.collection == .map) optional:\(optional) elements:\(elements) target:\(target) pk:\(p.isPrimaryKey)"
    }

    /// The Strata key of a Realm object: its Int primary key's value, or its Realm object key.
    static func strataKey(_ object: RealmFileObject, _ table: RealmFileTable) -> Int64 {
        if let pk = table.primaryKeyIndex, table.properties[pk].type == .int {
            if case .int(let v) = object.values[pk] { return v }
            return RealmCore.nilIntPrimaryKey
        }
        return object.key
    }

    // MARK: The dump as text

    static func text(_ v: DatabaseInspector.DumpValue?, _ p: RealmFileProperty) -> String {
        guard let v else { return "absent" }
        if case .list(let items) = v, p.collection == .set { return "{" + items.map(text).sorted().joined(separator: ", ") + "}" }
        return text(v)
    }

    static func text(_ v: DatabaseInspector.DumpValue) -> String {
        switch v {
        case .null: return "null"
        case .bool(let b): return "\(b)"
        case .int(let i): return "\(i)"
        case .double(let d): return "\(d)"
        case .string(let s): return s.debugDescription
        case .link(let name): return name
        case .list(let items): return "[" + items.map(text).joined(separator: ", ") + "]"
        case .map(let pairs): return "[" + pairs.map { "\($0.0.debugDescription): \(text($0.1))" }.sorted().joined(separator: ", ") + "]"
        }
    }

    // MARK: What the dump must say

    static func expectedText(_ v: RealmFileValue, _ p: RealmFileProperty, _ file: RealmFile) -> String {
        switch (p.collection, v) {
        case (.set, .set(let items)), (.set, .list(let items)):
            return "{" + items.map { element($0, file) }.sorted().joined(separator: ", ") + "}"
        default:
            return element(v, file)
        }
    }

    static func element(_ v: RealmFileValue, _ file: RealmFile) -> String {
        switch v {
        case .null: return "null"
        case .int(let i): return "\(i)"
        case .bool(let b): return "\(b)"
        case .float(let f): return "\(Double(f))"
        case .double(let d): return "\(d)"
        case .string(let s): return s.debugDescription
        case .data(let d): return ("base64:" + Data(d).base64EncodedString()).debugDescription
        case .timestamp(let t):
            // RealmSwift's `RLMTimestampToNSDate`.
            let date = Date(timeIntervalSinceReferenceDate: Double(t.seconds) - 978_307_200 + Double(t.nanoseconds) / 1_000_000_000)
            // ISO 8601 holds the years 1 to 9999; the dump gives seconds since 1970 outside them.
            let inYears = date.timeIntervalSince1970 >= -62_135_596_800 && date.timeIntervalSince1970 < 253_402_300_800
            return (inYears ? ISO8601DateFormatter().string(from: date) : "\(date.timeIntervalSince1970) s since 1970").debugDescription
        case .decimal128(let d): return decimalText(d).debugDescription
        case .objectId(let b): return b.map { String(format: "%02x", $0) }.joined().debugDescription
        case .uuid(let b):
            return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])).uuidString.debugDescription
        case .link(let link): return linkName(link, file)
        case .list(let items), .set(let items): return "[" + items.map { element($0, file) }.joined(separator: ", ") + "]"
        case .map(let entries): return "[" + entries.map { "\($0.key.debugDescription): \(element($0.value, file))" }.sorted().joined(separator: ", ") + "]"
        }
    }

    /// A BID128 value as `Decimal128` prints it: a finite one parsed from the text of its coefficient and
    /// exponent (IEEE 754-2008's binary encoding: a coefficient above 10^34 - 1, or in the large form, is zero);
    /// NaN and the infinities by name.
    static func decimalText(_ d: RealmFileDecimal128) -> String {
        let negative = d.high >> 63 == 1
        if (d.high >> 58) & 0x1f == 0x1f { return Decimal128(storage: .nan(negative: negative, signaling: (d.high >> 57) & 1 == 1)).description }
        if (d.high >> 58) & 0x1f == 0x1e { return Decimal128(storage: .infinity(negative: negative)).description }
        let large = (d.high >> 61) & 3 == 3
        let exponent = Int((d.high >> (large ? 47 : 49)) & 0x3fff) - 6176
        var coefficient = large ? 0 : UInt128(d.high & 0x0001_ffff_ffff_ffff) << 64 | UInt128(d.low)
        if coefficient > UInt128(10_000_000_000_000_000) * UInt128(10_000_000_000_000_000) * 100 - 1 { coefficient = 0 }
        // try?: a text this function made always parses; nil would show as a mismatch.
        return (try? Decimal128(string: "\(negative ? "-" : "")\(coefficient)E\(exponent)"))?.description ?? "unparsable"
    }

    /// `Type("pk")`, `Type(pk)` or `Type#key`, as `strata dump` names a linked object.
    static func linkName(_ link: RealmFileLink, _ file: RealmFile) -> String {
        let table = file.tables[link.table]
        let name = table.className ?? table.name
        // try?: a target the reader cannot read shows as a mismatch.
        guard let pk = table.primaryKeyIndex, let object = try? file.object(in: table, key: link.key) else {
            return "\(name)#\(link.key)"
        }
        switch object.values[pk] {
        case .string(let s): return "\(name)(\"\(s)\")"
        case .int(let i): return "\(name)(\(i))"
        case .uuid, .objectId:
            let text = element(object.values[pk], file)
            return "\(name)(\(text.dropFirst().dropLast()))"
        default: return "\(name)#\(strataKey(object, table))"
        }
    }
}
