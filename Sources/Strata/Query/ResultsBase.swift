import Foundation

/// Where a `Results` finds its objects when it is not every object of its type: the objects one collection
/// property of one object holds, in the collection's order (`person.dogs.filter("age > 3")`,
/// `dog.owners.sorted(byKeyPath: "name")`), as RealmSwift's collections hand out `Results`.
///
/// The base names the object by its class and key, never by an accessor, so that a frozen copy, a thawed one
/// or a `ThreadSafeReference` finds the same collection in another Realm instance.
enum ResultsBase: @unchecked Sendable {
    /// The `List` or `MutableSet` property `property` (by index in the owner's class) of object `key`.
    case list(owner: Object.Type, ownerName: String, key: Int64, property: Int)
    /// The objects of the Results' type whose link or list `property` points to object `key`.
    case linkingObjects(key: Int64, property: String)

    /// The owner's binding in `core` (dynamic objects are bound by name).
    private static func binding(_ owner: Object.Type, _ name: String, in core: RealmCore) -> TypeBinding {
        owner == DynamicObject.self ? core.dynamicBinding(name) : core.binding(forClass: owner)
    }

    /// The keys at `core`'s version, in the collection's order (a list may hold an object twice); empty when
    /// the owner was deleted. `elements` is the Results' own binding.
    func keys(in core: RealmCore, elements: TypeBinding) -> [Int64] {
        switch self {
        case .list(let owner, let name, let key, let property):
            let binding = Self.binding(owner, name, in: core)
            let value = core.withRecord(binding, key: key) { $0.value(property) }
            guard case .list(let items)? = value else { return [] }
            return items.compactMap { if case .link(let k) = $0 { return k } else { return nil } }
        case .linkingObjects(let key, let property):
            return core.linkingKeys(elements, property: property, to: key)
        }
    }

    /// The partition whose commits change which objects the collection holds, besides the Results' own.
    func partition(in core: RealmCore) -> UInt32? {
        switch self {
        case .list(let owner, let name, _, _): Self.binding(owner, name, in: core).partition
        case .linkingObjects: nil
        }
    }
}
