import Engine
import Foundation
import Logging

// Invariants:
// (1) Reads outside a write go through `snapshot`; inside a write, through the pending records first, then
//     the write's base snapshot (the latest version when the write began).
// (2) A pending record holds every property value of its object (by property index), so commit encodes it
//     without reading anything else.
// (3) Object keys of types with an Int primary key are the primary key; others come from a counter in the
//     metadata partition, read and advanced only while the engine's writer lock is held.

/// The state of one Realm instance: its file, its version, and its write transaction.
final class RealmCore: @unchecked Sendable {
    let configuration: Realm.Configuration
    let shared: SharedFile
    private(set) var snapshot: Snapshot {
        didSet { versionToken = snapshot.sequence }
    }
    var autorefresh = true
    private(set) var isInvalidated = false
    private var bindings: [ObjectIdentifier: TypeBinding] = [:] {
        didSet {
            lastBinding = nil
            dynamicBindings = [:]
        }
    }
    /// Bindings that make `DynamicObject`s, by type name (the dynamic API).
    private var dynamicBindings: [String: TypeBinding] = [:]
    private var lastBinding: TypeBinding?
    private var write: WriteState?

    /// A pending object of the current write transaction.
    final class PendingRecord {
        let binding: TypeBinding
        var values: [StoredValue]
        var deleted = false
        /// The primary-key index entry to add (types with a non-Int primary key).
        var primaryKeyIndexEntry: [UInt8]?
        init(binding: TypeBinding, values: [StoredValue]) {
            self.binding = binding
            self.values = values
        }
    }

    struct PendingKey: Hashable, Comparable {
        var partition: UInt32
        var key: Int64

        static func < (a: PendingKey, b: PendingKey) -> Bool {
            a.partition != b.partition ? a.partition < b.partition : a.key < b.key
        }

        /// Both fields in one word, for hashing (equal keys give equal words; unequal ones rarely do).
        private var packed: Int64 { Int64(bitPattern: UInt64(partition) << 48 ^ UInt64(bitPattern: key)) }
        func hash(into hasher: inout Hasher) { hasher.combine(packed) }
        /// One-word hashing, as Int64 does it: a large write hashes every key it touches several times, and a
        /// general `Hasher` per hash was a tenth of an insert.
        func _rawHashValue(seed: Int) -> Int { packed._rawHashValue(seed: seed) }
    }

    final class WriteState {
        let tx: WriteTransaction
        /// The pending records; add them with `setPending`, which keeps `order`.
        private(set) var pending: [PendingKey: PendingRecord] = [:]
        /// The keys of `pending` in the order they were first added.
        private(set) var order: [PendingKey] = []

        /// Sets the pending record of `key`; true when it had none.
        @discardableResult
        func setPending(_ key: PendingKey, _ record: PendingRecord) -> Bool {
            guard pending.updateValue(record, forKey: key) == nil else { return false }
            order.append(key)
            return true
        }

        func removePending(partition: UInt32) {
            pending = pending.filter { $0.key.partition != partition }
            order.removeAll { $0.partition == partition }
        }

        /// The keys of `pending`, by partition.
        func pendingKeysByPartition() -> [UInt32: [Int64]] {
            var out: [UInt32: [Int64]] = [:]
            for k in order { out[k.partition, default: []].append(k.key) }
            return out
        }
        /// Keys added in this transaction per partition, in order, for queries.
        var added: [UInt32: [Int64]] = [:]
        var nextKeys: [UInt32: Int64] = [:]
        var deletedPrimaryKeys: [(UInt32, [UInt8])] = []
        /// Keys of deleted objects by type name, whose links are nulled at commit.
        var deletedKeys: [String: Set<Int64>] = [:]
        /// Embedded objects added in this write that no parent has taken yet (`adopt`).
        var orphans = Set<PendingKey>()
        var schemaChanged = false
        /// deleteAll dropped partitions: observers re-evaluate.
        var droppedPartitions = false
        var objectsToInvalidate: [Object] = []
        init(tx: WriteTransaction) { self.tx = tx }
    }

    /// Change observers. Tokens refer to this list weakly, never to the core: a weak reference to the core
    /// would give it a side table, which makes each retain and release of it (one pair per object made)
    /// several times slower.
    let observerList = ObserverList()
    /// The queue this Realm belongs to, if it was opened with one: notifications and autorefresh go there.
    let queue: DispatchQueue?
    /// For a Realm that belongs to an actor: runs notifications and autorefresh there, in order.
    let pump: ActorPump?

    /// A frozen Realm: pinned to one version; it never refreshes, writes or notifies.
    let isFrozen: Bool
    /// The queued `beginAsyncWrite`/`commitAsyncWrite` work of this Realm.
    let asyncWrites = AsyncWriteQueue()
    /// The last frozen Realm of this one, held weakly (it pins its version only while something frozen uses
    /// it), so that freezing many objects of one version shares one.
    private var frozenCache: (sequence: UInt64, core: WeakCore)?
    /// A Realm held weakly (the frozen cache here, the instances of a file in SharedFile).
    struct WeakCore { weak var core: RealmCore? }

    /// A frozen copy of `core` at its current version, sharing its file and bindings.
    private init(frozenFrom core: RealmCore) throws {
        require(!core.isInWriteTransaction, "Cannot freeze a Realm in a write transaction; commit or cancel it first")
        configuration = core.configuration
        queue = nil
        pump = nil
        shared = core.shared
        snapshot = try core.snapshot.duplicate()
        versionToken = snapshot.sequence
        bindings = core.bindings
        isFrozen = true
    }

    /// The frozen Realm of this one's current version (this one, if it is frozen).
    func frozen() -> RealmCore {
        if isFrozen { return self }
        let sequence = snapshot.sequence
        if let cached = frozenCache, cached.sequence == sequence, let f = cached.core.core { return f }
        do {
            let f = try RealmCore(frozenFrom: self)
            frozenCache = (sequence, WeakCore(core: f))
            return f
        } catch {
            fatalError("freezing \(shared.displayName) failed: \(error)")
        }
    }

    init(configuration: Realm.Configuration, queue: DispatchQueue? = nil, actor: (any Actor)? = nil) throws {
        isFrozen = false
        Self.validate(configuration)
        self.configuration = configuration
        self.queue = queue
        self.pump = actor.map(ActorPump.init)
        let shared = try SharedFile.shared(for: configuration)
        self.shared = shared
        self.snapshot = try shared.database.snapshot()
        versionToken = snapshot.sequence
        try bindDeclaredTypes()
        // Only a Realm with a queue acts on other instances' commits (autorefresh there); the others are not
        // listed, so that they are never referred to weakly (see `observerList`).
        if queue != nil || pump != nil { shared.attach(self) }
    }

    var database: Database { shared.database }

    /// Changes whenever this Realm's view of the data changes (a new snapshot); stored, because every
    /// property read checks it.
    private(set) var versionToken: UInt64 = 0
    /// Whether a write transaction is open (its pending values take precedence over records).
    var hasPendingWrite: Bool { write != nil }

    /// Identifies what this Realm shows: its version and the changes of its write so far.
    struct ChangeToken: Equatable {
        var sequence: UInt64
        var writeChanges: Int
    }
    private var writeChanges = 0
    var changeToken: ChangeToken { ChangeToken(sequence: snapshot.sequence, writeChanges: writeChanges) }

    var schema: Schema {
        let stored = shared.storedSchema.withLock { $0 }
        let bound = Dictionary(bindings.values.map { ($0.info.schema.className, $0.info.schema) }, uniquingKeysWith: { a, _ in a })
        var result: [ObjectSchema] = Array(bound.values)
        // With `objectTypes`, the schema is exactly those types (Realm's class subset); without, every stored type.
        for t in stored?.types ?? [] where bound[t.name] == nil && configuration.objectTypes == nil {
            result.append(Migration.objectSchema(of: t))
        }
        return Schema(objectSchema: result.sorted { $0.className < $1.className })
    }

