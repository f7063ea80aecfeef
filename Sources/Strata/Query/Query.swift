import Foundation

/// A type-safe query: `realm.objects(Person.self).where { $0.age > 18 && $0.name.starts(with: "A") }`.
@dynamicMemberLookup
public struct Query<T> {
    let expression: QueryExpr

    init(_ expression: QueryExpr) { self.expression = expression }

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
    public static func && (lhs: Query<Bool>, rhs: Query<Bool>) -> Query<Bool> { Query<Bool>(.and(lhs.expression, rhs.expression)) }
    public static func || (lhs: Query<Bool>, rhs: Query<Bool>) -> Query<Bool> { Query<Bool>(.or(lhs.expression, rhs.expression)) }
    public static prefix func ! (q: Query<Bool>) -> Query<Bool> { Query<Bool>(.not(q.expression)) }
}
