import Engine
import Foundation
import Synchronization

/// What the object layer knows about one model class: its schema read by reflection, its defaults, and
/// where its records live once bound to a file.
@usableFromInline
final class TypeInfo: @unchecked Sendable {
    let objectClass: Object.Type
    @usableFromInline let schema: ObjectSchema
    @usableFromInline var propertyCount: Int { schema.properties.count }

    /// A value slot per property, none set: what an unmanaged object records its setters' values in. Built by
    /// appending to reserved capacity, which runs code specialized for the element type: `Array(repeating:)`
    /// and `init(unsafeUninitializedCapacity:)` went through the standard library's generic allocation (a
    /// metadata lookup per object), and copying a template through the runtime's generic element copy.
    @usableFromInline func unsetValues() -> [StoredValue?] {
        var values: [StoredValue?] = []
        values.reserveCapacity(defaults.count)
        for _ in 0..<defaults.count { values.append(nil) }
        return values
    }
    /// Property name -> index in `schema.properties`.
    let propertyIndex: [String: Int]
    /// The value each property gets when nothing else is given.
    let defaults: [StoredValue]
    let primaryKeyIndex: Int?
    /// The properties that are not optional (a nil given for one becomes its default), ascending.
    let requiredIndices: [Int]
    /// The List and MutableSet properties, ascending.
    let listIndices: [Int]
    /// Whether every property holds a plain value (no link, collection or `AnyRealmValue`): an object of such a
    /// type is added whole, its record encoded at once.
    let holdsValuesOnly: Bool
    /// Mirror child label -> property index, for reading unmanaged values.
    private let labelIndex: [String: Int]
    /// The properties declared with `let` (`RealmProperty`, `RealmOptional`): Mirror label -> property index.
    private let legacyLabels: [String: Int]
    /// Whether objects of this type have `let` properties to bind when they become managed.
    let hasLegacyProperties: Bool
    /// The class each link property points to, by property index.
    let linkTargets: [Int: Object.Type]
    /// The List properties, by property index: the element class for lists of objects, nil for values.
    let listTargets: [Int: Object.Type?]
    /// The link and List properties whose objects are embedded (owned by the object), by property index.
    let embeddedTargets: [Int: Object.Type]
    /// The LinkingObjects properties: name, origin class and the origin's property.
    let linkingObjects: [(name: String, origin: Object.Type, property: String)]

    /// Model key path -> property name, for queries, sorts and aggregates (`name(of:)`).
    let keyPathNames = Locked<[KeyPathKey: String]>([:])
    /// Storage key path -> property index, found once per key path by probing.
    private let keyPathIndex = Locked(KeyPathTable())
    /// The identities of key paths in `keyPathIndex.byIdentity`, read without a lock.
    private let keyPathSlots = KeyPathSlots()

    struct KeyPathTable: @unchecked Sendable {
        var byValue: [KeyPathKey: Int] = [:]
        var byIdentity: [ObjectIdentifier: (keyPath: AnyKeyPath, index: Int)] = [:]
    }

    /// Key paths are immutable values; this makes them usable as keys of a mutex-guarded dictionary.
    struct KeyPathKey: Hashable, @unchecked Sendable {
        let keyPath: AnyKeyPath
    }
    /// Per property, a reader of an unmanaged instance's value, registered when the property's key path is
    /// first seen; once every property has one, unmanaged values are read without reflection.
    private let readers = Locked<[Int: Reader]>([:])
    private let allReaders = Locked<[Reader]?>(nil)

    /// Reads one property of an unmanaged instance through its storage key path.
    struct Reader: @unchecked Sendable {
        let read: (Object) -> StoredValue
    }

    private static let narrowIntegerTypes: [any _Persistable.Type] = [
        Int8.self, Int16.self, Int32.self, Int64.self, Int8?.self, Int16?.self, Int32?.self, Int64?.self,
    ]

