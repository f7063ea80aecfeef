import Engine
import Foundation

// Invariants:
// (1) A managed List is a view of one property of one object: every read decodes the property's current
//     value, every change writes the whole list back through the object's accessor (so the write
//     transaction, notifications and migrations see one ordinary property change).
// (2) Object elements are stored as links; an element whose object was deleted is not shown, and the commit
//     that deletes an object removes it from every list of its type.

/// An ordered collection property: `@Persisted var dogs: List<Dog>` or `@Persisted var tags: List<String>`.
///
/// Unmanaged, it holds its elements; once its object is added to a Realm it is a live view of the stored
/// list, and changing it needs a write transaction.
public final class List<Element: _Persistable>: RandomAccessCollection, CustomStringConvertible {
    private var elements: [Element] = []
    private let ownAccessor: ObjectAccessor?
    /// For a list declared with `let` in a model (`let dogs = List<Dog>()`): the object it belongs to, once
    /// bound to it (`TypeInfo.bindLegacyProperties`).
    private var legacy: LegacyBinding?
    /// The object whose property the list is a view of; nil while unmanaged.
    var accessor: ObjectAccessor? { ownAccessor ?? legacy?.accessor }
    /// Set for a list of an object a migration handed out (its elements live in that object's values).
    let migrationOwner: MigrationCollection?
    /// Where the list lives in its object: a List property, or a list nested in an AnyRealmValue.
    private let ownLocation: NestedLocation
    var location: NestedLocation { ownAccessor == nil ? legacy.map { .property($0.index) } ?? ownLocation : ownLocation }
    var property: Int { location.property }
    /// Whether the list is a view of stored elements (a managed object's, or a migration object's).
    private var isView: Bool { accessor != nil || migrationOwner != nil }

    public init() {
        ownAccessor = nil
        migrationOwner = nil
        ownLocation = .property(-1)
    }

    init(accessor: ObjectAccessor, property: Int) {
        ownAccessor = accessor
        migrationOwner = nil
        ownLocation = .property(property)
    }

    init(accessor: ObjectAccessor, location: NestedLocation) {
        ownAccessor = accessor
        migrationOwner = nil
        ownLocation = location
    }

    init(migrationOwner: MigrationCollection) {
        ownAccessor = nil
        self.migrationOwner = migrationOwner
        ownLocation = .property(-1)
    }

    /// The Realm of the list's object, nil when unmanaged.
    public var realm: Realm? { accessor.map { Realm(core: $0.core) } }
    public var isInvalidated: Bool { accessor?.isInvalidated ?? false }

    // MARK: Reading

    private var storedElements: [StoredValue] {
        guard let accessor else { return migrationOwner?.items ?? [] }
        // For Observation, reading a list reads its property (`Observation.swift`).
        if accessor.observes { accessor.observeRead(property) }
        if location.isPlain {
            if case .list(let values) = accessor.get(property) { return values }
            return []
        }
        return accessor.nestedItems(location, list: true) ?? []
    }