    // MARK: - Schema binding

    /// Programmer errors of a configuration, trapped with RealmSwift's texts when it is used to open.
    static func validate(_ configuration: Realm.Configuration) {
        if configuration.schemaVersion == UInt64.max {
            fatalError("Cannot set schema version to \(UInt64.max) (RLMNotVersioned)")
        }
        if configuration.readOnly && configuration.deleteRealmIfMigrationNeeded {
            fatalError("Cannot set `deleteRealmIfMigrationNeeded` when `readOnly` is set.")
        }
    }

    private func bindDeclaredTypes() throws {
        // With no `objectTypes`, every model class of the program, as RealmSwift's default schema; others are
        // added when first used.
        guard let types = configuration.objectTypes ?? (ModelDiscovery.schemaClasses.isEmpty ? nil : ModelDiscovery.schemaClasses) else {
            // Types are bound as they are used; only the version rules apply now.
            if let stored = shared.storedSchema.withLock({ $0 }), stored.schemaVersion != configuration.schemaVersion {
                if configuration.readOnly { throw versionNotEqual(stored: stored.schemaVersion) }
                if configuration.deleteRealmIfMigrationNeeded {
                    try register([], checkVersion: true)
                } else if stored.schemaVersion > configuration.schemaVersion {
                    throw versionTooLow(stored: stored.schemaVersion)
                }
            }
            return
        }
        var infos: [TypeInfo] = []
        for t in types { infos.append(try TypeRegistry.checkedInfo(for: t)) }
        let names = infos.map(\.schema.className)
        for info in infos {
            for inverse in info.linkingObjects {
                let origin = try TypeRegistry.checkedInfo(for: inverse.origin)
                let p = origin.schema.properties.first { $0.name == inverse.property }
                guard let p, p.objectClassName == info.schema.className else {
                    throw Realm.Error(
                        .schemaMismatch,
                        "Property '\(info.schema.className).\(inverse.name)' declares LinkingObjects from '\(origin.schema.className).\(inverse.property)', "
                            + (p == nil ? "which does not exist" : "which does not link to '\(info.schema.className)'"))
                }
                guard names.contains(origin.schema.className) else {
                    throw Realm.Error(
                        .schemaMismatch,
                        "Property '\(info.schema.className).\(inverse.name)' declares LinkingObjects from '\(origin.schema.className)', which is not in Realm.Configuration.objectTypes; add it there")
                }
            }
        }
        // A subset that leaves out a link target is a programmer error in RealmSwift (M139).
        let missingTargets = infos.flatMap { info in
            info.schema.properties.compactMap { p in
                p.objectClassName.flatMap { names.contains($0) ? nil : "- '\(info.schema.className).\(p.name)' links to class '\($0)', which is missing from the list of classes managed by the Realm" }
            }
        }
        if !missingTargets.isEmpty {
            fatalError("Invalid class subset list:\n" + missingTargets.joined(separator: "\n") + "\nAdd the missing classes to Realm.Configuration.objectTypes.")
        }
        // Duplicate names, sets of embedded objects, alias clashes, embedded cycles: all in one error.
        try SchemaValidation.validate(infos)
        try register(infos, checkVersion: true)
    }

    /// A read-only open needs the file's own version.
    func versionNotEqual(stored: UInt64) -> Realm.Error {
        Realm.Error(
            .fail, "Provided schema version \(configuration.schemaVersion) does not equal last set version \(stored).",
            fileURL: configuration.fileURL,
            suggestion: "\(shared.displayName) is at schema version \(stored) and is opened read-only, which cannot migrate: open it "
                + "with schemaVersion \(stored), or writable once to migrate it.")
    }

    func versionTooLow(stored: UInt64) -> Realm.Error {
        Realm.Error(
            .fail, "Provided schema version \(configuration.schemaVersion) is less than last set version \(stored).",
            fileURL: configuration.fileURL,
            suggestion: "\(shared.displayName) is at schema version \(stored): open it with schemaVersion \(stored) or higher.")
    }

    /// Binds model classes to the stored schema, adding what is new. Writes the schema when it changes.
    private func register(_ infos: [TypeInfo], checkVersion: Bool) throws {
        if configuration.readOnly {
            try bindReadOnly(infos)
            return
        }
        let ownTx = write == nil
        let tx = try write?.tx ?? database.beginWrite()
        var schemaToWrite: StoredSchema? = nil
        var toInstall: [String: TypeMigration] = [:]
        var replaceMigrations = false
        var toBind: [(TypeInfo, StoredSchema.StoredType, UInt64)] = []
        do {
            try shared.storedSchema.withLock { stored in
                let base = try tx.snapshot.get(StoredSchema.schemaKey, in: StoredSchema.metadataPartition)
                    .map { try StoredSchema.decode($0, file: shared.displayName) } ?? stored
                var schema = base ?? StoredSchema(schemaVersion: configuration.schemaVersion, nextPartition: 1, types: [])
                if checkVersion, let base {
                    let differences = SchemaDiff.differences(stored: base, declared: infos)
                    let bump = configuration.schemaVersion > base.schemaVersion
                    let reset = configuration.deleteRealmIfMigrationNeeded && (!differences.isEmpty || base.schemaVersion != configuration.schemaVersion)
                    if !reset && base.schemaVersion > configuration.schemaVersion { throw versionTooLow(stored: base.schemaVersion) }
                    if reset {
                        // Delete and recreate: every stored type's data goes (dropping a partition is O(1)). Never silently.
                        StrataLog.warning(
                            "deleteRealmIfMigrationNeeded: deleting every object of \(shared.displayName) (schema version \(base.schemaVersion) -> \(configuration.schemaVersion)) because a migration is needed: \(differences.isEmpty ? "the schema version changed" : differences.map(\.description).joined(separator: " "))")
                        for t in base.types {
                            try tx.dropPartition(t.partition)
                            if let p = t.primaryKeyPartition { try tx.dropPartition(p) }
                            for index in t.indexes ?? [] { try tx.dropPartition(index.partition) }
                            try tx.delete(StoredSchema.nextKeyKey(t.partition), in: StoredSchema.metadataPartition)
                        }
                        schema = StoredSchema(schemaVersion: configuration.schemaVersion, nextPartition: base.nextPartition, types: [])
                        schema.history = base.historyIncludingSelf
                        replaceMigrations = true
                    } else if !differences.isEmpty && !bump {
                        throw Realm.Error(
                            .schemaMismatch,
                            "Migration is required due to the following errors:\n"
                                + differences.map { "- " + $0.description }.joined(separator: "\n"),
                            fileURL: configuration.fileURL,
                            suggestion: "\(shared.displayName) is at schema version \(base.schemaVersion), as is the code: raise "
                                + "schemaVersion to \(base.schemaVersion + 1) and migrate in the migration block.")
                    } else if bump {
                        schema.history = base.historyIncludingSelf
                        for info in infos { _ = SchemaDiff.apply(info, to: &schema) }
                        schema.schemaVersion = configuration.schemaVersion
                        let prior = priorTransforms(base, new: schema, infos: infos)
                        let migration = Migration(
                            core: self, tx: tx, old: base, new: schema, declared: infos,
                            mode: .open(online: configuration.migrationMode == .online), prior: prior)
                        configuration.migrationBlock?(migration, base.schemaVersion)
                        schema = try migration.finish()
                        toInstall = migration.installed
                        replaceMigrations = true
                        // Records the migration rewrote, and those an online migration will rewrite, no longer
                        // match their indexes: unlisted here, built again once the type's records are final.
                        for name in migration.rewrittenTypes.union((schema.pending ?? []).map(\.typeName)) {
                            try schema.dropIndexes(of: name, in: tx)
                        }
                    }
                }
                var changed = base == nil || schema != base
                for info in infos {
                    changed = SchemaDiff.apply(info, to: &schema) || changed
                }
                if !replaceMigrations { toInstall = try missingMigrations(schema, infos: infos) }
                if changed { schemaToWrite = schema }
                stored = schema
                for info in infos {
                    if let t = schema.type(named: info.schema.className) { toBind.append((info, t, schema.schemaVersion)) }
                }
            }
            if let schemaToWrite { try tx.put(StoredSchema.schemaKey, schemaToWrite.encoded(), in: StoredSchema.metadataPartition) }
            if ownTx {
                try tx.commit()
                try moveToLatest()
            } else if schemaToWrite != nil {
                write?.schemaChanged = true
            }
            // Only a committed schema gets its migrations installed: a failed open leaves the process as it was.
            install(toInstall, replacing: replaceMigrations)
            if ownTx {
                try reconcileIndexes(toBind.map(\.0))
                try moveToLatest()
                if let latest = shared.storedSchema.withLock({ $0 }) {
                    toBind = toBind.map { (info, t, version) in (info, latest.type(named: t.name) ?? t, version) }
                }
            }
            for (info, t, version) in toBind {
                bindings[ObjectIdentifier(info.objectClass)] = TypeBinding(info: info, stored: t, schemaVersion: version, migration: shared.migration(for: t.name))
            }
            if let pending = shared.storedSchema.withLock({ $0?.pending }), !pending.isEmpty {
                shared.migrator.schedule(Set(pending.map(\.typeName)).sorted(), start: configuration.backgroundMigration)
            }
        } catch {
            if ownTx { tx.abort() }
            if let e = error as? StorageError { throw realmError(e, fileURL: configuration.fileURL) }
            throw error
        }
    }

