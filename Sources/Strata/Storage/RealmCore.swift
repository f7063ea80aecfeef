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
    // The bindings (read and set by RealmCore+Binding.swift).
    var bindings: [ObjectIdentifier: TypeBinding] = [:] {
        didSet {
            lastBinding = nil
            dynamicBindings = [:]
        }
    }
    /// Bindings that make `DynamicObject`s, by type name (the dynamic API).
    var dynamicBindings: [String: TypeBinding] = [:]
    var lastBinding: TypeBinding?
    /// The write transaction under way (read by RealmCore+Reads.swift).
    private(set) var write: WriteState?

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

    // MARK: - Versions

    /// Moves to the latest version and tells observers what changed (all but those in `skipping`).
    func moveToLatest(skipping: Set<ObjectIdentifier> = []) throws {
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
            let layouts = RecordLayouts(partition: t.partition, in: stored)
            try w.tx.snapshot.scan(t.partition) { k, v in
                guard let key = ObjectKey.decode(k), w.pending[PendingKey(partition: t.partition, key: key)] == nil else { return true }
                guard try linkFields.contains(where: { p in dangling(try ObjectRecord.value(of: p.fieldId, in: v, layouts: layouts), p) }) else {
                    return true
                }
                if bound != nil {
                    rewrites.append((key, []))
                } else {
                    var record = try ObjectRecord.decodeAll(v, layouts: layouts)
                    for p in linkFields { if let c = cleaned(record.fields[p.fieldId], p) { record.fields[p.fieldId] = c } }
                    rewrites.append((
                        key,
                        ObjectRecord.encode(
                            schemaVersion: record.schemaVersion, fields: record.fields.map { ($0.id, $0.value) }, layout: layouts.layout(record.schemaVersion))
                    ))
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

    // MARK: - Writes (continued)

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
