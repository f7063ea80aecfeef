import Dispatch
import Engine
import Foundation

/// A Realm: an object database file (or an in-memory one) as seen by one thread, queue or actor.
///
/// ```swift
/// let realm = try Realm(configuration: .init(objectTypes: [Person.self]))
/// try realm.write { realm.add(Person(value: ["id": 1, "name": "Ada"])) }
/// let adults = realm.objects(Person.self).where { $0.age >= 18 }
/// ```
public struct Realm: @unchecked Sendable {
    let core: RealmCore

    init(core: RealmCore) { self.core = core }

    /// Opens the Realm of `Configuration.defaultConfiguration`.
    public init(queue: DispatchQueue? = nil) throws {
        try self.init(configuration: .defaultConfiguration, queue: queue)
    }

    /// Opens the Realm `configuration` describes, creating it when needed.
    /// With a `queue`, the Realm belongs to it: notifications are delivered there, and other instances' commits
    /// refresh it there (autorefresh). Without one, it refreshes on its own writes, `beginWrite()` and `refresh()`.
    public init(configuration: Configuration, queue: DispatchQueue? = nil) throws {
        // Without a queue, the thread's Realm for this configuration while one is alive (RealmSwift's cache).
        core = try queue == nil ? RealmCache.core(for: configuration, actor: nil) : RealmCore(configuration: configuration, queue: queue)
    }

    /// Opens the Realm at `fileURL` with the default configuration's other settings.
    public init(fileURL: URL) throws {
        var c = Configuration.defaultConfiguration
        c.fileURL = fileURL
        try self.init(configuration: c)
    }

    public var configuration: Configuration { core.configuration }
    public var schema: Schema { core.schema }
    /// True when the Realm holds no objects of any type.
    public var isEmpty: Bool { core.isEmpty }

    // MARK: Writes

    /// Runs `block` in a write transaction and commits it; an error thrown by `block` cancels it.
    @discardableResult
    public func write<Result>(withoutNotifying tokens: [NotificationToken] = [], _ block: () throws -> Result) throws -> Result {
        try core.beginWrite()
        let result: Result
        do {
            result = try block()
        } catch {
            if isInWriteTransaction { cancelWrite() }
            throw error
        }
        if isInWriteTransaction { try commitWrite(withoutNotifying: tokens) }
        return result
    }

    /// Begins a write transaction. Beginning one inside another is a programmer error, as in RealmSwift (use
    /// `write {}`, which reports a failure to begin as an error).
    public func beginWrite() {
        do {
            try core.beginWrite()
        } catch {
            fatalError("\(error)")
        }
    }
    public func commitWrite(withoutNotifying tokens: [NotificationToken] = []) throws {
        try core.commitWrite(skipping: Set(tokens.compactMap(\.id)))
    }
    /// Reverts the writes of the current transaction and ends it. As in RealmSwift, objects added in it are
    /// invalidated rather than unmanaged again, and instances deleted in it are not revived (query again).
    public func cancelWrite() { core.cancelWrite() }
    public var isInWriteTransaction: Bool { core.isInWriteTransaction }

    /// What `add` does when an object with the same primary key exists.
    public enum UpdatePolicy: Sendable {
        /// Trap: a duplicate primary key is a programming error.
        case error
        /// Update the existing object, writing only the properties whose values differ.
        case modified
        /// Update the existing object, writing every property.
        case all
    }

    /// Adds an unmanaged object; it becomes managed by this Realm.
    public func add(_ object: Object, update: UpdatePolicy = .error) {
        core.add(object, update: update)
    }

    public func add<S: Sequence>(_ objects: S, update: UpdatePolicy = .error) where S.Iterator.Element: Object {
        for o in objects { core.add(o, update: update) }
    }

    /// Creates an object from a dictionary (by property name), an array (in property order) or an object.
    @discardableResult
    public func create<T: Object>(_ type: T.Type, value: Any = [String: Any](), update: UpdatePolicy = .error) -> T {
        let info = TypeRegistry.info(for: type)
        var value = value
        // An update from a dictionary changes the properties it names and keeps the others (O014).
        if update != .error, let pk = info.primaryKeyIndex,
            let dict = value as? [String: Any?] ?? (value as? [String: Any])?.mapValues({ Optional($0) }),
            let key = dict[info.schema.properties[pk].name],
            let existing = core.lookup(primaryKey: StoredValue.from(any: key ?? nil, as: info.schema.properties[pk].type) ?? .null,
                                       binding: core.binding(forClass: type))
        {
            let object = core.makeObject(binding: core.binding(forClass: type), key: existing.0, record: existing.1)
            let namesLinks = dict.keys.contains { k in info.propertyIndex[k].map { info.linkTargets[$0] != nil || info.listTargets[$0] != nil } == true }
            if !namesLinks {
                for (k, v) in dict where k != info.schema.properties[pk].name {
                    if update == .modified, let current = object.value(forKey: k), let given = v,
                        StoredValue.from(any: current) == StoredValue.from(any: given)
                    {
                        continue
                    }
                    object.setValue(v ?? nil, forKey: k)
                }
                guard let typed = object as? T else { fatalError("\(info.schema.className) is not a \(T.self)") }
                return typed
            }
            // Nested objects are added or updated with the same policy: the full path below, with the
            // properties the dictionary leaves out taken from the existing object.
            var merged = dict
            for p in info.schema.properties where merged[p.name] == nil { merged[p.name] = .some(object.value(forKey: p.name)) }
            value = merged
        }
        // The class given, which may be a subclass of T (a base class reference: `let t: Object.Type = Dog.self`).
        let object = unsafeDowncast(Object.make(type), to: T.self)
        info.assign(value, to: object)
        core.creatingFromValue += 1
        defer { core.creatingFromValue -= 1 }
        // An object of another Realm given whole is this copy: a link back to it (a cycle) finds it.
        if let source = (value as? Object)?._accessor, source.core !== core { core.foreignCopies[RealmCore.ForeignRow(source)] = object }
        core.add(object, update: update)
        return object
    }