    /// The transforms of older pending versions: the migration block called once per version in
    /// transforms-only mode (its other operations are ignored there, as they took effect when that version's
    /// migration ran).
    private func priorTransforms(_ base: StoredSchema, new: StoredSchema, infos: [TypeInfo]) -> [UInt64: [String: [ObjectTransform]]] {
        guard let block = configuration.migrationBlock else { return [:] }
        var out: [UInt64: [String: [ObjectTransform]]] = [:]
        for (version, entries) in Dictionary(grouping: base.pending ?? [], by: \.fromVersion).sorted(by: { $0.key < $1.key }) {
            let old = StoredSchema(schemaVersion: version, nextPartition: base.nextPartition, types: entries.map(\.oldType))
            let migration = Migration(core: self, tx: nil, old: old, new: new, declared: infos, mode: .transformsOnly)
            block(migration, version)
            out[version] = migration.transforms
        }
        return out
    }

    /// How to read the types of `schema` whose online migration is pending and that this process has not set
    /// up yet (a new process opening a file whose migration had not finished).
    private func missingMigrations(_ schema: StoredSchema, infos: [TypeInfo]) throws -> [String: TypeMigration] {
        let pending = schema.pending ?? []
        let missing = Set(pending.map(\.typeName)).filter { shared.migration(for: $0) == nil }
        guard !missing.isEmpty else { return [:] }
        let prior = priorTransforms(schema, new: schema, infos: infos)
        var out: [String: TypeMigration] = [:]
        for name in missing.sorted() {
            guard let newType = schema.type(named: name) else { continue }
            let entries = schema.pending(for: name)
            for e in entries where prior[e.fromVersion]?[name]?.isEmpty ?? true {
                throw Realm.Error(
                    .schemaMismatch,
                    "Objects of '\(name)' in \(shared.displayName) are still being migrated online from schema version \(e.fromVersion) "
                        + "to \(schema.schemaVersion), but the migration block, called with oldSchemaVersion \(e.fromVersion), registered no "
                        + "transformObjects(ofType: \"\(name)\"). Keep the migration code for every version a file may still be at.",
                    fileURL: configuration.fileURL)
            }
            out[name] = TypeMigration(
                typeName: name, newType: newType, newVersion: schema.schemaVersion,
                defaults: Migration.defaults(infos.first { $0.schema.className == name }),
                generations: entries.map { .init(fromVersion: $0.fromVersion, oldType: $0.oldType, transforms: prior[$0.fromVersion]?[name] ?? []) })
        }
        return out
    }

    /// Makes `migrations` the way this process reads their types; a migrator told about a read moves that
    /// type to the front.
    private func install(_ migrations: [String: TypeMigration], replacing: Bool) {
        let migrator = shared.migrator
        shared.migrations.withLock { installed in
            if replacing { installed = [:] }
            for (name, m) in migrations {
                installed[name] = TypeMigration(
                    typeName: m.typeName, newType: m.newType, newVersion: m.newVersion, defaults: m.defaults,
                    generations: m.generations, onFirstUse: { [weak migrator] name in migrator?.touched(name) })
            }
        }
    }

    /// A read-only Realm binds to the stored schema as it is, as RealmSwift's read-only mode does: index
    /// settings, stored types and properties the model lacks, and embeddedness may differ, and a model type
    /// missing from the file reads as empty; a version other than the file's, or a declared property the file
    /// does not hold as declared, is an error, since nothing may be written.
    private func bindReadOnly(_ infos: [TypeInfo]) throws {
        guard let stored = shared.storedSchema.withLock({ $0 }) else {
            throw Realm.Error(.fail, "\(shared.displayName) has no schema yet and is opened read-only", fileURL: configuration.fileURL)
        }
        if stored.schemaVersion != configuration.schemaVersion { throw versionNotEqual(stored: stored.schemaVersion) }
        let differences = SchemaDiff.differences(stored: stored, declared: infos).filter { d in
            switch d.kind {
            case .propertyRemoved, .embeddingChanged: false
            default: true
            }
        }
        guard differences.isEmpty else {
            throw Realm.Error(
                .fail,
                "The following changes cannot be made in read-only schema mode:\n"
                    + differences.map { "- " + $0.description }.joined(separator: "\n"),
                fileURL: configuration.fileURL,
                suggestion: "\(shared.displayName) is opened read-only and its schema (version \(stored.schemaVersion)) differs from the "
                    + "code's: open it writable once to migrate it.")
        }
        install(try missingMigrations(stored, infos: infos), replacing: false)
        // A type the file lacks gets a partition no file holds: it reads as empty, and nothing writes it.
        var nextPartition = max(stored.nextPartition, 1)
        for info in infos {
            let t: StoredSchema.StoredType
            if let existing = stored.type(named: info.schema.className) {
                t = existing
            } else {
                var schema = StoredSchema(schemaVersion: stored.schemaVersion, nextPartition: nextPartition, types: [])
                _ = SchemaDiff.apply(info, to: &schema)
                nextPartition = schema.nextPartition
                t = schema.types[0]
            }
            bindings[ObjectIdentifier(info.objectClass)] = TypeBinding(
                info: info, stored: t, schemaVersion: stored.schemaVersion, migration: shared.migration(for: t.name))
        }
    }

    /// The binding of a model class, registering it on first use when `objectTypes` did not list it.
    func binding<T: Object>(for type: T.Type) -> TypeBinding {
        binding(forClass: type)
    }

    /// A binding of the type named `name` that makes `DynamicObject`s (for the dynamic API).
    func dynamicBinding(_ name: String) -> TypeBinding {
        if let b = dynamicBindings[name] { return b }
        guard let bound = boundType(named: name), let stored = shared.storedSchema.withLock({ $0?.type(named: name) }) else {
            fatalError("Object type '\(name)' is not in the schema of \(shared.displayName)")
        }
        let b = TypeBinding(info: bound.info, stored: stored, schemaVersion: bound.schemaVersion, migration: bound.migration, objectClass: DynamicObject.self)
        dynamicBindings[name] = b
        return b
    }

    /// The binding of the type named `name`, when one is bound here.
    func boundType(named name: String) -> TypeBinding? {
        bindings.values.first { $0.info.schema.className == name }
    }

