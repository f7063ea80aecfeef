import Foundation

/// Comparison operators of queries.
enum CompareOp: String, Sendable {
    case equal = "==", notEqual = "!=", less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">="
}

/// String operators of queries.
enum StringOp: String, Sendable {
    case beginsWith = "BEGINSWITH", endsWith = "ENDSWITH", contains = "CONTAINS", like = "LIKE"
}

/// `[c]` (case-insensitive) and `[d]` (diacritic-insensitive).
struct StringOptions: OptionSet, Sendable, Hashable {
    let rawValue: Int
    static let caseInsensitive = StringOptions(rawValue: 1)
    static let diacriticInsensitive = StringOptions(rawValue: 2)
}

/// A query over one object type, with properties resolved to indices.
indirect enum Predicate: Sendable {
    case constant(Bool)
    case compare(Int, CompareOp, StoredValue, StringOptions)
    case string(Int, StringOp, String, StringOptions)
    case isIn(Int, [StoredValue], StringOptions)
    case between(Int, StoredValue, StoredValue)
    case and(Predicate, Predicate)
    case or(Predicate, Predicate)
    case not(Predicate)

    func evaluate(_ r: RecordRef) -> Bool {
        switch self {
        case .constant(let b): return b
        case .compare(let i, let op, let v, let options): return Self.compare(r.value(i), op, v, options)
        case .string(let i, let op, let s, let options):
            guard case .string(let value) = r.value(i) else { return false }
            return Self.match(value, op, s, options)
        case .isIn(let i, let values, let options):
            let v = r.value(i)
            return values.contains { Self.compare(v, .equal, $0, options) }
        case .between(let i, let lo, let hi):
            let v = r.value(i)
            return Self.compare(v, .greaterOrEqual, lo, []) && Self.compare(v, .lessOrEqual, hi, [])
        case .and(let a, let b): return a.evaluate(r) && b.evaluate(r)
        case .or(let a, let b): return a.evaluate(r) || b.evaluate(r)
        case .not(let a): return !a.evaluate(r)
        }
    }

    static func fold(_ s: String, _ options: StringOptions) -> String {
        var o: String.CompareOptions = []
        if options.contains(.caseInsensitive) { o.insert(.caseInsensitive) }
        if options.contains(.diacriticInsensitive) { o.insert(.diacriticInsensitive) }
        return o.isEmpty ? s : s.folding(options: o, locale: nil)
    }

    static func compare(_ a: StoredValue, _ op: CompareOp, _ b: StoredValue, _ options: StringOptions) -> Bool {
        if case .string(let x) = a, case .string(let y) = b, !options.isEmpty {
            return compare(.string(fold(x, options)), op, .string(fold(y, options)), [])
        }
        switch op {
        case .equal:
            if a.isNull || b.isNull { return a.isNull && b.isNull }
            return StoredValue.compare(a, b) == 0
        case .notEqual:
            if a.isNull || b.isNull { return a.isNull != b.isNull }
            return StoredValue.compare(a, b) != 0
        case .less: return StoredValue.compare(a, b).map { $0 < 0 } ?? false
        case .lessOrEqual: return StoredValue.compare(a, b).map { $0 <= 0 } ?? false
        case .greater: return StoredValue.compare(a, b).map { $0 > 0 } ?? false
        case .greaterOrEqual: return StoredValue.compare(a, b).map { $0 >= 0 } ?? false
        }
    }

    static func match(_ value: String, _ op: StringOp, _ pattern: String, _ options: StringOptions) -> Bool {
        let v = fold(value, options), p = fold(pattern, options)
        switch op {
        case .beginsWith: return v.hasPrefix(p)
        case .endsWith: return v.hasSuffix(p)
        case .contains: return p.isEmpty || v.contains(p)
        case .like: return like(Array(v.unicodeScalars), Array(p.unicodeScalars))
        }
    }

    /// `*` matches any run of characters, `?` any one.
    static func like(_ s: [Unicode.Scalar], _ p: [Unicode.Scalar]) -> Bool {
        var si = 0, pi = 0, star = -1, mark = 0
        while si < s.count {
            if pi < p.count && (p[pi] == "?" || p[pi] == s[si]) {
                si += 1; pi += 1
            } else if pi < p.count && p[pi] == "*" {
                star = pi; mark = si; pi += 1
            } else if star >= 0 {
                pi = star + 1; mark += 1; si = mark
            } else {
                return false
            }
        }
        while pi < p.count && p[pi] == "*" { pi += 1 }
        return pi == p.count
    }
}

