import Foundation

/// A JSON value of the fixtures' dumps (`format-24/README-format-24.md`), integers kept exact.
public enum JSON: Decodable, Equatable, Sendable {
    case null, bool(Bool), int(Int64), double(Double), string(String), array([JSON]), object([String: JSON])

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null }
        else if let v = try? c.decode(Bool.self) { self = .bool(v) }
        else if let v = try? c.decode(Int64.self) { self = .int(v) }
        else if let v = try? c.decode(Double.self) { self = .double(v) }
        else if let v = try? c.decode(String.self) { self = .string(v) }
        else if let v = try? c.decode([JSON].self) { self = .array(v) }
        else { self = .object(try c.decode([String: JSON].self)) }
    }

    public subscript(key: String) -> JSON? {
        if case .object(let o) = self { return o[key] }
        return nil
    }
    public var string: String? { if case .string(let s) = self { return s }; return nil }
    public var int: Int64? { if case .int(let v) = self { return v }; return nil }
    public var bool: Bool? { if case .bool(let v) = self { return v }; return nil }
    public var array: [JSON] { if case .array(let a) = self { return a }; return [] }

    /// Through JSONSerialization (ten times faster than the decoder above on the dumps' 3 MB): booleans are told
    /// from integers by the NSNumber's type, integers beyond Int32 come as NSDecimalNumber and stay exact.
    public static func load(_ path: String) throws -> JSON {
        JSON(any: try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path)), options: [.fragmentsAllowed]))
    }

    init(any value: Any) {
        switch value {
        case let s as String: self = .string(s)
        case let a as [Any]: self = .array(a.map(JSON.init(any:)))
        case let o as [String: Any]: self = .object(o.mapValues(JSON.init(any:)))
        case let d as NSDecimalNumber: self = .int(d.int64Value)
        case let n as NSNumber:
            switch String(cString: n.objCType) {
            case "c": self = .bool(n.boolValue)
            case "d", "f": self = .double(n.doubleValue)
            default: self = .int(n.int64Value)
            }
        default: self = .null
        }
    }
}