    func binding(forClass type: Object.Type) -> TypeBinding {
        // The last type asked for answers most calls (a loop adding objects of one type) without hashing.
        if let last = lastBinding, last.objectClass == type { return last }
        if let b = bindings[ObjectIdentifier(type)] {
            lastBinding = b
            return b
        }
        if configuration.objectTypes != nil || isFrozen {
            fatalError(
                "Object type '\(type.className())' is not managed by the Realm: add \(type).self to Realm.Configuration.objectTypes")
        }
        do {
            try register([try TypeRegistry.checkedInfo(for: type)], checkVersion: true)
        } catch {
            fatalError("\(error)")
        }
        guard let b = bindings[ObjectIdentifier(type)] else {
            fatalError("Object type '\(type.className())' could not be added to the schema of \(shared.displayName)")
        }
        return b
    }

    // MARK: - Versions

    /// Moves to the latest version and tells observers what changed (all but those in `skipping`).
    private func moveToLatest(skipping: Set<ObjectIdentifier> = []) throws {
        let next = try database.snapshot()
        let old = snapshot
        snapshot = next
        let observers = currentObservers
        guard !observers.isEmpty, next.sequence != old.sequence else {
            old.close()
            return
        }
        let summary = shared.changes(after: old.sequence, through: next.sequence)
        var deliveries: [(DispatchQueue?, () -> Void)] = []
        for o in observers {
            guard let d = o.changes(core: self, old: old, new: next, summary: summary) else { continue }
            if !skipping.contains(ObjectIdentifier(o)) { deliveries.append((o.queue, d)) }
        }
        old.close()
        for (queue, d) in deliveries {
            if queue == nil, let pump { pump.send(d) } else { Self.deliver(queue, d) }
        }
    }

    /// Another instance of this file committed: a Realm with a queue and autorefresh moves forward there.
    func otherInstanceCommitted() {
        let step = { [weak self] in
            guard let self, self.write == nil, !self.currentObservers.isEmpty else { return }
            if self.autorefresh {
                _ = self.refresh()
            } else {
                for case let o as RealmObserver in self.currentObservers {
                    if o.queue == nil, let pump = self.pump {
                        pump.send { o.block(.refreshRequired, o.realm) }
                    } else {
                        Self.deliver(o.queue) { o.block(.refreshRequired, o.realm) }
                    }
                }
            }
        }
        if let queue {
            nonisolated(unsafe) let step = step
            queue.async { step() }
        } else if let pump {
            pump.send(step)
        }
    }

    @discardableResult
    func refresh() -> Bool {
        guard write == nil, !isFrozen else { return false }
        let before = snapshot.sequence
        try? moveToLatest()
        isInvalidated = false
        return snapshot.sequence != before
    }

    /// How many times `invalidate()` was called: objects read before a call are invalidated by it.
    private(set) var invalidations = 0

    func invalidate() {
        guard write == nil else { return }
        invalidations += 1
        try? moveToLatest()
    }

    var isEmpty: Bool {
        let stored = shared.storedSchema.withLock { $0 }
        for t in stored?.types ?? [] {
            var any = false
            try? readSnapshot.scan(t.partition) { _, _ in any = true; return false }
            if any { return false }
        }
        if let write, write.pending.values.contains(where: { !$0.deleted }) { return false }
        return true
    }

    /// The snapshot reads go through: the write's base while writing.
    var readSnapshot: Snapshot { write?.tx.snapshot ?? snapshot }

    // MARK: - Writes

    var isInWriteTransaction: Bool { write != nil }

    func beginWrite() throws {
        if isFrozen { fatalError("Can't perform transactions on a frozen Realm") }
        if write != nil { fatalError("The Realm is already in a write transaction") }
        // A commit needs a version of its own: refuse to start one that could not end in a readable state.
        if let limit = configuration.maximumNumberOfActiveVersions, database.liveSnapshotCount >= Int(limit) {
            throw Realm.Error(
                .fail,
                "Number of active versions (\(database.liveSnapshotCount)) in \(shared.displayName) exceeded the limit of \(limit) "
                    + "(maximumNumberOfActiveVersions): every frozen Realm, object or results, and every Realm instance that has not "
                    + "refreshed, keeps a version alive; release them or raise the limit",
                fileURL: configuration.fileURL)
        }
        let tx: WriteTransaction
        do {
            tx = try database.beginWrite()
        } catch {
            throw realmError(error, fileURL: configuration.fileURL)
        }
        write = WriteState(tx: tx)
        // The write sees the latest version, as Realm's does.
        try? moveToLatest()
    }

    /// Commits touching more objects than this log no key set for observers (see `commitWrite`).
    static let largeCommit = 65_536

    func commitWrite(skipping: Set<ObjectIdentifier> = []) throws {
        guard let w = write else { fatalError("Can't commit a non-existing write transaction") }
        var summary = ChangeSummary()
        summary.everything = w.droppedPartitions || w.schemaChanged
        do {
            let version = shared.storedSchema.withLock { $0?.schemaVersion } ?? configuration.schemaVersion
            if w.schemaChanged, let schema = shared.storedSchema.withLock({ $0 }) {
                try w.tx.put(StoredSchema.schemaKey, schema.encoded(), in: StoredSchema.metadataPartition)
            }
            // Embedded objects that no parent took (none, unless a caller added one and dropped it) go.
            for orphan in w.orphans {
                if let b = bindings.values.first(where: { $0.partition == orphan.partition }) {
                    deleteCascading(b, orphan.key, w, nullifyLinks: false)
                }
            }
            try nullifyLinks(w, &summary)
            if w.order.count > Self.largeCommit {
                // A very large commit is logged as unknown changes: observers re-evaluate from scratch, which
                // costs about what checking this many keys one by one would, and the key set is not built.
                summary.everything = true
            } else {
                for (partition, keys) in w.pendingKeysByPartition() { summary.keys[partition, default: []].formUnion(keys) }
            }
            // In key order, so the engine receives sorted operations and skips sorting them. Keys first seen in
            // increasing order (a bulk insert) are in order already.
            var ordered = w.order
            if !ordered.isSorted { ordered.sort() }
            var encoded: [UInt8] = []
            // The indexes the file lists now (another instance may have built one this binding predates).
            let storedNow = shared.storedSchema.withLock { $0 }
            var indexesByPartition: [UInt32: [(property: Int, partition: UInt32)]] = [:]
            for pk in ordered {
                guard let record = w.pending[pk] else { continue }
                let indexes: [(property: Int, partition: UInt32)]
                if let known = indexesByPartition[pk.partition] {
                    indexes = known
                } else {
                    indexes = SecondaryIndex.indexes(of: record.binding, in: storedNow)
                    indexesByPartition[pk.partition] = indexes
                }
                try ObjectKey.withBytes(pk.key) { key in
                    if !indexes.isEmpty {
                        try SecondaryIndex.update(
                            record.binding, indexes, key: pk.key, keyBytes: key, values: record.deleted ? nil : record.values, in: w.tx)
                    }
                    if record.deleted {
                        try w.tx.delete(key, in: pk.partition)
                    } else {
                        record.binding.encode(record.values, schemaVersion: version, into: &encoded)
                        try w.tx.put(key, encoded, in: pk.partition)
                        if let entry = record.primaryKeyIndexEntry, let pkPartition = record.binding.primaryKeyPartition {
                            try w.tx.put(entry, key, in: pkPartition)
                        }
                    }
                }
            }
            for (partition, entry) in w.deletedPrimaryKeys { try w.tx.delete(entry, in: partition) }
            for (partition, next) in w.nextKeys {
                try w.tx.put(StoredSchema.nextKeyKey(partition), ObjectKey.bytes(next), in: StoredSchema.metadataPartition)
            }
            // Logged before it is published (the writer lock is held), so no reader sees the version without it.
            shared.recordCommit(sequence: w.tx.snapshot.sequence + 1, summary)
            try w.tx.commit()
        } catch {
            write = nil
            w.tx.abort()
            try? moveToLatest()
            throw realmError(error, fileURL: configuration.fileURL)
        }
        write = nil
        // Added objects are managed for good: what they held while unmanaged (links to other objects, which
        // may link back) is let go, so objects linked in a cycle are freed once the program drops them.
        for o in w.objectsToInvalidate {
            o._unmanagedLinks = nil
            o._unmanagedCollections = nil
            o._setValues = nil
        }
        try? moveToLatest(skipping: skipping)
        shared.committed(by: self)
    }

