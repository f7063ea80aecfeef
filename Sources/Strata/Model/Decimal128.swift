import Foundation

/// A decimal number, as RealmSwift's `Decimal128`: exact base-10 arithmetic for money and measurements.
///
/// Backed by Foundation's `Decimal` (38 significant digits) and stored as its exact decimal text, so a value
/// reads back exactly as written.
public struct Decimal128: Sendable, Hashable, Comparable, Codable, CustomStringConvertible,
    ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral
{
    public let value: Decimal

    public init(value: Decimal) { self.value = value }
    public init(number: NSNumber) { value = number.decimalValue }
    public init(integerLiteral v: Int) { value = Decimal(v) }
    public init(floatLiteral v: Double) { value = Decimal(string: "\(v)") ?? Decimal(v) }

    /// A decimal from its text ("12.34", "-1e5"); throws for anything else.
    public init(string: String) throws {
        guard let d = Decimal(string: string, locale: Locale(identifier: "en_US_POSIX")), !d.isNaN else {
            throw Realm.Error(.fail, "'\(string)' is not a decimal number")
        }
        value = d
    }

    public var description: String { value.description }
    public var isNaN: Bool { value.isNaN }
    public static func < (a: Decimal128, b: Decimal128) -> Bool { a.value < b.value }
}

extension Decimal128: _Persistable {
    public static var _propertyType: PropertyType { .decimal128 }
    public static var _zeroValue: Decimal128 { 0 }
    public static func _fromStored(_ v: StoredValue) -> Decimal128? {
        if case .decimal(let d) = v { return Decimal128(value: d) }
        if case .int(let i) = v { return Decimal128(value: Decimal(i)) }
        return nil
    }
    public var _storedValue: StoredValue { .decimal(value) }
}
