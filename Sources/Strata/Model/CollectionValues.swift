import Foundation

// The protocols RealmSwift's generic code is written against: what a collection may hold
// (`RealmCollectionValue`), and what it can take the minimum, the sum or the order of (`MinMaxType`,
// `AddableType`, `SortableType`). A helper such as
//
//     func total<T: RealmCollectionValue & AddableType>(_ list: List<T>) -> T { list.sum() }
//
// compiles against Strata as it does against RealmSwift.

/// What a `Results` can hold: objects and projections (`RealmFetchable`), and the values of collections
/// (`RealmCollectionValue`: `list.sorted(ascending: true)` is a `Results<Int>`).
public protocol _RealmResultsElement: Hashable, _PersistableMetatype {}

/// A type a `List`, `MutableSet`, `Map` or `Results` can hold: every persistable value type, objects, and the
/// optionals of those that may be nil in a collection.
public protocol RealmCollectionValue: _RealmResultsElement, _Persistable {}

/// A type a Realm can be asked for all of: `realm.objects(Dog.self)` and `realm.objects(DogProjection.self)`.
/// Generic code that loads "any model or projection" is written against it, as against RealmSwift's.
public protocol RealmFetchable: _RealmResultsElement {}
extension Object: RealmFetchable {}

/// A type that can be held inside an `Optional` in a collection (`List<Int?>`, `Map<String, Dog?>`).
public protocol _RealmCollectionValueInsideOptional: RealmCollectionValue {}

extension Int: _RealmCollectionValueInsideOptional {}
extension Int8: _RealmCollectionValueInsideOptional {}
extension Int16: _RealmCollectionValueInsideOptional {}
extension Int32: _RealmCollectionValueInsideOptional {}
extension Int64: _RealmCollectionValueInsideOptional {}
extension Float: _RealmCollectionValueInsideOptional {}
extension Double: _RealmCollectionValueInsideOptional {}
extension Bool: _RealmCollectionValueInsideOptional {}
extension String: _RealmCollectionValueInsideOptional {}
extension Date: _RealmCollectionValueInsideOptional {}
extension Data: _RealmCollectionValueInsideOptional {}
extension Decimal128: _RealmCollectionValueInsideOptional {}
extension ObjectId: _RealmCollectionValueInsideOptional {}
extension UUID: _RealmCollectionValueInsideOptional {}
extension Object: _RealmCollectionValueInsideOptional {}
extension AnyRealmValue: RealmCollectionValue {}
extension Optional: _RealmResultsElement where Wrapped: _RealmCollectionValueInsideOptional {}
extension Optional: RealmCollectionValue where Wrapped: _RealmCollectionValueInsideOptional {}

/// Values a collection's `min()` and `max()` (and `min(ofProperty:)`) accept.
public protocol MinMaxType {}
extension Int: MinMaxType {}
extension Int8: MinMaxType {}
extension Int16: MinMaxType {}
extension Int32: MinMaxType {}
extension Int64: MinMaxType {}
extension Float: MinMaxType {}
extension Double: MinMaxType {}
extension Date: MinMaxType {}
extension Decimal128: MinMaxType {}
extension AnyRealmValue: MinMaxType {}
extension Optional: MinMaxType where Wrapped: MinMaxType {}

/// Values a collection's `sum()` and `average()` accept.
public protocol AddableType {}
extension Int: AddableType {}
extension Int8: AddableType {}
extension Int16: AddableType {}
extension Int32: AddableType {}
extension Int64: AddableType {}
extension Float: AddableType {}
extension Double: AddableType {}
extension Decimal128: AddableType {}
extension AnyRealmValue: AddableType {}
extension Optional: AddableType where Wrapped: AddableType {}

/// Values a collection of values can be sorted by.
public protocol SortableType {}
extension Int: SortableType {}
extension Int8: SortableType {}
extension Int16: SortableType {}
extension Int32: SortableType {}
extension Int64: SortableType {}
extension Float: SortableType {}
extension Double: SortableType {}
extension String: SortableType {}
extension Date: SortableType {}
extension Data: SortableType {}
extension Decimal128: SortableType {}
extension AnyRealmValue: SortableType {}
extension Optional: SortableType where Wrapped: SortableType {}

/// Elements a collection can be sorted by key path: objects (and projections).
public protocol KeypathSortable {}
extension Object: KeypathSortable {}

// MARK: Aggregates over collections of values

/// The aggregates of RealmSwift's collections of values, over stored values: nil elements are skipped, as
/// Realm does; sums of integers wrap, as Realm's do.
enum ValueAggregates {
    static func min<T: _Persistable>(_ values: [T]) -> T? {
        values.map(\._storedValue).filter { !$0.isNull }.min { (StoredValue.compare($0, $1) ?? 0) < 0 }.flatMap { T._fromStored($0) }
    }

    static func max<T: _Persistable>(_ values: [T]) -> T? {
        values.map(\._storedValue).filter { !$0.isNull }.max { (StoredValue.compare($0, $1) ?? 0) < 0 }.flatMap { T._fromStored($0) }
    }

