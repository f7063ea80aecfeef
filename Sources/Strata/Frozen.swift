import Foundation

// Frozen Realms, objects and results: immutable views of one version, readable from any thread. A frozen
// Realm holds its own snapshot (it pins that version's data until it is released) and never refreshes,
// writes or delivers notifications.

extension Realm {
    /// An immutable Realm of this one's current version; readable from any thread.
    public func freeze() -> Realm { Realm(core: core.frozen()) }

    /// Whether this Realm is frozen.
    public var isFrozen: Bool { core.isFrozen }

    /// A live Realm of the same file, on the calling thread.
    public func thaw() throws -> Realm { try Realm(configuration: configuration) }
}

extension Object {
    /// Whether this object belongs to a frozen Realm.
    public var isFrozen: Bool { _accessor?.core.isFrozen ?? false }

    /// This object as of its Realm's current version, immutable, readable from any thread. An unmanaged
    /// object cannot be frozen.
    public func freeze() -> Self {
        guard let accessor = _accessor else { fatalError("Unmanaged objects cannot be frozen. (Add the object to a Realm first.)") }
        if accessor.core.isFrozen { return self }
        let frozen = accessor.core.frozen()
        guard let object = frozen.makeObject(binding: accessor.binding, key: accessor.key, record: nil) as? Self else {
            fatalError("freezing an object of \(accessor.binding.info.schema.className) gave another class")
        }
        return object
    }

    /// The live object (in the calling thread's Realm of the same file), or nil if it was deleted. An unmanaged
    /// object cannot be thawed (a trap, as in RealmSwift).
    public func thaw() -> Self? {
        guard let accessor = _accessor else { fatalError("Unmanaged objects cannot be thawed.") }
        guard !accessor.core.isFrozen else {
            let live = accessor.core.thawed("a \(type(of: self).className())")
            let binding = live.binding(forClass: type(of: self))
            guard live.exists(binding: binding, key: accessor.key) else { return nil }
            return live.makeObject(binding: binding, key: accessor.key, record: nil) as? Self
        }
        return self
    }
}

extension Results {
    /// These results as of the Realm's current version, immutable, readable from any thread.
    public func freeze() -> Results<Element> { moved(to: core.frozen()) }

    /// Whether these results belong to a frozen Realm.
    public var isFrozen: Bool { core.isFrozen }

    /// The live results (in a Realm of the same file, on the calling thread); these results when they are live.
    public func thaw() -> Results<Element>? {
        guard core.isFrozen else { return self }
        return moved(to: core.thawed("these Results<\(self.binding.info.schema.className)>"))
    }
}

extension RealmCore {
    /// The live Realm of this frozen one's file on the calling thread (the thread's own, so that a write it
    /// has begun sees what is thawed), brought up to this version if it is older. Opening it failing traps
    /// (`thaw()` cannot throw, and nil would say the object or collection was deleted).
    func thawed(_ what: @autoclosure () -> String) -> RealmCore {
        let live: RealmCore
        do {
            live = try RealmCache.core(for: configuration, actor: nil)
        } catch {
            fatalError("thawing \(what()) failed: opening \(configuration.fileURL?.path ?? "the Realm") gave \(error)")
        }
        if live.snapshot.sequence < snapshot.sequence && !live.isInWriteTransaction { live.refresh() }
        return live
    }
}

extension ObjectAccessor {
    /// The same object in another instance of its file (a frozen or a live one); nil when it does not exist
    /// there.
    func moved(to other: RealmCore) -> ObjectAccessor? {
        if other === core { return self }
        let cls = binding.objectClass
        let target = cls == DynamicObject.self ? other.dynamicBinding(binding.info.schema.className) : other.binding(forClass: cls)
        guard other.exists(binding: target, key: key) else { return nil }
        return other.makeObject(binding: target, key: key, record: nil)._accessor
    }

    /// The same object frozen at its Realm's current version.
    var frozen: ObjectAccessor { core.isFrozen ? self : ObjectAccessor(core: core.frozen(), binding: binding, key: key, record: nil) }

    /// The same object in a live Realm on the calling thread; nil when it was deleted since.
    var thawed: ObjectAccessor? { core.isFrozen ? moved(to: core.thawed("a collection of a \(binding.info.schema.className)")) : self }
}

// Collections freeze and thaw with their object: a frozen list is the list of the frozen object.

extension List {
    /// Whether this list belongs to a frozen Realm.
    public var isFrozen: Bool { accessor?.core.isFrozen ?? false }

    /// This list as of its Realm's current version, immutable, readable from any thread. An unmanaged list
    /// cannot be frozen.
    public func freeze() -> List<Element> {
        guard let accessor else { fatalError("This method may only be called on RLMArray instances retrieved from an RLMRealm") }
        return accessor.core.isFrozen ? self : List(accessor: accessor.frozen, location: location)
    }

    /// The live list (of the live object, on the calling thread); nil when its object was deleted.
    public func thaw() -> List<Element>? {
        guard let accessor else { fatalError("This method may only be called on RLMArray instances retrieved from an RLMRealm") }
        return accessor.thawed.map { List(accessor: $0, location: location) }
    }
}

extension MutableSet {
    /// Whether this set belongs to a frozen Realm.
    public var isFrozen: Bool { list.isFrozen }

    /// This set as of its Realm's current version, immutable, readable from any thread.
    public func freeze() -> MutableSet<Element> {
        guard list.accessor != nil else { fatalError("This method may only be called on RLMSet instances retrieved from an RLMRealm") }
        return MutableSet(list: list.freeze())
    }

    /// The live set (of the live object, on the calling thread); nil when its object was deleted.
    public func thaw() -> MutableSet<Element>? {
        guard list.accessor != nil else { fatalError("This method may only be called on RLMSet instances retrieved from an RLMRealm") }
        return list.thaw().map(MutableSet.init(list:))
    }
}

extension Map {
    /// Whether this map belongs to a frozen Realm.
    public var isFrozen: Bool { accessor?.core.isFrozen ?? false }

    /// This map as of its Realm's current version, immutable, readable from any thread.
    public func freeze() -> Map<Key, Value> {
        guard let accessor else { fatalError("This method may only be called on RLMDictionary instances retrieved from an RLMRealm") }
        return accessor.core.isFrozen ? self : Map(accessor: accessor.frozen, location: location)
    }

    /// The live map (of the live object, on the calling thread); nil when its object was deleted.
    public func thaw() -> Map<Key, Value>? {
        guard let accessor else { fatalError("This method may only be called on RLMDictionary instances retrieved from an RLMRealm") }
        return accessor.thawed.map { Map(accessor: $0, location: location) }
    }
}

extension LinkingObjects {
    /// Whether these objects belong to a frozen Realm.
    public var isFrozen: Bool { target?.core.isFrozen ?? false }

    /// These linking objects as of the Realm's current version, immutable, readable from any thread.
    public func freeze() -> LinkingObjects<Element> {
        guard let target else { fatalError("Unmanaged linking objects cannot be frozen") }
        return target.core.isFrozen ? self : LinkingObjects(propertyName: propertyName, target: target.frozen)
    }

    /// The live linking objects (on the calling thread); nil when the object they link to was deleted.
    public func thaw() -> LinkingObjects<Element>? {
        guard let target else { return self }
        return target.thawed.map { LinkingObjects(propertyName: propertyName, target: $0) }
    }

    /// Whether the object these link to was deleted (or its Realm invalidated).
    public var isInvalidated: Bool { target?.isInvalidated ?? false }
}
