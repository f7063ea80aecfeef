import Foundation

/// An unordered collection of distinct values or objects: `@Persisted var tags: MutableSet<String>`.
///
/// Stored as a list without duplicates (in insertion order), so everything a `List` property gets (cascading
/// adds, objects removed when deleted, migrations by field id) holds for sets too.
public final class MutableSet<Element: _Persistable>: Sequence, CustomStringConvertible {
    let list: List<Element>

    public init() { list = List() }
    init(list: List<Element>) { self.list = list }

    public var count: Int { list.count }
    public var isEmpty: Bool { list.isEmpty }
    public var realm: Realm? { list.realm }
    public var isInvalidated: Bool { list.isInvalidated }
    public func makeIterator() -> IndexingIterator<[Element]> { Array(list).makeIterator() }
    public var description: String { description(depth: RealmDescription.maxDepth) }

    /// Whether two elements are the same: the same object for objects, equal stored values otherwise.
    private static func same(_ a: Element, _ b: Element) -> Bool {
        if let x = a._linkedObject, let y = b._linkedObject { return x === y || x.isSameObject(as: y) }
        return a._storedValue == b._storedValue
    }

    public func contains(_ element: Element) -> Bool { list.contains { Self.same($0, element) } }

    /// The element at `index`, in the set's order (RealmSwift's positional access).
    public subscript(index: Int) -> Element { list[index] }
    public var first: Element? { list.first }
    public var last: Element? { list.last }

    public func insert(_ element: Element) {
        if !contains(element) { list.append(element) }
    }

    public func insert<S: Sequence>(objectsIn elements: S) where S.Element == Element {
        for e in elements { insert(e) }
    }

    public func remove(_ element: Element) {
        if let i = list.firstIndex(where: { Self.same($0, element) }) { list.remove(at: i) }
    }

    public func removeAll() { list.removeAll() }

    /// Keeps the elements that `other` also has.
    public func formIntersection(_ other: MutableSet<Element>) {
        for e in Array(list) where !other.contains(e) { remove(e) }
    }

    /// RealmSwift's name for `formIntersection`.
    public func intersect(_ other: MutableSet<Element>) { formIntersection(other) }

    /// Adds the elements of `other`.
    public func formUnion(_ other: MutableSet<Element>) { insert(objectsIn: Array(other)) }
    public func union(_ other: MutableSet<Element>) { formUnion(other) }

    /// Removes the elements of `other`.
    public func subtract(_ other: MutableSet<Element>) {
        for e in Array(other) { remove(e) }
    }

    public func intersects(_ other: MutableSet<Element>) -> Bool { contains { other.contains($0) } }
    public func isSubset(of other: MutableSet<Element>) -> Bool { allSatisfy { other.contains($0) } }
}

extension MutableSet: _Persistable {
    public static var _propertyType: PropertyType { Element._propertyType }
    public static var _zeroValue: MutableSet<Element> { MutableSet() }
    public static func _fromStored(_ v: StoredValue) -> MutableSet<Element>? { List<Element>._fromStored(v).map { MutableSet(list: $0) } }
    public var _storedValue: StoredValue { list._storedValue }
    public static var _objectType: Object.Type? { Element._objectType }
    public static var _isList: Bool { true }
    public static var _isSet: Bool { true }
    public static var _hasOptionalElements: Bool { Element._isOptional }
    public static func _managedCollection(_ owner: AnyObject, _ index: Int) -> MutableSet<Element>? {
        List<Element>._managedCollection(owner, index).map { MutableSet(list: $0) }
    }
    public static func _setManagedCollection(_ owner: AnyObject, _ index: Int, _ value: MutableSet<Element>) {
        guard let target = _managedCollection(owner, index) else { return }
        let items = Array(value)
        target.removeAll()
        target.insert(objectsIn: items)
    }
}

extension MutableSet: ListStorage {
    func storedElements(in core: RealmCore, update: Realm.UpdatePolicy) -> StoredValue { list.storedElements(in: core, update: update) }

    func replace(withAny values: [Any?], target: Object.Type?, className: String, property: String) {
        list.replace(withAny: values, target: target, className: className, property: property)
        // Duplicates given by value collapse to one.
        var kept: [Element] = []
        for e in Array(list) where !kept.contains(where: { Self.same($0, e) }) { kept.append(e) }
        if kept.count != list.count {
            list.removeAll()
            list.append(contentsOf: kept)
        }
    }

    func managedView(_ accessor: ObjectAccessor, _ index: Int) -> any ListStorage {
        MutableSet(list: List(accessor: accessor, property: index))
    }

    var anyElements: [Any?] { list.anyElements }
}

/// A set declared with `let` in a model is a property, as a list is.
extension MutableSet: LegacyCollection {
    func bind(to owner: Object, index: Int) { list.bind(to: owner, index: index) }
    func setUnmanaged(_ value: StoredValue) -> Bool { list.setUnmanaged(value) }

    func unmanagedCopy() -> any StoredOnAdd { MutableSet(list: list.unmanagedList()) }
}