    /// The sum as a stored value of `type`'s kind: an Int, a Float, a Double or a Decimal128 (AnyRealmValue
    /// sums to a Double, or a Decimal128 when one of its values is one).
    static func sum(_ values: [StoredValue], as type: PropertyType) -> StoredValue {
        let present = values.filter { !$0.isNull }
        let decimals = type == .decimal128 || (type == .any && present.contains { if case .decimal = $0 { return true } else { return false } })
        if decimals {
            return .decimal(present.reduce(Decimal128()) { $0 + decimal($1) })
        }
        switch type {
        case .int: return .int(present.reduce(Int64(0)) { acc, v in if case .int(let x) = v { return acc &+ x } else { return acc } })
        case .float: return .float(Float(present.reduce(0.0) { $0 + ($1.numeric ?? 0) }))
        default: return .double(present.reduce(0.0) { $0 + ($1.numeric ?? 0) })
        }
    }

    /// The average as a Double (a Decimal128 for decimals); nil for no values.
    static func average(_ values: [StoredValue], as type: PropertyType) -> StoredValue? {
        let present = values.filter { !$0.isNull }
        guard !present.isEmpty else { return nil }
        if case .decimal(let total) = sum(present, as: type) {
            return .decimal(total / Decimal128(integerLiteral: present.count))
        }
        return .double(present.reduce(0.0) { $0 + ($1.numeric ?? 0) } / Double(present.count))
    }

    private static func decimal(_ v: StoredValue) -> Decimal128 {
        switch v {
        case .decimal(let d): d
        case .int(let i): Decimal128(number: NSNumber(value: i))
        case .float(let f): Decimal128(number: NSNumber(value: f))
        case .double(let d): Decimal128(number: NSNumber(value: d))
        default: Decimal128()
        }
    }

    /// A stored average or sum as the type the caller asked for (`let mean: Double? = list.average()`).
    static func converted<T: _Persistable>(_ v: StoredValue, to _: T.Type) -> T? {
        if let direct = T._fromStored(v) { return direct }
        switch v {
        case .double(let d): return T._fromStored(.float(Float(d))) ?? T._fromStored(.decimal(Decimal128(number: NSNumber(value: d))))
        case .decimal: return v.numeric.flatMap { T._fromStored(.double($0)) }
        case .int(let i): return T._fromStored(.double(Double(i))) ?? T._fromStored(.decimal(Decimal128(number: NSNumber(value: i))))
        default: return nil
        }
    }
}

extension Sequence where Element: _Persistable {
    fileprivate var storedValues: [StoredValue] { map(\._storedValue) }
}

extension List where Element: MinMaxType {
    /// The smallest element (nil elements are skipped); nil when there is none.
    public func min() -> Element? { ValueAggregates.min(Array(self)) }
    /// The largest element (nil elements are skipped); nil when there is none.
    public func max() -> Element? { ValueAggregates.max(Array(self)) }
}

extension List where Element: AddableType {
    /// The sum of the elements (nil elements are skipped).
    public func sum() -> Element { ValueAggregates.converted(ValueAggregates.sum(storedValues, as: Element._propertyType), to: Element.self) ?? Element._zeroValue }
    /// The average of the elements (nil elements are skipped); nil when there is none.
    public func average<T: _Persistable & AddableType>() -> T? {
        ValueAggregates.average(storedValues, as: Element._propertyType).flatMap { ValueAggregates.converted($0, to: T.self) }
    }
}

extension MutableSet where Element: MinMaxType {
    /// The smallest element (nil elements are skipped); nil when there is none.
    public func min() -> Element? { ValueAggregates.min(Array(self)) }
    /// The largest element (nil elements are skipped); nil when there is none.
    public func max() -> Element? { ValueAggregates.max(Array(self)) }
}

extension MutableSet where Element: AddableType {
    /// The sum of the elements (nil elements are skipped).
    public func sum() -> Element { ValueAggregates.converted(ValueAggregates.sum(storedValues, as: Element._propertyType), to: Element.self) ?? Element._zeroValue }
    /// The average of the elements (nil elements are skipped); nil when there is none.
    public func average<T: _Persistable & AddableType>() -> T? {
        ValueAggregates.average(storedValues, as: Element._propertyType).flatMap { ValueAggregates.converted($0, to: T.self) }
    }
}

extension Map where Value: MinMaxType {
    /// The smallest value (nil values are skipped); nil when there is none.
    public func min() -> Value? { ValueAggregates.min(values) }
    /// The largest value (nil values are skipped); nil when there is none.
    public func max() -> Value? { ValueAggregates.max(values) }
}

extension Map where Value: AddableType {
    /// The sum of the values (nil values are skipped).
    public func sum() -> Value { ValueAggregates.converted(ValueAggregates.sum(values.storedValues, as: Value._propertyType), to: Value.self) ?? Value._zeroValue }
    /// The average of the values (nil values are skipped); nil when there is none.
    public func average<T: _Persistable & AddableType>() -> T? {
        ValueAggregates.average(values.storedValues, as: Value._propertyType).flatMap { ValueAggregates.converted($0, to: T.self) }
    }
}
