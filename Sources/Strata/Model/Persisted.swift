import Foundation

/// Declares a persisted property of an `Object` subclass.
///
/// `@Persisted var name = ""` declares a default of `""`, which new objects get and which, unlike Realm,
/// existing objects get too when a migration adds the property. `@Persisted(primaryKey: true)` and
/// `@Persisted(indexed: true)` set the primary key and an index.
@propertyWrapper
public struct Persisted<Value: _Persistable> {
    // Small: in an unoptimized build a read through the storage key path boxes the storage in an existential,
    // which holds up to three words without an allocation (the allocation test runs such a build): so the
    // declaration's options are bits, and a LinkingObjects' origin property is its unmanaged value's. A storage
    // of a scalar, a string or a collection fits; one of a LinkingObjects or a Decimal128 does not.
    /// The value while the object is unmanaged and no setter has run (the declared default).
    @usableFromInline var unmanagedValue: Value
    private let options: UInt8
    /// The property's index in its class's schema, written into every storage of an object by the first read
    /// that finds it unset (`PersistedSlots`): the getter reads it through the storage key path, which the
    /// optimizer turns into a load at a constant offset, where finding the index from the key path costs a key
    /// path object per read.
    @usableFromInline var slot: Int32 = -1

    // The bits of `options`. Each initializer sets every field itself: they run unspecialized, for each
    // property of each object made, and delegating to another initializer looked up this type's metadata.
    var isPrimaryKey: Bool { options & 1 != 0 }
    var isIndexed: Bool { options & 2 != 0 }
    var hasDeclaredDefault: Bool { options & 4 != 0 }

    public init() {
        unmanagedValue = Value._initialValue
        options = 0
    }

    public init(wrappedValue: Value) {
        unmanagedValue = wrappedValue
        options = 4
    }

    public init(primaryKey: Bool) {
        unmanagedValue = Value._initialValue
        options = primaryKey ? 1 : 0
    }

    public init(wrappedValue: Value, primaryKey: Bool) {
        unmanagedValue = wrappedValue
        options = primaryKey ? 1 | 4 : 4
    }

    public init(indexed: Bool) {
        unmanagedValue = Value._initialValue
        options = indexed ? 2 : 0
    }

    public init(wrappedValue: Value, indexed: Bool) {
        unmanagedValue = wrappedValue
        options = indexed ? 2 | 4 : 4
    }

    /// A LinkingObjects property's storage, naming its origin property (`init(originProperty:)`).
    init(linkingObjects: Value) {
        unmanagedValue = linkingObjects
        options = 0
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
        // Compiled into the caller, where the key paths are literals: every use of `storageKeyPath` here reads
        // the storage, which the optimizer turns into a load at a constant offset. Any other use would make the
        // key path an object at every read (see `PersistedSlots`), so the rest is done by property index.
        @inline(__always) get {
            let slot = _slot(object, storageKeyPath)
            if Value._propertyType == .linkingObjects {
                return _linkingObjects(object, slot: slot, declared: object[keyPath: storageKeyPath].unmanagedValue)
            }
            if object._accessor != nil {
                // The usual read: a scalar decoded in place from the record when it is current. A loop's cursor
                // records no read for Observation (`Observation.swift`). The object keeps its accessor for the
                // read (which changes neither), so the accessor is used unretained: a retain and a release were a
                // fifth of the read.
                if !Value._isList && Value._objectType == nil && Value._propertyType != .any && slot >= 0,
                    let value = Unmanaged.passUnretained(object._accessor.unsafelyUnwrapped)._withUnsafeGuaranteedRef({ accessor in
                        accessor.observes ? nil : accessor.directValue(Int(slot), as: Value.self)
                    })
                {
                    return value
                }
                return _managedValue(object, object._accessor.unsafelyUnwrapped, slot: slot)
            }
            if object._recorder != nil { return _recordedValue(object, slot: slot) }
            if let value = _unmanagedValue(object, slot: slot) { return value }
            return object[keyPath: storageKeyPath].unmanagedValue
        }
        @inline(__always) set {
            let slot = _slot(object, storageKeyPath)
            // A plain value (not a link, a collection or an AnyRealmValue) is set here, specialized: the general
            // path (`_set`) is a generic call whose witness lookups cost about 200 instructions per set.
            if !Value._isList && Value._objectType == nil && Value._propertyType != .any && Value._propertyType != .linkingObjects, slot >= 0 {
                if object._accessor != nil {
                    // Unretained, as in the read: the object keeps its accessor for the set, and a set of a plain
                    // value runs no code that could replace it (a retain and a release were a sixth of update-all).
                    Unmanaged.passUnretained(object._accessor.unsafelyUnwrapped)._withUnsafeGuaranteedRef {
                        $0.set(Int(slot), newValue._storedValue)
                    }
                    return
                }
                // An unmanaged object records it in the array its first property access made
                // (`_fillPersistedSlots`), unless it is observed or holds values set by name.
                if object._observation == nil, object._unmanagedValues == nil, object._setValues != nil {
                    object._setValues![Int(slot)] = newValue._storedValue
                    return
                }
            }
            _set(object, slot: slot, newValue)
        }
    }

