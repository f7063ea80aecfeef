import Engine
import Foundation

/// An object that lives inside another: declare it as a property (`@Persisted var address: Address?`) or
/// a `List` element of its parent, never on its own.
///
/// ```swift
/// final class Address: EmbeddedObject {
///     @Persisted var street = ""
///     @Persisted var city = ""
/// }
/// ```
/// An embedded object has exactly one parent: assigning an unmanaged one to a managed parent adds it;
/// replacing it, removing it from its list or deleting its parent deletes it. It has no primary key, and is
/// neither added, created nor queried on its own (query its parent through a key path: `address.city`).
open class EmbeddedObject: Object {}

/// The base class of every model: subclass it and declare `@Persisted` properties.
///
/// ```swift
/// final class Person: Object {
///     @Persisted(primaryKey: true) var id: Int
///     @Persisted var name = ""
/// }
/// ```
/// An object is *unmanaged* until it is added to a Realm; then it is a live view of its record, and
/// writing its properties needs a write transaction.
open class Object: CustomStringConvertible {
    /// Set when the object is managed by a Realm.
    @usableFromInline @exclusivity(unchecked) final var _accessor: ObjectAccessor?
    /// Set on probe instances that record which property a key path reads.
    @usableFromInline @exclusivity(unchecked) final var _recorder: KeyPathRecorder?
    // Objects are confined to their thread, and nothing holds an access to these fields across a call: dynamic
    // exclusivity checks are off on them, as on `_accessor` (each check was a runtime call per property set).
    /// Values set by name on an unmanaged object (`setValue(_:forKey:)`, `init(value:)`), by property index;
    /// they take precedence over the `@Persisted` storage until the property is set directly.
    @usableFromInline @exclusivity(unchecked) final var _unmanagedValues: [Int: StoredValue]?
    /// What the `@Persisted` setters stored on this unmanaged object, by property index, so that adding it
    /// reads no property twice.
    @usableFromInline @exclusivity(unchecked) final var _setValues: [StoredValue?]?
    /// The type's information, kept by the first setter of an unmanaged object for the others.
    @usableFromInline @exclusivity(unchecked) final var _unmanagedInfo: TypeInfo?
    /// Set on the objects a migration hands out: values by field id under a stored schema.
    final var _dynamic: DynamicState?
    /// Objects linked from this unmanaged object, by property index (`.some(nil)`: set to no object); they
    /// are added with it.
    @usableFromInline @exclusivity(unchecked) final var _unmanagedLinks: [Int: Object?]?
    /// List instances assigned to this unmanaged object, by property index.
    @usableFromInline @exclusivity(unchecked) final var _unmanagedCollections: [Int: AnyObject]?
    /// The object's part in Swift's Observation, from its first tracked read on (`Observation.swift`).
    @usableFromInline @exclusivity(unchecked) final var _observation: ObjectObservation?

    /// A new unmanaged object. Not `required`, as in RealmSwift (where it comes from an Objective-C class): a
    /// model may declare its own designated initializers beside `override init()`. Strata makes the objects it
    /// reads through the class's `init()` all the same (`Object.make`).
    public init() {}

    /// An unmanaged object with the values in `value`: a dictionary keyed by property name, or an array in
    /// property order.
    public convenience init(value: Any) {
        self.init()
        let info = TypeRegistry.info(for: type(of: self))
        info.assign(value, to: self)
    }

    /// The name of the type in the schema: the class's own name, without module or enclosing types.
    open class func className() -> String {
        String(describing: self)
    }

    /// The primary key's name, for models declared the older way; `@Persisted(primaryKey: true)` is preferred.
    open class func primaryKey() -> String? { nil }
    /// Properties that are not persisted.
    open class func ignoredProperties() -> [String] { [] }
    /// Properties to index, for models declared the older way.
    open class func indexedProperties() -> [String] { [] }
    /// Public property name -> name stored in the file.
    open class func propertiesMapping() -> [String: String] { [:] }

