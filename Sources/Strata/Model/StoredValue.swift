import Foundation

/// A property value as the object layer stores and compares it.
public enum StoredValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int64)
    case float(Float)
    case double(Double)
    case string(String)
    case data(Data)
    case date(Date)
    case uuid(UUID)
    case objectId(ObjectId)
    /// A to-one link: the object key of the target.
    case link(Int64)
    /// A `List` property: its elements in order (never lists themselves).
    case list([StoredValue])
    /// A `Decimal128`.
    case decimal(Decimal128)

    var isNull: Bool { if case .null = self { return true } else { return false } }

    /// Whether two values are the same stored value: as `==`, but floating-point numbers (also inside lists) by
    /// their bits, so that a NaN is identical to itself (change capture's test of whether a property changed).
    func isIdentical(to other: StoredValue) -> Bool {
        switch (self, other) {
        case (.float(let x), .float(let y)): x.bitPattern == y.bitPattern
        case (.double(let x), .double(let y)): x.bitPattern == y.bitPattern
        case (.list(let x), .list(let y)): x.count == y.count && zip(x, y).allSatisfy { $0.isIdentical(to: $1) }
        default: self == other
        }
    }

    /// A number as a Double, for comparisons across numeric types and for aggregates.
    var numeric: Double? {
        switch self {
        case .int(let v): Double(v)
        case .float(let v): Double(v)
        case .double(let v): v
        case .date(let d): d.timeIntervalSince1970
        case .bool(let b): b ? 1 : 0
        case .decimal(let d): d.isNaN ? .nan : NSDecimalNumber(decimal: d.value).doubleValue
        default: nil
        }
    }

    /// Orders two values of comparable kinds; nil when they cannot be compared.
    static func compare(_ a: StoredValue, _ b: StoredValue) -> Int? {
        switch (a, b) {
        case (.null, .null): return 0
        case (.null, _), (_, .null): return nil
        case (.int(let x), .int(let y)): return x < y ? -1 : (x > y ? 1 : 0)
        case (.string(let x), .string(let y)): return x < y ? -1 : (x > y ? 1 : 0)
        case (.date(let x), .date(let y)): return x < y ? -1 : (x > y ? 1 : 0)
        case (.data(let x), .data(let y)): return x.lexicographicallyPrecedes(y) ? -1 : (x == y ? 0 : 1)
        case (.uuid(let x), .uuid(let y)): return x.uuidString < y.uuidString ? -1 : (x == y ? 0 : 1)
        case (.objectId(let x), .objectId(let y)): return x.hex < y.hex ? -1 : (x == y ? 0 : 1)
        case (.bool(let x), .bool(let y)): return x == y ? 0 : (!x ? -1 : 1)
        case (.link(let x), .link(let y)): return x < y ? -1 : (x > y ? 1 : 0)
        case (.decimal(let x), .decimal(let y)): return x.isNaN || y.isNaN ? nil : Decimal128.compare(x, y)
        case (.decimal(let x), .int(let y)): return x.isNaN ? nil : Decimal128.compare(x, Decimal128(value: Decimal(y)))
        case (.int(let x), .decimal(let y)): return y.isNaN ? nil : Decimal128.compare(Decimal128(value: Decimal(x)), y)
        // A date is not a number (an AnyRealmValue holding one does not match `value > 2`).
        case (.date, _), (_, .date): return nil
        default:
            guard let x = a.numeric, let y = b.numeric else { return nil }
            return x < y ? -1 : (x > y ? 1 : 0)
        }
    }

    /// The value as the Swift `Any` the dynamic API hands out.
    var anyValue: Any? {
        switch self {
        case .null: nil
        case .bool(let v): v
        case .int(let v): Int(v)
        case .float(let v): v
        case .double(let v): v
        case .string(let v): v
        case .data(let v): v
        case .date(let v): v
        case .uuid(let v): v
        case .objectId(let v): v
        case .link(let v): v
        case .list(let v): v.map(\.anyValue)
        case .decimal(let v): v
        }
    }

    /// A Foundation number for a property of `type`: a boolean stays a Bool whatever the property (the
    /// property's check then reports a mismatch); a Float or Double property takes any number; otherwise the
    /// number keeps its own kind, integer or floating point, and `from(any:as:)`'s exact conversions decide
    /// (2.0 for an Int, 0 or 1 for a Bool), so that 3.5 is never cut to 3 nor 2 taken for `true`.
    init(number n: NSNumber, for type: PropertyType?) {
        if Self.isBoolean(n) {
            self = .bool(n.boolValue)
            return
        }
        let encoding = Character(UnicodeScalar(UInt8(bitPattern: n.objCType.pointee)))
        switch type {
        case .float?: self = .float(n.floatValue)
        case .double?: self = .double(n.doubleValue)
        // NSDecimalNumber's digits, not a Double's approximation of them.
        case .decimal128?: self = .decimal(Decimal128(value: n.decimalValue))
        default:
            if "cCsSiIlLqQ".contains(encoding) {
                self = .int(n.int64Value)
            } else {
                self = encoding == "f" ? .float(n.floatValue) : .double(n.doubleValue)
            }
        }
    }

    /// Whether `n` is one of Foundation's two boolean numbers (`kCFBooleanTrue`/`False` on Darwin, what
    /// JSONSerialization and property lists return for `true` and `false`).
    static func isBoolean(_ n: NSNumber) -> Bool {
        #if canImport(Darwin)
        return CFGetTypeID(n) == CFBooleanGetTypeID()
        #else
        // swift-corelibs-foundation's booleans are NSNumbers of Bool, whose type encoding is "c"; JSON and
        // property lists produce no other "c" numbers.
        return UInt8(bitPattern: n.objCType.pointee) == UInt8(ascii: "c")
        #endif
    }

    /// Converts a Swift value given to the dynamic API (`create(value:)`, `setValue(_:forKey:)`, query
    /// arguments) for a property of `type`; nil when it does not fit.
    static func from(any value: Any?, as type: PropertyType? = nil) -> StoredValue? {
        guard let value else { return .null }
        let v: StoredValue
        // Foundation's numbers (JSONSerialization, property lists, NSDictionary) before Swift's: on Darwin an
        // NSNumber holding `true` also casts to Int (1), and `{"done": true}` must stay a Bool.
        if Swift.type(of: value) is NSNumber.Type, let n = value as? NSNumber {
            v = StoredValue(number: n, for: type)
        } else if let x = value as? String {
            v = .string(x)
        } else if let x = value as? Int {
            v = .int(Int64(x))
        } else if let x = value as? Double {
            v = .double(x)
        } else if let x = value as? Bool {
            v = .bool(x)
        } else if let x = value as? StoredValue {
            v = x
        } else if let x = value as? any _Persistable {
            v = x._storedValue
        } else if value is NSNull {
            v = .null
        } else if let n = value as? NSNumber {
            v = StoredValue(number: n, for: type)
        } else {
            return nil
        }
        guard let type else { return v }
        // Numbers given for another numeric type (`["weight": 12]` for a Double) are converted.
        switch (type, v) {
        case (.double, .int(let x)): return .double(Double(x))
        case (.float, .int(let x)): return .float(Float(x))
        case (.float, .double(let x)): return .float(Float(x))
        case (.int, .double(let x)) where x == x.rounded() && abs(x) < 9.0e18: return .int(Int64(x))
        // 0 and 1 for a Bool, as RealmSwift takes them (numbers from C APIs and older JSON).
        case (.bool, .int(let x)) where x == 0 || x == 1: return .bool(x == 1)
        // And a Bool for a number: RealmSwift receives it as an NSNumber, which any numeric property takes.
        case (.int, .bool(let x)): return .int(x ? 1 : 0)
        case (.double, .bool(let x)): return .double(x ? 1 : 0)
        case (.float, .bool(let x)): return .float(x ? 1 : 0)
        case (.decimal128, .int(let x)): return .decimal(Decimal128(value: Decimal(x)))
        case (.decimal128, .double(let x)): return Decimal(string: "\(x)", locale: Locale(identifier: "en_US_POSIX")).map { .decimal(Decimal128(value: $0)) }
        // try?: a string that is not a number is not a Decimal128 (no storage read).
        case (.decimal128, .string(let x)): return (try? Decimal128(string: x)).map { .decimal($0) }
        default: return v
        }
    }
}

