import Engine
import Foundation

// Objects a migration block creates: `create(_:value:)`, from a dictionary, an array or an unmanaged object.

extension Migration {
    /// A new object of `t` in the new schema with `value`: a dictionary by name, an array in property order,
    /// or an unmanaged model object's values (its links and lists added too).
    func insert(_ t: StoredSchema.StoredType, value: Any) -> DynamicState {
        let state = DynamicState(type: t, values: FieldValues(), writable: true, defaults: defaults(for: t.name))
        state.report = reporter
        // The properties the value gives; the others keep their declared defaults.
        var given = Set<String>()
        if let object = value as? Object, object._dynamic == nil {
            given = Set(t.properties.map(\.name))
            let info = TypeRegistry.info(for: type(of: object))
            for (i, p) in info.schema.properties.enumerated() where t.properties.contains(where: { $0.name == p.columnName }) {
                if info.linkTargets[i] != nil {
                    state.setValue(info.linkedObject(of: object, at: i), forKey: p.columnName)
                } else if info.listTargets[i] != nil {
                    // The collection itself: the state's setter takes a List, a MutableSet or a Map.
                    state.setValue(info.listStorage(of: object, at: i) ?? (p.isMap ? [String: Any?]() : [Any?]()) as Any, forKey: p.columnName)
                } else {
                    state.setValue(info.storedValue(of: object, at: i).anyValue, forKey: p.columnName)
                }
            }
        } else if let dict = value as? [String: Any?] ?? (value as? [String: Any])?.mapValues({ Optional($0) }) {
            for (k, v) in dict { state.setValue(v, forKey: k) }
            given = Set(dict.keys)
        } else if let array = value as? [Any?] ?? (value as? [Any])?.map({ Optional($0) }) {
            for (i, v) in array.enumerated() where i < t.properties.count { state.setValue(v, forKey: t.properties[i].name) }
            given = Set(t.properties.prefix(array.count).map(\.name))
        } else {
            errors.append("Invalid value '\(value)' to create an object of type '\(t.name)': give a dictionary, an array or an object")
        }
        // A link the model declares with an object (`var objectCol: SwiftBoolObject? = SwiftBoolObject()`) gets a
        // new one, as RealmSwift's create does (M074).
        if let info = declared[t.name], !info.linkDefaults.isEmpty {
            let sample = Object.make(info.objectClass)
            for i in info.linkDefaults.sorted() {
                let column = info.schema.properties[i].columnName
                guard !given.contains(column), t.properties.contains(where: { $0.name == column }),
                    let linked = info.linkedObject(of: sample, at: i)
                else { continue }
                state.setValue(linked, forKey: column)
            }
        }
        state.modified = true
        // A key of its own, whatever its primary key: keys may repeat until the block returns (an Int key moves
        // the object to it then, and duplicates fail the migration), so a create never replaces another object.
        var key: Int64
        // Whether the type's keys must be checked and rebuilt when the block returns (`rebuildPrimaryKeys`).
        var needsRebuild = t.properties.contains(where: \.isPrimaryKey)
        if let pk = t.properties.first(where: \.isPrimaryKey), pk.type == .int {
            // An Int primary key is the object key: taken at once when free, so links to the new object hold.
            // When another object has it, a placeholder from the bottom of the key space stands in until the
            // block returns; then the object moves to its key, or the duplicate fails the migration.
            if case .int(let v) = state.stored(forKey: pk.name), !keyIsTaken(v, in: t) {
                key = v
                // No other object can hold that value (an Int key is its object's key, and one whose key the
                // block changes is rebuilt anyway): nothing to move or check for this one.
                needsRebuild = false
            } else {
                key = placeholderKeys[t.partition] ?? Int64.min
                while keyIsTaken(key, in: t) { key += 1 }
                placeholderKeys[t.partition] = key + 1
            }
        } else {
            key = allocateKey(for: t)
        }
        state.wrotePrimaryKey = needsRebuild
        state.key = key
        // A key freed by a delete in this block now belongs to the new object (its put replaces the record).
        deleted[t.partition]?.remove(key)
        written[t.partition, default: [:]][key] = state
        return state
    }
}