    init(objectClass: Object.Type) throws {
        self.objectClass = objectClass
        let className = objectClass.className()
        let sample = objectClass.init()
        var properties: [Property] = []
        var defaults: [StoredValue] = []
        var labels: [String: Int] = [:]
        var legacy: [String: Int] = [:]
        var linkTargets: [Int: Object.Type] = [:]
        var listTargets: [Int: Object.Type?] = [:]
        var inverse: [(name: String, origin: Object.Type, property: String)] = []
        let ignored = Set(objectClass.ignoredProperties())
        let legacyPrimary = objectClass.primaryKey()
        let legacyIndexed = Set(objectClass.indexedProperties())
        let mapping = objectClass.propertiesMapping()
        var integers: [Int: any _Persistable.Type] = [:]
        var mirrors: [Mirror] = []
        var m: Mirror? = Mirror(reflecting: sample)
        while let mirror = m {
            mirrors.insert(mirror, at: 0)
            m = mirror.superclassMirror
        }
        for mirror in mirrors {
            for child in mirror.children {
                guard let label = child.label, let persisted = child.value as? any PersistedProperty else { continue }
                let name = label.hasPrefix("_") ? String(label.dropFirst()) : label
                if ignored.contains(name) { continue }
                let type = persisted.valueType
                if type._propertyType == .linkingObjects {
                    // Not stored: checked against the origin type when the schema is bound.
                    if let origin = type._objectType { inverse.append((name, origin, persisted.origin ?? "")) }
                    continue
                }
                let isPrimary = persisted.isPrimaryKey || legacyPrimary == name
                if persisted is any LegacyProperty {
                    if type._objectType != nil || type._isList {
                        throw Realm.Error(
                            .schemaMismatch,
                            "Property '\(className).\(name)' is a RealmProperty of \(type); declare links and collections with @Persisted.")
                    }
                    legacy[label] = properties.count
                }
                // RealmSwift's schema errors, with its texts (O003, O004, O010, O013).
                if isPrimary && !type._canBePrimaryKey {
                    throw Realm.Error(
                        .schemaMismatch,
                        "Property '\(name)' cannot be made the primary key of '\(className)' because it is not a 'string', 'int', 'objectId', or 'uuid' property.")
                }
                let targetName = type._objectType.map { $0.className() } ?? "Object"
                if type._propertyType == .object, !type._isOptional, !type._isList {
                    throw Realm.Error(.schemaMismatch, "Object property '\(name)' must be marked as optional.")
                }
                if type._isList, !type._isMap, type._objectType != nil, type._hasOptionalElements {
                    throw Realm.Error(
                        .schemaMismatch, "\(type._isSet ? "MutableSet" : "List")<\(targetName)> property '\(name)' must not be marked as optional.")
                }
                if type._isMap, type._objectType != nil, !type._isOptionalMapValue {
                    throw Realm.Error(.schemaMismatch, "Map<String, \(targetName)> property '\(name)' must be marked as optional.")
                }
                if persisted.isIndexed || legacyIndexed.contains(name), !type._isList, [.float, .double, .data].contains(type._propertyType) {
                    throw Realm.Error(
                        .schemaMismatch,
                        "Property '\(className).\(name)' of type '\("\(type._propertyType)".lowercased())' cannot be indexed.")
                }
                if type._isList {
                    listTargets[properties.count] = .some(type._objectType)
                } else if let target = type._objectType {
                    linkTargets[properties.count] = target
                }
                labels[label] = properties.count
                properties.append(Property(
                    name: name, columnName: mapping[name] ?? name, type: type._propertyType, isOptional: type._isOptional,
                    isIndexed: persisted.isIndexed || legacyIndexed.contains(name) || isPrimary, isPrimaryKey: isPrimary,
                    objectClassName: type._objectType?.className(), isArray: type._isList && !type._isSet && !type._isMap, isSet: type._isSet, isMap: type._isMap,
                    hasOptionalElements: type._hasOptionalElements))
                // What records written before the property existed read: the declared default, else the zero value.
                defaults.append(persisted.hasDeclaredDefault ? persisted.storedValue : persisted.valueType._zeroValue._storedValue)
                if Self.narrowIntegerTypes.contains(where: { $0 == type }) { integers[properties.count - 1] = type }
            }
        }
        let primaries = properties.filter(\.isPrimaryKey)
        if primaries.count > 1 {
            throw Realm.Error(
                .schemaMismatch,
                "Properties '\(primaries[1].name)' and '\(primaries[0].name)' are both marked as the primary key of '\(className)'")
        }
        if let legacyPrimary, !properties.contains(where: { $0.name == legacyPrimary }) {
            throw Realm.Error(.schemaMismatch, "Primary key property '\(legacyPrimary)' does not exist on object '\(className)'")
        }
        if properties.isEmpty {
            throw Realm.Error(
                .schemaMismatch,
                "No properties are defined for '\(className)'. Did you remember to mark them with '@objc' or '@Persisted' in your model?")
        }
        let isEmbedded = objectClass is EmbeddedObject.Type
        if isEmbedded, properties.contains(where: \.isPrimaryKey) {
            throw Realm.Error(.schemaMismatch, "Embedded object type '\(className)' cannot have a primary key.")
        }
        let computed = inverse.map { inverse in
            Property(
                name: inverse.name, columnName: inverse.name, type: .linkingObjects, isOptional: false, isIndexed: false, isPrimaryKey: false,
                objectClassName: inverse.origin.className(), isArray: true, linkOriginPropertyName: inverse.property)
        }
        self.schema = ObjectSchema(
            className: className, properties: properties, computedProperties: computed, isEmbedded: isEmbedded, objectClass: objectClass)
        var embedded: [Int: Object.Type] = [:]
        for (i, target) in linkTargets where target is EmbeddedObject.Type { embedded[i] = target }
        for (i, target) in listTargets { if let target, target is EmbeddedObject.Type { embedded[i] = target } }
        self.embeddedTargets = embedded
        self.defaults = defaults
        self.integerTypes = integers
        self.labelIndex = labels
        self.legacyLabels = legacy
        self.hasLegacyProperties = !legacy.isEmpty
        self.linkTargets = linkTargets
        self.listTargets = listTargets
        self.linkingObjects = inverse
        self.primaryKeyIndex = properties.firstIndex { $0.isPrimaryKey }
        self.requiredIndices = properties.indices.filter { !properties[$0].isNullable }
        self.listIndices = listTargets.keys.sorted()
        holdsValuesOnly = properties.allSatisfy { p in !p.isCollection && p.type != .object && p.type != .any && p.type != .linkingObjects }
        self.propertyIndex = Dictionary(uniqueKeysWithValues: properties.enumerated().map { ($1.name, $0) })
    }