/// A 12-byte MongoDB-style object identifier.
public struct ObjectId: Sendable, Hashable, Comparable, CustomStringConvertible, Codable {
    public let bytes: [UInt8]

    /// A new, unique identifier: 4 bytes of time, 5 random bytes, a 3-byte counter.
    public static func generate() -> ObjectId {
        let time = UInt32(truncatingIfNeeded: Int(Date().timeIntervalSince1970))
        var b: [UInt8] = withUnsafeBytes(of: time.bigEndian) { Array($0) }
        b += processRandom
        let c = ObjectIdCounter.next()
        b += [UInt8(truncatingIfNeeded: c >> 16), UInt8(truncatingIfNeeded: c >> 8), UInt8(truncatingIfNeeded: c)]
        return ObjectId(bytes: b)
    }

    /// The five random bytes of every id this process generates (ObjectId's layout: a process-unique value
    /// between the time and the counter); drawn once, so generating an id makes no system call.
    private static let processRandom: [UInt8] = (0..<5).map { _ in UInt8.random(in: 0...255) }

    init(bytes: [UInt8]) { self.bytes = bytes }

    /// An identifier from its 24-character hexadecimal form.
    public init(string: String) throws {
        let chars = Array(string.utf8)
        guard chars.count == 24 else { throw Realm.Error(.fail, "invalid ObjectId string \"\(string)\": it must be 24 hexadecimal characters") }
        var out: [UInt8] = []
        for i in stride(from: 0, to: 24, by: 2) {
            guard let hi = Self.hexValue(chars[i]), let lo = Self.hexValue(chars[i + 1]) else {
                throw Realm.Error(.fail, "invalid ObjectId string \"\(string)\": it must be 24 hexadecimal characters")
            }
            out.append(hi << 4 | lo)
        }
        bytes = out
    }

