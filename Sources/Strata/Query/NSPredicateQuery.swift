import Foundation

// Queries from `NSPredicate`s: `filter(_: NSPredicate)` and `index(matching: NSPredicate)` on `Results`, on
// every `RealmCollection` and on `Results` of projections, read as RealmSwift reads predicates (realm-swift's
// RLMQueryUtil): compound predicates, comparisons of a key path with a constant or another key path, `ANY`,
// `IN` and `BETWEEN` with an array or `{…}`, `%@ IN keyPath`, `SUBQUERY(…).@count`, `TRUEPREDICATE`.
//
// Foundation's classes are read in one place, `PredicateTree.init(_:)`, into a plain tree of the fields a
// query needs; what follows (which forms are queries and which query each is) works on that tree, the same on
// every platform, and becomes the `QueryExpr` that a string query parses to. Comparison predicates
// (`NSComparisonPredicate`, `NSExpression`) exist on Apple platforms only: swift-corelibs-foundation marks
// them unavailable and cannot parse `NSPredicate(format:)`. On Linux the `NSPredicate`s a query can take are
// `NSPredicate(value:)` and compound predicates of them, and queries are written as strings
// (`filter("age > %@", 18)`, the same syntax) or type-safe (`where { $0.age > 18 }`).

/// An `NSPredicate`, copied out of Foundation's classes field by field.
indirect enum PredicateTree {
    case value(Bool)
    case and([PredicateTree])
    case or([PredicateTree])
    /// `NOT`: its first subpredicate, as Foundation evaluates it.
    case not([PredicateTree])
    case comparison(
        left: ExpressionTree, operator: ComparisonOperator, right: ExpressionTree, modifier: ComparisonModifier, options: StringOptions
    )
    /// A predicate that no query expresses (one made with a block, or of a class of its own): its description.
    case unsupported(String)
}

/// An `NSExpression`, copied field by field.
indirect enum ExpressionTree {
    case keyPath(String)
    case constant(Any?)
    /// `{1, 2}` written in the format (an array given as `%@` is a constant).
    case aggregate([ExpressionTree])
    case evaluatedObject
    case variable(String)
    case function(name: String, operand: ExpressionTree, arguments: [ExpressionTree])
    /// `SUBQUERY(collection, $variable, predicate)`, its predicate read after the variable was replaced by the
    /// evaluated object (as RealmSwift does), so that its key paths are the element's.
    case subquery(collection: ExpressionTree, variable: String, predicate: PredicateTree)
    /// Any other kind of expression: its description.
    case other(String)
}

/// `NSComparisonPredicate.Operator`.
enum ComparisonOperator: String {
    case less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">=", equal = "==", notEqual = "!="
    case matches = "MATCHES", like = "LIKE", beginsWith = "BEGINSWITH", endsWith = "ENDSWITH", contains = "CONTAINS"
    case `in` = "IN", between = "BETWEEN", customSelector = "custom selector"
}

/// `NSComparisonPredicate.Modifier`.
enum ComparisonModifier {
    case direct, all, any
}

extension PredicateTree {
    /// The predicate's tree. Compound and constant predicates are read on every platform; comparisons where
    /// Foundation has them.
    init(_ predicate: NSPredicate) {
        if let compound = predicate as? NSCompoundPredicate {
            // `[Any]` on Apple platforms, `[NSPredicate]` in swift-corelibs-foundation.
            let subpredicates: [Any] = compound.subpredicates
            let terms = subpredicates.map { ($0 as? NSPredicate).map(PredicateTree.init) ?? .unsupported("\($0)") }
            switch compound.compoundPredicateType {
            case .and: self = .and(terms)
            case .or: self = .or(terms)
            default: self = .not(terms)
            }
            return
        }
        #if canImport(Darwin)
        if let comparison = predicate as? NSComparisonPredicate {
            self = PredicateTree(comparison: comparison)
            return
        }
        #endif
        if predicate.isEqual(NSPredicate(value: true)) {
            self = .value(true)
        } else if predicate.isEqual(NSPredicate(value: false)) {
            self = .value(false)
        } else {
            self = .unsupported("\(predicate)")
        }
    }

    /// The query this predicate is; errors give RealmSwift's reasons.
    func query() throws -> QueryExpr {
        switch self {
        case .value(let v): return v ? .truePredicate : .falsePredicate
        // An AND of nothing is true and an OR of nothing false (NSCompoundPredicate's documentation).
        case .and(let terms): return terms.isEmpty ? .truePredicate : QueryParser.balanced(try terms.map { try $0.query() }, QueryExpr.and)
        case .or(let terms): return terms.isEmpty ? .falsePredicate : QueryParser.balanced(try terms.map { try $0.query() }, QueryExpr.or)
        case .not(let terms):
            guard let first = terms.first else { throw QueryError("a NOT predicate has no subpredicate") }
            return .not(try first.query())
        case .unsupported(let description):
            throw QueryError(
                "Invalid predicate: only compound, comparison, and constant predicates are supported ('\(description)' is none of them; "
                    + "a predicate made with a block cannot be run as a query: write it as a string or type-safe query)")
        case .comparison(let left, let op, let right, let modifier, let options):
            return try Self.comparison(left.simplified, op, right.simplified, modifier, options)
        }
    }