    /// The storage's slot, filled in with all of its object's when it is unset.
    @inlinable @inline(__always)
    static func _slot<EnclosingSelf: Object>(
        _ object: EnclosingSelf, _ storageKeyPath: ReferenceWritableKeyPath<EnclosingSelf, Persisted<Value>>
    ) -> Int32 {
        let slot = object[keyPath: storageKeyPath].slot
        if _fastPath(slot != PersistedSlots.unset) { return slot }
        object._fillPersistedSlots()
        return object[keyPath: storageKeyPath].slot
    }

    /// The schema index of a stored property's slot, or a trap naming the property's class when the schema
    /// leaves it out.
    @usableFromInline
    static func _index(_ object: Object, _ slot: Int32) -> Int {
        guard slot >= 0 else {
            fatalError("\(type(of: object).className()): a @Persisted property of type \(Value.self) is not part of the schema (is it in ignoredProperties()?)")
        }
        return Int(slot)
    }

    /// A LinkingObjects property: computed from the origin type's links, never stored.
    @usableFromInline @inline(never)
    static func _linkingObjects(_ object: Object, slot: Int32, declared: Value) -> Value {
        if let recorder = object._recorder {
            recorder.recordInverse(of: object, slot: slot)
            return Value._zeroValue
        }
        // The origin property the declaration names (also for one the schema leaves out).
        guard let origin = (declared as? any LinkingObjectsValue)?.propertyName else { return Value._zeroValue }
        // Unmanaged: empty, naming its origin property.
        return Value._linkingObjects(object._accessor, origin) ?? Value._zeroValue
    }

    /// A managed object's property other than a scalar read in place.
    @usableFromInline @inline(never)
    static func _managedValue(_ object: Object, _ accessor: ObjectAccessor, slot: Int32) -> Value {
        let index = _index(object, slot)
        if _slowPath(accessor.observes) { accessor.observeRead(index) }
        if Value._propertyType == .any, let v = accessor.anyValue(at: index) as? Value { return v }
        if Value._isList {
            guard let list = Value._managedCollection(accessor, index) else {
                fatalError("\(accessor.info.schema.className): no list view for property \(index)")
            }
            return list
        }
        if !Value._isList && Value._objectType == nil, let value = accessor.directValue(index, as: Value.self) { return value }
        let stored = accessor.get(index)
        if let target = Value._objectType {
            // A link: the object it names, nil when there is none (or it was deleted).
            guard let v = Value._fromLinked(accessor.linkedObject(stored, target: target)) else {
                fatalError("\(accessor.info.schema.className).\(accessor.info.schema.properties[index].name) links to an object of another type")
            }
            return v
        }
        guard let value = Value._fromStored(stored) else { fatalError(accessor.mismatch(stored, Value.self)) }
        return value
    }

    /// A read of a probe instance by a key path being recorded (`KeyPathRecorder`).
    @usableFromInline @inline(never)
    static func _recordedValue(_ object: Object, slot: Int32) -> Value {
        guard let recorder = object._recorder else { return Value._zeroValue }
        recorder.record(object, index: _index(object, slot))
        // Through a to-one link, a probe of the linked type records the rest of the key path.
        if let target = Value._objectType, !Value._isList, let next = Value._fromLinked(recorder.probe(target)) { return next }
        return Value._zeroValue
    }

    /// An unmanaged object's property, when it is not the one its storage holds: set since (the setter records
    /// values beside the storage) or a list assigned. Nil: the storage's value.
    @usableFromInline @inline(never)
    static func _unmanagedValue(_ object: Object, slot: Int32) -> Value? {
        // A property the schema leaves out is only its storage.
        guard slot >= 0 else { return nil }
        let index = Int(slot)
        // An unmanaged object is observed as an `@Observable` class is.
        Object._observeUnmanagedRead(object, index)
        if Value._isList {
            // An unmanaged list is its own storage: the instance the object holds, unless another was assigned.
            return object._unmanagedCollections?[index] as? Value
        }
        guard object._unmanagedValues != nil || object._setValues != nil || object._unmanagedLinks != nil else { return nil }
        if Value._propertyType == .any, let v = object._unmanagedNested(index) as? Value { return v }
        if Value._objectType != nil || Value._propertyType == .any, let links = object._unmanagedLinks, let linked = links[index] {
            if let v = Value._fromLinked(linked) { return v }
        }
        if let stored = object._unmanagedValues?[index], let v = Value._fromStored(stored) { return v }
        if let values = object._setValues, index < values.count, let stored = values[index], let v = Value._fromStored(stored) {
            return v
        }
        return nil
    }

