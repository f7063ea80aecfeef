import Foundation

// Invariants:
// (1) A Map is stored as one list property: key, value, key, value..., keys distinct and in ascending order, so
//     that equal maps have equal records and a key is found by binary search.
// (2) A managed Map is a view of its object's property, as a managed List is: reads decode the current value,
//     changes write the whole property back through the accessor.

/// Keys of a `Map`: strings, as in Realm.
public protocol _MapKey: _Persistable, Hashable, Comparable {}
extension String: _MapKey {}

/// A dictionary property: `@Persisted var scores: Map<String, Int>`. Keys are strings; values are any
/// persistable value type, optional or not, or optional objects (`Map<String, Dog?>`: a value becomes nil
/// when its object is deleted).
///
/// Unmanaged, it holds its entries; once its object is added to a Realm it is a live view of the stored map,
/// and changing it needs a write transaction.
public final class Map<Key: _MapKey, Value: _Persistable>: Sequence, CustomStringConvertible {
    private var entries: [(key: Key, value: Value)] = []
    private let ownAccessor: ObjectAccessor?
    /// For a map declared with `let` in a model: the object it belongs to, once bound to it.
    private var legacy: LegacyBinding?
    /// The object whose property the map is a view of; nil while unmanaged.
    var accessor: ObjectAccessor? { ownAccessor ?? legacy?.accessor }
    /// Set for a map of an object a migration handed out (its entries live in that object's values).
    let migrationOwner: MigrationCollection?
    /// Where the map lives in its object: a Map property, or a dictionary nested in an AnyRealmValue.
    private let ownLocation: NestedLocation
    var location: NestedLocation { ownAccessor == nil ? legacy.map { .property($0.index) } ?? ownLocation : ownLocation }
    var property: Int { location.property }

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

    /// The Realm of the map's object, nil when unmanaged.
    public var realm: Realm? { accessor.map { Realm(core: $0.core) } }
    public var isInvalidated: Bool { accessor?.isInvalidated ?? false }

    // MARK: Reading

    /// The entries in key order.
    private var current: [(key: Key, value: Value)] {
        guard let accessor else {
            guard let migrationOwner else { return entries }
            // A migration object's map: an entry whose object is gone reads as nil and still counts.
            let items = migrationOwner.items
            var out: [(key: Key, value: Value)] = []
            var i = 0
            while i + 1 < items.count {
                let v = Value._objectType != nil ? Value._fromLinked(migrationOwner.object(items[i + 1])) : Value._fromStored(items[i + 1])
                if let k = Key._fromStored(items[i]), let v { out.append((k, v)) }
                i += 2
            }
            return out
        }
        // For Observation, reading a map reads its property (`Observation.swift`).
        if accessor.observes { accessor.observeRead(property) }
        if location.isPlain {
            guard case .list(let items) = accessor.get(property) else { return [] }
            return Self.decode(items, accessor, location)
        }
        return Self.decode(accessor.nestedItems(location, list: false) ?? [], accessor, location)
    }

    /// The entries of a stored map; objects are found through `accessor` (a value naming a deleted object
    /// reads as nil).
    static func decode(_ items: [StoredValue], _ accessor: ObjectAccessor? = nil, _ location: NestedLocation? = nil) -> [(key: Key, value: Value)] {
        var out: [(key: Key, value: Value)] = []
        out.reserveCapacity(items.count / 2)
        var i = 0
        while i + 1 < items.count {
            if let k = Key._fromStored(items[i]) {
                if Value.self == AnyRealmValue.self, let accessor, let location, case .string(let name) = items[i] {
                    // Objects and nested collections need their place and their Realm.
                    if let v = accessor.anyValue(items[i + 1], at: location.appending(.key(name))) as? Value { out.append((k, v)) }
                } else if let target = Value._objectType {
                    // A dynamic view (`dynamicMap`) names its objects by the property's target type.
                    let object: Object?
                    if target == DynamicObject.self, let accessor, let location,
                        let typeName = accessor.info.schema.properties[location.property].objectClassName
                    {
                        object = accessor.core.linkedDynamicObject(items[i + 1], typeName: typeName)
                    } else {
                        object = accessor.flatMap { $0.linkedObject(items[i + 1], target: target) }
                    }
                    if let v = Value._fromLinked(object) { out.append((k, v)) }
                } else if let v = Value._fromStored(items[i + 1]) {
                    out.append((k, v))
                } else {
                    FailableConversion.checkElement(items[i + 1], Value.self)
                }
            }
            i += 2
        }
        return out
    }