    public init() { self = .generate() }

    /// An identifier from a 24-character hexadecimal literal (`ObjectId("0123456789abcdef01234567")`); traps
    /// when the literal is not one, as RealmSwift's does. Use `init(string:)` for strings read at run time.
    public init(_ literal: StaticString) {
        let text = literal.withUTF8Buffer { String(decoding: $0, as: UTF8.self) }
        do {
            try self.init(string: text)
        } catch {
            fatalError("\(error)")
        }
    }

    /// An identifier of `timestamp` (whole seconds), `machineId` (its low three bytes) and `processId` (its low
    /// two), with the next value of the process's counter: realm-core's layout.
    public init(timestamp: Date, machineId: Int, processId: Int) {
        let seconds = UInt32(truncatingIfNeeded: Int64(timestamp.timeIntervalSince1970.rounded(.down)))
        var b: [UInt8] = withUnsafeBytes(of: seconds.bigEndian) { Array($0) }
        b += withUnsafeBytes(of: UInt32(truncatingIfNeeded: machineId).littleEndian) { Array($0.prefix(3)) }
        b += withUnsafeBytes(of: UInt16(truncatingIfNeeded: processId).littleEndian) { Array($0) }
        let c = ObjectIdCounter.next()
        b += [UInt8(truncatingIfNeeded: c >> 16), UInt8(truncatingIfNeeded: c >> 8), UInt8(truncatingIfNeeded: c)]
        self.init(bytes: b)
    }

    /// As RealmSwift reads it: the 24-character hexadecimal text.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        do {
            try self.init(string: text)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "\(error)")
        }
    }

    /// As RealmSwift writes it: the 24-character hexadecimal text.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(hex)
    }

    /// The time the identifier was generated, to the second.
    public var timestamp: Date {
        let seconds = bytes.prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case 48...57: c - 48
        case 97...102: c - 87
        case 65...70: c - 55
        default: nil
        }
    }

    public var hex: String { bytes.map { String(format: "%02x", $0) }.joined() }
    public var stringValue: String { hex }
    public var description: String { hex }
    public static func < (a: ObjectId, b: ObjectId) -> Bool { a.bytes.lexicographicallyPrecedes(b.bytes) }
}

import Atomics
enum ObjectIdCounter {
    static let value = ManagedAtomic<UInt32>(UInt32.random(in: 0...0xFFFFFF))
    static func next() -> UInt32 { value.wrappingIncrementThenLoad(by: 1, ordering: .relaxed) & 0xFF_FFFF }
}
