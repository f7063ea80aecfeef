import Foundation

/// A collection property of an object a migration handed out: `List<MigrationObject>`,
/// `MutableSet<String>`, `Map<String, MigrationObject?>`… Reads and writes go to the object's values, as a
/// managed collection's go through its accessor; object elements are the migration's objects of the same
/// schema (old or new) as their owner.
final class MigrationCollection {
    let state: DynamicState
    let property: StoredSchema.StoredProperty

    init(state: DynamicState, property: StoredSchema.StoredProperty) {
        self.state = state
        self.property = property
    }

    /// The stored elements (for a map: keys and values alternating).
    var items: [StoredValue] {
        if case .list(let values) = state.field(property.fieldId) ?? .null { return values }
        return []
    }

    func write(_ items: [StoredValue]) {
        state.setCollection(items, of: property)
    }

    /// The object a stored element names, nil for none (or a deleted one).
    func object(_ value: StoredValue) -> Object? {
        guard case .link(let key) = value, let target = property.objectClassName, let migration = state.migration else { return nil }
        return migration.linkedObject(target, key: key, old: !state.writable)
    }

    /// The stored form of an element: a link for objects (adding unmanaged ones to the migration), else its value.
    func stored<E: _Persistable>(_ element: E) -> StoredValue {
        if E._objectType != nil { return state.link(to: element._linkedObject, for: property) ?? .null }
        return element._storedValue
    }

    /// The live collection of property `p` of `state`, typed as RealmSwift types it for a migration object.
    static func view(of state: DynamicState, _ p: StoredSchema.StoredProperty) -> Any {
        let owner = MigrationCollection(state: state, property: p)
        func make<E: _Persistable>(_: E.Type) -> Any {
            if p.isMap ?? false { return Map<String, E>(migrationOwner: owner) }
            let list = List<E>(migrationOwner: owner)
            return (p.isSet ?? false) ? MutableSet(list: list) : list
        }
        func value<T: _Persistable>(_: T.Type) -> Any { (p.hasOptionalElements ?? p.isOptional) ? make(T?.self) : make(T.self) }
        switch p.type {
        case .object: return (p.isMap ?? false) ? make(DynamicObject?.self) : make(DynamicObject.self)
        case .int: return value(Int.self)
        case .bool: return value(Bool.self)
        case .float: return value(Float.self)
        case .double: return value(Double.self)
        case .string: return value(String.self)
        case .data: return value(Data.self)
        case .date: return value(Date.self)
        case .objectId: return value(ObjectId.self)
        case .decimal128: return value(Decimal128.self)
        case .UUID: return value(UUID.self)
        case .any: return make(AnyRealmValue.self)
        case .linkingObjects: return make(DynamicObject.self)
        }
    }
}