    /// Deletes a managed object.
    public func delete(_ object: Object) { core.delete(object) }

    public func delete<S: Sequence>(_ objects: S) where S.Iterator.Element: Object {
        for o in Array(objects) { core.delete(o) }
    }

    /// Deletes every object the results hold now (by key: no object is made for a match).
    public func delete<T: Object>(_ results: Results<T>) { core.delete(results) }

    /// Deletes every object of every type.
    public func deleteAll() { core.deleteAll() }

    // MARK: Reads

    /// All objects of a type, as a live `Results`.
    public func objects<T: Object>(_ type: T.Type) -> Results<T> {
        require(
            !(T.self is EmbeddedObject.Type),
            "Embedded objects cannot be queried on their own: query their parents through a key path (e.g. `address.city == 'Oslo'`)")
        return Results(core: core, binding: core.binding(for: T.self), predicate: nil, sort: [])
    }

    /// The object whose primary key is `key`, or nil.
    public func object<T: Object, K>(ofType type: T.Type, forPrimaryKey key: K) -> T? {
        let binding = core.binding(for: T.self)
        guard let pk = binding.info.primaryKeyIndex else {
            fatalError("'\(binding.info.schema.className)' does not have a primary key")
        }
        let stored: StoredValue
        if binding.intPrimaryKey, let i = key as? Int {
            stored = .int(Int64(i))
        } else {
            let property = binding.info.schema.properties[pk]
            // A key of another type finds nothing in Realm either way: it is the caller's mistake, said as Realm does.
            guard let s = StoredValue.from(any: key, as: property.type), Self.fitsPrimaryKey(s, property) else {
                fatalError(TypeInfo.invalidValueMessage(
                    key, type: property.type, target: nil, nullable: property.isNullable, collection: "",
                    property: "\(binding.info.schema.className).\(property.name)"))
            }
            stored = s
        }
        guard let (objectKey, record) = core.lookup(primaryKey: stored, binding: binding) else { return nil }
        let object = core.makeObject(binding: binding, key: objectKey, record: record)
        return binding.objectClass == T.self ? unsafeDowncast(object, to: T.self) : object as? T
    }

    /// Whether `v` is a value of primary key `p`'s type (or nil for an optional one).
    static func fitsPrimaryKey(_ v: StoredValue, _ p: Property) -> Bool {
        switch (p.type, v) {
        case (_, .null): p.isNullable
        case (.int, .int), (.string, .string), (.objectId, .objectId), (.UUID, .uuid): true
        default: false
        }
    }

    // MARK: Versions

    /// Whether the Realm moves to the latest version after each of its own and others' commits.
    public var autorefresh: Bool {
        get { core.autorefresh }
        nonmutating set { core.autorefresh = newValue }
    }

    /// Moves this Realm to the latest committed version. Returns whether anything changed.
    @discardableResult
    public func refresh() -> Bool { core.refresh() }

    /// Releases this Realm's hold on its version; the next read moves it to the latest.
    public func invalidate() { core.invalidate() }

    /// The schema version stored in the file at `fileURL`.
    public static func schemaVersion(at fileURL: URL) throws -> UInt64 {
        try schemaVersionAtURL(fileURL)
    }

    /// Migrates the file `configuration` describes to its schema version now, online work included (every
    /// pending type rewritten), without keeping it open.
    public static func performMigration(for configuration: Configuration = .defaultConfiguration) throws {
        if SharedFile.isOpen(configuration) {
            fatalError("Cannot migrate Realms that are already open.")
        }
        try SharedFile.refuseMigrationBesideOtherProcesses(configuration)
        let realm = try Realm(configuration: configuration)
        try realm.finishMigrations()
    }

    // MARK: Files

    /// Deletes the files of the Realm `config` describes. Returns whether there was anything to delete.
    @discardableResult
    public static func deleteFiles(for config: Configuration) throws -> Bool {
        try SharedFile.deleteFiles(for: config)
    }

    /// Whether the Realm `config` describes exists.
    public static func fileExists(for config: Configuration) -> Bool {
        SharedFile.fileExists(for: config)
    }
}

/// The schema version stored in the Realm file at `fileURL`.
public func schemaVersionAtURL(_ fileURL: URL, encryptionKey: Data? = nil) throws -> UInt64 {
    try SharedFile.storedSchemaVersion(at: fileURL, encryptionKey: encryptionKey)
}

extension Realm: Equatable {
    public static func == (a: Realm, b: Realm) -> Bool { a.core === b.core }
}

/// A token returned by notification registration; notifications stop when it is invalidated.
/// Releasing the token ends them too, as in Realm: keep it for as long as the notifications are wanted.
public final class NotificationToken: @unchecked Sendable {
    private let lock = NSLock()
    private var onInvalidate: (() -> Void)?
    /// The observer this token ends (for `write(withoutNotifying:)`).
    let id: ObjectIdentifier?

    init(id: ObjectIdentifier? = nil, onInvalidate: (() -> Void)? = nil) {
        self.id = id
        self.onInvalidate = onInvalidate
    }

    public func invalidate() {
        lock.lock()
        let body = onInvalidate
        onInvalidate = nil
        lock.unlock()
        body?()
    }

    deinit { invalidate() }
}
