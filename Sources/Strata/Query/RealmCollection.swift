import Foundation

/// A collection of objects that can be queried, sorted and aggregated: `Results`, `List`, `MutableSet` and
/// `LinkingObjects` of objects, and `AnyRealmCollection`, which wraps any of them. Generic code is written
/// against it as against RealmSwift's:
///
/// ```swift
/// func adults<C: RealmCollection>(_ people: C) -> Results<Person> where C.Element == Person {
///     people.filter("age >= 18").sorted(byKeyPath: "name")
/// }
/// ```
/// A collection's queries give `Results` of its objects in its order (`person.dogs.filter("age > 3")`),
/// live as every `Results` is. In RealmSwift, collections of values (`List<Int>`) are `RealmCollection`s too;
/// in Strata their aggregates (`min()`, `max()`, `sum()`, `average()`) and queries (`sorted(ascending:)`,
/// `distinct()`, `filter("self > 3")`, which give a `Results` of values) are methods of `List`, `MutableSet`
/// and `Map` themselves.
public protocol RealmCollection<Element>: RandomAccessCollection, CustomStringConvertible, ThreadConfined where Element: Object, Index == Int {
    /// The index of `object` in the collection; nil when it is not there.
    func index(of object: Element) -> Int?
    /// The collection's objects as `Results`, in its order; nil for an unmanaged collection (whose queries
    /// trap, as RealmSwift's do).
    var _results: Results<Element>? { get }
    /// Calls `block` with the collection now (`.initial`), then after each change to its objects, as
    /// `Results.observe` does: generic code observes any collection of objects.
    func observe(keyPaths: [String]?, on queue: DispatchQueue?, _ block: @escaping (RealmCollectionChange<Self>) -> Void) -> NotificationToken
}

extension RealmCollection {
    /// The collection as `Results`; a trap for an unmanaged one, as RealmSwift's.
    private var managed: Results<Element> {
        guard let r = _results else { fatalError("This method may only be called on RLMArray instances retrieved from an RLMRealm") }
        return r
    }

    /// The objects matching a predicate in Realm's syntax, in the collection's order.
    public func filter(_ predicateFormat: String, _ args: Any...) -> Results<Element> {
        do {
            return try managed.filter(predicateFormat, arguments: args.map { Optional($0) })
        } catch {
            fatalError("Invalid predicate: \(error)")
        }
    }

    /// The objects matching a type-safe query, in the collection's order.
    public func `where`(_ isIncluded: (Query<Element>) -> Query<Bool>) -> Results<Element> { managed.where(isIncluded) }

    public func sorted(byKeyPath keyPath: String, ascending: Bool = true) -> Results<Element> {
        managed.sorted(byKeyPath: keyPath, ascending: ascending)
    }

    public func sorted<V>(by keyPath: KeyPath<Element, V>, ascending: Bool = true) -> Results<Element> {
        managed.sorted(by: keyPath, ascending: ascending)
    }

    public func sorted<S: Sequence>(by descriptors: S) -> Results<Element> where S.Element == SortDescriptor { managed.sorted(by: descriptors) }

    public func distinct<S: Sequence>(by keyPaths: S) -> Results<Element> where S.Element == String { managed.distinct(by: keyPaths) }

    public func distinct<S: Sequence>(by keyPaths: S) -> Results<Element> where S.Element == PartialKeyPath<Element> {
        managed.distinct(by: keyPaths)
    }

    /// The values of one property of every object, in the collection's order (key-value coding, as RealmSwift's
    /// collections have it).
    public func value(forKey key: String) -> [Any?] { map { $0.value(forKey: key) } }

    /// The values at a dotted path (`"owner.name"`) from every object, as `Object.value(forKeyPath:)` gives them.
    public func value(forKeyPath keyPath: String) -> [Any?] { map { $0.value(forKeyPath: keyPath) } }

    /// Sets one property of every object (in a write transaction, for managed ones).
    public func setValue(_ value: Any?, forKey key: String) {
        for object in Array(self) { object.setValue(value, forKey: key) }
    }

    /// The index of the first object matching a predicate in Realm's syntax; nil when none does.
    public func index(matching predicateFormat: String, _ args: Any...) -> Int? {
        let matching: Results<Element>
        do {
            matching = try managed.filter(predicateFormat, arguments: args.map { Optional($0) })
        } catch {
            fatalError("Invalid predicate: \(error)")
        }
        return matching.first.flatMap { index(of: $0) }
    }

    /// The index of the first object matching a type-safe query; nil when none does.
    public func index(matching isIncluded: (Query<Element>) -> Query<Bool>) -> Int? {
        managed.where(isIncluded).first.flatMap { index(of: $0) }
    }

    /// The collection's objects sorted by `keyPath` and grouped into one section per value.
    public func sectioned<K: _Persistable & Hashable>(by keyPath: KeyPath<Element, K>, ascending: Bool = true) -> SectionedResults<K, Element> {
        managed.sectioned(by: keyPath, ascending: ascending)
    }

    /// The collection's objects sorted by `sortDescriptors` and grouped by the key `block` gives each.
    public func sectioned<K: _Persistable & Hashable>(by block: @escaping (Element) -> K, sortDescriptors: [SortDescriptor]) -> SectionedResults<K, Element> {
        managed.sectioned(by: block, sortDescriptors: sortDescriptors)
    }

    /// The objects at `indexes`, in ascending index order.
    public func objects(at indexes: IndexSet) -> [Element] {
        indexes.map { i in
            guard i >= 0 && i < count else { fatalError("Indexes for collection are out of bounds.") }
            return self[i]
        }
    }