    /// RealmSwift's text for a value of the wrong type (O035): `Invalid value '<v>' of type '<class>' for
    /// '<type>[?]' property '<Type>.<prop>'.`
    static func invalidValue(_ value: Any?, _ property: Property, _ className: String) -> String {
        invalidValueMessage(
            value, type: property.type, target: property.objectClassName, nullable: property.isNullable, collection: "",
            property: "\(className).\(property.name)")
    }

    /// The text of `invalidValue`, for declared and stored properties alike (`collection`: "", " array", " set"
    /// or " dictionary").
    static func invalidValueMessage(
        _ value: Any?, type: PropertyType, target: String?, nullable: Bool, collection: String, property: String
    ) -> String {
        // A value that arrived wrapped in an Optional (`Any?` holding `Int?`) shows as itself, as in Realm's text.
        var inner = value
        while let v = inner, Mirror(reflecting: v).displayStyle == .optional { inner = Mirror(reflecting: v).children.first?.value }
        let shown = inner.map { "\($0)" } ?? "nil"
        let valueType = inner.map { "\(Swift.type(of: $0))" } ?? "nil"
        let base = type == .object ? (target ?? "object") : "\(type)".lowercased()
        return "Invalid value '\(shown)' of type '\(valueType)' for '\(base)\(nullable ? "?" : "")'\(collection) property '\(property)'."
    }

    /// Per property, the declared Swift type of an integer narrower or wider than `Int` (`Int8`…`Int64`, optional
    /// or not), for key-value coding; nil for every other property.
    private(set) var integerTypes: [Int: any _Persistable.Type] = [:]

