import Foundation

// The dynamic API: objects by type name, read and written by property name.
extension Realm {
    /// Every object of the type named `className`, as `DynamicObject`s (read and write them by key:
    /// `object["name"]`, `object.name`).
    public func dynamicObjects(_ className: String) -> Results<DynamicObject> {
        Results(core: core, binding: core.dynamicBinding(className), predicate: nil, sort: [])
    }

    /// The object of the type named `typeName` whose primary key is `key`, or nil.
    public func dynamicObject(ofType typeName: String, forPrimaryKey key: Any) -> DynamicObject? {
        let binding = core.dynamicBinding(typeName)
        guard let pk = binding.info.primaryKeyIndex else {
            fatalError("'\(typeName)' has no primary key")
        }
        guard let value = StoredValue.from(any: key, as: binding.info.schema.properties[pk].type),
            let objectKey = core.objectKey(forPrimaryKey: value, binding: binding)
        else { return nil }
        return core.makeObject(binding: binding, key: objectKey, record: nil) as? DynamicObject
    }

    /// Creates an object of the type named `typeName` from a dictionary, an array or an object, as
    /// `create(_:value:update:)` does, and returns it as a `DynamicObject`.
    @discardableResult
    public func dynamicCreate(_ typeName: String, value: Any = [String: Any](), update: UpdatePolicy = .error) -> DynamicObject {
        let binding = core.dynamicBinding(typeName)
        let object = Object.make(binding.info.objectClass)
        binding.info.assign(value, to: object)
        core.add(object, update: update)
        guard let key = object._accessor?.key, let dynamic = core.makeObject(binding: binding, key: key, record: nil) as? DynamicObject else {
            fatalError("'\(typeName)' could not be created")
        }
        return dynamic
    }
}
