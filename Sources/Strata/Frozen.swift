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
        guard let accessor = _accessor else { fatalError("Unmanaged objects cannot be frozen; add it to a Realm first") }
        if accessor.core.isFrozen { return self }
        let frozen = accessor.core.frozen()
        guard let object = frozen.makeObject(binding: accessor.binding, key: accessor.key, record: nil) as? Self else {
            fatalError("freezing an object of \(accessor.binding.info.schema.className) gave another class")
        }
        return object
    }

    /// The live object (in a new Realm of the same file, on the calling thread), or nil if it was deleted.
    public func thaw() -> Self? {
        guard let accessor = _accessor else { return nil }
        guard !accessor.core.isFrozen else {
            let live: RealmCore
            do {
                live = try RealmCore(configuration: accessor.core.configuration)
            } catch {
                // nil would say the object was deleted.
                fatalError("thawing a \(type(of: self).className()) failed: opening \(accessor.core.configuration.fileURL?.path ?? "the Realm") gave \(error)")
            }
            let binding = live.binding(forClass: type(of: self))
            guard live.exists(binding: binding, key: accessor.key) else { return nil }
            return live.makeObject(binding: binding, key: accessor.key, record: nil) as? Self
        }
        return self
    }
}

extension Results {
    /// These results as of the Realm's current version, immutable, readable from any thread.
    public func freeze() -> Results<Element> {
        Results(core: core.frozen(), binding: binding, predicate: predicate, sort: sort, distinct: distinct)
    }

    /// Whether these results belong to a frozen Realm.
    public var isFrozen: Bool { core.isFrozen }

    /// The live results (in a new Realm of the same file, on the calling thread).
    public func thaw() throws -> Results<Element> {
        let live = try RealmCore(configuration: core.configuration)
        return Results(core: live, binding: live.binding(forClass: Element.self), predicate: predicate, sort: sort, distinct: distinct)
    }
}
