import Foundation

/// The objects of type `Element` whose link or list property `originProperty` points to an object: an
/// inverse relationship, computed from the links and never stored.
///
/// ```swift
/// final class Dog: Object {
///     @Persisted var name = ""
///     @Persisted(originProperty: "dog") var owners: LinkingObjects<Person>
/// }
/// ```
/// It is live: each read reflects the Realm's current version. Finding the objects scans `Element`'s objects
/// (there is no index of inverse links yet).
public struct LinkingObjects<Element: Object>: RandomAccessCollection, CustomStringConvertible {
    /// The property of `Element` that links here.
    public let propertyName: String
    private let ownTarget: ObjectAccessor?
    /// For linking objects declared with `let` in a model (`let owners = LinkingObjects(fromType:property:)`):
    /// the object they belong to, once bound to it.
    private let legacy: LegacyBinding?
    /// The object linked to; nil while unmanaged.
    var target: ObjectAccessor? { ownTarget ?? legacy?.accessor }

    init(propertyName: String, target: ObjectAccessor?) {
        self.propertyName = propertyName
        ownTarget = target
        legacy = nil
    }

    /// The objects of `fromType` whose `property` links to the object this is declared in: empty while that
    /// object is unmanaged. Declared with `let` in a model (RealmSwift's older spelling of
    /// `@Persisted(originProperty:)`).
    public init(fromType: Element.Type, property: String) {
        propertyName = property
        ownTarget = nil
        legacy = LegacyBinding()
    }

    private var objects: [Element] {
        guard let target else { return [] }
        return target.core.linkingObjects(Element.self, property: propertyName, to: target)
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { objects.count }
    public subscript(position: Int) -> Element { objects[position] }
    public var count: Int { objects.count }
    /// The Realm of the object linked to, nil when it is unmanaged.
    public var realm: Realm? { target.map { Realm(core: $0.core) } }
    public var description: String { description(depth: RealmDescription.maxDepth) }
}

extension LinkingObjects: _Persistable {
    public static var _propertyType: PropertyType { .linkingObjects }
    public static var _zeroValue: LinkingObjects<Element> { LinkingObjects(propertyName: "", target: nil) }
    public static func _fromStored(_ v: StoredValue) -> LinkingObjects<Element>? { nil }
    public var _storedValue: StoredValue { .null }
    public static var _objectType: Object.Type? { Element.self }
    public static func _linkingObjects(_ owner: AnyObject?, _ property: String) -> LinkingObjects<Element>? {
        LinkingObjects(propertyName: property, target: owner as? ObjectAccessor)
    }
}

extension Persisted {
    /// Declares an inverse relationship: the objects whose `originProperty` links to this one.
    public init<O: Object>(originProperty: String) where Value == LinkingObjects<O> {
        self.init(linkingObjects: LinkingObjects(propertyName: originProperty, target: nil))
    }
}

/// A `LinkingObjects` of any element type: where a `@Persisted` storage finds the origin property it declares.
protocol LinkingObjectsValue {
    var propertyName: String { get }
}

extension LinkingObjects: LinkingObjectsValue {}

extension RealmCore {
    /// The objects of `type` whose property `property` (a link or a list) points to the object of `target`.
    func linkingObjects<T: Object>(_ type: T.Type, property: String, to target: ObjectAccessor) -> [T] {
        let binding = binding(forClass: type)
        return linkingKeys(binding, property: property, to: target.key).compactMap { makeObject(binding: binding, key: $0, record: nil) as? T }
    }

    /// The keys of the objects of `binding`'s type whose property `property` (a link or a list) points to
    /// object `key`, in scan order.
    func linkingKeys(_ binding: TypeBinding, property: String, to key: Int64) -> [Int64] {
        guard let index = binding.info.propertyIndex[property] else {
            fatalError("Property '\(property)' declared as origin of linking objects property does not exist on '\(binding.info.schema.className)'")
        }
        var out: [Int64] = []
        forEachRecord(binding) { k, ref in
            let links: Bool
            switch ref.value(index) {
            case .link(let l): links = l == key
            case .list(let items): links = items.contains(.link(key))
            default: links = false
            }
            if links { out.append(k) }
            return true
        }
        return out
    }
}

/// Linking objects declared with `let` in a model: reflection finds them, and they read through their object
/// once bound to it.
extension LinkingObjects: PersistedProperty, LegacyProperty {
    var isPrimaryKey: Bool { false }
    var isIndexed: Bool { false }
    var hasDeclaredDefault: Bool { false }
    var storedValue: StoredValue { .null }
    var valueType: any _Persistable.Type { LinkingObjects<Element>.self }
    var collection: AnyObject? { nil }
    var origin: String? { propertyName }
    func linkingObjects(_ accessor: ObjectAccessor?) -> Any? { LinkingObjects(propertyName: propertyName, target: accessor) }
    func bind(to owner: Object, index: Int) { legacy?.bind(to: owner, index: index) }
    func setUnmanaged(_ value: StoredValue) -> Bool { false }
}
