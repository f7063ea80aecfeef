import Engine
import Foundation

/// RealmSwift's instance cache: `Realm(configuration:)` on one thread (or actor) gives the same Realm while
/// one is alive for the same file, schema version and types, so that a write begun through one `Realm()` is
/// the write of the next, and `Realm() == Realm()`. Realms opened with a queue, frozen Realms and read-only
/// opens of another kind are not shared. Entries hold their Realm weakly: the cache never keeps one open.
enum RealmCache {
    /// What must agree for two opens to share a Realm.
    struct Key: Hashable {
        let identity: String
        let schemaVersion: UInt64
        let objectTypes: [ObjectIdentifier]?
        let migrationMode: Realm.Configuration.MigrationMode
        let encryptionKey: Data?
        let observationTracking: Bool

        /// `identity`: the configuration's (`Realm.Configuration.identity`, which resolves the path: an open
        /// computes it once and passes it on).
        init(_ c: Realm.Configuration, identity: String) {
            observationTracking = c.observationTracking
            encryptionKey = c.encryptionKey
            self.identity = identity
            schemaVersion = c.schemaVersion
            objectTypes = c.objectTypes?.map { ObjectIdentifier($0) }
            migrationMode = c.migrationMode
        }
    }

    private final class WeakCore {
        weak var core: RealmCore?
        init(_ core: RealmCore) { self.core = core }
    }

    /// One thread's entries, kept in its thread dictionary (used only from that thread).
    private final class Table {
        var entries: [Key: WeakCore] = [:]
        /// The thread's Realms in a write transaction, held until the write ends (or the thread does).
        var writing: [Key: RealmCore] = [:]
    }

    /// Holds `core` in its thread's cache while it writes (`writing`), and lets it go after: the Realm a
    /// temporary `Realm()` began a write in is the one the next `Realm()` of the thread returns.
    static func holdWhileWriting(_ core: RealmCore, _ writing: Bool) {
        guard let t = Thread.current.threadDictionary[threadKey] as? Table else { return }
        let key = Key(core.configuration, identity: core.shared.identity)
        if writing {
            if t.entries[key]?.core === core { t.writing[key] = core }
        } else if t.writing[key] === core {
            t.writing[key] = nil
        }
    }

    private static let threadKey = "Strata.RealmCache"

    private static var table: Table {
        let dictionary = Thread.current.threadDictionary
        if let t = dictionary[threadKey] as? Table { return t }
        let t = Table()
        dictionary[threadKey] = t
        return t
    }

    /// The live Realm of this thread for `configuration`, if there is one.
    static func threadCore(for configuration: Realm.Configuration, identity: String) -> RealmCore? {
        let key = Key(configuration, identity: identity)
        let t = table
        guard let core = t.entries[key]?.core else {
            t.entries[key] = nil
            return nil
        }
        return core
    }

    static func storeThreadCore(_ core: RealmCore, for configuration: Realm.Configuration, identity: String) {
        let t = table
        t.entries = t.entries.filter { $0.value.core != nil }
        t.entries[Key(configuration, identity: identity)] = WeakCore(core)
    }

    private struct ActorKey: Hashable {
        let actor: ObjectIdentifier
        let key: Key
    }

    private static let actorCores = Locked<[ActorKey: WeakCore]>([:])

    /// The live Realm of `actor` for `configuration`, if there is one.
    static func actorCore(for configuration: Realm.Configuration, identity: String, actor: any Actor) -> RealmCore? {
        let key = ActorKey(actor: ObjectIdentifier(actor), key: Key(configuration, identity: identity))
        return actorCores.withLock { cores in
            guard let core = cores[key]?.core else {
                cores[key] = nil
                return nil
            }
            return core
        }
    }

    static func storeActorCore(_ core: RealmCore, for configuration: Realm.Configuration, identity: String, actor: any Actor) {
        let key = ActorKey(actor: ObjectIdentifier(actor), key: Key(configuration, identity: identity))
        actorCores.withLock { cores in
            cores = cores.filter { $0.value.core != nil }
            cores[key] = WeakCore(core)
        }
    }

    private struct TaskKey: Hashable, @unchecked Sendable {
        let task: AnyHashable
        let key: Key
    }

    private static let taskCores = Locked<[TaskKey: WeakCore]>([:])

    /// A Realm of the calling thread, or of `actor`: the cached one, or a new one that is then cached. Code
    /// running in a Swift task (and not on an actor) gets the task's Realm, not the thread's: tasks take turns
    /// on the cooperative threads, and one task's Realm (its open write) must not become another's.
    ///
    /// The main thread is the exception: code there (tasks on the main actor included) shares the thread's
    /// Realm, which other instances' commits refresh on the main queue, as RealmSwift's main-thread Realm is
    /// refreshed by the main run loop.
    static func core(for configuration: Realm.Configuration, actor: (any Actor)?) throws -> RealmCore {
        // Once per open: it resolves the file's path (`realpath`), tens of microseconds.
        let identity = configuration.identity
        if actor == nil, Thread.isMainThread {
            if let core = threadCore(for: configuration, identity: identity) { return core }
            let core = try RealmCore(configuration: configuration, mainThread: true, identity: identity)
            storeThreadCore(core, for: configuration, identity: identity)
            return core
        }
        if let actor {
            if let core = actorCore(for: configuration, identity: identity, actor: actor) { return core }
            let core = try RealmCore(configuration: configuration, actor: actor, identity: identity)
            storeActorCore(core, for: configuration, identity: identity, actor: actor)
            return core
        }
        if let task = withUnsafeCurrentTask(body: { $0.map { AnyHashable($0) } }) {
            let key = TaskKey(task: task, key: Key(configuration, identity: identity))
            if let core = taskCores.withLock({ $0[key]?.core }) { return core }
            let core = try RealmCore(configuration: configuration, identity: identity)
            taskCores.withLock { cores in
                cores = cores.filter { $0.value.core != nil }
                cores[key] = WeakCore(core)
            }
            return core
        }
        if let core = threadCore(for: configuration, identity: identity) { return core }
        let core = try RealmCore(configuration: configuration, identity: identity)
        storeThreadCore(core, for: configuration, identity: identity)
        return core
    }
}
