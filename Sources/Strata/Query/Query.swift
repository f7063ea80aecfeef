import Foundation

/// A type-safe query: `realm.objects(Person.self).where { $0.age > 18 && $0.name.starts(with: "A") }`.
@dynamicMemberLookup
public struct Query<T> {
    private let base: QueryExpr
    /// A chain of `||` (or `&&`) built term by term: the terms in one shared buffer, of which this query is
    /// the first `count`. Appending where the buffer ends costs O(1), so a loop joining 100,000 conditions is
    /// linear, and the expression is built as a balanced tree (no recursion 100,000 calls deep when it is
    /// resolved, evaluated or freed).
    private let chain: (terms: QueryTerms, count: Int)?

    init(_ expression: QueryExpr) {
        base = expression
        chain = nil
    }

    private init(chain terms: QueryTerms, count: Int) {
        base = .truePredicate
        chain = (terms, count)
    }

    var expression: QueryExpr {
        guard let chain else { return base }
        let terms = Array(chain.terms.items[0..<chain.count])
        return QueryParser.balanced(terms, chain.terms.isOr ? QueryExpr.or : QueryExpr.and)
    }

    /// `lhs` joined with `rhs` by OR (`isOr`) or AND.
    static func joined(_ lhs: Query<Bool>, _ rhs: Query<Bool>, isOr: Bool) -> Query<Bool> {
        if let c = lhs.chain, c.terms.isOr == isOr, c.terms.items.count == c.count {
            c.terms.items.append(rhs.expression)
            return Query<Bool>(chain: c.terms, count: c.count + 1)
        }
        return Query<Bool>(chain: QueryTerms(items: [lhs.expression, rhs.expression], isOr: isOr), count: 2)
    }

    public subscript<V>(dynamicMember keyPath: KeyPath<T, V>) -> Query<V> where T: Object {
        Query<V>(.property(TypeRegistry.info(for: T.self).name(of: keyPath)))
    }
}

/// Value types that queries can order (`<`, `>`, ranges).
public protocol _QueryComparable: _Persistable {}
extension Int: _QueryComparable {}
extension Int8: _QueryComparable {}
extension Int16: _QueryComparable {}
extension Int32: _QueryComparable {}
extension Int64: _QueryComparable {}
extension Float: _QueryComparable {}
extension Double: _QueryComparable {}
extension String: _QueryComparable {}
extension Date: _QueryComparable {}
extension UUID: _QueryComparable {}
extension ObjectId: _QueryComparable {}
extension Optional: _QueryComparable where Wrapped: _QueryComparable {}

/// String-valued properties (optional or not).
public protocol _QueryString: _Persistable {}
extension String: _QueryString {}
extension Optional: _QueryString where Wrapped == String {}

/// Options of string queries, as RealmSwift's.
public struct StringOptionSet: OptionSet, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public static let caseInsensitive = StringOptionSet(rawValue: 1)
    public static let diacriticInsensitive = StringOptionSet(rawValue: 2)
    var internalOptions: StringOptions { StringOptions(rawValue: rawValue) }
}

extension Query where T: _Persistable {
    public static func == (lhs: Query<T>, rhs: T) -> Query<Bool> { Query<Bool>(.comparison(lhs.expression, .equal, .value(rhs._storedValue), [])) }
    public static func != (lhs: Query<T>, rhs: T) -> Query<Bool> { Query<Bool>(.comparison(lhs.expression, .notEqual, .value(rhs._storedValue), [])) }

    /// Matches when the property equals one of `values`.
    public func `in`<C: Sequence>(_ values: C) -> Query<Bool> where C.Element == T {
        Query<Bool>(.isIn(expression, .list(values.map(\._storedValue)), []))
    }
}

/// Two properties of the object compared with each other (`$0.readCount <= $0.total`), as RealmSwift's
/// queries take them; the types may differ as numbers do (`Int` with `Double?`).
extension Query where T: _Persistable {
    public static func == <U: _Persistable>(lhs: Query<T>, rhs: Query<U>) -> Query<Bool> {
        Query<Bool>(.comparison(lhs.expression, .equal, rhs.expression, []))
    }
    public static func != <U: _Persistable>(lhs: Query<T>, rhs: Query<U>) -> Query<Bool> {
        Query<Bool>(.comparison(lhs.expression, .notEqual, rhs.expression, []))
    }
}

