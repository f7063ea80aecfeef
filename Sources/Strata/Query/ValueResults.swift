import Dispatch
import Engine
import Foundation

// Results of values, as RealmSwift's: `person.scores.sorted(ascending: false)` is a `Results<Int>`,
// `person.tags.filter("self BEGINSWITH 'a'")` a `Results<String>`, `person.scores.distinct()` the values once
// each. They are live as every `Results` is (read again from the collection at each new version), can be
// narrowed and ordered again, aggregated, observed, frozen and handed to another thread.

/// Where a `Results` of values comes from: one List, MutableSet or Map property of one object, named by the
/// object's class and key (so that a frozen copy or a thread-safe reference finds it again), and what narrows
/// and orders its values.
struct ValueSource<Element>: @unchecked Sendable {
    enum Shape { case elements, mapValues }
    let owner: Object.Type
    let ownerName: String
    let key: Int64
    let property: Int
    let shape: Shape
    /// The elements' type, for checking a query's constants.
    let type: PropertyType
    /// A test of the value itself (`self > 3`), as property 0 of a one-value record.
    var predicate: Predicate? = nil
    /// The order of the values; nil: the collection's.
    var ascending: Bool? = nil
    var distinct = false
    /// A stored value as an element, read in a Realm (an `AnyRealmValue` may name an object); nil for one the
    /// element type refuses (a failable custom type).
    let make: (StoredValue, RealmCore?) -> Element?

    func element(_ v: StoredValue, in core: RealmCore) -> Element {
        guard let e = make(v, core) else { fatalError("Could not convert value '\(v)' to type \(Element.self).") }
        return e
    }

    func ownerBinding(_ core: RealmCore) -> TypeBinding {
        owner == DynamicObject.self ? core.dynamicBinding(ownerName) : core.binding(forClass: owner)
    }

    /// The values at `core`'s version; none when the object was deleted.
    func items(in core: RealmCore) -> [StoredValue] {
        let value = core.withRecord(ownerBinding(core), key: key) { $0.value(property) }
        guard case .list(let all)? = value else { return [] }
        return narrowed(all)
    }

    /// The collection's stored elements (a map's values), filtered, made distinct and sorted.
    func narrowed(_ stored: [StoredValue]) -> [StoredValue] {
        var items = shape == .mapValues ? stride(from: 1, to: stored.count, by: 2).map { stored[$0] } : stored
        items = items.filter { make($0, nil) != nil }
        if let predicate { items = items.filter { predicate.evaluate(.values([$0])) } }
        if distinct {
            var seen = Set<StoredValue>()
            items = items.filter { seen.insert($0).inserted }
        }
        if let ascending {
            // Realm's order: nil first, then by value; values of kinds that do not compare (in an AnyRealmValue)
            // by kind first, so that the order is a total one.
            items.sort { a, b in
                let c: Int
                switch (a.isNull, b.isNull) {
                case (true, true): c = 0
                case (true, false): c = -1
                case (false, true): c = 1
                default: c = StoredValue.compare(a, b) ?? (Self.kindRank(a) < Self.kindRank(b) ? -1 : (Self.kindRank(a) > Self.kindRank(b) ? 1 : 0))
                }
                return ascending ? c < 0 : c > 0
            }
        }
        return items
    }

    /// The order of kinds of values that do not compare with each other (in an `AnyRealmValue`): booleans,
    /// numbers, strings, binary data, dates, object ids, UUIDs, then anything else.
    static func kindRank(_ v: StoredValue) -> Int {
        switch v {
        case .null: 0
        case .bool: 1
        case .int, .float, .double, .decimal: 2
        case .string: 3
        case .data: 4
        case .date: 5
        case .objectId: 6
        case .uuid: 7
        default: 8
        }
    }