    private static func comparison(
        _ left: ExpressionTree, _ op: ComparisonOperator, _ right: ExpressionTree, _ modifier: ComparisonModifier, _ options: StringOptions
    ) throws -> QueryExpr {
        // "%@ IN key.path" is "ANY key.path == %@" (RealmSwift rewrites it the same way, without options).
        if op == .in, case .constant = left, case .keyPath = right {
            return try comparison(right, .equal, left, .any, [])
        }
        let l = try operand(left, modifier: modifier)
        let r = try operand(right, modifier: .direct)
        switch op {
        case .less: return .comparison(l, .less, r, options)
        case .lessOrEqual: return .comparison(l, .lessOrEqual, r, options)
        case .greater: return .comparison(l, .greater, r, options)
        case .greaterOrEqual: return .comparison(l, .greaterOrEqual, r, options)
        case .equal: return .comparison(l, .equal, r, options)
        case .notEqual: return .comparison(l, .notEqual, r, options)
        case .beginsWith: return .stringOp(l, .beginsWith, r, options)
        case .endsWith: return .stringOp(l, .endsWith, r, options)
        case .contains: return .stringOp(l, .contains, r, options)
        case .like: return .stringOp(l, .like, r, options)
        case .in:
            guard case .keyPath = left, case .list = r else {
                throw QueryError("predicate with IN operator must compare a KeyPath with an aggregate")
            }
            return .isIn(l, r, options)
        case .between:
            guard case .keyPath = left, case .list(let bounds) = r, bounds.count == 2 else {
                throw QueryError("predicate with BETWEEN operator must compare a KeyPath with an aggregate with two values")
            }
            return .between(l, r)
        case .matches, .customSelector:
            throw QueryError("operator '\(op.rawValue)' not supported")
        }
    }

    private static func operand(_ e: ExpressionTree, modifier: ComparisonModifier) throws -> QueryExpr {
        switch (e, modifier) {
        case (.keyPath(let path), .direct): return .property(path)
        case (.keyPath(let path), .any): return .quantified(.any, path)
        case (.keyPath(let path), .all): return .quantified(.all, path)
        case (_, .any), (_, .all):
            throw QueryError("ANY and ALL apply to a key path")
        case (.constant(let v), _):
            if let array = v as? [Any?] { return .list(try array.map(QueryParser.value)) }
            if let array = v as? [Any] { return .list(try array.map { try QueryParser.value($0) }) }
            return .value(try QueryParser.value(v))
        case (.aggregate(let items), _):
            return .list(
                try items.map { item in
                    guard case .constant(let v) = item else { throw QueryError("an aggregate { … } holds constant values only") }
                    return try QueryParser.value(v)
                })
        case (.function(let name, .subquery(let collection, let variable, let inner), let arguments), _):
            guard name == "valueForKeyPath:", arguments.count == 1, case .keyPath("@count") = arguments[0] else {
                throw QueryError("SUBQUERY is only supported when immediately followed by .@count that is compared with a constant number")
            }
            guard case .keyPath(let path) = collection.simplified else {
                throw QueryError("the collection of a SUBQUERY is a key path")
            }
            let name = "$" + variable
            return .subquery(collection: path, variable: name, predicate: try inner.query().prefixingKeyPaths(with: name + "."))
        case (.function(let name, _, _), _):
            throw QueryError("the '\(name)' function is not supported")
        case (.subquery, _):
            throw QueryError("SUBQUERY is only supported when immediately followed by .@count")
        case (.evaluatedObject, _), (.variable, _), (.other, _):
            throw QueryError("predicate expressions must compare a keypath and another keypath or a constant value")
        }
    }
}

extension ExpressionTree {
    /// `SELF.valueForKeyPath("name")`, which substituting a SUBQUERY's variable leaves, as the key path `name`.
    var simplified: ExpressionTree {
        if case .function("valueForKeyPath:", .evaluatedObject, let arguments) = self, arguments.count == 1, case .keyPath = arguments[0] {
            return arguments[0]
        }
        return self
    }
}

extension QueryExpr {
    /// The query with `prefix` before each key path: a SUBQUERY's predicate, read with the element's key
    /// paths, in the `$variable.` form that a SUBQUERY's predicate is resolved in.
    func prefixingKeyPaths(with prefix: String) -> QueryExpr {
        switch self {
        case .truePredicate, .falsePredicate, .value, .list: return self
        case .property(let name): return .property(prefix + name)
        case .quantified(let q, let name): return .quantified(q, prefix + name)
        case .subquery(let collection, let variable, let predicate): return .subquery(collection: prefix + collection, variable: variable, predicate: predicate)
        case .comparison(let a, let op, let b, let o): return .comparison(a.prefixingKeyPaths(with: prefix), op, b.prefixingKeyPaths(with: prefix), o)
        case .stringOp(let a, let op, let b, let o): return .stringOp(a.prefixingKeyPaths(with: prefix), op, b.prefixingKeyPaths(with: prefix), o)
        case .isIn(let a, let b, let o): return .isIn(a.prefixingKeyPaths(with: prefix), b.prefixingKeyPaths(with: prefix), o)
        case .between(let a, let b): return .between(a.prefixingKeyPaths(with: prefix), b.prefixingKeyPaths(with: prefix))
        case .and(let a, let b): return .and(a.prefixingKeyPaths(with: prefix), b.prefixingKeyPaths(with: prefix))
        case .or(let a, let b): return .or(a.prefixingKeyPaths(with: prefix), b.prefixingKeyPaths(with: prefix))
        case .not(let a): return .not(a.prefixingKeyPaths(with: prefix))
        }
    }
}