    func cancelWrite() {
        guard let w = write else { fatalError("Can't cancel a non-existing write transaction") }
        w.tx.abort()
        for o in w.objectsToInvalidate { o._accessor = nil }
        write = nil
        try? moveToLatest()
    }

    private func requireWrite(_ what: String) -> WriteState {
        writeChanges += 1
        guard let w = write else {
            fatalError("Cannot modify managed objects outside of a write transaction. (\(what): call write {} or beginWrite() on the Realm first)")
        }
        return w
    }

    /// The next object key of a partition, read from and advanced in `tx` (migrations).
    static func allocateKey(partition p: UInt32, in tx: WriteTransaction, cache: inout [UInt32: Int64]) -> Int64 {
        if cache[p] == nil {
            let stored = (try? tx.snapshot.get(StoredSchema.nextKeyKey(p), in: StoredSchema.metadataPartition)) ?? nil
            cache[p] = stored.flatMap { $0.withUnsafeBytes { ObjectKey.decode($0) } } ?? 0
        }
        let k = cache[p] ?? 0
        cache[p] = k + 1
        return k
    }

    /// The next object key of a type without an Int primary key.
    private func allocateKey(_ binding: TypeBinding, _ w: WriteState) -> Int64 {
        let p = binding.partition
        if w.nextKeys[p] == nil {
            let stored = try? w.tx.snapshot.get(StoredSchema.nextKeyKey(p), in: StoredSchema.metadataPartition)
            w.nextKeys[p] = stored.flatMap { $0.withUnsafeBytes { ObjectKey.decode($0) } } ?? 0
        }
        let k = w.nextKeys[p]!
        w.nextKeys[p] = k + 1
        return k
    }

    /// Adds an unmanaged object (and the unmanaged objects it links to). `asChild`: an embedded object being
    /// given to a parent (the only way one is added).
    func add(_ object: Object, update: Realm.UpdatePolicy, asChild: Bool = false) {
        let w = requireWrite("add objects")
        if let accessor = object._accessor {
            require(accessor.core === self, "Object is already managed by another Realm. Use create instead to copy it into this Realm.")
            return
        }
        let binding = binding(forClass: type(of: object))
        let info = binding.info
        require(
            asChild || !info.schema.isEmbedded,
            "Embedded objects cannot be created directly: assign this \(info.schema.className) to a property, List or Map of its parent object")
        var values = info.unmanagedValues(of: object)
        for i in info.requiredIndices where values[i].isNull { values[i] = info.defaults[i] }
        // Linked objects are resolved once this one has its key, so that a cycle of links ends here.
        let links = object._unmanagedLinks ?? [:]
        var lists: [(Int, any StoredOnAdd)] =
            info.listIndices.isEmpty ? [] : info.listIndices.compactMap { i in info.listStorage(of: object, at: i).map { (i, $0) } }
        // AnyRealmValue properties holding nested collections (with the objects in them).
        if let collections = object._unmanagedCollections {
            for (i, c) in collections { if let any = c as? UnmanagedAnyValue { lists.append((i, any)) } }
        }
        var key: Int64
        var pkEntry: [UInt8]? = nil
        if let pkIndex = info.primaryKeyIndex {
            let pkValue = values[pkIndex]
            if let existing = objectKey(forPrimaryKey: pkValue, binding: binding) {
                guard update != .error else {
                    fatalError(
                        "Attempting to create an object of type '\(info.schema.className)' with an existing primary key value '\(Object.describe(pkValue))'.")
                }
                key = existing
                let record = pendingRecord(binding, existing, w)
                for i in values.indices where links[i] == nil && info.listTargets[i] == nil && (update == .all || record.values[i] != values[i]) {
                    record.values[i] = values[i]
                }
                attach(object, binding: binding, key: key)
                resolve(links, lists, into: record, update: update, w)
                return
            }
            if binding.intPrimaryKey, case .int(let v) = pkValue {
                if v == Self.nilIntPrimaryKey, info.schema.properties[pkIndex].isNullable {
                    fatalError("\(info.schema.className): primary key \(v) is reserved for nil in an optional Int primary key; use another value")
                }
                key = v
            } else if binding.intPrimaryKey, pkValue.isNull {
                key = Self.nilIntPrimaryKey
            } else {
                key = allocateKey(binding, w)
                pkEntry = PrimaryKeyIndex.entry(pkValue)
            }
        } else {
            key = allocateKey(binding, w)
        }
        let record = PendingRecord(binding: binding, values: values)
        record.primaryKeyIndexEntry = pkEntry
        let pk = PendingKey(partition: binding.partition, key: key)
        if w.setPending(pk, record) { w.added[binding.partition, default: []].append(key) }
        if info.schema.isEmbedded { w.orphans.insert(pk) }
        attach(object, binding: binding, key: key)
        w.objectsToInvalidate.append(object)
        // A new record's embedded properties own nothing yet, whatever the unmanaged values said.
        for i in info.embeddedTargets.keys { record.values[i] = info.listTargets[i] != nil ? .list([]) : .null }
        resolve(links, lists, into: record, update: update, w)
    }

    /// Stores the links and lists of an object being added, adding the linked objects that are not managed yet.
    /// Models have no polymorphism (O046): a link or collection of `target` holds `target` objects only, never
    /// a subclass's (a subclass is another type, in another partition; its key would name the wrong object).
    static func checkLinkType(_ object: Object, _ target: Object.Type, _ place: String) {
        let actual = type(of: object)
        guard actual != target, target != Object.self, !(object is DynamicObject) else { return }
        fatalError(
            "Object of type '\(actual.className())' cannot be stored in \(place), which holds '\(target.className())' objects: "
                + "a subclass of a model is a separate type (Realm models have no polymorphism)")
    }

    /// How deep `resolve` is: the links and lists of objects being added (managed embedded objects met there are copied).
    @exclusivity(unchecked) private var resolvingAdd = 0

    /// Gives the existing embedded object `key` the values of the unmanaged `object` (only those that differ),
    /// its nested links and lists included; `object` then is that managed child.
    private func updateEmbedded(_ object: Object, _ binding: TypeBinding, _ key: Int64, _ w: WriteState) {
        let info = binding.info
        let record = pendingRecord(binding, key, w)
        var values = info.unmanagedValues(of: object)
        for j in info.requiredIndices where values[j].isNull { values[j] = info.defaults[j] }
        for j in values.indices where info.linkTargets[j] == nil && info.listTargets[j] == nil && record.values[j] != values[j] {
            record.values[j] = values[j]
        }
        let links = object._unmanagedLinks ?? [:]
        let lists: [(Int, any StoredOnAdd)] = info.listIndices.compactMap { j in info.listStorage(of: object, at: j).map { (j, $0) } }
        attach(object, binding: binding, key: key)
        resolve(links, lists, into: record, update: .modified, w)
    }