    /// A stored value as key-value coding gives it: `Int8`, `Int16`, `Int32` or `Int64` for those properties,
    /// RealmSwift's value type otherwise.
    func typedValue(_ stored: StoredValue, at index: Int) -> Any? {
        if let type = integerTypes[index], let typed = type._fromStored(stored) {
            // An optional integer type gives an optional; nil stays nil.
            if stored.isNull { return nil }
            return typed
        }
        return stored.anyValue
    }

    /// The property a `@Persisted` storage key path refers to. The first time, a probe instance with that
    /// property marked is reflected to find its name.
    @usableFromInline
    func propertyIndex<O: Object, V>(for keyPath: ReferenceWritableKeyPath<O, Persisted<V>>, in object: O) -> Int {
        if let i = cachedIndex(keyPath) { return i }
        return probeIndex(for: keyPath, in: object)
    }

    /// The property index of a storage key path seen before (non-generic, for the hot path). Keyed by the
    /// key path's value: key path instances are not unique, and an identifier could be reused.
    @usableFromInline
    func cachedIndex(_ keyPath: AnyKeyPath) -> Int? {
        // Key path literals are usually one shared instance: an identity hit in the lock-free slots costs
        // one atomic load, and every property access of every object goes through here.
        let id = ObjectIdentifier(keyPath)
        if let index = keyPathSlots.index(of: id) { return index }
        // The table holds each key path it has seen, so its identifier cannot be reused while it is cached
        // (here or in the slots, which are filled only from entries of the table).
        return keyPathIndex.withLock { table in
            if let hit = table.byIdentity[id], hit.keyPath === keyPath {
                keyPathSlots.insert(id, hit.index)
                return hit.index
            }
            guard let index = table.byValue[KeyPathKey(keyPath: keyPath)] else { return nil }
            table.byIdentity[id] = (keyPath, index)
            keyPathSlots.insert(id, index)
            return index
        }
    }

    @inline(never)
    private func probeIndex<O: Object, V>(for keyPath: ReferenceWritableKeyPath<O, Persisted<V>>, in object: O) -> Int {
        let id = KeyPathKey(keyPath: keyPath)
        let probe = O.init()
        probe[keyPath: keyPath].storage = .probe
        var m: Mirror? = Mirror(reflecting: probe)
        var found: Int? = nil
        while let mirror = m, found == nil {
            for child in mirror.children {
                if let label = child.label, let p = child.value as? any PersistedProperty, p.isProbe {
                    found = labelIndex[label]
                    break
                }
            }
            m = mirror.superclassMirror
        }
        guard let index = found else {
            fatalError("\(schema.className): a @Persisted property is not part of the schema (is it in ignoredProperties()?)")
        }
        keyPathIndex.withLock { $0.byValue[id] = index }
        let reader = Reader { object in
            guard let typed = object as? O else { return .null }
            return typed[keyPath: keyPath].storedValue
        }
        let count = schema.properties.count
        let complete: [Reader]? = readers.withLock { r in
            r[index] = reader
            guard r.count == count else { return nil }
            return (0..<count).compactMap { r[$0] }
        }
        if let complete { allReaders.withLock { $0 = complete } }
        return index
    }

    /// The name of the LinkingObjects property whose storage is `keyPath` (found by marking it on a probe).
    func inverseName<O: Object, V>(of keyPath: ReferenceWritableKeyPath<O, Persisted<V>>) -> String {
        let probe = O.init()
        probe[keyPath: keyPath].storage = .probe
        var m: Mirror? = Mirror(reflecting: probe)
        while let mirror = m {
            for child in mirror.children {
                if let label = child.label, let p = child.value as? any PersistedProperty, p.isProbe {
                    return label.hasPrefix("_") ? String(label.dropFirst()) : label
                }
            }
            m = mirror.superclassMirror
        }
        fatalError("\(schema.className): a LinkingObjects property is not part of the model")
    }