    /// The schema of this class as its declaration gives it; nil when the declaration is not a valid model
    /// (opening a Realm with it reports why).
    public class func sharedSchema() -> ObjectSchema? {
        // try?: an invalid model has no schema here; `Realm(configuration:)` throws its problem.
        (try? TypeRegistry.checkedInfo(for: self))?.schema
    }

    /// The Realm managing this object, or nil when it is unmanaged.
    public var realm: Realm? { _accessor.map { Realm(core: $0.core) } }

    /// True when the object was deleted from its Realm (or its Realm was invalidated).
    public var isInvalidated: Bool { _accessor?.isInvalidated ?? false }

    /// The schema of this object's type.
    public var objectSchema: ObjectSchema {
        if let d = _dynamic { return Migration.objectSchema(of: d.type) }
        return (_accessor?.info ?? TypeRegistry.info(for: type(of: self))).schema
    }

    /// The List property `propertyName` with its objects as `DynamicObject`s (for code that knows types by name).
    public func dynamicList(_ propertyName: String) -> List<DynamicObject> {
        if let state = _dynamic, let p = state.property(propertyName), let view = MigrationCollection.view(of: state, p) as? List<DynamicObject> {
            return view
        }
        return List(accessor: dynamicAccessor(propertyName), property: dynamicIndex(propertyName))
    }

    /// The MutableSet property `propertyName` with its objects as `DynamicObject`s.
    public func dynamicMutableSet(_ propertyName: String) -> MutableSet<DynamicObject> {
        if let state = _dynamic, let p = state.property(propertyName), let view = MigrationCollection.view(of: state, p) as? MutableSet<DynamicObject> {
            return view
        }
        return MutableSet(list: List(accessor: dynamicAccessor(propertyName), property: dynamicIndex(propertyName)))
    }

    /// The Map property `propertyName` with its objects as `DynamicObject`s.
    public func dynamicMap<Key: _MapKey>(_ propertyName: String) -> Map<Key, DynamicObject?> {
        if let state = _dynamic, let p = state.property(propertyName), let view = MigrationCollection.view(of: state, p) as? Map<Key, DynamicObject?> {
            return view
        }
        return Map(accessor: dynamicAccessor(propertyName), property: dynamicIndex(propertyName))
    }

    private func dynamicAccessor(_ propertyName: String) -> ObjectAccessor {
        guard let accessor = _accessor else {
            fatalError("dynamicList, dynamicMutableSet and dynamicMap need a managed object or a migration object; '\(propertyName)' was asked of an unmanaged \(type(of: self).className())")
        }
        return accessor
    }

    private func dynamicIndex(_ propertyName: String) -> Int {
        let info = _accessor?.info ?? TypeRegistry.info(for: type(of: self))
        guard let index = info.propertyIndex[propertyName], info.listTargets[index] != nil else {
            fatalError("Invalid property name '\(propertyName)' for class '\(info.schema.className)': it is not a collection of objects")
        }
        return index
    }

    /// Whether this and `object` are the same managed object (or the same instance).
    public func isSameObject(as object: Object?) -> Bool {
        guard let object else { return false }
        if self === object { return true }
        guard let a = _accessor, let b = object._accessor else { return false }
        return a.core === b.core && a.binding === b.binding && a.key == b.key
    }

    /// Reads or writes a property by name (key-value coding).
    public subscript(key: String) -> Any? {
        get { value(forKey: key) }
        set { setValue(newValue, forKey: key) }
    }

    public func value(forKey key: String) -> Any? {
        if let d = _dynamic { return d.value(forKey: key) }
        // A managed object's type is its binding's (a DynamicObject's is the type it views).
        let info = _accessor?.info ?? TypeRegistry.info(for: type(of: self))
        guard let index = info.propertyIndex[key] else {
            // A LinkingObjects property (O024): the objects linking here.
            if info.linkingObjects.contains(where: { $0.name == key }) {
                // The declaration knows its element type: read it from this class's property.
                let source: Object = type(of: self) == info.objectClass ? self : Object.make(info.objectClass)
                var m: Mirror? = Mirror(reflecting: source)
                while let mirror = m {
                    for child in mirror.children where child.label == "_" + key || child.label == key {
                        if let p = child.value as? any PersistedProperty, let v = p.linkingObjects(_accessor) { return v }
                    }
                    m = mirror.superclassMirror
                }
            }
            fatalError("Invalid property name '\(key)' for class '\(info.schema.className)'.")
        }
        if info.linkTargets[index] != nil { return info.linkedObject(of: self, at: index) }
        if info.listTargets[index] != nil { return info.listStorage(of: self, at: index) }
        // The declared Swift type, as RealmSwift's key-value coding gives it (an Int8 property reads as Int8).
        return info.typedValue(info.storedValue(of: self, at: index), at: index)
    }