    private func resolve(_ links: [Int: Object?], _ lists: [(Int, any StoredOnAdd)], into record: PendingRecord, update: Realm.UpdatePolicy, _ w: WriteState) {
        resolvingAdd += 1
        defer { resolvingAdd -= 1 }
        for (i, linked) in links {
            if let linked, let target = record.binding.info.linkTargets[i] {
                Self.checkLinkType(linked, target, "'\(record.binding.info.schema.className).\(record.binding.info.schema.properties[i].name)'")
            }
            // `.modified` edits an existing embedded child in place (O031): it stays the same object.
            if update == .modified, let linked, linked._accessor == nil, let target = record.binding.info.embeddedTargets[i],
                record.binding.info.linkTargets[i] != nil, case .link(let childKey) = record.values[i]
            {
                let childBinding = binding(forClass: target)
                if exists(binding: childBinding, key: childKey) {
                    updateEmbedded(linked, childBinding, childKey, w)
                    continue
                }
            }
            var v = link(to: linked, update: update)
            // An AnyRealmValue holding an object stores the object's type with its key.
            if record.binding.info.schema.properties[i].type == .any, case .link(let k) = v, let linked {
                v = AnyRealmValue.objectForm(type(of: linked).className(), k)
            }
            if update != .modified || record.values[i] != v {
                adopt(record.binding, i, old: record.values[i], new: v, w)
                record.values[i] = v
            }
        }
        for (i, list) in lists {
            let v = update == .modified ? updatedEmbeddedList(list, i, of: record, w) ?? list.storedElements(in: self, update: update)
                : list.storedElements(in: self, update: update)
            if update != .modified || record.values[i] != v {
                adopt(record.binding, i, old: record.values[i], new: v, w)
                record.values[i] = v
            }
        }
    }

    /// For `update: .modified`, a List of embedded objects as Realm updates it: the element at each position
    /// that already holds an embedded object edits that object in place (it stays the same object), further
    /// elements are added, and positions beyond the new elements are removed. Nil for any other property.
    private func updatedEmbeddedList(_ list: any StoredOnAdd, _ i: Int, of record: PendingRecord, _ w: WriteState) -> StoredValue? {
        let info = record.binding.info
        guard let target = info.embeddedTargets[i], info.schema.properties[i].isArray, case .list(let old) = record.values[i],
              let elements = (list as? any ListStorage)?.anyElements
        else { return nil }
        let childBinding = binding(forClass: target)
        var keys: [StoredValue] = []
        keys.reserveCapacity(elements.count)
        for (n, element) in elements.enumerated() {
            guard let object = element as? Object else { return nil }
            if n < old.count, object._accessor == nil, case .link(let key) = old[n], exists(binding: childBinding, key: key) {
                updateEmbedded(object, childBinding, key, w)
                keys.append(.link(key))
            } else {
                keys.append(link(to: object, update: .modified))
            }
        }
        return .list(keys)
    }

    /// Keeps embedded objects owned by exactly one parent when property `i` of an object of `binding` goes
    /// from `old` to `new`: objects it gains must be new (added in this write, without a parent), objects it
    /// loses are deleted with what they embed. Nothing for other properties.
    private func adopt(_ binding: TypeBinding, _ i: Int, old: StoredValue, new: StoredValue, _ w: WriteState) {
        // Every property write comes here: most types embed nothing, and answer without hashing.
        guard !binding.info.embeddedTargets.isEmpty, let target = binding.info.embeddedTargets[i] else { return }
        let childBinding = self.binding(forClass: target)
        let name = "\(binding.info.schema.className).\(binding.info.schema.properties[i].name)"
        let oldKeys = Self.linkKeys(old), newKeys = Self.linkKeys(new)
        let oldSet = Set(oldKeys), newSet = Set(newKeys)
        if newSet.count != newKeys.count { fatalError("\(name) cannot hold the same embedded \(target.className()) twice") }
        let property = binding.info.schema.properties[i]
        for k in newKeys where !oldSet.contains(k) {
            if w.orphans.remove(PendingKey(partition: childBinding.partition, key: k)) == nil {
                // RealmSwift's texts (O028), then which property and what to do instead.
                let reason = property.isMap ? "Cannot add an existing managed embedded object to a Dictionary."
                    : property.isCollection ? "Cannot add an existing managed embedded object to a List."
                    : "Can't set link to existing managed embedded object"
                fatalError("\(reason) (\(name): an embedded \(target.className()) belongs to one parent; assign a new, unmanaged one)")
            }
        }
        for k in oldKeys where !newSet.contains(k) { deleteCascading(childBinding, k, w, nullifyLinks: false) }
    }

    static func linkKeys(_ v: StoredValue) -> [Int64] {
        switch v {
        case .link(let k): return [k]
        case .list(let items): return items.compactMap { if case .link(let k) = $0 { return k } else { return nil } }
        default: return []
        }
    }

    /// Deletes an object and the objects it embeds. `nullifyLinks`: links to it elsewhere become nil at commit
    /// (not needed when its parent is the one letting it go).
    private func deleteCascading(_ binding: TypeBinding, _ key: Int64, _ w: WriteState, nullifyLinks: Bool) {
        guard exists(binding: binding, key: key) else { return }
        let record = pendingRecord(binding, key, w)
        if record.deleted { return }
        if let pkIndex = binding.info.primaryKeyIndex, let pkPartition = binding.primaryKeyPartition {
            w.deletedPrimaryKeys.append((pkPartition, PrimaryKeyIndex.entry(record.values[pkIndex])))
            record.primaryKeyIndexEntry = nil
        }
        record.deleted = true
        w.orphans.remove(PendingKey(partition: binding.partition, key: key))
        if nullifyLinks { w.deletedKeys[binding.info.schema.className, default: []].insert(key) }
        for (i, target) in binding.info.embeddedTargets {
            let childBinding = self.binding(forClass: target)
            for k in Self.linkKeys(record.values[i]) { deleteCascading(childBinding, k, w, nullifyLinks: false) }
        }
    }

    /// The stored form of a link to `object`, adding it to this Realm first when it is unmanaged.
    func link(to object: Object?, update: Realm.UpdatePolicy = .error) -> StoredValue {
        guard var object else { return .null }
        // Adding or creating an object that holds a managed embedded object (another parent's) copies it, as
        // RealmSwift does (O031): an embedded object has one parent.
        if resolvingAdd > 0, object is EmbeddedObject, object._accessor != nil {
            let copy = type(of: object).init()
            TypeRegistry.info(for: type(of: object)).assign(object, to: copy)
            object = copy
        }
        if object._accessor == nil { add(object, update: update, asChild: true) }
        guard let accessor = object._accessor, accessor.core === self else {
            fatalError("Cannot link to an object managed by another Realm instance; copy it into this Realm with create(_:value:update:)")
        }
        return .link(accessor.key)
    }

    /// The object a link names in this Realm, or nil for no link or a deleted object.
    func linkedObject(_ stored: StoredValue, target: Object.Type) -> Object? {
        guard case .link(let key) = stored else { return nil }
        let b = binding(forClass: target)
        guard exists(binding: b, key: key) else { return nil }
        return makeObject(binding: b, key: key, record: nil)
    }

    /// The object a link of type `typeName` names, as a `DynamicObject` (`dynamicList` and its kin).
    func linkedDynamicObject(_ stored: StoredValue, typeName: String) -> Object? {
        guard case .link(let key) = stored else { return nil }
        let b = dynamicBinding(typeName)
        guard exists(binding: b, key: key) else { return nil }
        return makeObject(binding: b, key: key, record: nil)
    }

