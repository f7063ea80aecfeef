import Foundation

/// Declares a persisted property of an `Object` subclass.
///
/// `@Persisted var name = ""` declares a default of `""`, which new objects get and which, unlike Realm,
/// existing objects get too when a migration adds the property. `@Persisted(primaryKey: true)` and
/// `@Persisted(indexed: true)` set the primary key and an index.
@propertyWrapper
public struct Persisted<Value: _Persistable> {
    @usableFromInline
    enum Storage {
        case unmanaged(Value)
        /// Marks the property whose key path is being identified (see `TypeInfo.propertyIndex(for:)`).
        case probe
    }
    @usableFromInline var storage: Storage
    let isPrimaryKey: Bool
    let isIndexed: Bool
    let hasDeclaredDefault: Bool
    /// For `LinkingObjects`: the origin type's property that links here.
    @usableFromInline var originProperty: String?

    public init() {
        storage = .unmanaged(Value._initialValue)
        isPrimaryKey = false
        isIndexed = false
        hasDeclaredDefault = false
    }

    public init(wrappedValue: Value) {
        storage = .unmanaged(wrappedValue)
        isPrimaryKey = false
        isIndexed = false
        hasDeclaredDefault = true
    }

    public init(primaryKey: Bool) {
        storage = .unmanaged(Value._initialValue)
        isPrimaryKey = primaryKey
        isIndexed = false
        hasDeclaredDefault = false
    }

    public init(wrappedValue: Value, primaryKey: Bool) {
        storage = .unmanaged(wrappedValue)
        isPrimaryKey = primaryKey
        isIndexed = false
        hasDeclaredDefault = true
    }

    public init(indexed: Bool) {
        storage = .unmanaged(Value._initialValue)
        isPrimaryKey = false
        isIndexed = indexed
        hasDeclaredDefault = false
    }

    public init(wrappedValue: Value, indexed: Bool) {
        storage = .unmanaged(wrappedValue)
        isPrimaryKey = false
        isIndexed = indexed
        hasDeclaredDefault = true
    }

    @available(*, unavailable, message: "@Persisted can only be used on a property of an Object subclass")
    public var wrappedValue: Value {
        get { fatalError("@Persisted can only be used on a property of an Object subclass") }
        set { fatalError("@Persisted can only be used on a property of an Object subclass") }
    }