    /// The List behind list property `index` of `object`: the managed view, the one assigned, or the one its
    /// property holds.
    func listStorage(of object: Object, at index: Int) -> (any ListStorage)? {
        var own: (any ListStorage)? = object._unmanagedCollections?[index] as? any ListStorage
        if own == nil {
            // A managed DynamicObject has no storage of its own: a new model instance gives the collection type.
            let source: Object = object._accessor != nil && !(type(of: object) == objectClass) ? objectClass.init() : object
            var m: Mirror? = Mirror(reflecting: source)
            while let mirror = m, own == nil {
                for child in mirror.children {
                    if let label = child.label, labelIndex[label] == index, let p = child.value as? any PersistedProperty {
                        own = p.collection as? any ListStorage
                        break
                    }
                }
                m = mirror.superclassMirror
            }
        }
        if let accessor = object._accessor { return own?.managedView(accessor, index) }
        return own
    }

    /// The object a link property of `object` names, managed or not.
    func linkedObject(of object: Object, at index: Int) -> Object? {
        if let accessor = object._accessor, let target = linkTargets[index] {
            return accessor.linkedObject(accessor.get(index), target: target)
        }
        if let linked = object._unmanagedLinks?[index] { return linked }
        return nil
    }

    /// A property's value, managed or not.
    func storedValue(of object: Object, at index: Int) -> StoredValue {
        if let accessor = object._accessor { return accessor.get(index) }
        if let v = object._unmanagedValues?[index] { return v }
        return unmanagedValues(of: object)[index]
    }

    /// Every property's value of an unmanaged object, by reflection.
    func unmanagedValues(of object: Object) -> [StoredValue] {
        // Values the setters recorded need no reading; the others are read through their key paths.
        if let set = object._setValues, set.count == schema.properties.count, !set.contains(where: { $0 == nil }) {
            var values = set.map { $0 ?? .null }
            if let overrides = object._unmanagedValues {
                for (i, v) in overrides { values[i] = v }
            }
            return values
        }
        if let readers = allReaders.withLock({ $0 }) {
            var values = readers.indices.map { i in object._setValues?[i] ?? readers[i].read(object) }
            if let overrides = object._unmanagedValues {
                for (i, v) in overrides { values[i] = v }
            }
            return values
        }
        var values = defaults
        var m: Mirror? = Mirror(reflecting: object)
        while let mirror = m {
            for child in mirror.children {
                if let label = child.label, let i = labelIndex[label], let p = child.value as? any PersistedProperty {
                    values[i] = object._setValues.flatMap { i < $0.count ? $0[i] : nil } ?? p.storedValue
                }
            }
            m = mirror.superclassMirror
        }
        if let overrides = object._unmanagedValues {
            for (i, v) in overrides { values[i] = v }
        }
        return values
    }

    /// Binds the `let` properties (`RealmProperty`, `RealmOptional`) of `object` to it, so that they read and
    /// write through it.
    func bindLegacyProperties(of object: Object) {
        forEachLegacyProperty(of: object) { property, index in property.bind(to: object, index: index) }
    }

    private func forEachLegacyProperty(of object: Object, _ body: (any LegacyProperty, Int) -> Void) {
        var m: Mirror? = Mirror(reflecting: object)
        while let mirror = m {
            for child in mirror.children {
                if let label = child.label, let i = legacyLabels[label], let p = child.value as? any LegacyProperty { body(p, i) }
            }
            m = mirror.superclassMirror
        }
    }

    func setStoredValue(_ value: StoredValue, of object: Object, at index: Int) {
        let property = schema.properties[index]
        if (value.isNull && !property.isNullable) || (!value.isNull && !DynamicState.fits(value, property.type)) {
            fatalError(Self.invalidValue(value.isNull ? nil : value.anyValue, property, schema.className))
        }
        if let accessor = object._accessor {
            accessor.set(index, value)
        } else if legacyLabels.values.contains(index) {
            // A `let` property holds its own unmanaged value.
            var stored = false
            forEachLegacyProperty(of: object) { p, i in if i == index { stored = p.setUnmanaged(value) } }
            if !stored { fatalError(Self.invalidValue(value.anyValue, property, schema.className)) }
        } else {
            if object._unmanagedValues == nil { object._unmanagedValues = [:] }
            object._unmanagedValues?[index] = value
        }
    }