    /// Links to objects deleted in this write become nil, in every type that links to their type: one scan of
    /// each such type per commit, whatever the number of deletions.
    private func nullifyLinks(_ w: WriteState, _ summary: inout ChangeSummary) throws {
        guard !w.deletedKeys.isEmpty, let stored = shared.storedSchema.withLock({ $0 }) else { return }
        for t in stored.types {
            let linkFields = t.properties.filter { $0.type == .object && w.deletedKeys[$0.objectClassName ?? ""] != nil }
            /// The value with links to deleted objects removed (lists) or nulled (links); nil when unchanged.
            func cleaned(_ v: StoredValue?, _ p: StoredSchema.StoredProperty) -> StoredValue? {
                let deleted = w.deletedKeys[p.objectClassName ?? ""] ?? []
                switch v {
                case .link(let k)? where deleted.contains(k): return .null
                case .list(let items)? where p.isMap ?? false:
                    // A map keeps its keys: a value naming a deleted object becomes nil.
                    var changed = false
                    let kept = items.map { item -> StoredValue in
                        if case .link(let k) = item, deleted.contains(k) {
                            changed = true
                            return .null
                        }
                        return item
                    }
                    return changed ? .list(kept) : nil
                case .list(let items)?:
                    let kept = items.filter { if case .link(let k) = $0 { return !deleted.contains(k) } else { return true } }
                    return kept.count == items.count ? nil : .list(kept)
                default: return nil
                }
            }
            guard !linkFields.isEmpty else { continue }
            let bound = bindings.values.first { $0.info.schema.className == t.name && $0.partition == t.partition }
            func dangling(_ v: StoredValue?, _ p: StoredSchema.StoredProperty) -> Bool { cleaned(v, p) != nil }
            // Pending records of this write first.
            for (pk, record) in w.pending where pk.partition == t.partition && !record.deleted {
                for p in linkFields {
                    guard let i = record.binding.info.schema.properties.firstIndex(where: { $0.columnName == p.name }) else { continue }
                    if let c = cleaned(record.values[i], p) { record.values[i] = c }
                }
            }
            // Then the stored records.
            var rewrites: [(Int64, [UInt8])] = []
            try w.tx.snapshot.scan(t.partition) { k, v in
                guard let key = ObjectKey.decode(k), w.pending[PendingKey(partition: t.partition, key: key)] == nil else { return true }
                guard linkFields.contains(where: { p in dangling(try? ObjectRecord.value(of: p.fieldId, in: v), p) }) else { return true }
                if bound != nil {
                    rewrites.append((key, []))
                } else {
                    var record = try ObjectRecord.decodeAll(v)
                    for p in linkFields { if let c = cleaned(record.fields[p.fieldId], p) { record.fields[p.fieldId] = c } }
                    rewrites.append((key, ObjectRecord.encode(schemaVersion: record.schemaVersion, fields: record.fields.map { ($0.id, $0.value) })))
                }
                return true
            }
            for (key, bytes) in rewrites {
                summary.keys[t.partition, default: []].insert(key)
                if let bound {
                    let record = pendingRecord(bound, key, w)
                    for p in linkFields {
                        guard let i = bound.info.schema.properties.firstIndex(where: { $0.columnName == p.name }) else { continue }
                        if let c = cleaned(record.values[i], p) { record.values[i] = c }
                    }
                } else {
                    try w.tx.put(ObjectKey.bytes(key), bytes, in: t.partition)
                }
            }
        }
    }

    private func attach(_ object: Object, binding: TypeBinding, key: Int64) {
        object._accessor = ObjectAccessor(core: self, binding: binding, key: key, record: nil)
        object._unmanagedValues = nil
        if binding.info.hasLegacyProperties { binding.info.bindLegacyProperties(of: object) }
        // `_setValues` stays: if the write is cancelled, the object is unmanaged again with its values.
    }

    /// The pending record of an existing object, loading its current values on first change.
    private func pendingRecord(_ binding: TypeBinding, _ key: Int64, _ w: WriteState) -> PendingRecord {
        let pk = PendingKey(partition: binding.partition, key: key)
        if let r = w.pending[pk] { return r }
        let values: [StoredValue]
        if let bytes = try? w.tx.snapshot.get(ObjectKey.bytes(key), in: binding.partition) {
            values = bytes.withUnsafeBytes { raw in
                binding.migratedValues(raw) ?? binding.info.schema.properties.indices.map { binding.value($0, in: raw) }
            }
        } else {
            values = binding.info.defaults
        }
        let r = PendingRecord(binding: binding, values: values)
        w.setPending(pk, r)
        return r
    }

    func delete(_ object: Object) {
        let w = requireWrite("delete objects")
        guard let accessor = object._accessor, accessor.core === self else {
            fatalError("Can only delete an object from the Realm it belongs to.")
        }
        require(objectExists(accessor), "Object has been deleted or invalidated.")
        deleteCascading(accessor.binding, accessor.key, w, nullifyLinks: true)
    }

    func deleteAll() {
        let w = requireWrite("delete objects")
        let stored = shared.storedSchema.withLock { $0 }
        w.droppedPartitions = true
        for t in stored?.types ?? [] {
            // Dropping a partition is O(1) in the engine.
            try? w.tx.dropPartition(t.partition)
            if let p = t.primaryKeyPartition { try? w.tx.dropPartition(p) }
            // The type's indexes stay listed: empty, they are right for no objects.
            for index in t.indexes ?? [] { try? w.tx.dropPartition(index.partition) }
            w.removePending(partition: t.partition)
            w.added[t.partition] = nil
        }
    }

    // MARK: - Reads

    /// The object key of the object whose optional Int primary key is nil (an Int primary key is the object key).
    static let nilIntPrimaryKey = Int64.min

    /// The key of the object with primary key `value`, nil when there is none. `checked: false` skips the read
    /// that makes sure the object exists, for callers that read the key's record next anyway (and skip it
    /// when it is missing): then a key is returned for an Int primary key whether or not its object exists.
    func objectKey(forPrimaryKey value: StoredValue, binding: TypeBinding, checked: Bool = true) -> Int64? {
        let candidate: Int64?
        if binding.intPrimaryKey {
            if value.isNull {
                if !checked { return Self.nilIntPrimaryKey }
                return exists(binding: binding, key: Self.nilIntPrimaryKey) ? Self.nilIntPrimaryKey : nil
            }
            guard case .int(let v) = value else { return nil }
            candidate = v
        } else if let pkPartition = binding.primaryKeyPartition {
            let entry = PrimaryKeyIndex.entry(value)
            if let w = write {
                if w.deletedPrimaryKeys.contains(where: { $0.0 == pkPartition && $0.1 == entry }) { return nil }
                for (k, r) in w.pending where k.partition == binding.partition && r.primaryKeyIndexEntry == entry && !r.deleted {
                    return k.key
                }
            }
            candidate = (try? readSnapshot.get(entry, in: pkPartition))??.withUnsafeBytes { ObjectKey.decode($0) }
        } else {
            return nil
        }
        guard let key = candidate else { return nil }
        return !checked || exists(binding: binding, key: key) ? key : nil
    }

    /// The object with primary key `value`: its key and, when it is not pending in this write, a copy of its
    /// record (one engine read for an Int primary key).
    func lookup(primaryKey value: StoredValue, binding: TypeBinding) -> (Int64, [UInt8]?)? {
        if binding.intPrimaryKey, case .int(let key) = value {
            if let r = write?.pending[PendingKey(partition: binding.partition, key: key)] { return r.deleted ? nil : (key, nil) }
            let snapshot = readSnapshot
            guard let bytes = (try? ObjectKey.withBytes(key) { try snapshot.get($0, in: binding.partition) }) ?? nil else { return nil }
            return (key, bytes)
        }
        return objectKey(forPrimaryKey: value, binding: binding).map { ($0, nil) }
    }

    func exists(binding: TypeBinding, key: Int64) -> Bool {
        if let r = write?.pending[PendingKey(partition: binding.partition, key: key)] { return !r.deleted }
        let snapshot = readSnapshot
        return (try? ObjectKey.withBytes(key) { k in try snapshot.contains(k, in: binding.partition) }) ?? false
    }

    func objectExists(_ accessor: ObjectAccessor) -> Bool {
        exists(binding: accessor.binding, key: accessor.key)
    }

    func makeObject(binding: TypeBinding, key: Int64, record: [UInt8]?) -> Object {
        let object = binding.objectClass.init()
        object._accessor = ObjectAccessor(core: self, binding: binding, key: key, record: record)
        if binding.info.hasLegacyProperties { binding.info.bindLegacyProperties(of: object) }
        return object
    }

    /// An object for a record lent by a streaming scan, read at `version` and needing no migration.
    @inline(__always)
    func makeObject(binding: TypeBinding, key: Int64, lent: UnsafeRawBufferPointer, lender: AnyObject, version: UInt64) -> Object {
        let object = binding.objectClass.init()
        object._accessor = ObjectAccessor(core: self, binding: binding, key: key, lent: lent, lender: lender, version: version)
        if binding.info.hasLegacyProperties { binding.info.bindLegacyProperties(of: object) }
        return object
    }

