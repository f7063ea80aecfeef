import Engine
import Foundation

/// What an actor needs to find a thread-confined object or collection in its own Realm of the same file: the
/// configuration, the version the value was seen at, and how to make it there.
struct ActorHandoff: Sendable {
    let configuration: Realm.Configuration
    let sequence: UInt64
    let make: @Sendable (RealmCore) -> Any?

    init(core: RealmCore, make: @escaping @Sendable (RealmCore) -> Any?) {
        configuration = core.configuration
        sequence = core.snapshot.sequence
        self.make = make
    }

    /// A collection property of the object `accessor` names, remade in another Realm by `make`.
    init(accessor: ObjectAccessor, make: @escaping @Sendable (ObjectAccessor) -> Any) {
        let cls = accessor.binding.info.objectClass
        let key = accessor.key
        self.init(core: accessor.core) { core in
            let binding = core.binding(forClass: cls)
            guard core.exists(binding: binding, key: key) else { return nil }
            return make(ObjectAccessor(core: core, binding: binding, key: key, record: nil))
        }
    }

    /// On `actor`: opens the actor's Realm of the file (RealmSwift's `Realm(configuration:actor:)`), brings it
    /// to the version the value was seen at, makes the value there and lets `register` observe it. The token
    /// keeps the actor's Realm open while it lives. A value deleted meanwhile gives a token that does nothing,
    /// as in RealmSwift.
    func observe<A: Actor, Value>(
        on actor: isolated A, as type: Value.Type, _ register: (Value) -> NotificationToken
    ) -> NotificationToken {
        let core: RealmCore
        do {
            core = try RealmCache.core(for: configuration, actor: actor)
        } catch {
            // The file is open in the caller's Realm, so this open is of a file known to be good; failing here
            // means the file went away or was damaged underneath, which must not pass silently.
            fatalError("Could not open the Realm at \(configuration.identity) on actor \(A.self) to deliver notifications: \(error)")
        }
        if core.snapshot.sequence < sequence { core.refresh() }
        guard let value = make(core) as? Value else { return NotificationToken() }
        let inner = register(value)
        return NotificationToken(id: inner.id) { withExtendedLifetime(core) { inner.invalidate() } }
    }
}

extension Actor {
    /// Runs `block` with this actor isolated: for notification callbacks, which the actor's Realm delivers on
    /// the actor's executor.
    nonisolated func deliverIsolated<Change>(_ block: @Sendable (isolated Self, Change) -> Void, _ change: Change) {
        // The change was made by the actor's Realm on this executor, which `assumeIsolated` checks, so it is
        // not sent anywhere.
        nonisolated(unsafe) let change = change
        assumeIsolated { actor in block(actor, change) }
    }
}

extension ThreadConfined where Self: Object {
    /// Observes this object on `actor`: `block` runs there, isolated to it, with the change as seen by the
    /// actor's Realm of the same file (RealmSwift's `observe(keyPaths:on:_:)` for actors). Returns once the
    /// observation is registered; an object deleted meanwhile gives a token that reports nothing.
    nonisolated(nonsending) public func observe<A: Actor>(
        keyPaths: [String]? = nil, on actor: A, _ block: @Sendable @escaping (isolated A, ObjectChange<Self>) -> Void
    ) async -> NotificationToken {
        guard let accessor = _accessor else {
            fatalError("Only objects which are managed by a Realm support change notifications")
        }
        require(!accessor.core.isInWriteTransaction, "Cannot register notification blocks from within write transactions.")
        let key = accessor.key
        let cls = type(of: self)
        let handoff = ActorHandoff(core: accessor.core) { core in
            let binding = core.binding(forClass: cls)
            guard core.exists(binding: binding, key: key) else { return nil }
            return core.makeObject(binding: binding, key: key, record: nil)
        }
        return await Self.register(handoff, keyPaths: keyPaths, on: actor, block)
    }

    private static func register<A: Actor>(
        _ handoff: ActorHandoff, keyPaths: [String]?, on actor: isolated A,
        _ block: @Sendable @escaping (isolated A, ObjectChange<Self>) -> Void
    ) -> NotificationToken {
        handoff.observe(on: actor, as: Self.self) { object in
            object.observe(keyPaths: keyPaths, on: nil) { (change: ObjectChange<Self>) in actor.deliverIsolated(block, change) }
        }
    }
}