    /// Sets link property `index` from a value given by name: an object, a dictionary or an array for a new
    /// one, or nil.
    private func assignLink(_ v: Any?, to object: Object, at index: Int) {
        let target = linkTargets[index] ?? Object.self
        let linked: Object?
        switch v {
        case nil, is NSNull: linked = nil
        case let o as Object: linked = o
        case let some?:
            let o = target.init()
            TypeRegistry.info(for: target).assign(some, to: o)
            linked = o
        }
        if let accessor = object._accessor {
            accessor.setLink(index, linked)
        } else {
            if object._unmanagedLinks == nil { object._unmanagedLinks = [:] }
            object._unmanagedLinks?[index] = .some(linked)
        }
    }

    /// The elements of a value given for a list: an array, a List, any sequence; nil for something else.
    static func elements(of v: Any?) -> [Any?]? {
        guard let v, !(v is NSNull) else { return [] }
        if let a = v as? [Any?] { return a }
        if let list = v as? any ListStorage { return list.anyElements }
        if v is String { return nil }
        guard let seq = v as? any Sequence else { return nil }
        return elementsOf(seq)
    }

    private static func elementsOf<S: Sequence>(_ s: S) -> [Any?] { s.map { Optional($0) } }

    /// Sets list property `index` from a sequence of values given by name.
    private func assignList(_ v: Any?, to object: Object, at index: Int, target: Object.Type?) {
        if schema.properties[index].isMap, let dict = v as? [String: Any?] {
            // A map given as a dictionary: keys and values alternating, as maps pass their entries on.
            let items = dict.sorted { $0.key < $1.key }.flatMap { [Optional($0.key as Any), $0.value] }
            guard let map = listStorage(of: object, at: index) else {
                fatalError("\(schema.className).\(schema.properties[index].name) has no Map")
            }
            map.replace(withAny: items, target: target, className: schema.className, property: schema.properties[index].name)
            return
        }
        if schema.properties[index].isMap, let dict = v as? [String: Any] {
            assignList(dict.mapValues { Optional($0) }, to: object, at: index, target: target)
            return
        }
        guard let items = Self.elements(of: v) else {
            fatalError("Invalid value for list property '\(schema.className).\(schema.properties[index].name)': give an array")
        }
        guard let list = listStorage(of: object, at: index) else {
            fatalError("\(schema.className).\(schema.properties[index].name) has no List")
        }
        list.replace(withAny: items, target: target, className: schema.className, property: schema.properties[index].name)
    }

    /// Applies `value` (a dictionary by name, an array in order, or another object) to an unmanaged object.
    func assign(_ value: Any, to object: Object) {
        if let dict = value as? [String: Any?] {
            for (k, v) in dict {
                guard let i = propertyIndex[k] else {
                    fatalError("Invalid property name '\(k)' for class '\(schema.className)'.")
                }
                if linkTargets[i] != nil {
                    assignLink(v, to: object, at: i)
                    continue
                }
                if let target = listTargets[i] {
                    assignList(v, to: object, at: i, target: target)
                    continue
                }
                guard let stored = StoredValue.from(any: v, as: schema.properties[i].type) else {
                    fatalError(Self.invalidValue(v, schema.properties[i], schema.className))
                }
                setStoredValue(stored, of: object, at: i)
            }
        } else if let dict = value as? [String: Any] {
            assign(dict.mapValues { Optional($0) }, to: object)
        } else if let array = value as? [Any?] {
            require(array.count <= schema.properties.count, "\(schema.className) has \(schema.properties.count) properties, the array \(array.count) values")
            for (i, v) in array.enumerated() {
                if linkTargets[i] != nil {
                    assignLink(v, to: object, at: i)
                    continue
                }
                if let target = listTargets[i] {
                    assignList(v, to: object, at: i, target: target)
                    continue
                }
                guard let stored = StoredValue.from(any: v, as: schema.properties[i].type) else {
                    fatalError(Self.invalidValue(v, schema.properties[i], schema.className))
                }
                setStoredValue(stored, of: object, at: i)
            }
        } else if let other = value as? Object {
            let otherInfo = TypeRegistry.info(for: type(of: other))
            for (i, p) in schema.properties.enumerated() {
                guard let j = otherInfo.propertyIndex[p.name] else { continue }
                if linkTargets[i] != nil {
                    assignLink(otherInfo.linkedObject(of: other, at: j), to: object, at: i)
                } else if let target = listTargets[i] {
                    assignList(otherInfo.listStorage(of: other, at: j)?.anyElements ?? [], to: object, at: i, target: target)
                } else {
                    setStoredValue(otherInfo.storedValue(of: other, at: j), of: object, at: i)
                }
            }
        } else {
            fatalError("Object(value:) takes a dictionary, an array or an object, not \(type(of: value))")
        }
    }
}