    /// An object for a record read at `version` that needs no migration (a scan outside a write transaction).
    @inline(__always)
    func makeObject(binding: TypeBinding, key: Int64, currentRecord record: [UInt8], version: UInt64) -> Object {
        let object = binding.objectClass.init()
        object._accessor = ObjectAccessor(core: self, binding: binding, key: key, currentRecord: record, version: version)
        if binding.info.hasLegacyProperties { binding.info.bindLegacyProperties(of: object) }
        return object
    }

    /// Reads property `index` of a managed object.
    func read(_ accessor: ObjectAccessor, _ index: Int) -> StoredValue {
        // An object read before `invalidate()` is invalidated (O038); the fast path never gets here for it, as
        // the invalidation moved the Realm's version.
        if accessor.epoch != invalidations { fatalError("Object has been deleted or invalidated.") }
        if let w = write, let r = w.pending[PendingKey(partition: accessor.binding.partition, key: accessor.key)] {
            require(!r.deleted, "Object has been deleted or invalidated.")
            return r.values[index]
        }
        if accessor.recordVersion != versionToken || (accessor.record == nil && accessor.lent == nil) {
            guard let bytes = try? readSnapshot.get(ObjectKey.bytes(accessor.key), in: accessor.binding.partition) else {
                fatalError("Object has been deleted or invalidated.")
            }
            accessor.setRecord(accessor.binding.upgraded(bytes), version: versionToken)
        }
        guard let value = accessor.withRecord({ accessor.binding.value(index, in: $0) }) else {
            fatalError("Object has been deleted or invalidated.")
        }
        return value
    }

    /// Writes property `index` of a managed object (in a write transaction).
    func write(_ accessor: ObjectAccessor, _ index: Int, _ value: StoredValue) {
        let w = requireWrite("modify objects")
        let property = accessor.binding.info.schema.properties[index]
        require(!property.isPrimaryKey, "Primary key can't be changed after an object is inserted.")
        require(!value.isNull || property.isNullable, "\(accessor.binding.info.schema.className).\(property.name) is not optional and cannot be set to nil")
        require(objectExists(accessor), "Object has been deleted or invalidated.")
        let record = pendingRecord(accessor.binding, accessor.key, w)
        adopt(accessor.binding, index, old: record.values[index], new: value, w)
        record.values[index] = value
    }

    /// Calls `body` with every live object of a type (key and a way to read its properties), in key order,
    /// pending changes included.
    func forEachRecord(_ binding: TypeBinding, _ body: (Int64, RecordRef) -> Bool) {
        let partition = binding.partition
        let pending = write?.pending ?? [:]
        var stop = false
        do {
            try readSnapshot.scan(partition) { k, v in
                guard let key = ObjectKey.decode(k) else { return true }
                if let r = pending[PendingKey(partition: partition, key: key)] {
                    if r.deleted { return true }
                    stop = !body(key, .values(r.values))
                } else if let values = binding.migratedValues(v) {
                    stop = !body(key, .values(values))
                } else {
                    stop = !body(key, .bytes(v, binding))
                }
                return !stop
            }
        } catch {
            // A query cannot throw, and a scan that stopped at damaged bytes would give a wrong answer.
            fatalError("reading the objects of \(binding.info.schema.className) in \(shared.displayName) failed: \(error)")
        }
        if stop { return }
        for key in write?.added[partition] ?? [] {
            guard let r = pending[PendingKey(partition: partition, key: key)], !r.deleted else { continue }
            // Added keys that were already in the snapshot were handled above.
            if exists(inSnapshot: key, partition: partition) { continue }
            if !body(key, .values(r.values)) { return }
        }
    }

    /// Calls `body` with each live object among `keys` (no duplicates), pending changes included, in the
    /// order a scan gives them (`forEachRecord(_:_:)`: keys of the snapshot ascending, then keys added by
    /// this write in the order they were added): the objects a query pins by primary key, read one by one
    /// instead of scanning the type.
    func forEachRecord(_ binding: TypeBinding, keys unordered: Set<Int64>, _ body: (Int64, RecordRef) -> Bool) {
        let partition = binding.partition
        let snapshot = readSnapshot
        var keys: [Int64] = [], late: [Int64] = []
        if write == nil {
            // Outside a write every key is in the snapshot or nowhere: the reads below skip the missing.
            keys = unordered.sorted()
        } else {
            for key in unordered {
                if exists(inSnapshot: key, partition: partition) { keys.append(key) } else { late.append(key) }
            }
            keys.sort()
        }
        if !late.isEmpty, let added = write?.added[partition] {
            keys += late.sorted { (added.firstIndex(of: $0) ?? .max) < (added.firstIndex(of: $1) ?? .max) }
        }
        for key in keys {
            if let r = write?.pending[PendingKey(partition: partition, key: key)] {
                if r.deleted { continue }
                if !body(key, .values(r.values)) { return }
                continue
            }
            var stop = false
            do {
                try ObjectKey.withBytes(key) { k in
                    try snapshot.withValue(forKey: k, in: partition) { v in
                        guard let v else { return }
                        if let values = binding.migratedValues(v) {
                            stop = !body(key, .values(values))
                        } else {
                            stop = !body(key, .bytes(v, binding))
                        }
                    }
                }
            } catch {
                fatalError("reading \(binding.info.schema.className) #\(key) in \(shared.displayName) failed: \(error)")
            }
            if stop { return }
        }
    }

    /// Calls `body` with the live object `key` of a type (pending changes included); nil when there is none.
    /// Queries through links read the objects they reach with it.
    func withRecord<R>(_ binding: TypeBinding, key: Int64, _ body: (RecordRef) throws -> R) rethrows -> R? {
        let partition = binding.partition
        if let r = write?.pending[PendingKey(partition: partition, key: key)] {
            return r.deleted ? nil : try body(.values(r.values))
        }
        var out: R?
        _ = try? ObjectKey.withBytes(key) { k in
            try readSnapshot.withValue(forKey: k, in: partition) { v in
                guard let v else { return }
                if let values = binding.migratedValues(v) {
                    out = try body(.values(values))
                } else {
                    out = try body(.bytes(v, binding))
                }
            }
        }
        return out
    }

    /// The keys of the objects of a partition that this write transaction changed, added or deleted.
    func pendingKeys(partition: UInt32) -> [Int64] {
        guard let w = write else { return [] }
        return w.order.filter { $0.partition == partition }.map(\.key)
    }

    private func exists(inSnapshot key: Int64, partition: UInt32) -> Bool {
        ((try? ObjectKey.withBytes(key) { k in try readSnapshot.contains(k, in: partition) }) ?? false)
    }
}

/// A way to read an object's properties during a scan: its record bytes or its pending values.
enum RecordRef {
    case bytes(UnsafeRawBufferPointer, TypeBinding)
    case values([StoredValue])

    @inline(__always)
    func value(_ index: Int) -> StoredValue {
        switch self {
        case .bytes(let raw, let binding): binding.value(index, in: raw)
        case .values(let v): v[index]
        }
    }
}

/// Encodes primary-key values as keys of a type's primary-key partition.
enum PrimaryKeyIndex {
    static func entry(_ v: StoredValue) -> [UInt8] {
        switch v {
        case .null: [0]
        case .int(let i): [1] + ObjectKey.bytes(i)
        case .string(let s): [2] + Array(s.utf8)
        case .uuid(let u): withUnsafeBytes(of: u.uuid) { [3] + Array($0) }
        case .objectId(let o): [4] + o.bytes
        default: [5] + Array("\(v)".utf8)
        }
    }
}

extension Array where Element: Comparable {
    /// Whether the elements are in ascending order (checked in one pass, before deciding to sort).
    var isSorted: Bool {
        var i = 1
        while i < count {
            if self[i] < self[i - 1] { return false }
            i += 1
        }
        return true
    }
}