extension Query where T: _QueryComparable {
    public static func < <U: _QueryComparable>(lhs: Query<T>, rhs: Query<U>) -> Query<Bool> {
        Query<Bool>(.comparison(lhs.expression, .less, rhs.expression, []))
    }
    public static func <= <U: _QueryComparable>(lhs: Query<T>, rhs: Query<U>) -> Query<Bool> {
        Query<Bool>(.comparison(lhs.expression, .lessOrEqual, rhs.expression, []))
    }
    public static func > <U: _QueryComparable>(lhs: Query<T>, rhs: Query<U>) -> Query<Bool> {
        Query<Bool>(.comparison(lhs.expression, .greater, rhs.expression, []))
    }
    public static func >= <U: _QueryComparable>(lhs: Query<T>, rhs: Query<U>) -> Query<Bool> {
        Query<Bool>(.comparison(lhs.expression, .greaterOrEqual, rhs.expression, []))
    }
}

extension Query where T: _QueryComparable {
    public static func < (lhs: Query<T>, rhs: T) -> Query<Bool> { Query<Bool>(.comparison(lhs.expression, .less, .value(rhs._storedValue), [])) }
    public static func <= (lhs: Query<T>, rhs: T) -> Query<Bool> { Query<Bool>(.comparison(lhs.expression, .lessOrEqual, .value(rhs._storedValue), [])) }
    public static func > (lhs: Query<T>, rhs: T) -> Query<Bool> { Query<Bool>(.comparison(lhs.expression, .greater, .value(rhs._storedValue), [])) }
    public static func >= (lhs: Query<T>, rhs: T) -> Query<Bool> { Query<Bool>(.comparison(lhs.expression, .greaterOrEqual, .value(rhs._storedValue), [])) }

    /// Matches values within `range`.
    public func contains(_ range: ClosedRange<T>) -> Query<Bool> where T: Comparable {
        Query<Bool>(.between(expression, .list([range.lowerBound._storedValue, range.upperBound._storedValue])))
    }
}

extension Query where T: _QueryString {
    public func starts(with prefix: String, options: StringOptionSet = []) -> Query<Bool> {
        Query<Bool>(.stringOp(expression, .beginsWith, .value(.string(prefix)), options.internalOptions))
    }
    public func ends(with suffix: String, options: StringOptionSet = []) -> Query<Bool> {
        Query<Bool>(.stringOp(expression, .endsWith, .value(.string(suffix)), options.internalOptions))
    }
    public func contains(_ substring: String, options: StringOptionSet = []) -> Query<Bool> {
        Query<Bool>(.stringOp(expression, .contains, .value(.string(substring)), options.internalOptions))
    }
    /// `*` matches any run of characters, `?` any one.
    public func like(_ pattern: String, caseInsensitive: Bool = false) -> Query<Bool> {
        Query<Bool>(.stringOp(expression, .like, .value(.string(pattern)), caseInsensitive ? .caseInsensitive : []))
    }
    public func equals(_ value: String, options: StringOptionSet = []) -> Query<Bool> {
        Query<Bool>(.comparison(expression, .equal, .value(.string(value)), options.internalOptions))
    }
}

extension Query where T == Bool {
    public static func && (lhs: Query<Bool>, rhs: Query<Bool>) -> Query<Bool> { joined(lhs, rhs, isOr: false) }
    public static func || (lhs: Query<Bool>, rhs: Query<Bool>) -> Query<Bool> { joined(lhs, rhs, isOr: true) }
    public static prefix func ! (q: Query<Bool>) -> Query<Bool> { Query<Bool>(.not(q.expression)) }
}

// MARK: - Key paths through links and collections

/// Properties that lead to objects of another type: optional links, lists and sets of objects, linking
/// objects. A query goes on through them: `$0.owner.name == "x"`, `$0.dogs.age > 5` (any dog).
public protocol _QueryLink {
    associatedtype _LinkTarget: Object
}
extension Optional: _QueryLink where Wrapped: Object { public typealias _LinkTarget = Wrapped }
extension List: _QueryLink where Element: Object { public typealias _LinkTarget = Element }
extension MutableSet: _QueryLink where Element: Object { public typealias _LinkTarget = Element }
extension LinkingObjects: _QueryLink { public typealias _LinkTarget = Element }