    @usableFromInline @inline(never)
    static func _set(_ object: Object, slot: Int32, _ newValue: Value) {
        if Value._propertyType == .linkingObjects {
            fatalError("LinkingObjects properties are computed from links and cannot be set")
        }
        let index = _index(object, slot)
        if let accessor = object._accessor {
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
        // Trackings that read the property hear of the change (nothing to do for an object never read so).
        let observation = object._observation
        observation?.willSet(index)
        defer { observation?.didSet(index) }
        if Value._isList {
            if object._unmanagedCollections == nil { object._unmanagedCollections = [:] }
            object._unmanagedCollections?[index] = newValue as AnyObject
            return
        }
        if Value._propertyType == .any, let any = newValue as? AnyRealmValue {
            object._setUnmanagedAny(index, any)
            return
        }
        if object._unmanagedValues != nil { object._unmanagedValues?[index] = nil }
        if object._setValues == nil {
            // The type's information is looked up once per object, by its first setter.
            let info = object._unmanagedInfo ?? TypeRegistry.info(for: type(of: object))
            object._setValues = info.unsetValues()
            object._unmanagedInfo = info
        }
        // Recorded here only: writing the storage through its key path costs more than all the rest.
        object._setValues?[index] = newValue._storedValue
        if Value._objectType != nil {
            // The linked object itself, added with this one.
            if object._unmanagedLinks == nil { object._unmanagedLinks = [:] }
            object._unmanagedLinks?[index] = .some(newValue._linkedObject)
        }
    }
}

extension Object {
    /// Writes the slot of every `@Persisted` storage of this object (`PersistedSlots`).
    @usableFromInline @inline(never)
    final func _fillPersistedSlots() {
        let cls = type(of: self)
        let info = _accessor.flatMap { $0.info.objectClass == cls ? $0.info : nil } ?? _unmanagedInfo ?? TypeRegistry.info(for: cls)
        info.slots.fill(self)
        // A new unmanaged object (this runs at its first property access): the array its setters record into,
        // made here with the information already at hand, so that its first setter takes the setters' fast path
        // too (`Persisted`'s subscript). Its entries stay unset (nil) until a setter runs.
        if _accessor == nil, _recorder == nil, _dynamic == nil, _setValues == nil, _unmanagedValues == nil {
            _unmanagedInfo = info
            _setValues = info.unsetValues()
        }
    }
}

/// What schema reflection reads from a `Persisted` value found by `Mirror`.
protocol PersistedProperty {
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
    var storedValue: StoredValue { unmanagedValue._storedValue }
    var valueType: any _Persistable.Type { Value.self }
    var origin: String? { (unmanagedValue as? any LinkingObjectsValue)?.propertyName }
    func linkingObjects(_ accessor: ObjectAccessor?) -> Any? {
        guard Value._propertyType == .linkingObjects else { return nil }
        return Value._linkingObjects(accessor, origin ?? "") ?? Value._zeroValue
    }
    var collection: AnyObject? {
        guard Value._isList else { return nil }
        return unmanagedValue as AnyObject
    }
    var unmanagedLinkedObject: Object? {
        guard Value._objectType != nil, !Value._isList else { return nil }
        return unmanagedValue._linkedObject
    }
}

/// Records the properties a key path reads, on a probe instance (for `sorted(by:)`, `where`, aggregates).
@usableFromInline
final class KeyPathRecorder {
    /// The property names read, in order: one per link followed, then the property (`owner.name`).
    var names: [String] = []
    /// A stored property of `object`'s class, by its index in the schema.
    @usableFromInline func record(_ object: Object, index: Int) {
        names.append(TypeRegistry.info(for: type(of: object)).schema.properties[index].name)
    }
    /// A LinkingObjects property (not stored: found by name), by its storage's slot.
    @usableFromInline func recordInverse(of object: Object, slot: Int32) {
        let info = TypeRegistry.info(for: type(of: object))
        guard let k = PersistedSlots.linkingOrdinal(slot), k < info.linkingObjects.count else {
            fatalError("\(info.schema.className): a LinkingObjects property is not part of the model")
        }
        names.append(info.linkingObjects[k].name)
    }
    /// A probe instance of `type` recording into this recorder (the next step of a key path through a link).
    @usableFromInline func probe(_ type: Object.Type) -> Object {
        let next = Object.make(type)
        next._recorder = self
        return next
    }
}