    /// The stored form of entries; objects are added to `core` when they are unmanaged.
    static func encode(_ entries: [(key: Key, value: Value)], in core: RealmCore? = nil, update: Realm.UpdatePolicy = .error) -> StoredValue {
        var items: [StoredValue] = []
        items.reserveCapacity(entries.count * 2)
        for (k, v) in entries {
            items.append(k._storedValue)
            items.append(core.map { $0.stored(element: v, update: update) } ?? v._storedValue)
        }
        return .list(items)
    }

    public var count: Int { current.count }
    public var isEmpty: Bool { count == 0 }
    /// The keys, in ascending order.
    public var keys: [Key] { current.map(\.key) }
    /// The values, in the order of their keys.
    public var values: [Value] { current.map(\.value) }

    /// The value for `key`, nil when the map has none. Setting nil removes the key.
    public subscript(key: Key) -> Value? {
        get { Self.position(of: key, in: current).found.map { current[$0].value } }
        set {
            if let newValue { updateValue(newValue, forKey: key) } else { removeObject(for: key) }
        }
    }

    /// The value for `key` (RealmSwift's name).
    public func object(forKey key: Key) -> Value? { self[key] }

    public func makeIterator() -> IndexingIterator<[(key: Key, value: Value)]> { current.makeIterator() }

    /// The map as a sequence of `(key: Key, value: Value)` pairs (RealmSwift's spelling; a `Map` here is such a
    /// sequence already).
    public func asKeyValueSequence() -> [(key: Key, value: Value)] { current }

    public var description: String { description(depth: RealmDescription.maxDepth) }

    /// Where `key` is (found) or would go (insert), by binary search over keys in order.
    private static func position(of key: Key, in entries: [(key: Key, value: Value)]) -> (found: Int?, insert: Int) {
        var lo = 0, hi = entries.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if entries[mid].key < key { lo = mid + 1 } else { hi = mid }
        }
        return (lo < entries.count && entries[lo].key == key ? lo : nil, lo)
    }

    // MARK: Changing

    private func change(_ body: (inout [(key: Key, value: Value)]) -> Void) {
        guard let accessor else {
            if let migrationOwner {
                var all = current
                body(&all)
                migrationOwner.write(all.flatMap { [$0.key._storedValue, migrationOwner.stored($0.value)] })
                return
            }
            body(&entries)
            return
        }
        var all = current
        body(&all)
        let encoded = Self.encode(all, in: accessor.core)
        if location.isPlain {
            accessor.set(property, encoded)
        } else if case .list(let items) = encoded {
            accessor.setNestedItems(location, list: false, items)
        }
    }

    /// Sets the value for `key`, adding the key when it is new.
    public func updateValue(_ value: Value, forKey key: Key) {
        change { entries in
            let p = Self.position(of: key, in: entries)
            if let i = p.found { entries[i].value = value } else { entries.insert((key, value), at: p.insert) }
        }
    }

    /// Removes `key` and its value (nothing when the map has no such key).
    public func removeObject(for key: Key) {
        change { entries in
            if let i = Self.position(of: key, in: entries).found { entries.remove(at: i) }
        }
    }

    public func removeAll() { change { $0.removeAll() } }

    /// Sets several entries (the later of two equal keys wins).
    public func merge<S: Sequence>(_ other: S) where S.Element == (key: Key, value: Value) {
        change { entries in
            for (k, v) in other {
                let p = Self.position(of: k, in: entries)
                if let i = p.found { entries[i].value = v } else { entries.insert((k, v), at: p.insert) }
            }
        }
    }
}