/// Collection properties: `List`, `MutableSet`, `LinkingObjects`.
public protocol _QueryCollection {
    associatedtype _QueryElement
}
extension List: _QueryCollection { public typealias _QueryElement = Element }
extension MutableSet: _QueryCollection { public typealias _QueryElement = Element }
extension LinkingObjects: _QueryCollection { public typealias _QueryElement = Element }

extension Query {
    /// The key path this query reads, extended by `name`.
    fileprivate func appending(_ name: String) -> QueryExpr {
        guard case .property(let prefix) = expression else {
            fatalError("a key path in a query must start at the queried object, as in $0.owner.name")
        }
        return .property(prefix + "." + name)
    }
}

extension Query where T: _QueryLink {
    /// A property of the object (or objects) this link or collection leads to.
    public subscript<V>(dynamicMember keyPath: KeyPath<T._LinkTarget, V>) -> Query<V> {
        Query<V>(appending(TypeRegistry.info(for: T._LinkTarget.self).name(of: keyPath)))
    }
}

extension Query where T: _QueryCollection {
    /// The number of elements: `$0.dogs.count > 2`.
    public var count: Query<Int> { Query<Int>(appending("@count")) }
}

extension Query where T: _QueryCollection, T._QueryElement: _Persistable {
    /// Whether the collection holds `value`: `$0.tags.contains("red")`, `$0.dogs.contains(rex)`.
    public func contains(_ value: T._QueryElement) -> Query<Bool> {
        Query<Bool>(.comparison(expression, .equal, .value(value._linkedObject.flatMap(\._accessor).map { .link($0.key) } ?? value._storedValue), []))
    }
}

extension Query where T: _QueryCollection, T._QueryElement: _Persistable {
    /// Whether the collection holds any of `values`: `$0.tags.containsAny(in: ["red", "blue"])`,
    /// `$0.dogs.containsAny(in: [rex, bo])`, a map's values for a `Map`.
    public func containsAny<U: Sequence>(in values: U) -> Query<Bool> where U.Element == T._QueryElement {
        let stored = values.map { $0._linkedObject.flatMap(\._accessor).map { .link($0.key) } ?? $0._storedValue }
        return Query<Bool>(.isIn(expression, .list(stored), []))
    }
}

extension Query where T: _QueryCollection, T._QueryElement: _QueryComparable {
    /// The smallest element (nil for an empty collection): `$0.scores.min < 3`.
    public var min: Query<T._QueryElement> { Query<T._QueryElement>(appending("@min")) }
    /// The largest element (nil for an empty collection).
    public var max: Query<T._QueryElement> { Query<T._QueryElement>(appending("@max")) }
    /// The sum of the elements (0 for an empty collection).
    public var sum: Query<T._QueryElement> { Query<T._QueryElement>(appending("@sum")) }
    /// The average of the elements (nil for an empty collection).
    public var avg: Query<Double> { Query<Double>(appending("@avg")) }
}

extension Map: _QueryCollection { public typealias _QueryElement = Value }

/// A `Map` in a type-safe query.
public protocol _QueryMap {
    associatedtype _QueryKey
    associatedtype _QueryValue
}
extension Map: _QueryMap {
    public typealias _QueryKey = Key
    public typealias _QueryValue = Value
}

extension Query where T: _QueryMap, T._QueryKey == String {
    /// The map's value for `key` (nil when it has none): `$0.settings["theme"] == "dark"`.
    public subscript(key: String) -> Query<T._QueryValue> {
        guard case .property(let path) = expression else {
            fatalError("a key path in a query must start at the queried object, as in $0.settings[\"key\"]")
        }
        return Query<T._QueryValue>(.property(path + "[" + key + "]"))
    }

    /// The map's keys: `$0.settings.keys == "theme"` (any of them).
    public var keys: Query<String> { Query<String>(appending("@keys")) }
    /// The map's values: `$0.scores.values > 3` (any of them).
    public var values: Query<T._QueryValue> { Query<T._QueryValue>(appending("@values")) }
}

/// The terms of a chain of one operator, shared by the queries that are prefixes of it (`Query.joined`).
final class QueryTerms {
    var items: [QueryExpr]
    let isOr: Bool
    init(items: [QueryExpr], isOr: Bool) {
        self.items = items
        self.isOr = isOr
    }
}