    private var current: [Element] {
        guard let accessor else {
            guard let migrationOwner else { return elements }
            return migrationOwner.items.compactMap { value in
                if Element._objectType != nil { return migrationOwner.object(value).flatMap { Element._fromLinked($0) } }
                return Element._fromStored(value)
            }
        }
        if Element.self == AnyRealmValue.self {
            // Objects and nested collections need their place and their Realm.
            return storedElements.enumerated().compactMap { i, value in
                accessor.anyValue(value, at: location.appending(.index(i))) as? Element
            }
        }
        // A dynamic view (`dynamicList`) names its objects by the property's target type.
        let dynamicTarget = Element.self == DynamicObject.self ? accessor.info.schema.properties[property].objectClassName : nil
        return storedElements.compactMap { value in
            if let dynamicTarget {
                return accessor.core.linkedDynamicObject(value, typeName: dynamicTarget).flatMap { Element._fromLinked($0) }
            }
            if let target = Element._objectType {
                return accessor.linkedObject(value, target: target).flatMap { Element._fromLinked($0) }
            }
            guard let element = Element._fromStored(value) else {
                FailableConversion.checkElement(value, Element.self)
                return nil
            }
            return element
        }
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { count }
    public var count: Int { isView ? current.count : elements.count }

    public subscript(position: Int) -> Element {
        get {
            let all = current
            require(position >= 0 && position < all.count, "Index \(position) is out of bounds (must be less than \(all.count)).")
            return all[position]
        }
        set { replace(index: position, object: newValue) }
    }

    public var description: String { description(depth: RealmDescription.maxDepth) }

    // MARK: Changing

    /// Applies `body` to the elements: in place when unmanaged, read-modify-write when managed.
    private func change(_ body: (inout [Element]) -> Void) {
        guard let accessor else {
            if let migrationOwner {
                var all = current
                body(&all)
                migrationOwner.write(all.map { migrationOwner.stored($0) })
                return
            }
            body(&elements)
            return
        }
        var all = current
        body(&all)
        let items = all.map { accessor.core.stored(element: $0) }
        if location.isPlain {
            accessor.set(property, .list(items))
        } else {
            accessor.setNestedItems(location, list: true, items)
        }
    }

    private func check(_ index: Int, _ limit: Int, _ what: String) {
        require(index >= 0 && index < limit, "Cannot \(what) at index \(index): the list has \(limit) elements.")
    }

    public func append(_ element: Element) { change { $0.append(element) } }
    public func append<S: Sequence>(contentsOf elements: S) where S.Element == Element { change { $0.append(contentsOf: elements) } }
    /// RealmSwift's name for `append(contentsOf:)`.
    public func append<S: Sequence>(objectsIn elements: S) where S.Element == Element { append(contentsOf: elements) }

    public func insert(_ element: Element, at index: Int) {
        change {
            require(index >= 0 && index <= $0.count, "Cannot insert at index \(index): the list has \($0.count) elements.")
            $0.insert(element, at: index)
        }
    }

    public func remove(at index: Int) {
        change {
            check(index, $0.count, "remove")
            $0.remove(at: index)
        }
    }

    public func removeLast() {
        change {
            require(!$0.isEmpty, "Cannot remove the last element of an empty list.")
            $0.removeLast()
        }
    }

    public func removeFirst() {
        change {
            require(!$0.isEmpty, "Cannot remove the first element of an empty list.")
            $0.removeFirst()
        }
    }

    public func removeAll() { change { $0.removeAll() } }

    public func move(from: Int, to: Int) {
        change {
            check(from, $0.count, "move from")
            check(to, $0.count, "move to")
            let e = $0.remove(at: from)
            $0.insert(e, at: to)
        }
    }

    public func swapAt(_ i: Int, _ j: Int) {
        change {
            check(i, $0.count, "swap")
            check(j, $0.count, "swap")
            $0.swapAt(i, j)
        }
    }

    public func replace(index: Int, object: Element) {
        change {
            check(index, $0.count, "replace")
            $0[index] = object
        }
    }

    /// Removes the elements at `offsets` (SwiftUI's `onDelete`).
    public func remove(atOffsets offsets: IndexSet) {
        change { all in
            for i in offsets.reversed() {
                check(i, all.count, "remove")
                all.remove(at: i)
            }
        }
    }

    /// Moves the elements at `offsets` to before `destination` (SwiftUI's `onMove`).
    public func move(fromOffsets offsets: IndexSet, toOffset destination: Int) {
        change { all in
            let moving = offsets.map { all[$0] }
            var rest: [Element] = []
            var insertAt = destination
            for (i, e) in all.enumerated() where !offsets.contains(i) {
                rest.append(e)
            }
            insertAt -= offsets.filter { $0 < destination }.count
            rest.insert(contentsOf: moving, at: Swift.max(0, Swift.min(insertAt, rest.count)))
            all = rest
        }
    }

    /// The position of an object in a list of objects.
    public func index(of object: Element) -> Int? where Element: Object {
        firstIndex { $0.isSameObject(as: object) }
    }
}

extension List: _Persistable {
    public static var _propertyType: PropertyType { Element._propertyType }
    public static var _zeroValue: List<Element> { List() }
    public static func _fromStored(_ v: StoredValue) -> List<Element>? {
        guard case .list(let values) = v else { return nil }
        let list = List()
        list.elements = values.compactMap { Element._fromStored($0) }
        return list
    }
    public var _storedValue: StoredValue { .list((isView ? current : elements).map(\._storedValue)) }
    public static var _objectType: Object.Type? { Element._objectType }
    public static var _isList: Bool { true }
    public static var _hasOptionalElements: Bool { Element._isOptional }
    public static func _managedCollection(_ owner: AnyObject, _ index: Int) -> List<Element>? {
        (owner as? ObjectAccessor).map { List(accessor: $0, property: index) }
    }
    public static func _setManagedCollection(_ owner: AnyObject, _ index: Int, _ value: List<Element>) {
        guard let accessor = owner as? ObjectAccessor else { return }
        let items = Array(value)
        List(accessor: accessor, property: index).change { $0 = items }
    }
}

/// A value of an unmanaged object that is stored when the object is added, adding the objects it holds.
protocol StoredOnAdd: AnyObject {
    /// The stored form of the value, adding unmanaged objects to `core`.
    func storedElements(in core: RealmCore, update: Realm.UpdatePolicy) -> StoredValue
}

/// What the object layer needs from a List without knowing its element type.
protocol ListStorage: StoredOnAdd {
    /// Replaces the elements with values given by name (objects, dictionaries or arrays for new objects of
    /// `target`, or plain values).
    func replace(withAny values: [Any?], target: Object.Type?, className: String, property: String)
    /// A managed view of the same element type.
    func managedView(_ accessor: ObjectAccessor, _ index: Int) -> any ListStorage
    /// The elements, type-erased.
    var anyElements: [Any?] { get }
}

extension List: ListStorage {
    func storedElements(in core: RealmCore, update: Realm.UpdatePolicy) -> StoredValue {
        .list((isView ? current : elements).map { core.stored(element: $0, update: update) })
    }