extension Map: _Persistable {
    public static var _propertyType: PropertyType { Value._propertyType }
    public static var _zeroValue: Map<Key, Value> { Map() }
    public static func _fromStored(_ v: StoredValue) -> Map<Key, Value>? {
        guard case .list(let items) = v else { return nil }
        let map = Map()
        map.entries = decode(items)
        return map
    }
    public var _storedValue: StoredValue { Self.encode(current) }
    public static var _objectType: Object.Type? { Value._objectType }
    public static var _isList: Bool { true }
    public static var _isMap: Bool { true }
    public static var _isOptionalMapValue: Bool { Value._isOptional }
    public static var _hasOptionalElements: Bool { Value._isOptional }
    public static func _managedCollection(_ owner: AnyObject, _ index: Int) -> Map<Key, Value>? {
        (owner as? ObjectAccessor).map { Map(accessor: $0, property: index) }
    }
    public static func _setManagedCollection(_ owner: AnyObject, _ index: Int, _ value: Map<Key, Value>) {
        guard let accessor = owner as? ObjectAccessor else { return }
        let entries = Array(value)
        Map(accessor: accessor, property: index).change { $0 = entries }
    }
}

extension Map: ListStorage {
    func storedElements(in core: RealmCore, update: Realm.UpdatePolicy) -> StoredValue { Self.encode(current, in: core, update: update) }

    /// `values`: keys and values alternating (as `anyElements` gives them, and as a dictionary is passed on).
    func replace(withAny values: [Any?], target: Object.Type?, className: String, property: String) {
        var out: [(key: Key, value: Value)] = []
        var i = 0
        while i + 1 < values.count {
            let v: Value?
            if let target {
                // An object, a dictionary or array for a new one, or nil.
                switch values[i + 1] {
                case nil, is NSNull: v = Value._fromLinked(nil)
                case let o as Object: v = Value._fromLinked(o)
                case let some?:
                    let o = Object.make(target)
                    TypeRegistry.info(for: target).assign(some, to: o)
                    v = Value._fromLinked(o)
                }
            } else {
                v = StoredValue.from(any: values[i + 1], as: Value._propertyType).flatMap(Value._fromStored)
            }
            guard let k = StoredValue.from(any: values[i], as: Key._propertyType).flatMap(Key._fromStored), let v else {
                fatalError("Invalid entry '\(String(describing: values[i])): \(String(describing: values[i + 1]))' for \(className).\(property), a Map<\(Key.self), \(Value.self)>")
            }
            let p = Self.position(of: k, in: out)
            if let found = p.found { out[found].value = v } else { out.insert((k, v), at: p.insert) }
            i += 2
        }
        change { $0 = out }
    }

    func managedView(_ accessor: ObjectAccessor, _ index: Int) -> any ListStorage { Map(accessor: accessor, property: index) }

    var anyElements: [Any?] { current.flatMap { [Optional($0.key as Any), Optional($0.value as Any)] } }
}

/// A map declared with `let` in a model is a property, as a list is.
extension Map: LegacyCollection {
    func bind(to owner: Object, index: Int) {
        if legacy == nil { legacy = LegacyBinding() }
        legacy?.bind(to: owner, index: index)
    }

    func setUnmanaged(_ value: StoredValue) -> Bool {
        guard let map = Map._fromStored(value) else { return false }
        entries = map.entries
        return true
    }

    func unmanagedCopy() -> any StoredOnAdd {
        let copy = Map()
        copy.entries = current
        return copy
    }
}

/// The protocol of RealmSwift's keyed collections (`Map`), for generic code over them:
/// `func total<M: RealmKeyedCollection>(_ m: M) -> Int where M.Value == Int { m.values.reduce(0, +) }`.
public protocol RealmKeyedCollection: Sequence, ThreadConfined, CustomStringConvertible {
    associatedtype Key: _MapKey
    associatedtype Value: RealmCollectionValue
    var count: Int { get }
    var keys: [Key] { get }
    var values: [Value] { get }
    subscript(key: Key) -> Value? { get set }
    func updateValue(_ value: Value, forKey key: Key)
    func removeObject(for key: Key)
    func removeAll()
}

extension Map: RealmKeyedCollection where Value: RealmCollectionValue {}