    // Aggregates: over the stored values where the collection is managed, over its objects' values where it
    // is not (an unmanaged `List` of new objects), as RealmSwift's.

    /// The values of `property` in the collection's objects, nil ones left out.
    private func unmanagedValues(_ property: String) -> [StoredValue] {
        compactMap { object -> StoredValue? in
            let v = (object.value(forKey: property) as? any _Persistable)?._storedValue ?? .null
            return v.isNull ? nil : v
        }
    }

    public func min<T: _Persistable>(ofProperty property: String) -> T? {
        if let r = _results { return r.min(ofProperty: property) }
        return unmanagedValues(property).min { (StoredValue.compare($0, $1) ?? 0) < 0 }.flatMap { T._fromStored($0) }
    }

    public func max<T: _Persistable>(ofProperty property: String) -> T? {
        if let r = _results { return r.max(ofProperty: property) }
        return unmanagedValues(property).max { (StoredValue.compare($0, $1) ?? 0) < 0 }.flatMap { T._fromStored($0) }
    }

    public func sum<T: _Persistable>(ofProperty property: String) -> T {
        if let r = _results { return r.sum(ofProperty: property) }
        return ValueAggregates.converted(ValueAggregates.sum(unmanagedValues(property), as: T._propertyType), to: T.self) ?? T._zeroValue
    }

    public func average<T: _Persistable>(ofProperty property: String) -> T? {
        if let r = _results { return r.average(ofProperty: property) }
        return ValueAggregates.average(unmanagedValues(property), as: T._propertyType).flatMap { ValueAggregates.converted($0, to: T.self) }
    }

    public func min<V: _Persistable>(of keyPath: KeyPath<Element, V>) -> V? { min(ofProperty: TypeRegistry.info(for: Element.self).name(of: keyPath)) }
    public func max<V: _Persistable>(of keyPath: KeyPath<Element, V>) -> V? { max(ofProperty: TypeRegistry.info(for: Element.self).name(of: keyPath)) }
    public func sum<V: _Persistable>(of keyPath: KeyPath<Element, V>) -> V { sum(ofProperty: TypeRegistry.info(for: Element.self).name(of: keyPath)) }
    public func average<V: _Persistable>(of keyPath: KeyPath<Element, V>) -> V? { average(ofProperty: TypeRegistry.info(for: Element.self).name(of: keyPath)) }
}

extension Results: RealmCollection where Element: Object {
    public var _results: Results<Element>? { self }
}

extension List: ThreadConfined {}
extension List: RealmCollection where Element: Object {
    public var _results: Results<Element>? {
        guard let accessor, location.isPlain else { return nil }
        let core = accessor.core
        let target = accessor.info.schema.properties[property].objectClassName
        let elements = Element.self == DynamicObject.self ? core.dynamicBinding(target ?? "") : core.binding(forClass: Element.self)
        let base = ResultsBase.list(owner: accessor.binding.objectClass, ownerName: accessor.info.schema.className, key: accessor.key, property: property)
        return Results(core: core, binding: elements, predicate: nil, sort: [], base: base)
    }
}

extension MutableSet: ThreadConfined {}
extension MutableSet: RandomAccessCollection {
    public var startIndex: Int { 0 }
    public var endIndex: Int { count }
}
extension MutableSet: RealmCollection where Element: Object {
    public func index(of object: Element) -> Int? { list.index(of: object) }
    public var _results: Results<Element>? { list._results }
}

extension LinkingObjects: ThreadConfined {}
extension LinkingObjects: RealmCollection {
    public func index(of object: Element) -> Int? {
        guard let a = object._accessor else { return nil }
        return firstIndex { $0._accessor?.key == a.key }
    }

    public var _results: Results<Element>? {
        guard let target else { return nil }
        let core = target.core
        return Results(core: core, binding: core.binding(forClass: Element.self), predicate: nil, sort: [], base: .linkingObjects(key: target.key, property: propertyName))
    }
}

extension Map: ThreadConfined {}

/// Any `RealmCollection` of `Element` objects behind one type: a `Results`, a `List`, a `MutableSet`, a
/// `LinkingObjects`. Code that stores or takes "some collection of Dogs" uses it:
/// `AnyRealmCollection(person.dogs)`, `AnyRealmCollection(realm.objects(Dog.self))`.
public struct AnyRealmCollection<Element: Object>: RealmCollection {
    let base: any RealmCollection<Element>

    /// Wraps `base`.
    public init<C: RealmCollection>(_ base: C) where C.Element == Element {
        // A wrapped wrapper is unwrapped: one level of forwarding, whatever the nesting.
        if let any = base as? AnyRealmCollection<Element> {
            self = any
        } else {
            self.base = base
        }
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { base.count }
    public subscript(position: Int) -> Element { base[position] }
    public var count: Int { base.count }
    public var description: String { "AnyRealmCollection<\(Element.className())> (\(count) objects)" }
    public var realm: Realm? { base.realm }
    public var isInvalidated: Bool { base.isInvalidated }
    public var isFrozen: Bool { base.isFrozen }
    public func freeze() -> AnyRealmCollection<Element> { AnyRealmCollection(base.freeze()) }
    public func thaw() -> AnyRealmCollection<Element>? { base.thaw().map { AnyRealmCollection($0) } }
    public func index(of object: Element) -> Int? { base.index(of: object) }
    public var _results: Results<Element>? { base._results }
}