    /// A parsed query on the values: only the value itself (`self`) can be tested.
    func resolve(_ e: QueryExpr) throws -> Predicate {
        func isSelf(_ x: QueryExpr) -> Bool {
            if case .property("self") = x { return true }
            return false
        }
        func constant(_ v: StoredValue) throws -> StoredValue {
            guard QueryExpr.comparable(v, with: type) else {
                throw QueryError("Expected object of type \(QueryExpr.realmTypeName(type)) for 'self', but received: \(QueryExpr.describe(v))")
            }
            return QueryExpr.coerce(v, for: type)
        }
        switch e {
        case .truePredicate: return .constant(true)
        case .falsePredicate: return .constant(false)
        case .and(let a, let b): return .and(try resolve(a), try resolve(b))
        case .or(let a, let b): return .or(try resolve(a), try resolve(b))
        case .not(let a): return .not(try resolve(a))
        case .comparison(let l, let op, .value(let v), let options) where isSelf(l): return .compare(0, op, try constant(v), options)
        case .comparison(.value(let v), let op, let r, let options) where isSelf(r): return .compare(0, op.flipped, try constant(v), options)
        case .stringOp(let l, let op, .value(.string(let s)), let options) where isSelf(l): return .string(0, op, s, options)
        case .isIn(let l, .list(let vs), let options) where isSelf(l): return .isIn(0, try vs.map(constant), options)
        case .between(let l, .list(let bounds)) where isSelf(l) && bounds.count == 2:
            return .between(0, try constant(bounds[0]), try constant(bounds[1]))
        default:
            throw QueryError("A query on a collection of values can only compare the values themselves, named 'self' (e.g. \"self > 3\")")
        }
    }

    /// These values, the ones matching a predicate in Realm's syntax also.
    func filtered(_ format: String, _ args: [Any?]) -> ValueSource {
        var narrowed = self
        do {
            let expr = try resolve(QueryParser.parse(format, arguments: args))
            narrowed.predicate = predicate.map { .and($0, expr) } ?? expr
        } catch {
            fatalError("Invalid predicate: \(error)")
        }
        return narrowed
    }

    func sorted(ascending: Bool) -> ValueSource {
        var sorted = self
        sorted.ascending = ascending
        return sorted
    }

    func distinctValues() -> ValueSource {
        var once = self
        once.distinct = true
        return once
    }

    /// The Results of these values in the Realm of `accessor`.
    func results(_ core: RealmCore) -> Results<Element> where Element: _RealmResultsElement {
        Results(core: core, binding: ownerBinding(core), predicate: nil, sort: [], values: self)
    }

    /// Observes `results` (a Results of these values) as a List's notifications do: deletions in old positions,
    /// insertions and modifications in new ones, each change of the values compared by value.
    func observe(
        _ results: Results<Element>, on queue: DispatchQueue?, _ block: @escaping (RealmCollectionChange<Results<Element>>) -> Void
    ) -> NotificationToken where Element: _RealmResultsElement {
        // A list's observer, comparing the values the Results shows before and after a commit.
        let observer = CollectionObserver(
            collection: results, binding: results.binding, key: key, property: property, queue: queue, elements: nil, narrow: narrowed,
            block: block)
        let token = results.core.addObserver(observer)
        RealmCore.deliver(observer.queue) { block(.initial(results)) }
        return token
    }
}

extension ValueSource where Element: RealmCollectionValue {
    /// The values of a managed collection property; a trap for an unmanaged collection, as RealmSwift's.
    init(_ accessor: ObjectAccessor?, _ location: NestedLocation, shape: Shape) {
        guard let accessor, location.isPlain else {
            fatalError("This method may only be called on RLMArray instances retrieved from an RLMRealm")
        }
        self.init(
            owner: accessor.binding.objectClass, ownerName: accessor.info.schema.className, key: accessor.key, property: location.property,
            shape: shape, type: Element._propertyType, make: Self.maker())
    }

    /// Stored values as elements. An `AnyRealmValue` naming an object is that object, read in the Results'
    /// Realm (a collection nested in one is an unmanaged copy: its place in the object is not the Results').
    static func maker() -> (StoredValue, RealmCore?) -> Element? {
        guard Element.self == AnyRealmValue.self else { return { stored, _ in Element._fromStored(stored) } }
        return { stored, core in
            guard let (className, key) = AnyRealmValue.objectReference(stored) else { return Element._fromStored(stored) }
            guard let core else { return AnyRealmValue.none as? Element }
            let value: AnyRealmValue = core.object(className: className, key: key).map { .object($0) } ?? AnyRealmValue.none
            return value as? Element
        }
    }
}

