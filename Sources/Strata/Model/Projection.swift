import Dispatch
import Engine
import Foundation

/// A class projection: a view of some properties of an object, possibly through links and into
/// collections, as live as the object (reads show its current values; writes in a write transaction go to it).
///
/// ```swift
/// final class PersonView: Projection<Person> {
///     @Projected(\Person.firstName) var firstName
///     @Projected(\Person.address?.city) var homeCity
///     @Projected(\Person.friends.projectTo.firstName) var friendNames: ProjectedCollection<String>
/// }
/// let views = realm.objects(PersonView.self)
/// ```
open class Projection<Root: Object>: _ProjectionType, CustomStringConvertible {
    /// The projected object.
    public let rootObject: Root

    public required init(projecting object: Root) {
        rootObject = object
        ProjectionCheck.check(self)
    }

    /// The projected object's Realm (nil when it is unmanaged).
    public var realm: Realm? { rootObject.realm }
    public var isInvalidated: Bool { rootObject.isInvalidated }

    open var description: String { "\(type(of: self))(projecting: \(rootObject))" }

    /// Calls `block` after each change to the projected object (of the properties in `keyPaths`, named on
    /// the root object, when given), and once with `.deleted`.
    public func observe(
        keyPaths: [String]? = nil, on queue: DispatchQueue? = nil, _ block: @escaping (ObjectChange<Projection<Root>>) -> Void
    ) -> NotificationToken {
        let projection = self
        return rootObject.observe(keyPaths: keyPaths, on: queue) { (change: ObjectChange<Root>) in
            switch change {
            case .change(_, let properties): block(.change(projection, properties))
            case .deleted: block(.deleted)
            case .error(let e): block(.error(e))
            }
        }
    }
}

/// What `Realm.objects(_:)` needs of a projection type.
public protocol _ProjectionType: AnyObject, RealmFetchable {
    associatedtype Root: Object
    init(projecting object: Root)
    var rootObject: Root { get }
}

/// A property of a projection: the value at a key path of the projected object.
@propertyWrapper
public struct Projected<T: Object, Value>: @unchecked Sendable {
    // Key paths are immutable values.
    let keyPath: KeyPath<T, Value>

    public init(_ keyPath: KeyPath<T, Value>) {
        self.keyPath = keyPath
    }

    @available(*, unavailable, message: "@Projected is only available on Projection subclasses")
    public var wrappedValue: Value {
        get { fatalError("@Projected is only available on Projection subclasses") }
        // swiftlint:disable:next unused_setter_value
        set { fatalError("@Projected is only available on Projection subclasses") }
    }

    public static subscript<EnclosingSelf: Projection<T>>(
        _enclosingInstance projection: EnclosingSelf,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<EnclosingSelf, Value>,
        storage storageKeyPath: ReferenceWritableKeyPath<EnclosingSelf, Projected<T, Value>>
    ) -> Value {
        get { projection.rootObject[keyPath: projection[keyPath: storageKeyPath].keyPath] }
        set {
            let keyPath = projection[keyPath: storageKeyPath].keyPath
            guard let writable = keyPath as? ReferenceWritableKeyPath<T, Value> else {
                fatalError("\(type(of: projection)): the projected key path \(keyPath) cannot be written (it goes through a computed property or a collection)")
            }
            projection.rootObject[keyPath: writable] = newValue
        }
    }
}

/// A `@Projected` property's key path, as the first use of its projection type checks it.
protocol ProjectedKeyPath {
    /// The persisted properties the key path reads on the root type (empty when it reads none).
    var persistedNames: [String] { get }
}

extension Projected: ProjectedKeyPath {
    var persistedNames: [String] {
        let recorder = KeyPathRecorder()
        guard let probe = recorder.probe(T.self) as? T else { return [] }
        _ = probe[keyPath: keyPath]
        return recorder.names
    }
}

/// Checks each projection type once, at its first instance: every `@Projected` key path must start at a
/// persisted property of the root type (O055), as RealmSwift requires.
enum ProjectionCheck {
    private static let checked = Locked<Set<ObjectIdentifier>>([])

    static func check(_ projection: AnyObject) {
        let id = ObjectIdentifier(type(of: projection))
        if checked.withLock({ $0.contains(id) }) { return }
        var m: Mirror? = Mirror(reflecting: projection)
        while let mirror = m {
            for child in mirror.children {
                guard let label = child.label, let projected = child.value as? any ProjectedKeyPath else { continue }
                if projected.persistedNames.isEmpty {
                    let name = label.hasPrefix("_") ? String(label.dropFirst()) : label
                    fatalError("@Projected property '\(name)' must be a part of Realm object")
                }
            }
            m = mirror.superclassMirror
        }
        checked.withLock { _ = $0.insert(id) }
    }
}

/// The values of one property of each object in a collection, for projections:
/// `@Projected(\Person.friends.projectTo.firstName) var friendNames: ProjectedCollection<String>`.
public struct ProjectedCollection<Element>: RandomAccessCollection, CustomStringConvertible {
    private let read: () -> [Element]

    init(_ read: @escaping () -> [Element]) {
        self.read = read
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { read().count }
    public subscript(position: Int) -> Element { read()[position] }
    public func makeIterator() -> IndexingIterator<[Element]> { read().makeIterator() }
    public var description: String { "ProjectedCollection<\(Element.self)> (\(count) elements)" }
}

/// The elements of a collection of objects, as a projection's key path sees them: each property read
/// through it gives a `ProjectedCollection` of that property's values.
@dynamicMemberLookup
public struct ProjectionElements<Element: Object>: Hashable {
    private let elements: () -> [Element]
    private let identity: ObjectIdentifier