extension Results {
    /// Observes these results on `actor`: `block` runs there, isolated to it, first with `.initial`, then with
    /// each change, as seen by the actor's Realm of the same file.
    nonisolated(nonsending) public func observe<A: Actor>(
        keyPaths: [String]? = nil, on actor: A, _ block: @Sendable @escaping (isolated A, RealmCollectionChange<Results<Element>>) -> Void
    ) async -> NotificationToken {
        let handoff = ActorHandoff(core: core, make: referenceMaker())
        return await Self.register(handoff, keyPaths: keyPaths, on: actor, block)
    }

    private static func register<A: Actor>(
        _ handoff: ActorHandoff, keyPaths: [String]?, on actor: isolated A,
        _ block: @Sendable @escaping (isolated A, RealmCollectionChange<Results<Element>>) -> Void
    ) -> NotificationToken {
        handoff.observe(on: actor, as: Results<Element>.self) { results in
            results.observe(keyPaths: keyPaths, on: nil) { change in actor.deliverIsolated(block, change) }
        }
    }
}

extension List {
    /// Observes this list on `actor`, as `Results.observe(keyPaths:on:_:)` does.
    nonisolated(nonsending) public func observe<A: Actor>(
        keyPaths: [String]? = nil, on actor: A, _ block: @Sendable @escaping (isolated A, RealmCollectionChange<List<Element>>) -> Void
    ) async -> NotificationToken {
        guard let accessor else { fatalError("Only lists of managed objects support change notifications") }
        let location = self.location
        let handoff = ActorHandoff(accessor: accessor) { List<Element>(accessor: $0, location: location) }
        return await Self.register(handoff, keyPaths: keyPaths, on: actor, block)
    }

    private static func register<A: Actor>(
        _ handoff: ActorHandoff, keyPaths: [String]?, on actor: isolated A,
        _ block: @Sendable @escaping (isolated A, RealmCollectionChange<List<Element>>) -> Void
    ) -> NotificationToken {
        handoff.observe(on: actor, as: List<Element>.self) { list in
            list.observe(keyPaths: keyPaths, on: nil) { change in actor.deliverIsolated(block, change) }
        }
    }
}

extension MutableSet {
    /// Observes this set on `actor`, as `Results.observe(keyPaths:on:_:)` does.
    nonisolated(nonsending) public func observe<A: Actor>(
        keyPaths: [String]? = nil, on actor: A, _ block: @Sendable @escaping (isolated A, RealmCollectionChange<MutableSet<Element>>) -> Void
    ) async -> NotificationToken {
        guard let accessor = list.accessor else { fatalError("Only sets of managed objects support change notifications") }
        let location = list.location
        let handoff = ActorHandoff(accessor: accessor) { MutableSet<Element>(list: List<Element>(accessor: $0, location: location)) }
        return await Self.register(handoff, keyPaths: keyPaths, on: actor, block)
    }

    private static func register<A: Actor>(
        _ handoff: ActorHandoff, keyPaths: [String]?, on actor: isolated A,
        _ block: @Sendable @escaping (isolated A, RealmCollectionChange<MutableSet<Element>>) -> Void
    ) -> NotificationToken {
        handoff.observe(on: actor, as: MutableSet<Element>.self) { set in
            set.observe(keyPaths: keyPaths, on: nil) { change in actor.deliverIsolated(block, change) }
        }
    }
}

extension Map {
    /// Observes this map on `actor`: `block` runs there, isolated to it, first with `.initial`, then with the
    /// keys removed, added and changed, as seen by the actor's Realm of the same file.
    /// (Like `observe(on:_:)` with a queue, it takes no key paths.)
    nonisolated(nonsending) public func observe<A: Actor>(
        on actor: A, _ block: @Sendable @escaping (isolated A, RealmMapChange<Map<Key, Value>>) -> Void
    ) async -> NotificationToken {
        guard let accessor else { fatalError("Only maps of managed objects support change notifications") }
        let location = self.location
        let handoff = ActorHandoff(accessor: accessor) { Map<Key, Value>(accessor: $0, location: location) }
        return await Self.register(handoff, on: actor, block)
    }

    private static func register<A: Actor>(
        _ handoff: ActorHandoff, on actor: isolated A, _ block: @Sendable @escaping (isolated A, RealmMapChange<Map<Key, Value>>) -> Void
    ) -> NotificationToken {
        handoff.observe(on: actor, as: Map<Key, Value>.self) { map in
            map.observe(on: nil) { change in actor.deliverIsolated(block, change) }
        }
    }
}
