/// A value read from a Realm file, exactly as stored: floats by bit pattern, dates as realm-core's timestamp,
/// Decimal128 as its 128 BID bits.
public enum RealmFileValue: Sendable, Equatable, CustomStringConvertible {
    case null
    case int(Int64)
    case bool(Bool)
    /// Compared by bit pattern: a NaN payload or a negative zero is a value of its own.
    case float(Float)
    case double(Double)
    case string(String)
    case data([UInt8])
    case timestamp(RealmFileTimestamp)
    case decimal128(RealmFileDecimal128)
    /// 12 bytes.
    case objectId([UInt8])
    /// 16 bytes, in the canonical order.
    case uuid([UInt8])
    /// A link to an object (a missing target, an unresolved or deleted object, reads as null instead).
    case link(RealmFileLink)
    case list([RealmFileValue])
    case set([RealmFileValue])
    /// Map entries in stored order (for format 23 and later, sorted by key).
    case map([RealmFileMapEntry])

    public static func == (a: RealmFileValue, b: RealmFileValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case let (.int(x), .int(y)): return x == y
        case let (.bool(x), .bool(y)): return x == y
        case let (.float(x), .float(y)): return x.bitPattern == y.bitPattern
        case let (.double(x), .double(y)): return x.bitPattern == y.bitPattern
        case let (.string(x), .string(y)): return x.utf8.elementsEqual(y.utf8)
        case let (.data(x), .data(y)): return x == y
        case let (.timestamp(x), .timestamp(y)): return x == y
        case let (.decimal128(x), .decimal128(y)): return x == y
        case let (.objectId(x), .objectId(y)): return x == y
        case let (.uuid(x), .uuid(y)): return x == y
        case let (.link(x), .link(y)): return x == y
        case let (.list(x), .list(y)): return x == y
        case let (.set(x), .set(y)): return x == y
        case let (.map(x), .map(y)): return x == y
        default: return false
        }
    }

    public var description: String {
        switch self {
        case .null: return "null"
        case .int(let v): return "\(v)"
        case .bool(let v): return "\(v)"
        case .float(let v): return "\(v) (0x\(String(v.bitPattern, radix: 16)))"
        case .double(let v): return "\(v) (0x\(String(v.bitPattern, radix: 16)))"
        case .string(let v): return "\"\(v.count > 40 ? String(v.prefix(40)) + "…" : v)\" (\(v.utf8.count) bytes)"
        case .data(let v): return "data(\(v.count) bytes)"
        case .timestamp(let v): return "timestamp(\(v.seconds) s, \(v.nanoseconds) ns)"
        case .decimal128(let v): return "decimal128(high 0x\(String(v.high, radix: 16)), low 0x\(String(v.low, radix: 16)))"
        case .objectId(let v): return "objectId(\(v.map { String($0, radix: 16) }.joined()))"
        case .uuid(let v): return "uuid(\(v.map { String($0, radix: 16) }.joined()))"
        case .link(let v): return "link(table \(v.table), key \(v.key))"
        case .list(let v): return "list\(v)"
        case .set(let v): return "set\(v)"
        case .map(let v): return "map\(v.map { "\($0.key): \($0.value)" })"
        }
    }
}

/// realm-core's `Timestamp`: seconds since 1970 and nanoseconds, both with the same sign.
public struct RealmFileTimestamp: Sendable, Hashable {
    public let seconds: Int64
    public let nanoseconds: Int32
    public init(seconds: Int64, nanoseconds: Int32) {
        self.seconds = seconds
        self.nanoseconds = nanoseconds
    }
}

/// An IEEE 754-2008 decimal128 in its binary-integer (BID) encoding, as realm-core stores it.
public struct RealmFileDecimal128: Sendable, Hashable {
    public let low: UInt64
    public let high: UInt64
    public init(low: UInt64, high: UInt64) {
        self.low = low
        self.high = high
    }
    /// realm-core's null marker.
    package static let null = RealmFileDecimal128(low: 0xaa, high: 0x7c00_0000_0000_0000)
    static let zero = RealmFileDecimal128(low: 0, high: 0x3040_0000_0000_0000)
}

/// A link: the target's table (an index in ``RealmFile/tables``) and object key.
public struct RealmFileLink: Sendable, Hashable {
    public let table: Int
    public let key: Int64
    public init(table: Int, key: Int64) {
        self.table = table
        self.key = key
    }
}

/// One entry of a map.
public struct RealmFileMapEntry: Sendable, Equatable {
    public let key: String
    public let value: RealmFileValue
    public init(key: String, value: RealmFileValue) {
        self.key = key
        self.value = value
    }
}