    func replace(withAny values: [Any?], target: Object.Type?, className: String, property: String) {
        let items: [Element] = values.map { v in
            if let target {
                let object: Object
                switch v {
                case let o as Object: object = o
                case let some?:
                    object = Object.make(target)
                    TypeRegistry.info(for: target).assign(some, to: object)
                case nil: fatalError("\(className).\(property) cannot hold nil")
                }
                guard let e = Element._fromLinked(object) else {
                    fatalError("Invalid value \(type(of: object)) for \(className).\(property), a List<\(Element.self)>")
                }
                return e
            }
            guard let stored = StoredValue.from(any: v, as: Element._propertyType), let e = Element._fromStored(stored) else {
                fatalError("Invalid value '\(String(describing: v))' for \(className).\(property), a List<\(Element.self)>")
            }
            return e
        }
        change { $0 = items }
    }

    func managedView(_ accessor: ObjectAccessor, _ index: Int) -> any ListStorage { List(accessor: accessor, property: index) }
    var anyElements: [Any?] { map { Optional($0) } }
}

extension RealmCore {
    /// The stored form of a collection element: a link for objects (adding unmanaged ones), else its value.
    func stored<E: _Persistable>(element: E, update: Realm.UpdatePolicy = .error) -> StoredValue {
        if let target = E._objectType {
            if let object = element._linkedObject { Self.checkLinkType(object, target, "a collection of \(target.className())") }
            return link(to: element._linkedObject, update: update)
        }
        if E.self == AnyRealmValue.self, let any = element as? AnyRealmValue { return storedAny(any, update: update) }
        return element._storedValue
    }
}

/// RealmSwift's List is a mutable, range-replaceable collection: `list[0] = x`, `list.replaceSubrange`,
/// `list.append(contentsOf:)`, `list.removeFirst()`… each change is one write of the whole list.
extension List: MutableCollection, RangeReplaceableCollection {
    public func replaceSubrange<C: Collection>(_ subrange: Range<Int>, with newElements: C) where C.Element == Element {
        change { $0.replaceSubrange(subrange, with: newElements) }
    }
}

/// A list declared with `let` in a model is a property: reflection finds it, and it reads and writes through
/// its object once bound to it.
extension List: LegacyCollection {
    func bind(to owner: Object, index: Int) {
        if legacy == nil { legacy = LegacyBinding() }
        legacy?.bind(to: owner, index: index)
    }

    func setUnmanaged(_ value: StoredValue) -> Bool {
        guard let list = List._fromStored(value) else { return false }
        elements = list.elements
        return true
    }

    func unmanagedCopy() -> any StoredOnAdd { unmanagedList() }

    /// An unmanaged list of the elements this one holds now.
    func unmanagedList() -> List<Element> {
        let copy = List()
        copy.elements = isView ? current : elements
        return copy
    }
}
