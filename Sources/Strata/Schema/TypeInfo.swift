import Atomics
import Engine
import Foundation

/// What the object layer knows about one model class: its schema read by reflection, its defaults, and
/// where its records live once bound to a file.
@usableFromInline
final class TypeInfo: @unchecked Sendable {
    let objectClass: Object.Type
    @usableFromInline let schema: ObjectSchema
    @usableFromInline var propertyCount: Int { schema.properties.count }

    /// A value slot per property, none set: what an unmanaged object records its setters' values in (the array
    /// an added object handed back, when there is one).
    @usableFromInline func unsetValues() -> [StoredValue?] {
        takeSpareValues() ?? freshUnsetValues()
    }

    /// A new array of unset values. Built by
    /// appending to reserved capacity, which runs code specialized for the element type: `Array(repeating:)`
    /// and `init(unsafeUninitializedCapacity:)` went through the standard library's generic allocation (a
    /// metadata lookup per object), and copying a template through the runtime's generic element copy.
    private func freshUnsetValues() -> [StoredValue?] {
        var values: [StoredValue?] = []
        values.reserveCapacity(defaults.count)
        for _ in 0..<defaults.count { values.append(nil) }
        return values
    }

    /// One array of setter values kept, empty, for the type's next unmanaged object: `add` hands back the array
    /// of the object it encoded (`recycleSetValues`). Freeing it destroyed its elements through the optional's generic
    /// value witnesses (about 590 instructions for four values, and 280 more to allocate the next one).
    /// Guarded by a try-lock: under contention an array is allocated or freed as before, and nothing waits.
    private let spareLock = ManagedAtomic<Bool>(false)
    nonisolated(unsafe) private var spareValues: [StoredValue?]?

    private func takeSpareValues() -> [StoredValue?]? {
        guard spareLock.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else { return nil }
        let taken = spareValues.take()
        spareLock.store(false, ordering: .releasing)
        return taken
    }