/// A query expression with property names not yet resolved (from the string parser or `Query<T>`).
indirect enum QueryExpr: Sendable {
    case truePredicate, falsePredicate
    case property(String)
    case value(StoredValue)
    case list([StoredValue])
    case comparison(QueryExpr, CompareOp, QueryExpr, StringOptions)
    case stringOp(QueryExpr, StringOp, QueryExpr, StringOptions)
    case isIn(QueryExpr, QueryExpr, StringOptions)
    case between(QueryExpr, QueryExpr)
    case and(QueryExpr, QueryExpr)
    case or(QueryExpr, QueryExpr)
    case not(QueryExpr)

    /// Resolves property names against `info`; errors name the type, the property and what was wrong.
    func resolve(_ info: TypeInfo) throws -> Predicate {
        func index(_ name: String) throws -> Int {
            if name.contains(".") {
                throw QueryError("key path '\(name)' goes through a link; queries through links are not supported yet")
            }
            guard let i = info.propertyIndex[name] else {
                throw QueryError("'\(info.schema.className)' has no property '\(name)'")
            }
            return i
        }
        func flip(_ op: CompareOp) -> CompareOp {
            switch op {
            case .less: .greater
            case .lessOrEqual: .greaterOrEqual
            case .greater: .less
            case .greaterOrEqual: .lessOrEqual
            default: op
            }
        }
        func coerce(_ v: StoredValue, for i: Int) -> StoredValue {
            let type = info.schema.properties[i].type
            switch (type, v) {
            case (.double, .int(let x)): return .double(Double(x))
            case (.float, .int(let x)): return .float(Float(x))
            case (.float, .double(let x)): return .float(Float(x))
            default: return v
            }
        }
        switch self {
        case .truePredicate: return .constant(true)
        case .falsePredicate: return .constant(false)
        case .property(let name):
            // A Bool property alone is the condition `name == true`.
            let i = try index(name)
            guard info.schema.properties[i].type == .bool else {
                throw QueryError("'\(info.schema.className).\(name)' is not a Bool and cannot be a condition on its own")
            }
            return .compare(i, .equal, .bool(true), [])
        case .value(.bool(let b)): return .constant(b)
        case .value, .list: throw QueryError("a value alone is not a condition")
        case .comparison(let l, let op, let r, let options):
            switch (l, r) {
            case (.property(let n), .value(let v)): let i = try index(n); return .compare(i, op, coerce(v, for: i), options)
            case (.value(let v), .property(let n)): let i = try index(n); return .compare(i, flip(op), coerce(v, for: i), options)
            case (.property, .property): throw QueryError("comparing two properties is not supported yet")
            default: throw QueryError("a comparison needs a property on one side and a value on the other")
            }
        case .stringOp(let l, let op, let r, let options):
            guard case .property(let n) = l, case .value(.string(let s)) = r else {
                throw QueryError("\(op.rawValue) needs a string property on the left and a string on the right")
            }
            let i = try index(n)
            guard info.schema.properties[i].type == .string else {
                throw QueryError("\(op.rawValue) needs a string property; '\(info.schema.className).\(n)' is \(info.schema.properties[i].type)")
            }
            return .string(i, op, s, options)
        case .isIn(let l, let r, let options):
            guard case .property(let n) = l, case .list(let values) = r else {
                throw QueryError("IN needs a property on the left and a list {a, b} or an array argument on the right")
            }
            let i = try index(n)
            return .isIn(i, values.map { coerce($0, for: i) }, options)
        case .between(let l, let r):
            guard case .property(let n) = l, case .list(let values) = r, values.count == 2 else {
                throw QueryError("BETWEEN needs a property on the left and {low, high} on the right")
            }
            let i = try index(n)
            return .between(i, coerce(values[0], for: i), coerce(values[1], for: i))
        case .and(let a, let b): return .and(try a.resolve(info), try b.resolve(info))
        case .or(let a, let b): return .or(try a.resolve(info), try b.resolve(info))
        case .not(let a): return .not(try a.resolve(info))
        }
    }
}

/// A malformed or unsupported query, with the position when it came from a string.
struct QueryError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}
