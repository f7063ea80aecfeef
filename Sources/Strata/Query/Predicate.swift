import Foundation

/// Comparison operators of queries.
enum CompareOp: String, Sendable {
    case equal = "==", notEqual = "!=", less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">="
}

extension CompareOp {
    /// The operator with its operands swapped (`3 < age` is `age > 3`).
    var flipped: CompareOp {
        switch self {
        case .less: .greater
        case .lessOrEqual: .greaterOrEqual
        case .greater: .less
        case .greaterOrEqual: .lessOrEqual
        default: self
        }
    }
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

    /// A condition on a key path through links or into a collection.
    case path(KeyPathOperand, Quantifier, ValueTest)
    /// The number of elements of a collection that match a predicate (`SUBQUERY(...).@count`), compared.
    case subquery(Subquery, CompareOp, StoredValue)
    /// Two properties (or key paths) compared with each other: true when some value of the left and some
    /// value of the right satisfy the comparison (one value each for plain properties).
    case compareOperands(ResolvedOperand, Quantifier, CompareOp, ResolvedOperand, StringOptions)

    /// Whether the object `key`, read through `r`, matches. `context` reads the objects links lead to; without
    /// one (no Realm), links lead nowhere.
    func evaluate(_ r: RecordRef, key: Int64 = 0, in context: QueryContext? = nil) -> Bool {
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
        case .and(let a, let b): return a.evaluate(r, key: key, in: context) && b.evaluate(r, key: key, in: context)
        case .or(let a, let b): return a.evaluate(r, key: key, in: context) || b.evaluate(r, key: key, in: context)
        case .not(let a): return !a.evaluate(r, key: key, in: context)
        case .path(let operand, let quantifier, let test): return operand.evaluate(r, key: key, context, quantifier, test)
        case .subquery(let sub, let op, let v):
            return Self.compare(.int(Int64(sub.count(r, key: key, context))), op, v, [])
        case .compareOperands(let a, let quantifier, let op, let b, let options):
            let left = a.values(r, key: key, context), right = b.values(r, key: key, context)
            let holds = { (x: StoredValue) in right.contains { y in Self.compare(x, op, y, options) } }
            switch quantifier {
            case .any: return left.contains(where: holds)
            case .all: return left.allSatisfy(holds)
            case .none: return !left.contains(where: holds)
            }
        }
    }

    /// The partitions of the other types the predicate reads through links (empty when it reads only the
    /// object's own record): a change to one of them can change which objects match.
    var linkedPartitions: Set<UInt32> {
        switch self {
        case .constant, .compare, .string, .isIn, .between: return []
        case .and(let a, let b), .or(let a, let b): return a.linkedPartitions.union(b.linkedPartitions)
        case .not(let a): return a.linkedPartitions
        case .subquery(let sub, _, _):
            var out = sub.predicate.linkedPartitions
            out.insert(sub.element.partition)
            for link in sub.links { out.insert(link.target.partition) }
            if case .inverse(let origin, _) = sub.collection { out.insert(origin.partition) }
            return out
        case .compareOperands(let a, _, _, let b, _):
            var out = Set<UInt32>()
            for side in [a, b] {
                if case .path(let p) = side { out.formUnion(Predicate.path(p, .any, .compare(.equal, .null, [])).linkedPartitions) }
            }
            return out
        case .path(let operand, _, _):
            var out = Set<UInt32>()
            for step in operand.steps {
                switch step {
                case .link(_, let t), .list(_, let t): out.insert(t.partition)
                case .inverse(let origin, _): out.insert(origin.partition)
                }
            }
            switch operand.leaf {
            // A link's target only matters inside a write transaction, where no observer runs.
            case .value, .links, .mapValues, .mapKeys, .mapValue: break
            case .count(let c), .aggregate(_, let c, _):
                switch c {
                case .property(_, let target): if let target { out.insert(target.partition) }
                case .inverse(let origin, _): out.insert(origin.partition)
                case .mapValues: break
                }
            }
            return out
        }
    }

    /// Whether evaluating needs a `QueryContext` (the predicate reads links or goes through them).
    var readsOtherObjects: Bool {
        switch self {
        case .constant, .compare, .string, .isIn, .between: return false
        case .and(let a, let b), .or(let a, let b): return a.readsOtherObjects || b.readsOtherObjects
        case .not(let a): return a.readsOtherObjects
        case .path, .subquery: return true
        case .compareOperands(let a, _, _, let b, _):
            if case .path = a { return true }
            if case .path = b { return true }
            return false
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

    @inline(__always)
    static func compare(_ a: Int64, _ op: CompareOp, _ b: Int64) -> Bool {
        switch op {
        case .equal: a == b
        case .notEqual: a != b
        case .less: a < b
        case .lessOrEqual: a <= b
        case .greater: a > b
        case .greaterOrEqual: a >= b
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
    /// `ANY`, `ALL` or `NONE` before a key path.
    case quantified(Quantifier, String)
    /// `SUBQUERY(collection, $variable, predicate).@count`: how many elements of a collection match.
    case subquery(collection: String, variable: String, predicate: QueryExpr)
    case value(StoredValue)
    case list([StoredValue])
    case comparison(QueryExpr, CompareOp, QueryExpr, StringOptions)
    case stringOp(QueryExpr, StringOp, QueryExpr, StringOptions)
    case isIn(QueryExpr, QueryExpr, StringOptions)
    case between(QueryExpr, QueryExpr)
    case and(QueryExpr, QueryExpr)
    case or(QueryExpr, QueryExpr)
    case not(QueryExpr)

    /// Resolves property names against `info`; `bindings` finds the types key paths through links lead to.
    /// Errors name the type, the property and what was wrong.
    /// Whether a query constant can be compared with a property of `type` (nil always can; numbers with any
    /// numeric property, as in Realm; links, mixed and collections' counts are checked elsewhere).
    static func comparable(_ v: StoredValue, with type: PropertyType) -> Bool {
        switch (type, v) {
        case (_, .null), (.any, _), (.object, _), (.linkingObjects, _): return true
        case (.int, .int), (.int, .double), (.int, .float), (.int, .decimal), (.int, .bool): return true
        case (.double, .int), (.double, .double), (.double, .float), (.double, .decimal): return true
        case (.float, .int), (.float, .double), (.float, .float), (.float, .decimal): return true
        case (.decimal128, .int), (.decimal128, .double), (.decimal128, .float), (.decimal128, .decimal): return true
        case (.bool, .bool), (.bool, .int): return true
        case (.string, .string), (.data, .data), (.date, .date), (.objectId, .objectId), (.UUID, .uuid): return true
        default: return false
        }
    }

    /// Realm's name of a property type in its query errors (its schema errors' name, but "decimal128").
    static func realmTypeName(_ type: PropertyType) -> String {
        type == .decimal128 ? "decimal128" : SchemaDiff.valueTypeName(type)
    }

    static func describe(_ v: StoredValue) -> String {
        switch v {
        case .string(let s): s
        case .int(let i): "\(i)"
        case .double(let d): "\(d)"
        case .float(let f): "\(f)"
        case .bool(let b): b ? "true" : "false"
        default: "\(v)"
        }
    }

    /// A numeric constant as the type of the property it is compared with (`weight > 3` on a Double).
    static func coerce(_ v: StoredValue, for type: PropertyType) -> StoredValue {
        switch (type, v) {
        case (.double, .int(let x)): return .double(Double(x))
        case (.float, .int(let x)): return .float(Float(x))
        case (.float, .double(let x)): return .float(Float(x))
        default: return v
        }
    }

    func resolve(_ info: TypeInfo, bindings: BindingResolver? = nil) throws -> Predicate {
        func flip(_ op: CompareOp) -> CompareOp { op.flipped }
        func coerce(_ v: StoredValue, for type: PropertyType) -> StoredValue { Self.coerce(v, for: type) }
        /// `coerce`, after checking that a constant can be compared with a property of `type` at all: one of
        /// another kind is Realm's "Invalid value" error, never a query that silently matches nothing.
        func checked(_ v: StoredValue, for type: PropertyType, _ name: String) throws -> StoredValue {
            guard Self.comparable(v, with: type) else {
                throw QueryError(
                    "Expected object of type \(Self.realmTypeName(type)) for property '\(name)' on object of type "
                        + "'\(info.schema.className)', but received: \(Self.describe(v))")
            }
            return coerce(v, for: type)
        }
        /// A key path with its quantifier (nil when none was written).
        func operand(_ e: QueryExpr) -> (String, Quantifier?)? {
            switch e {
            case .property(let n): return (n, nil)
            case .quantified(let q, let n): return (n, q)
            default: return nil
            }
        }
        /// The predicate testing the key path `name` with `test` (built for the path's final type).
        func condition(_ name: String, _ quantifier: Quantifier?, _ test: (PropertyType) throws -> ValueTest) throws -> Predicate {
            let (resolved, type) = try info.resolveKeyPath(name, bindings: bindings)
            switch resolved {
            case .property(let i):
                if let quantifier {
                    throw QueryError("\(quantifier.rawValue) needs a key path through a List, MutableSet or LinkingObjects; '\(info.schema.className).\(name)' is a single value")
                }
                switch try test(type) {
                case .compare(let op, let v, let options): return .compare(i, op, v, options)
                case .string(let op, let s, let options): return .string(i, op, s, options)
                case .isIn(let vs, let options): return .isIn(i, vs, options)
                case .between(let lo, let hi): return .between(i, lo, hi)
                }
            case .path(let path):
                if let quantifier, !path.isToMany {
                    throw QueryError("\(quantifier.rawValue) needs a key path through a List, MutableSet or LinkingObjects; '\(name)' reaches a single value")
                }
                return .path(path, quantifier ?? .any, try test(type))
            }
        }
        switch self {
        case .truePredicate: return .constant(true)
        case .falsePredicate: return .constant(false)
        case .property(let name), .quantified(_, let name):
            // A Bool property alone is the condition `name == true`.
            let q: Quantifier? = if case .quantified(let q, _) = self { q } else { nil }
            return try condition(name, q) { type in
                guard type == .bool else {
                    throw QueryError("'\(info.schema.className).\(name)' is not a Bool and cannot be a condition on its own")
                }
                return .compare(.equal, .bool(true), [])
            }
        case .value(.bool(let b)): return .constant(b)
        case .value, .list: throw QueryError("a value alone is not a condition")
        case .comparison(.subquery(let collection, let variable, let inner), let op, .value(let v), _):
            return .subquery(try Subquery.resolve(collection, variable, inner, in: info, bindings: bindings), op, v)
        case .comparison(.value(let v), let op, .subquery(let collection, let variable, let inner), _):
            return .subquery(try Subquery.resolve(collection, variable, inner, in: info, bindings: bindings), flip(op), v)
        case .subquery:
            throw QueryError("SUBQUERY(...).@count must be compared with a number")
        case .comparison(let l, let op, let r, let options):
            if case let (n, q)? = operand(l), case .value(let v) = r {
                return try condition(n, q) { .compare(op, try checked(v, for: $0, n), options) }
            }
            if case .value(let v) = l, case let (n, q)? = operand(r) {
                return try condition(n, q) { .compare(flip(op), try checked(v, for: $0, n), options) }
            }
            if case let (ln, lq)? = operand(l), case let (rn, rq)? = operand(r) {
                // Two key paths compared with each other (`age > score`, `owner.city == city`).
                guard rq == nil else { throw QueryError("ANY, ALL and NONE go before the left key path of a comparison of two key paths") }
                let (left, leftType) = try info.resolveKeyPath(ln, bindings: bindings)
                let (right, rightType) = try info.resolveKeyPath(rn, bindings: bindings)
                let numeric: Set<PropertyType> = [.int, .float, .double, .decimal128]
                guard leftType == rightType || (numeric.contains(leftType) && numeric.contains(rightType)) else {
                    throw QueryError("cannot compare '\(ln)' (\(leftType)) with '\(rn)' (\(rightType)) in '\(info.schema.className)'")
                }
                return .compareOperands(left, lq ?? .any, op, right, options)
            }
            throw QueryError("a comparison needs a property on one side and a value on the other")
        case .stringOp(let l, let op, let r, let options):
            guard case let (n, q)? = operand(l), case .value(.string(let s)) = r else {
                throw QueryError("\(op.rawValue) needs a string property on the left and a string on the right")
            }
            return try condition(n, q) { type in
                guard type == .string else {
                    throw QueryError("\(op.rawValue) needs a string property; '\(info.schema.className).\(n)' is \(type)")
                }
                return .string(op, s, options)
            }
        case .isIn(let l, let r, let options):
            if case let (n, q)? = operand(l), case .list(let values) = r {
                return try condition(n, q) { type in .isIn(try values.map { try checked($0, for: type, n) }, options) }
            }
            // `value IN collection`: some element equals the value.
            if case .value(let v) = l, case let (n, q)? = operand(r), q == nil {
                return try condition(n, .any) { .compare(.equal, try checked(v, for: $0, n), options) }
            }
            throw QueryError("IN needs a property on the left and a list {a, b} or an array argument on the right, or a value on the left and a collection property on the right")
        case .between(let l, let r):
            guard case let (n, q)? = operand(l), case .list(let values) = r, values.count == 2 else {
                throw QueryError("BETWEEN needs a property on the left and {low, high} on the right")
            }
            return try condition(n, q) { .between(try checked(values[0], for: $0, n), try checked(values[1], for: $0, n)) }
        case .and(let a, let b): return .and(try a.resolve(info, bindings: bindings), try b.resolve(info, bindings: bindings))
        case .or(let a, let b): return .or(try a.resolve(info, bindings: bindings), try b.resolve(info, bindings: bindings))
        case .not(let a): return .not(try a.resolve(info, bindings: bindings))
        }
    }
}

/// A malformed or unsupported query, with the position when it came from a string.
struct QueryError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}