    @inlinable
    public static subscript<EnclosingSelf: Object>(
        _enclosingInstance object: EnclosingSelf,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<EnclosingSelf, Value>,
        storage storageKeyPath: ReferenceWritableKeyPath<EnclosingSelf, Persisted<Value>>
    ) -> Value {
        get {
            if Value._propertyType == .linkingObjects {
                // Computed from the origin type's links, never stored.
                if let recorder = object._recorder {
                    recorder.recordInverse(storageKeyPath)
                    return Value._zeroValue
                }
                let property = object[keyPath: storageKeyPath].originProperty ?? ""
                guard let v = Value._linkingObjects(object._accessor, property) else { return Value._zeroValue }
                return v
            }
            if let accessor = object._accessor {
                if Value._propertyType == .any {
                    let index = accessor.info.cachedIndex(storageKeyPath) ?? accessor.info.propertyIndex(for: storageKeyPath, in: object)
                    if _slowPath(accessor.observes) { accessor.observeRead(index) }
                    if let v = accessor.anyValue(at: index) as? Value { return v }
                }
                if !Value._isList && Value._objectType == nil, let index = accessor.info.cachedIndex(storageKeyPath) {
                    // The usual read: a scalar property whose key path was seen before, decoded in place from
                    // the record when it is current, else through the general path. A loop's cursor records no
                    // read for Observation (`Observation.swift`).
                    if _slowPath(accessor.observes) { accessor.observeRead(index) }
                    if let value = accessor.directValue(index, as: Value.self) { return value }
                    let stored = accessor.get(index)
                    guard let value = Value._fromStored(stored) else { fatalError(accessor.mismatch(stored, Value.self)) }
                    return value
                }
                let index = accessor.info.cachedIndex(storageKeyPath)
                    ?? accessor.info.propertyIndex(for: storageKeyPath, in: object)
                if _slowPath(accessor.observes) && Value._propertyType != .any { accessor.observeRead(index) }
                if Value._isList {
                    guard let list = Value._managedCollection(accessor, index) else {
                        fatalError("\(accessor.info.schema.className): no list view for property \(index)")
                    }
                    return list
                }
                let stored = accessor.get(index)
                if let target = Value._objectType {
                    // A link: the object it names, nil when there is none (or it was deleted).
                    guard let v = Value._fromLinked(accessor.linkedObject(stored, target: target)) else {
                        fatalError("\(accessor.info.schema.className).\(accessor.info.schema.properties[index].name) links to an object of another type")
                    }
                    return v
                }
                guard let value = Value._fromStored(stored) else {
                    fatalError(
                        FailableConversion.property(stored, Value.self)
                            ?? "\(accessor.info.schema.className).\(accessor.info.schema.properties[index].name) holds \(stored), "
                            + "which is not a \(Value.self); the file and the model disagree")
                }
                return value
            }
            if let recorder = object._recorder {
                recorder.record(storageKeyPath, in: object)
                // Through a to-one link, a probe of the linked type records the rest of the key path.
                if let target = Value._objectType, !Value._isList, let next = Value._fromLinked(recorder.probe(target)) { return next }
                return Value._zeroValue
            }
            // An unmanaged object is observed as an `@Observable` class is.
            Object._observeUnmanagedRead(object, storageKeyPath)
            if Value._isList {
                // An unmanaged list is its own storage: the instance the object holds.
                let index = TypeRegistry.info(for: type(of: object)).propertyIndex(for: storageKeyPath, in: object)
                if let list = object._unmanagedCollections?[index] as? Value { return list }
            } else if object._unmanagedValues != nil || object._setValues != nil || object._unmanagedLinks != nil {
                // Values set on an unmanaged object live there, not in the storage (see the setter).
                let index = TypeRegistry.info(for: type(of: object)).propertyIndex(for: storageKeyPath, in: object)
                if Value._propertyType == .any, let v = object._unmanagedNested(index) as? Value { return v }
                if Value._objectType != nil || Value._propertyType == .any, let links = object._unmanagedLinks, let linked = links[index] {
                    if let v = Value._fromLinked(linked) { return v }
                }
                if let stored = object._unmanagedValues?[index], let v = Value._fromStored(stored) { return v }
                if let values = object._setValues, index < values.count, let stored = values[index], let v = Value._fromStored(stored) {
                    return v
                }
            }
            switch object[keyPath: storageKeyPath].storage {
            case .unmanaged(let v): return v
            case .probe: return Value._zeroValue
            }
        }
        set {
            if Value._propertyType == .linkingObjects {
                fatalError("LinkingObjects properties are computed from links and cannot be set")
            }
            if let accessor = object._accessor {
                let index = accessor.info.propertyIndex(for: storageKeyPath, in: object)
                if Value._isList {
                    Value._setManagedCollection(accessor, index, newValue)
                    return
                }
                if Value._objectType != nil {
                    accessor.setLink(index, newValue._linkedObject)
                    return
                }
                if Value._propertyType == .any, let any = newValue as? AnyRealmValue {
                    accessor.setAny(index, any)
                    return
                }
                accessor.set(index, newValue._storedValue)
                return
            }
            // Finding the index also registers a reader, so that adding the object needs no reflection. The
            // type's information is looked up once per object, by its first setter.
            let info = object._unmanagedInfo ?? TypeRegistry.info(for: type(of: object))
            let index = info.cachedIndex(storageKeyPath) ?? info.propertyIndex(for: storageKeyPath, in: object)
            // Trackings that read the property hear of the change (nothing to do for an object never read so).
            let observation = object._observation
            observation?.willSet(index)
            defer { observation?.didSet(index) }
            if Value._isList {
                if object._unmanagedCollections == nil { object._unmanagedCollections = [:] }
                object._unmanagedCollections?[index] = newValue as AnyObject
                return
            }
            if object._unmanagedValues != nil { object._unmanagedValues?[index] = nil }
            if object._setValues == nil {
                object._setValues = info.unsetValues()
                object._unmanagedInfo = info
            }
            // Recorded here only: writing the storage through its key path costs more than all the rest.
            object._setValues?[index] = newValue._storedValue
            if Value._objectType != nil {
                // The linked object itself, added with this one.
                if object._unmanagedLinks == nil { object._unmanagedLinks = [:] }
                object._unmanagedLinks?[index] = .some(newValue._linkedObject)
            } else if Value._propertyType == .any {
                // An AnyRealmValue holding an object: the object, added with this one.
                if let o = newValue._linkedObject {
                    if object._unmanagedLinks == nil { object._unmanagedLinks = [:] }
                    object._unmanagedLinks?[index] = .some(o)
                } else {
                    object._unmanagedLinks?[index] = nil
                }
                // A nested collection: kept whole, so that the objects in it are added with this one.
                object._setUnmanagedNested(index, newValue as? AnyRealmValue)
            }
        }
    }
}