    public func setValue(_ value: Any?, forKey key: String) {
        if let d = _dynamic {
            d.setValue(value, forKey: key)
            return
        }
        let info = _accessor?.info ?? TypeRegistry.info(for: type(of: self))
        guard let index = info.propertyIndex[key] else {
            fatalError("Invalid property name '\(key)' for class '\(info.schema.className)'.")
        }
        let property = info.schema.properties[index]
        if info.linkTargets[index] != nil || info.listTargets[index] != nil {
            info.assign([key: value], to: self)
            return
        }
        guard let stored = StoredValue.from(any: value, as: property.type) else {
            fatalError(TypeInfo.invalidValue(value, property, info.schema.className))
        }
        info.setStoredValue(stored, of: self, at: index)
    }

    /// `==` for any value, as `NSObject.isEqual(_:)`, which RealmSwift's objects inherit: false for anything
    /// that is not an object.
    open func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? Object else { return false }
        return self == other
    }

    /// RealmSwift's format: `Dog {`, a line `\tname = value;` per property (links and collections nested, five
    /// levels at most), `}`; `[invalid object]` for a deleted one.
    open var description: String {
        if let d = _dynamic { return d.description }
        return description(depth: RealmDescription.maxDepth)
    }

    static func describe(_ v: StoredValue) -> String {
        switch v {
        case .null: "nil"
        case .string(let s): "\"\(s)\""
        default: "\(v.anyValue ?? "nil")"
        }
    }
}

/// Managed objects are equal when they are the same object of the same file (as RealmSwift's are); an
/// unmanaged object is equal only to itself. So objects work in a `Set`, as dictionary keys and in
/// `#expect(a == b)`.
extension Object: Hashable {
    public static func == (lhs: Object, rhs: Object) -> Bool {
        if lhs === rhs { return true }
        guard let a = lhs._accessor, let b = rhs._accessor else { return false }
        return a.key == b.key && a.core.shared === b.core.shared && a.info.schema.className == b.info.schema.className
    }

    public func hash(into hasher: inout Hasher) {
        if let a = _accessor {
            hasher.combine(a.key)
            hasher.combine(a.info.schema.className)
        } else {
            hasher.combine(ObjectIdentifier(self))
        }
    }
}

/// The objects a migration block receives.
public typealias MigrationObject = DynamicObject

/// RealmSwift's common base of model classes: `objectTypes: [ObjectBase.Type]`, `delete(_: ObjectBase)`.
public typealias ObjectBase = Object

extension Object {
    /// The vtable slot of the allocating entry of `Object.init()`, which every model class overrides,
    /// inherits, or stubs with Swift's trap "Use of unimplemented initializer 'init()'" (a model that declares
    /// designated initializers of its own and no `init()`, which RealmSwift's Objective-C runtime traps on
    /// the same way). Found once, from `Object`'s own descriptor.
    private static let initializerSlot: Int = {
        guard let slot = AllocatingInitializers.slot(ofOnlyDesignatedInitializerOf: Object.self) else {
            fatalError("Strata cannot find Object.init() in Object's vtable on this platform: its class descriptor is not one it reads")
        }
        return slot
    }()

    /// A new instance of `cls` made by its `init()`, as `cls.init()` would if `init()` were `required`.
    static func make(_ cls: Object.Type) -> Object {
        unsafeDowncast(AllocatingInitializers.make(cls, slot: initializerSlot), to: Object.self)
    }
}
