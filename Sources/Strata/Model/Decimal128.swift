import Foundation

/// A decimal number, as RealmSwift's `Decimal128`: exact base-10 arithmetic for money and measurements.
///
/// Every value Foundation's `Decimal` holds (38 significant digits, exponents -128...127) is held as one, and
/// stored as its exact decimal text. The rest of what an IEEE 754 decimal128 (RealmSwift's `Decimal128`) holds is
/// held too, so that nothing a RealmSwift file contains is narrowed: NaN (quiet or signaling, with its sign),
/// the infinities, negative zero, and finite values of up to 34 digits with exponents -6176...6111 (stored as
/// `1234E+6100`, `-0`, `NaN`, `-Inf`). Such values compare and print as RealmSwift's do; arithmetic on them
/// (``value``) goes through Foundation's `Decimal`, where NaN is NaN and the rest saturates.
public struct Decimal128: Sendable, Hashable, Comparable, Codable, CustomStringConvertible,
    ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral
{
    enum Storage: Sendable, Hashable {
        /// Anything Foundation's Decimal holds (not NaN).
        case decimal(Decimal)
        case nan(negative: Bool, signaling: Bool)
        case infinity(negative: Bool)
        case negativeZero
        /// A finite value beyond Decimal's exponents: its digits (no leading zeros; trailing zeros only where an
        /// exponent above 6111 needs them) and the exponent of the last digit.
        case wide(negative: Bool, digits: [UInt8], exponent: Int)
    }

    let storage: Storage

    init(storage: Storage) { self.storage = storage }

    /// The value as Foundation's `Decimal`: exact for what it holds; NaN for NaN; the largest finite magnitude,
    /// with its sign, for the infinities and for values beyond its range; 0 for negative zero and values too small.
    public var value: Decimal {
        switch storage {
        case .decimal(let d): return d
        case .nan: return .nan
        case .infinity(let negative): return negative ? -Decimal.greatestFiniteMagnitude : .greatestFiniteMagnitude
        case .negativeZero: return 0
        case .wide(let negative, _, let exponent):
            if exponent < 0 { return 0 }
            return negative ? -Decimal.greatestFiniteMagnitude : .greatestFiniteMagnitude
        }
    }

    public init(value: Decimal) { storage = value.isNaN ? .nan(negative: false, signaling: false) : .decimal(value) }
    public init(number: NSNumber) { self.init(value: number.decimalValue) }
    public init(integerLiteral v: Int) { storage = .decimal(Decimal(v)) }
    public init(floatLiteral v: Double) { storage = .decimal(Decimal(string: "\(v)") ?? Decimal(v)) }

    /// A decimal from its text: "12.34", "-1e5", "1E+6111", "-0", "NaN", "-Inf", "Infinity"; throws for
    /// anything else, and for a finite value of more than 34 digits beyond Decimal's range.
    public init(string: String) throws {
        guard let parsed = Self.parse(string) else {
            throw Realm.Error(.fail, "'\(string.prefix(60))' is not a decimal number")
        }
        storage = parsed
    }

    public var isNaN: Bool { if case .nan = storage { return true } else { return false } }
    public var isSignaling: Bool { if case .nan(_, let s) = storage { return s } else { return false } }
    public var isInfinite: Bool { if case .infinity = storage { return true } else { return false } }
    public var isNegative: Bool {
        switch storage {
        case .decimal(let d): return d < 0
        case .nan(let n, _), .infinity(let n), .wide(let n, _, _): return n
        case .negativeZero: return true
        }
    }

    public var description: String {
        switch storage {
        case .decimal(let d): return d.description
        case .nan(let negative, let signaling): return (negative ? "-" : "") + (signaling ? "sNaN" : "NaN")
        case .infinity(let negative): return negative ? "-Inf" : "Inf"
        case .negativeZero: return "-0"
        case .wide(let negative, let digits, let exponent):
            return (negative ? "-" : "") + digits.map { String($0) }.joined() + "E" + (exponent >= 0 ? "+" : "") + String(exponent)
        }
    }

    // MARK: Comparison

    /// NaN equals NaN (so that a set or a dictionary of decimals behaves), negative zero equals zero.
    public static func == (a: Decimal128, b: Decimal128) -> Bool {
        switch (a.storage, b.storage) {
        case (.nan, .nan): return true
        case (.nan, _), (_, .nan): return false
        default: return compare(a, b) == 0
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch storage {
        case .nan: hasher.combine(0)
        case .negativeZero: hasher.combine(Decimal128(integerLiteral: 0).description)
        default: hasher.combine(description)
        }
    }

    /// IEEE order; NaN is unordered (never less, never greater).
    public static func < (a: Decimal128, b: Decimal128) -> Bool {
        if a.isNaN || b.isNaN { return false }
        return compare(a, b) < 0
    }

    /// -1, 0 or 1 for two values that are not NaN.
    static func compare(_ a: Decimal128, _ b: Decimal128) -> Int {
        if case .decimal(let x) = a.storage, case .decimal(let y) = b.storage { return x < y ? -1 : (x > y ? 1 : 0) }
        let (sa, da, ea) = a.parts, (sb, db, eb) = b.parts
        if case .infinity(let n) = a.storage {
            if case .infinity(let m) = b.storage { return n == m ? 0 : (n ? -1 : 1) }
            return n ? -1 : 1
        }
        if case .infinity(let m) = b.storage { return m ? 1 : -1 }
        let aZero = da.isEmpty, bZero = db.isEmpty
        if aZero && bZero { return 0 }
        if sa != sb || aZero || bZero {
            let signA = aZero ? 0 : (sa ? -1 : 1), signB = bZero ? 0 : (sb ? -1 : 1)
            return signA < signB ? -1 : (signA > signB ? 1 : 0)
        }
        // Same sign, both nonzero: compare magnitudes (number of digits above the point, then digits).
        let magnitudeA = da.count + ea, magnitudeB = db.count + eb
        var order = magnitudeA < magnitudeB ? -1 : (magnitudeA > magnitudeB ? 1 : 0)
        if order == 0 {
            let n = Swift.max(da.count, db.count)
            for i in 0..<n {
                let x = i < da.count ? da[i] : 0, y = i < db.count ? db[i] : 0
                if x != y { order = x < y ? -1 : 1; break }
            }
        }
        return sa ? -order : order
    }

    /// Sign, significant digits (no leading or trailing zeros; empty for zero) and the exponent of the last
    /// digit, for finite values.
    var parts: (negative: Bool, digits: [UInt8], exponent: Int) {
        switch storage {
        case .decimal(let d):
            let negative = d < 0
            let magnitude = negative ? -d : d
            var text = Array(magnitude.description.utf8)
            var exponent = 0
            if let point = text.firstIndex(of: UInt8(ascii: ".")) {
                exponent = -(text.count - point - 1)
                text.remove(at: point)
            }
            var digits = text.map { $0 &- 48 }
            while digits.first == 0 { digits.removeFirst() }
            while digits.last == 0 { digits.removeLast(); exponent += 1 }
            return (negative, digits, exponent)
        case .wide(let negative, let digits, let exponent): return (negative, digits, exponent)
        case .negativeZero: return (true, [], 0)
        case .nan(let n, _), .infinity(let n): return (n, [], 0)
        }
    }

    // MARK: Text

    /// Parses a decimal's text (see ``init(string:)``).
    static func parse(_ text: String) -> Storage? {
        var chars = Substring(text.trimmingCharacters(in: .whitespaces))
        var negative = false
        if chars.first == "-" || chars.first == "+" {
            negative = chars.first == "-"
            chars = chars.dropFirst()
        }
        switch chars.lowercased() {
        case "nan", "qnan": return .nan(negative: negative, signaling: false)
        case "snan": return .nan(negative: negative, signaling: true)
        case "inf", "infinity": return .infinity(negative: negative)
        default: break
        }
        var digits: [UInt8] = []
        var exponent = 0
        var seenPoint = false, seenDigit = false
        var rest = chars[...]
        while let c = rest.first, c.isASCII, let v = c.wholeNumberValue ?? (c == "." ? -1 : nil) {
            rest = rest.dropFirst()
            if v == -1 {
                if seenPoint { return nil }
                seenPoint = true
                continue
            }
            seenDigit = true
            digits.append(UInt8(v))
            if seenPoint { exponent -= 1 }
        }
        guard seenDigit else { return nil }
        if let e = rest.first, e == "e" || e == "E" {
            guard let power = Int(rest.dropFirst()), abs(power) < 100_000 else { return nil }
            exponent += power
        } else if !rest.isEmpty {
            return nil
        }
        while digits.first == 0 { digits.removeFirst() }
        while digits.last == 0, !digits.isEmpty { digits.removeLast(); exponent += 1 }
        return fitted(negative: negative, digits: digits, exponent: exponent)
    }

    /// The storage of a finite value: a Decimal where Foundation holds it exactly, otherwise the wide form
    /// within decimal128's range (34 digits, exponents -6176...6111); nil beyond that.
    static func fitted(negative: Bool, digits: [UInt8], exponent: Int) -> Storage? {
        if digits.isEmpty { return negative ? .negativeZero : .decimal(0) }
        var exponent = exponent
        var scaled = digits
        // Foundation's exponents: -128...127 on up to 38 digits (trailing zeros may be written out).
        while exponent > 127, scaled.count < 38 {
            scaled.append(0)
            exponent -= 1
        }
        if scaled.count <= 38, exponent >= -128, exponent <= 127 {
            var significand = Decimal(0)
            for digit in scaled { significand = significand * 10 + Decimal(Int(digit)) }
            return .decimal(Decimal(sign: negative ? .minus : .plus, exponent: exponent, significand: significand))
        }
        var wideExponent = exponent + (scaled.count - digits.count)
        var wideDigits = digits
        guard wideDigits.count <= 34 else { return nil }
        // decimal128 keeps the coefficient an integer: fold the exponent into 34 digits where it is too large.
        while wideExponent > 6111, wideDigits.count < 34 {
            wideDigits.append(0)
            wideExponent -= 1
        }
        guard wideExponent >= -6176, wideExponent <= 6111 else { return nil }
        return .wide(negative: negative, digits: wideDigits, exponent: wideExponent)
    }

    // MARK: Codable

    private enum CodingKeys: String, CodingKey { case value, text }

    /// As RealmSwift reads it: a string (`"12.5"`, `"NaN"`), an integer or a floating-point number; also the
    /// keyed forms earlier releases of Strata wrote (`{"value": …}`, `{"text": "NaN"}`).
    public init(from decoder: any Decoder) throws {
        if let single = try? decoder.singleValueContainer() {  // try?: a keyed value is not a single one; read below
            if let text = try? single.decode(String.self) {  // try?: not a string; a number is tried next
                guard let parsed = Self.parse(text) else {
                    throw DecodingError.dataCorruptedError(in: single, debugDescription: "'\(text)' is not a decimal number")
                }
                self.init(storage: parsed)
                return
            }
            if let integer = try? single.decode(Int64.self) {  // try?: not an integer; a double is tried next
                self.init(number: NSNumber(value: integer))
                return
            }
            if let double = try? single.decode(Double.self) {  // try?: not a number; the keyed form is tried next
                self.init(number: NSNumber(value: double))
                return
            }
        }
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if let text = try container.decodeIfPresent(String.self, forKey: .text) {
            guard let parsed = Self.parse(text) else {
                throw DecodingError.dataCorruptedError(forKey: .text, in: container, debugDescription: "'\(text)' is not a decimal number")
            }
            self.init(storage: parsed)
        } else {
            self.init(value: try container.decode(Decimal.self, forKey: .value))
        }
    }

    /// As RealmSwift writes it: its text.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

extension Decimal128: _Persistable {
    public static var _propertyType: PropertyType { .decimal128 }
    public static var _zeroValue: Decimal128 { 0 }
    public static func _fromStored(_ v: StoredValue) -> Decimal128? {
        if case .decimal(let d) = v { return d }
        if case .int(let i) = v { return Decimal128(value: Decimal(i)) }
        return nil
    }
    public var _storedValue: StoredValue { .decimal(self) }
}

// MARK: RealmSwift's spellings

extension Decimal128: ExpressibleByStringLiteral {
    /// Zero, as RealmSwift's `Decimal128()`.
    public init() { self.init(integerLiteral: 0) }

    /// A decimal from a literal such as `"12.34"` or `"1E+6111"`; an invalid literal is NaN, as in RealmSwift.
    public init(stringLiteral value: String) {
        self.init(storage: Self.parse(value) ?? .nan(negative: false, signaling: false))
    }

    /// A decimal from a number, a string, a `Decimal` or another `Decimal128`, as RealmSwift's `init(value:)`;
    /// anything else is NaN.
    public init(value: Any) {
        switch value {
        case let d as Decimal128: self = d
        case let d as Decimal: self.init(value: d)
        case let s as String: self.init(stringLiteral: s)
        case let i as Int: self.init(integerLiteral: i)
        case let i as Int64: self.init(value: Decimal(i))
        case let d as Double: self.init(floatLiteral: d)
        case let f as Float: self.init(value: Decimal(string: "\(f)") ?? Decimal(Double(f)))
        case let n as NSNumber: self.init(number: n)
        default: self.init(storage: .nan(negative: false, signaling: false))
        }
    }

    /// The smallest value a decimal128 holds: -9999999999999999999999999999999999E+6111.
    public static var min: Decimal128 { "-9999999999999999999999999999999999E+6111" }
    /// The largest value a decimal128 holds: 9999999999999999999999999999999999E+6111.
    public static var max: Decimal128 { "9999999999999999999999999999999999E+6111" }

    /// The absolute value.
    public var magnitude: Decimal128 {
        switch storage {
        case .decimal(let d): return Decimal128(value: d < 0 ? -d : d)
        case .nan(_, let s): return Decimal128(storage: .nan(negative: false, signaling: s))
        case .infinity: return Decimal128(storage: .infinity(negative: false))
        case .negativeZero: return 0
        case .wide(_, let digits, let exponent): return Decimal128(storage: .wide(negative: false, digits: digits, exponent: exponent))
        }
    }

    /// The value with its sign changed (negative zero for zero, as IEEE negates).
    public static prefix func - (a: Decimal128) -> Decimal128 {
        switch a.storage {
        case .decimal(let d): return d.isZero ? Decimal128(storage: .negativeZero) : Decimal128(value: -d)
        case .nan(let n, let s): return Decimal128(storage: .nan(negative: !n, signaling: s))
        case .infinity(let n): return Decimal128(storage: .infinity(negative: !n))
        case .negativeZero: return 0
        case .wide(let n, let digits, let exponent): return Decimal128(storage: .wide(negative: !n, digits: digits, exponent: exponent))
        }
    }

    /// Arithmetic through Foundation's `Decimal` (38 digits): NaN in gives NaN; values beyond Decimal's range
    /// saturate (``value``).
    public static func + (a: Decimal128, b: Decimal128) -> Decimal128 { arithmetic(a, b) { $0 + $1 } }
    public static func - (a: Decimal128, b: Decimal128) -> Decimal128 { arithmetic(a, b) { $0 - $1 } }
    public static func * (a: Decimal128, b: Decimal128) -> Decimal128 { arithmetic(a, b) { $0 * $1 } }
    public static func / (a: Decimal128, b: Decimal128) -> Decimal128 { arithmetic(a, b) { $0 / $1 } }
    public static func += (a: inout Decimal128, b: Decimal128) { a = a + b }
    public static func -= (a: inout Decimal128, b: Decimal128) { a = a - b }
    public static func *= (a: inout Decimal128, b: Decimal128) { a = a * b }
    public static func /= (a: inout Decimal128, b: Decimal128) { a = a / b }

    private static func arithmetic(_ a: Decimal128, _ b: Decimal128, _ op: (Decimal, Decimal) -> Decimal) -> Decimal128 {
        if a.isNaN || b.isNaN { return Decimal128(storage: .nan(negative: false, signaling: false)) }
        return Decimal128(value: op(a.value, b.value))
    }
}

extension Decimal128: _QueryComparable {}

/// RealmSwift's `Decimal128` is `Numeric` and `Strideable`, so generic numeric code (`sum`, ranges with a
/// step, `stride(from:to:by:)`) takes it.
extension Decimal128: SignedNumeric, Strideable {
    public typealias Magnitude = Decimal128
    public typealias Stride = Decimal128

    /// `source` exactly, when a decimal128 holds it (every integer of up to 34 digits).
    public init?<T: BinaryInteger>(exactly source: T) {
        let digits = "\(source)"
        guard digits.utf8.count <= (source < 0 ? 35 : 34), let parsed = Self.parse(digits) else { return nil }
        self.init(storage: parsed)
    }

    /// `other - self`.
    public func distance(to other: Decimal128) -> Decimal128 { other - self }
    /// `self + n`.
    public func advanced(by n: Decimal128) -> Decimal128 { self + n }
    /// Changes the sign (zero becomes negative zero, as `-` gives it).
    public mutating func negate() { self = -self }
    /// Whether this is a signaling NaN (`isSignaling`, under Swift's floating-point name).
    public var isSignalingNaN: Bool { isSignaling }
}
