import Foundation
import RealmFile

/// Realm's values as Strata stores them.
///
/// - Dates: RealmSwift's own conversion of a realm-core timestamp (`RLMTimestampToNSDate`: seconds since 1970
///   minus the reference date, plus nanoseconds / 1e9, as a time interval since the reference date), so the app
///   sees the `Date` it saw under RealmSwift.
/// - Decimal128: Foundation's `Decimal` holds every finite value of up to 38 digits with an exponent in
///   -128...127 (after trailing zeros are moved into the exponent); NaN, the infinities, negative zero and values
///   beyond that range are narrowed to the nearest value it holds and listed in the report.
/// - Maps: keys and values alternating, keys ascending; links in AnyRealmValue: the object form (class name and
///   key); nested collections: a marker and their items (`NestedForm`).
extension RealmFileImport.Converter {
    mutating func stored(_ value: RealmFileValue, _ property: RealmFileProperty, zeroForNull: Bool, at location: String) throws -> StoredValue {
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
    private mutating func element(_ value: RealmFileValue, _ property: RealmFileProperty, at location: String) throws -> StoredValue {
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

    /// A BID128 decimal as Foundation's `Decimal`, narrowed (and reported) where that cannot hold it.
    private mutating func decimal(_ d: RealmFileDecimal128, at location: String) -> StoredValue {
        switch Self.foundationDecimal(d) {
        case .exact(let v): return .decimal(v)
        case .narrowed(let v, let why):
            narrowed.append("\(location): \(why)")
            return v.map(StoredValue.decimal) ?? .null
        }
    }

    enum DecimalConversion {
        case exact(Decimal)
        case narrowed(Decimal?, String)
    }

    static func foundationDecimal(_ d: RealmFileDecimal128) -> DecimalConversion {
        let negative = d.high >> 63 == 1
        if d == RealmFileDecimal128(low: 0xaa, high: 0x7c00_0000_0000_0000) { return .narrowed(nil, "realm-core's null decimal marker in a required property, stored as null") }
        if (d.high >> 58) & 0x1f == 0x1f { return .narrowed(nil, "Decimal128 NaN, stored as null (Strata's Decimal128 has no NaN yet)") }
        if (d.high >> 58) & 0x1f == 0x1e {
            return .narrowed(nil, "Decimal128 \(negative ? "-" : "+")Infinity, stored as null (Strata's Decimal128 has no infinities yet)")
        }
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
        if high == 0 && low == 0 {
            return negative ? .narrowed(0, "Decimal128 -0, stored as 0 (Foundation's Decimal has no negative zero)") : .exact(0)
        }
        // The coefficient in decimal digits, then trailing zeros moved into the exponent while it is too small.
        var digits = decimalDigits(high: high, low: low)
        while exponent < -128, digits.last == 0, digits.count > 1 {
            digits.removeLast()
            exponent += 1
        }
        while exponent > 127, digits.count < 38 {
            digits.append(0)
            exponent -= 1
        }
        guard exponent >= -128, exponent <= 127, digits.count <= 38 else {
            return .narrowed(nil, "Decimal128 with exponent \(exponent) and \(digits.count) digits, beyond Foundation's Decimal; stored as null")
        }
        var significand = Decimal(0)
        for digit in digits { significand = significand * 10 + Decimal(Int(digit)) }
        return .exact(Decimal(sign: negative ? .minus : .plus, exponent: exponent, significand: significand))
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