#if canImport(Darwin)
// The one part that only an Apple build compiles: reading NSComparisonPredicate and NSExpression, written to
// Foundation's documented API (not run on Linux, where these classes are unavailable).
extension PredicateTree {
    init(comparison p: NSComparisonPredicate) {
        let op: ComparisonOperator
        switch p.predicateOperatorType {
        case .lessThan: op = .less
        case .lessThanOrEqualTo: op = .lessOrEqual
        case .greaterThan: op = .greater
        case .greaterThanOrEqualTo: op = .greaterOrEqual
        case .equalTo: op = .equal
        case .notEqualTo: op = .notEqual
        case .matches: op = .matches
        case .like: op = .like
        case .beginsWith: op = .beginsWith
        case .endsWith: op = .endsWith
        case .in: op = .in
        case .contains: op = .contains
        case .between: op = .between
        case .customSelector: op = .customSelector
        @unknown default: op = .customSelector
        }
        let modifier: ComparisonModifier
        switch p.comparisonPredicateModifier {
        case .direct: modifier = .direct
        case .all: modifier = .all
        case .any: modifier = .any
        @unknown default: modifier = .direct
        }
        var options: StringOptions = []
        if p.options.contains(.caseInsensitive) { options.insert(.caseInsensitive) }
        if p.options.contains(.diacriticInsensitive) { options.insert(.diacriticInsensitive) }
        self = .comparison(
            left: ExpressionTree(p.leftExpression), operator: op, right: ExpressionTree(p.rightExpression), modifier: modifier, options: options)
    }
}

extension ExpressionTree {
    init(_ e: NSExpression) {
        switch e.expressionType {
        case .keyPath: self = .keyPath(e.keyPath)
        case .constantValue: self = .constant(Self.swiftValue(e.constantValue))
        case .aggregate: self = .aggregate(((e.collection as? [NSExpression]) ?? []).map(ExpressionTree.init))
        case .evaluatedObject: self = .evaluatedObject
        case .variable: self = .variable(e.variable)
        case .function: self = .function(name: e.function, operand: ExpressionTree(e.operand), arguments: (e.arguments ?? []).map(ExpressionTree.init))
        case .subquery:
            let inner = e.predicate.withSubstitutionVariables([e.variable: NSExpression.expressionForEvaluatedObject()])
            let collection = (e.collection as? NSExpression).map(ExpressionTree.init) ?? .other("\(e.collection)")
            self = .subquery(collection: collection, variable: e.variable, predicate: PredicateTree(inner))
        default: self = .other("\(e)")
        }
    }

    /// A constant as the Swift value a query argument is: an `NSNumber` as the `Bool`, `Double` or `Int64` it
    /// holds, `NSNull` as nil, arrays and sets element by element.
    static func swiftValue(_ value: Any?) -> Any? {
        guard let value else { return nil }
        switch value {
        case is NSNull: return nil
        case let n as NSNumber:
            if CFGetTypeID(n) == CFBooleanGetTypeID() { return n.boolValue }
            if CFNumberIsFloatType(n as CFNumber) { return n.doubleValue }
            return n.int64Value
        case let a as NSArray: return a.map { swiftValue($0) }
        case let s as NSSet: return s.allObjects.map { swiftValue($0) }
        default: return value
        }
    }
}
#endif

extension Results where Element: Object {
    /// The objects matching an `NSPredicate`; an invalid one traps with RealmSwift's reason.
    public func filter(_ predicate: NSPredicate) -> Results<Element> {
        do {
            return try filter(PredicateTree(predicate).query())
        } catch {
            fatalError("Invalid predicate: \(error)")
        }
    }
}

extension RealmCollection {
    /// The objects matching an `NSPredicate`, in the collection's order.
    public func filter(_ predicate: NSPredicate) -> Results<Element> {
        guard let results = _results else { fatalError("This method may only be called on RLMArray instances retrieved from an RLMRealm") }
        return results.filter(predicate)
    }

    /// The index of the first object matching an `NSPredicate`; nil when none does.
    public func index(matching predicate: NSPredicate) -> Int? {
        filter(predicate).first.flatMap { index(of: $0) }
    }
}

extension Results where Element: _ProjectionType {
    /// The projections of the objects matching an `NSPredicate` on the projected type.
    public func filter(_ predicate: NSPredicate) -> Results<Element> { Results(projecting: rootResults.filter(predicate)) }
}