    /// Takes `values` (the setter values of an object just added, uniquely held) and keeps it, emptied, for the
    /// next unmanaged object, when no array is kept already. It is emptied here, by code specialized for the
    /// element type, so that the kept array holds none of the added object's values.
    func recycleSetValues(_ values: inout [StoredValue?]?) {
        guard values?.count == schema.properties.count, var taken = values.take() else { return }
        for i in taken.indices { taken[i] = nil }
        guard spareLock.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else { return }
        if spareValues == nil { spareValues = taken }
        spareLock.store(false, ordering: .releasing)
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
    let labelIndex: [String: Int]
    /// The properties declared with `let` (`RealmProperty`, `RealmOptional`): Mirror label -> property index.
    let legacyLabels: [String: Int]
    /// Whether objects of this type have `let` properties to bind when they become managed.
    let hasLegacyProperties: Bool
    /// The class each link property points to, by property index.
    let linkTargets: [Int: Object.Type]
    /// The link properties whose declaration gives an object (`= Address()`), which an unmanaged object holds
    /// in the property's storage until a setter replaces it.
    let linkDefaults: Set<Int>
    /// The List properties, by property index: the element class for lists of objects, nil for values.
    let listTargets: [Int: Object.Type?]
    /// The link and List properties whose objects are embedded (owned by the object), by property index.
    let embeddedTargets: [Int: Object.Type]
    /// The LinkingObjects properties: name, origin class and the origin's property.
    let linkingObjects: [(name: String, origin: Object.Type, property: String)]
    /// Where each `@Persisted` storage lies in an instance, and the index it is told.
    let slots: PersistedSlots

    /// Model key path -> property name, for queries, sorts and aggregates (`name(of:)`).
    let keyPathNames = Locked<[KeyPathKey: String]>([:])
    /// Key paths are immutable values; this makes them usable as keys of a mutex-guarded dictionary.
    struct KeyPathKey: Hashable, @unchecked Sendable {
        let keyPath: AnyKeyPath
    }
    static let narrowIntegerTypes: [any _Persistable.Type] = [
        Int8.self, Int16.self, Int32.self, Int64.self, Int8?.self, Int16?.self, Int32?.self, Int64?.self,
    ]

    init(objectClass: Object.Type) throws {
        self.objectClass = objectClass
        let className = objectClass.className()
        let sample = Object.make(objectClass)
        var properties: [Property] = []
        var defaults: [StoredValue] = []
        var labels: [String: Int] = [:]
        var legacy: [String: Int] = [:]
        var linkTargets: [Int: Object.Type] = [:]
        var linkDefaults = Set<Int>()
        var listTargets: [Int: Object.Type?] = [:]
        var inverse: [(name: String, origin: Object.Type, property: String)] = []
        var linkingLabels: [String: Int] = [:]
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
                    if let origin = type._objectType {
                        inverse.append((name, origin, persisted.origin ?? ""))
                        linkingLabels[label] = inverse.count - 1
                    }
                    // `let owners = LinkingObjects(fromType:property:)`: bound to its object as it is made.
                    if persisted is any LegacyProperty { legacy[label] = -1 }
                    continue
                }
                let isPrimary = persisted.isPrimaryKey || legacyPrimary == name
                if persisted is any LegacyProperty {
                    // `let dogs = List<Dog>()` is a list property; a RealmProperty holds plain values only.
                    if persisted.collection == nil && (type._objectType != nil || type._isList) {
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
                    // Only a declared object (`= Address()`), not `= nil`: the sample instance holds it.
                    if persisted.hasDeclaredDefault, persisted.unmanagedLinkedObject != nil { linkDefaults.insert(properties.count) }
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
        if properties.isEmpty && inverse.isEmpty {
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
        self.slots = PersistedSlots(objectClass: objectClass, labels: labels, linkingLabels: linkingLabels)
        self.legacyLabels = legacy
        self.hasLegacyProperties = !legacy.isEmpty
        self.linkTargets = linkTargets
        self.linkDefaults = linkDefaults
        self.listTargets = listTargets
        self.linkingObjects = inverse
        self.primaryKeyIndex = properties.firstIndex { $0.isPrimaryKey }
        self.requiredIndices = properties.indices.filter { !properties[$0].isNullable }
        self.listIndices = listTargets.keys.sorted()
        holdsValuesOnly = properties.allSatisfy { p in !p.isCollection && p.type != .object && p.type != .any && p.type != .linkingObjects }
        self.propertyIndex = Dictionary(uniqueKeysWithValues: properties.enumerated().map { ($1.name, $0) })
    }

    /// Per property, the declared Swift type of an integer narrower or wider than `Int` (`Int8`…`Int64`, optional
    /// or not), for key-value coding; nil for every other property.
    var integerTypes: [Int: any _Persistable.Type] = [:]

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

    /// The List behind list property `index` of `object`: the managed view, the one assigned, or the one its
    /// property holds.
    func listStorage(of object: Object, at index: Int) -> (any ListStorage)? {
        var own: (any ListStorage)? = object._unmanagedCollections?[index] as? any ListStorage
        if own == nil {
            // A managed DynamicObject has no storage of its own: a new model instance gives the collection type.
            let source: Object = object._accessor != nil && !(type(of: object) == objectClass) ? Object.make(objectClass) : object
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

    /// The collections an unmanaged object being added holds, by property index, as they are now. Each of
    /// them becomes a view of the stored one, as RealmSwift's do (`let dogs = person.dogs; realm.add(person)`:
    /// `dogs` is managed from then on), before the elements are stored, so its elements are taken now.
    func collectionsToStore(of object: Object) -> [(Int, any StoredOnAdd)] {
        let unmanaged = object._accessor == nil
        return listIndices.compactMap { i in
            guard let storage = listStorage(of: object, at: i) else { return nil }
            guard let collection = storage as? any LegacyCollection else { return (i, storage) }
            let elements = collection.unmanagedCopy()
            if unmanaged { collection.bind(to: object, index: i) }
            return (i, elements)
        }
    }

    /// The object a link property of `object` names, managed or not.
    func linkedObject(of object: Object, at index: Int) -> Object? {
        if let accessor = object._accessor, let target = linkTargets[index] {
            return accessor.linkedObject(accessor.get(index), target: target)
        }
        return unmanagedLinks(of: object)[index] ?? nil
    }

    /// The objects an unmanaged object links to, by property: those its setters recorded (nil for a link set to
    /// nil), and for the others the object the declaration gives (`@Persisted var owner: Person? = Person()`),
    /// which lives in the property's storage and is added with it, as in RealmSwift.
    func unmanagedLinks(of object: Object) -> [Int: Object?] {
        var links = object._unmanagedLinks ?? [:]
        // Reflection only for a type that declares a linked object, and only while one of those is unset.
        guard linkDefaults.contains(where: { links[$0] == nil }) else { return links }
        var m: Mirror? = Mirror(reflecting: object)
        while let mirror = m {
            for child in mirror.children {
                guard let label = child.label, let i = labelIndex[label], linkDefaults.contains(i), links[i] == nil,
                    let p = child.value as? any PersistedProperty, let linked = p.unmanagedLinkedObject
                else { continue }
                links[i] = .some(linked)
            }
            m = mirror.superclassMirror
        }
        return links
    }

    /// A property's value, managed or not.
    func storedValue(of object: Object, at index: Int) -> StoredValue {
        if let accessor = object._accessor { return accessor.get(index) }
        if let v = object._unmanagedValues?[index] { return v }
        return unmanagedValues(of: object)[index]
    }

    /// Every property's value of an unmanaged object, read from its storages (by reflection for a type with
    /// `let` properties).
    func unmanagedValues(of object: Object) -> [StoredValue] {
        // Values the setters recorded need no reading; the others are read from their storages.
        if let set = object._setValues, set.count == schema.properties.count, set.allSet {
            var values = set.map { $0 ?? .null }
            if let overrides = object._unmanagedValues {
                for (i, v) in overrides { values[i] = v }
            }
            return values
        }
        var values = defaults
        if !hasLegacyProperties && type(of: object) == objectClass {
            // Every property is a `@Persisted` storage, read where it lies in an instance of exactly this class
            // (anything else, such as a `DynamicObject` given for a link, is read by reflection).
            slots.readValues(of: object, into: &values)
            if let set = object._setValues {
                for (i, v) in set.enumerated() { if let v { values[i] = v } }
            }
            if let overrides = object._unmanagedValues {
                for (i, v) in overrides { values[i] = v }
            }
            return values
        }
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
}

extension Array where Element == StoredValue? {
    /// Whether every property was set: each element is tested by its case. (`$0 == nil` compared through
    /// `StoredValue`'s `Equatable`, whose pair of operands the runtime destroyed generically: 4% of an insert.)
    @inline(__always)
    var allSet: Bool {
        !contains { if case .none = $0 { true } else { false } }
    }
}