/// Reflected type information, once per class.
@usableFromInline
enum TypeRegistry {
    private static let infos = Locked<[ObjectIdentifier: TypeInfo]>([:])
    /// Lock-free front of `infos`: every setter of an unmanaged object asks for its class's information.
    private static let slots = ClassSlots()

    /// The type's information; traps on an invalid model (Realm's open reports the same problem as an error).
    @usableFromInline
    static func info(for cls: Object.Type) -> TypeInfo {
        do {
            return try checkedInfo(for: cls)
        } catch {
            fatalError("\(error)")
        }
    }

    static func checkedInfo(for cls: Object.Type) throws -> TypeInfo {
        let id = ObjectIdentifier(cls)
        if let info = slots.info(for: id) { return info }
        if let info = infos.withLock({ $0[id] }) {
            slots.publish(info, for: id)
            return info
        }
        let info = try TypeInfo(objectClass: cls)
        let kept = infos.withLock { d in
            if let existing = d[id] { return existing }
            d[id] = info
            return info
        }
        slots.publish(kept, for: id)
        return kept
    }
}

/// Class identity -> `TypeInfo`, read without a lock: each slot is set once, atomically, to an immutable
/// entry; a class whose slot another class took is answered by the locked dictionary.
final class ClassSlots: Sendable {
    private final class Entry: Sendable {
        let id: ObjectIdentifier
        let info: TypeInfo
        init(id: ObjectIdentifier, info: TypeInfo) {
            self.id = id
            self.info = info
        }
    }
    /// An atomic reference of this module's own (not the engine's generic `LazyReference`: a generic class
    /// of another module is used through run-time metadata lookups, which cost more than the rest of a setter).
    private final class Slot: Sendable {
        private let storage = Atomic<Unmanaged<Entry>?>(nil)

        @inline(__always)
        func load() -> Entry? { storage.load(ordering: .acquiring)?.takeUnretainedValue() }

        func storeIfNil(_ desired: Entry) {
            let new = Unmanaged.passRetained(desired)
            if !storage.compareExchange(expected: nil, desired: new, ordering: .acquiringAndReleasing).exchanged { new.release() }
        }

        deinit { storage.load(ordering: .acquiring)?.release() }
    }
    private static let slotCount = 64
    private let slots: [Slot] = (0..<ClassSlots.slotCount).map { _ in Slot() }

    @inline(__always)
    private static func home(_ id: ObjectIdentifier) -> Int {
        Int(truncatingIfNeeded: UInt(bitPattern: id) >> 4 ^ UInt(bitPattern: id) >> 10) & (slotCount - 1)
    }

    @inline(__always)
    func info(for id: ObjectIdentifier) -> TypeInfo? {
        guard let e = slots[Self.home(id)].load(), e.id == id else { return nil }
        return e.info
    }

    /// Classes are never unloaded, so an identifier in a slot always names the same class.
    func publish(_ info: TypeInfo, for id: ObjectIdentifier) {
        slots[Self.home(id)].storeIfNil(Entry(id: id, info: info))
    }
}