extension Results {
    /// For values: the stored values at the current version, cached until it changes.
    func valueItems() -> [StoredValue] {
        guard let values else { return [] }
        let token = core.changeToken
        if cache.token == token { return cache.items }
        cache.items = values.items(in: core)
        cache.token = token
        return cache.items
    }

    /// For values: these results with another source.
    func with(_ source: ValueSource<Element>) -> Results<Element> {
        Results(core: core, binding: binding, predicate: nil, sort: [], values: source)
    }

    /// The source of a Results of values; a trap for other Results (only values are narrowed this way).
    var valueSource: ValueSource<Element> {
        guard let values else { fatalError("Results<\(Element.self)> holds objects; query them by their properties") }
        return values
    }
}

// MARK: The API of collections of values

extension Results where Element: RealmCollectionValue & SortableType {
    /// The values, sorted.
    public func sorted(ascending: Bool = true) -> Results<Element> { with(valueSource.sorted(ascending: ascending)) }
    /// Each value once, in the order of its first occurrence.
    public func distinct() -> Results<Element> { with(valueSource.distinctValues()) }
    /// The values matching a predicate on `self`: `filter("self > %@", 3)`.
    public func filter(_ predicateFormat: String, _ args: Any...) -> Results<Element> {
        with(valueSource.filtered(predicateFormat, args.map { Optional($0) }))
    }
}

extension Results where Element: RealmCollectionValue & MinMaxType {
    /// The smallest value (nil values are skipped); nil when there is none.
    public func min() -> Element? { ValueAggregates.min(Array(self)) }
    /// The largest value (nil values are skipped); nil when there is none.
    public func max() -> Element? { ValueAggregates.max(Array(self)) }
}

extension Results where Element: RealmCollectionValue & AddableType {
    /// The sum of the values (nil values are skipped).
    public func sum() -> Element {
        ValueAggregates.converted(ValueAggregates.sum(valueItems(), as: Element._propertyType), to: Element.self) ?? Element._zeroValue
    }
    /// The average of the values (nil values are skipped); nil when there is none.
    public func average<T: _Persistable & AddableType>() -> T? {
        ValueAggregates.average(valueItems(), as: Element._propertyType).flatMap { ValueAggregates.converted($0, to: T.self) }
    }
}

extension List where Element: RealmCollectionValue & SortableType {
    private var values: ValueSource<Element> { ValueSource(accessor, location, shape: .elements) }
    /// The elements, sorted, as a live `Results`.
    public func sorted(ascending: Bool = true) -> Results<Element> { values.sorted(ascending: ascending).results(accessor!.core) }
    /// Each element once, in the order of its first occurrence, as a live `Results`.
    public func distinct() -> Results<Element> { values.distinctValues().results(accessor!.core) }
    /// The elements matching a predicate on `self` (`filter("self > %@", 3)`), as a live `Results`.
    public func filter(_ predicateFormat: String, _ args: Any...) -> Results<Element> {
        values.filtered(predicateFormat, args.map { Optional($0) }).results(accessor!.core)
    }
}

extension MutableSet where Element: RealmCollectionValue & SortableType {
    private var values: ValueSource<Element> { ValueSource(list.accessor, list.location, shape: .elements) }
    /// The elements, sorted, as a live `Results`.
    public func sorted(ascending: Bool = true) -> Results<Element> { values.sorted(ascending: ascending).results(list.accessor!.core) }
    /// The elements matching a predicate on `self`, as a live `Results`.
    public func filter(_ predicateFormat: String, _ args: Any...) -> Results<Element> {
        values.filtered(predicateFormat, args.map { Optional($0) }).results(list.accessor!.core)
    }
}

extension Map where Value: RealmCollectionValue & SortableType {
    private var valueSource: ValueSource<Value> { ValueSource(accessor, location, shape: .mapValues) }
    /// The values, sorted, as a live `Results`.
    public func sorted(ascending: Bool = true) -> Results<Value> { valueSource.sorted(ascending: ascending).results(accessor!.core) }
    /// Each value once, as a live `Results`.
    public func distinct() -> Results<Value> { valueSource.distinctValues().results(accessor!.core) }
    /// The values matching a predicate on `self`, as a live `Results`.
    public func filter(_ predicateFormat: String, _ args: Any...) -> Results<Value> {
        valueSource.filtered(predicateFormat, args.map { Optional($0) }).results(accessor!.core)
    }
}