/// What schema reflection reads from a `Persisted` value found by `Mirror`.
protocol PersistedProperty {
    var isProbe: Bool { get }
    var isPrimaryKey: Bool { get }
    var isIndexed: Bool { get }
    var hasDeclaredDefault: Bool { get }
    var storedValue: StoredValue { get }
    var valueType: any _Persistable.Type { get }
    /// The List instance of an unmanaged list property.
    var collection: AnyObject? { get }
    /// The object an unmanaged link property holds in its storage (its declared default).
    var unmanagedLinkedObject: Object? { get }
    var origin: String? { get }
    /// For a LinkingObjects property: its value for the object whose accessor is `accessor`.
    func linkingObjects(_ accessor: ObjectAccessor?) -> Any?
}

extension PersistedProperty {
    var unmanagedLinkedObject: Object? { nil }
}

extension Persisted: PersistedProperty {
    var isProbe: Bool { if case .probe = storage { return true } else { return false } }
    var storedValue: StoredValue {
        switch storage {
        case .unmanaged(let v): v._storedValue
        case .probe: Value._zeroValue._storedValue
        }
    }
    var valueType: any _Persistable.Type { Value.self }
    var origin: String? { originProperty }
    func linkingObjects(_ accessor: ObjectAccessor?) -> Any? {
        guard Value._propertyType == .linkingObjects else { return nil }
        return Value._linkingObjects(accessor, originProperty ?? "") ?? Value._zeroValue
    }
    var collection: AnyObject? {
        guard Value._isList, case .unmanaged(let v) = storage else { return nil }
        return v as AnyObject
    }
    var unmanagedLinkedObject: Object? {
        guard Value._objectType != nil, !Value._isList, case .unmanaged(let v) = storage else { return nil }
        return v._linkedObject
    }
}

/// Records the properties a key path reads, on a probe instance (for `sorted(by:)`, `where`, aggregates).
@usableFromInline
final class KeyPathRecorder {
    /// The property names read, in order: one per link followed, then the property (`owner.name`).
    var names: [String] = []
    @usableFromInline func record<O: Object, V>(_ keyPath: ReferenceWritableKeyPath<O, Persisted<V>>, in object: O) {
        let info = TypeRegistry.info(for: O.self)
        names.append(info.schema.properties[info.propertyIndex(for: keyPath, in: object)].name)
    }
    /// LinkingObjects properties read (they are not stored: found by name).
    @usableFromInline func recordInverse<O: Object, V>(_ keyPath: ReferenceWritableKeyPath<O, Persisted<V>>) {
        names.append(TypeRegistry.info(for: O.self).inverseName(of: keyPath))
    }
    /// A probe instance of `type` recording into this recorder (the next step of a key path through a link).
    @usableFromInline func probe(_ type: Object.Type) -> Object {
        let next = Object.make(type)
        next._recorder = self
        return next
    }
}
