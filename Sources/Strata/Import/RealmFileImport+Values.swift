import Foundation
import RealmFile

/// Realm's values as Strata stores them.
///
/// - Dates: RealmSwift's own conversion of a realm-core timestamp (`RLMTimestampToNSDate`: seconds since 1970
///   minus the reference date, plus nanoseconds / 1e9, as a time interval since the reference date), so the app
///   sees the `Date` it saw under RealmSwift.
/// - Decimal128: every value, as `Decimal128` holds them (NaN, the infinities, negative zero, the whole exponent
///   range); only realm-core's null marker in a required property is reported (stored as null).
/// - Maps: keys and values alternating, keys ascending; links in AnyRealmValue: the object form (class name and
///   key); nested collections: a marker and their items (`NestedForm`).
extension RealmFileImport.Converter {
    mutating func stored(_ value: RealmFileValue, _ property: RealmFileProperty, zeroForNull: Bool, at location: @autoclosure () -> String) throws -> StoredValue {
        switch property.collection {
        case .none:
            let v = try element(value, property, at: location)
            if v.isNull && zeroForNull { return Self.zero(property.type) }
            return v
        case .list, .set:
            guard case .list(let items) = value.collectionItems else { return .list([]) }
            return .list(try items.map { try element($0, property, at: location) })
        case .map:
            guard case .map(let entries) = value else { return .list([]) }
            return try Self.map(entries) { try element($0, property, at: location) }
        }
    }

    private static func map(_ entries: [RealmFileMapEntry], _ convert: (RealmFileValue) throws -> StoredValue) rethrows -> StoredValue {
        var pairs: [StoredValue] = []
        for entry in entries.sorted(by: { $0.key < $1.key }) {
            pairs.append(.string(entry.key))
            pairs.append(try convert(entry.value))
        }
        return .list(pairs)
    }

    /// One value: a property's, a collection's element or a map's value.
    private mutating func element(_ value: RealmFileValue, _ property: RealmFileProperty, at location: () -> String) throws -> StoredValue {
        switch value {
        case .link(let link):
            let key = strataKey(link.table, link.key)
            if property.type == .mixed {
                guard let className = file.tables[link.table].className else { return .null }
                return AnyRealmValue.objectForm(className, key)
            }
            return .link(key)
        case .list(let items), .set(let items):
            // Only a mixed value holds a collection as an element: a nested list.
            return NestedForm.wrap(try items.map { try element($0, property, at: location) }, list: true)
        case .map(let entries):
            guard case .list(let pairs) = try Self.map(entries, { try element($0, property, at: location) }) else { return .null }
            return NestedForm.wrap(pairs, list: false)
        case .decimal128(let d):
            return decimal(d, at: location)
        default:
            return Self.scalar(value)
        }
    }

    static func scalar(_ value: RealmFileValue) -> StoredValue {
        switch value {
        case .null: .null
        case .int(let v): .int(v)
        case .bool(let v): .bool(v)
        case .float(let v): .float(v)
        case .double(let v): .double(v)
        case .string(let v): .string(v)
        case .data(let v): .data(Data(v))
        case .timestamp(let t): .date(date(t))
        case .objectId(let b): .objectId(ObjectId(bytes: b))
        case .uuid(let b): .uuid(UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])))
        case .decimal128, .link, .list, .set, .map: .null
        }
    }

    /// RealmSwift's `RLMTimestampToNSDate`.
    static func date(_ t: RealmFileTimestamp) -> Date {
        Date(timeIntervalSinceReferenceDate: Double(t.seconds) - 978_307_200.0 + Double(t.nanoseconds) / 1_000_000_000.0)
    }

    static func zero(_ type: RealmFilePropertyType) -> StoredValue {
        switch type {
        case .int: .int(0)
        case .bool: .bool(false)
        case .float: .float(0)
        case .double: .double(0)
        case .string: .string("")
        case .data: .data(Data())
        case .date: .date(Date(timeIntervalSince1970: 0))
        case .decimal128: .decimal(0)
        case .objectId: .objectId(ObjectId(bytes: Array(repeating: 0, count: 12)))
        case .uuid: .uuid(UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)))
        case .mixed, .object: .null
        }
    }

    /// A BID128 decimal as Strata's `Decimal128`, which holds every value decimal128 has: NaN (its sign and
    /// whether it signals; not its payload, which RealmSwift never shows), the infinities, negative zero and the
    /// whole exponent range. Only realm-core's null marker in a required property has no value: it is reported.
    private mutating func decimal(_ d: RealmFileDecimal128, at location: () -> String) -> StoredValue {
        if d == RealmFileDecimal128(low: 0xaa, high: 0x7c00_0000_0000_0000) {
            narrowed.append("\(location()): realm-core's null decimal marker in a required property, stored as null")
            return .null
        }
        return .decimal(Self.decimal128(d))
    }

    static func decimal128(_ d: RealmFileDecimal128) -> Decimal128 {
        let negative = d.high >> 63 == 1
        if (d.high >> 58) & 0x1f == 0x1f { return Decimal128(storage: .nan(negative: negative, signaling: (d.high >> 57) & 1 == 1)) }
        if (d.high >> 58) & 0x1f == 0x1e { return Decimal128(storage: .infinity(negative: negative)) }
        var exponent: Int
        var high: UInt64, low: UInt64
        if (d.high >> 61) & 3 == 3 {  // the large-coefficient form: never canonical in BID128, so zero
            exponent = Int((d.high >> 47) & 0x3fff) - 6176
            high = 0
            low = 0
        } else {
            exponent = Int((d.high >> 49) & 0x3fff) - 6176
            high = d.high & 0x0001_ffff_ffff_ffff
            low = d.low
            // Coefficients above 10^34 - 1 are not canonical: zero.
            if high > 0x0001_ed09_bead_87c0 || (high == 0x0001_ed09_bead_87c0 && low > 0x378d_8e63_ffff_ffff) { high = 0; low = 0 }
        }
        var digits = decimalDigits(high: high, low: low)
        while digits.last == 0 { digits.removeLast(); exponent += 1 }
        // Up to 34 digits and an exponent in decimal128's range: `fitted` always finds a form.
        return Decimal128(storage: Decimal128.fitted(negative: negative, digits: digits, exponent: exponent) ?? .nan(negative: negative, signaling: false))
    }

    /// The decimal digits of a 113-bit coefficient, most significant first.
    private static func decimalDigits(high: UInt64, low: UInt64) -> [UInt8] {
        var hi = high, lo = low
        var digits: [UInt8] = []
        while hi != 0 || lo != 0 {
            let (qh, rh) = hi.quotientAndRemainder(dividingBy: 10)
            let (ql, rl) = UInt64(10).dividingFullWidth((rh, lo))
            hi = qh
            lo = ql
            digits.append(UInt8(rl))
        }
        return digits.reversed()
    }
}

extension RealmFileValue {
    /// A list's or set's items as a list.
    var collectionItems: RealmFileValue {
        switch self {
        case .list(let items), .set(let items): .list(items)
        default: self
        }
    }
}