    init(owner: AnyObject, _ elements: @escaping () -> [Element]) {
        self.elements = elements
        identity = ObjectIdentifier(owner)
    }

    public subscript<V>(dynamicMember keyPath: KeyPath<Element, V>) -> ProjectedCollection<V> {
        let elements = self.elements
        return ProjectedCollection { elements().map { $0[keyPath: keyPath] } }
    }

    public static func == (a: Self, b: Self) -> Bool { a.identity == b.identity }
    public func hash(into hasher: inout Hasher) { hasher.combine(identity) }
}

extension List where Element: Object {
    /// For projections: `\Person.friends.projectTo.firstName` gives the first names of the friends.
    public var projectTo: ProjectionElements<Element> { ProjectionElements(owner: self) { Array(self) } }
}

extension MutableSet where Element: Object {
    /// For projections: `\Person.tags.projectTo.name` gives the names of the set's objects.
    public var projectTo: ProjectionElements<Element> { ProjectionElements(owner: self) { Array(self) } }
}

extension LinkingObjects {
    /// For projections: `\Dog.owners.projectTo.name` gives the names of the objects linking here.
    public var projectTo: ProjectionElements<Element> { ProjectionElements(owner: target ?? NSNull()) { Array(self) } }
}

// A `Results` of projections (`realm.objects(PersonProjection.self)`) finds the projected objects as a
// `Results` of them does, and hands out each wrapped in the projection: queries, sorts and key paths name the
// projected type's properties.

extension Results where Element: _ProjectionType {
    /// The projections of `root`'s objects.
    init(projecting root: Results<Element.Root>) {
        self.init(
            core: root.core, binding: root.binding, predicate: root.predicate, sort: root.sort, distinct: root.distinctKeys, base: root.base,
            projector: { Element(projecting: $0 as! Element.Root) })
    }

    /// The projected objects, in the same order.
    var rootResults: Results<Element.Root> {
        Results<Element.Root>(core: core, binding: binding, predicate: predicate, sort: sort, distinct: distinctKeys, base: base)
    }

    /// The projections of the objects matching a predicate on the projected type.
    public func filter(_ predicateFormat: String, _ args: Any...) -> Results<Element> {
        do {
            return Results(projecting: try rootResults.filter(predicateFormat, arguments: args.map { Optional($0) }))
        } catch {
            fatalError("Invalid predicate: \(error)")
        }
    }

    /// The projections of the objects matching a type-safe query on the projected type.
    public func `where`(_ isIncluded: (Query<Element.Root>) -> Query<Bool>) -> Results<Element> {
        Results(projecting: rootResults.where(isIncluded))
    }

    public func sorted(byKeyPath keyPath: String, ascending: Bool = true) -> Results<Element> {
        Results(projecting: rootResults.sorted(byKeyPath: keyPath, ascending: ascending))
    }

    public func sorted<S: Sequence>(by descriptors: S) -> Results<Element> where S.Element == SortDescriptor {
        Results(projecting: rootResults.sorted(by: descriptors))
    }

    public func distinct<S: Sequence>(by keyPaths: S) -> Results<Element> where S.Element == String {
        Results(projecting: rootResults.distinct(by: keyPaths))
    }

    /// The index of `projection` (of the same object) in these results.
    public func index(of projection: Element) -> Int? { rootResults.index(of: projection.rootObject) }
}

extension Realm {
    /// The projections of every object of the projection's root type.
    public func objects<P: _ProjectionType>(_ type: P.Type) -> Results<P> {
        Results(projecting: objects(P.Root.self))
    }

    /// Every object of a model type, or the projections of every object of a projection's root type: for
    /// generic code over `RealmFetchable`.
    public func objects<T: RealmFetchable>(_ type: T.Type) -> Results<T> {
        if let model = type as? Object.Type {
            require(
                !(model is EmbeddedObject.Type),
                "Embedded objects cannot be queried on their own: query their parents through a key path (e.g. `address.city == 'Oslo'`)")
            return Results<T>(core: core, binding: core.binding(forClass: model), predicate: nil, sort: [])
        }
        guard let projection = type as? any _ProjectionType.Type else {
            fatalError("\(type) is neither an Object nor a Projection; only those can be fetched from a Realm")
        }
        func projections<P: _ProjectionType>(_ p: P.Type) -> Any { objects(p) }
        return projections(projection) as! Results<T>
    }
}

/// Projections are equal when they are of the same type and project the same object (RealmSwift's rule).
extension Projection: Equatable, Hashable {
    public static func == (lhs: Projection, rhs: Projection) -> Bool {
        type(of: lhs) == type(of: rhs) && lhs.rootObject == rhs.rootObject
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(type(of: self)))
        hasher.combine(rootObject)
    }
}

/// A projection belongs where its object does: it can be frozen, thawed, and handed to another thread as a
/// `ThreadSafeReference` (or `@ThreadSafe`), as in RealmSwift.
extension Projection: ThreadConfined {
    public var isFrozen: Bool { rootObject.isFrozen }
    public func freeze() -> Self { Self(projecting: rootObject.freeze()) }
    public func thaw() -> Self? { rootObject.thaw().map { Self(projecting: $0) } }
}

extension Projection: Referable {
    var referenceCore: RealmCore? { rootObject._accessor?.core }
    func referenceMaker() -> @Sendable (RealmCore) -> Any? {
        guard let accessor = rootObject._accessor else { return { _ in nil } }
        let make = accessor.referenceMaker()
        let projectionType = type(of: self)
        return { core in (make(core) as? Root).map { projectionType.init(projecting: $0) } }
    }
}
