import Engine
import Foundation

// Invariants:
// (1) Applying server change sets is one write transaction that is not captured (no echo): the outbox's entries
//     are undone (newest first, from their undo images) back to the last server version applied, the server's
//     change sets are applied in order, the entries the server has now ordered leave the outbox, and the rest
//     are applied again on top with new undo images. The objects then take their end states through the
//     object layer, so observers get the usual notifications with exact change sets.
// (2) Server versions are applied once each, contiguously: versions at or below the last applied are skipped
//     (duplicated deliveries), a gap is refused and nothing changes.

/// Applying change sets a server ordered, with Realm's conflict rules (`SyncRules`).
extension RealmCore {
    /// The objects of a write as sync's rules see them: loaded from the write's view on first use, changed in
    /// memory, written back at the end.
    final class WriteSyncStore: SyncStore {
        let core: RealmCore
        let reader: SyncReader
        let snapshot: Snapshot
        /// Each object the store touched, in the order first touched: its state now, and its state, metadata and
        /// key as the file had them. One entry and one lookup per object (a dictionary per field of it cost a
        /// hash and a probe each at every operation).
        private(set) var entries: [Entry] = []
        /// A class: reading one field of an entry in an array of structs copied the whole entry.
        final class Entry {
            let ref: ObjectReference
            var state: SyncObjectState
            let original: Original
            init(ref: ObjectReference, state: SyncObjectState, original: Original) {
                self.ref = ref
                self.state = state
                self.original = original
            }
        }
        /// Where each touched object's entry is.
        private var index: [ObjectReference: Int] = [:]
        typealias Original = (state: SyncObjectState, meta: SyncStorage.ObjectMeta?, key: Int64?)
        /// While set: the state of each object before its first change (undo images of an entry applied again).
        var recording: [ObjectReference: SyncObjectState]?
        private(set) var recordingOrder: [ObjectReference] = []

        init(core: RealmCore, snapshot: Snapshot) {
            self.core = core
            self.snapshot = snapshot
            reader = SyncReader(core: core, snapshot: nil)
        }

        func state(of ref: ObjectReference) -> SyncObjectState { entries[entry(ref)].state }

        /// The position of `ref`'s entry, loaded from the file on first use.
        private func entry(_ ref: ObjectReference) -> Int {
            if let i = index[ref] { return i }
            let loaded = load(ref)
            entries.append(Entry(ref: ref, state: loaded.state, original: loaded))
            index[ref] = entries.count - 1
            return entries.count - 1
        }

        /// Whether each type has any sync metadata at `snapshot` (`syncTypeHasMeta`), once asked.
        private var metaByType: [String: Bool] = [:]

        /// Makes room for `count` objects (the operations of a batch: one object each at most).
        func reserve(_ count: Int) {
            entries.reserveCapacity(count)
            index.reserveCapacity(count)
        }

        private func load(_ ref: ObjectReference) -> (state: SyncObjectState, meta: SyncStorage.ObjectMeta?, key: Int64?) {
            let hasMeta = metaByType[ref.type] ?? core.mustRead("the sync metadata of \(ref.type)") {
                let found = try core.syncTypeHasMeta(ref.type, at: snapshot)
                metaByType[ref.type] = found
                return found
            }
            let meta = hasMeta ? core.mustRead("the sync metadata of \(ref)") { try core.syncMeta(ref, at: snapshot) } : nil
            guard let binding = reader.binding(ref.type), let pk = Self.stored(ref.primaryKey),
                let key = core.objectKey(forPrimaryKey: pk, binding: binding), let values = reader.values(binding, key)
            else { return (RealmCore.syncState(nil, meta: meta), meta, nil) }
            return (RealmCore.syncState(reader.object(binding, values), meta: meta), meta, key)
        }

        func setState(_ s: SyncObjectState, of ref: ObjectReference) {
            let i = entry(ref)
            if recording != nil, recording?[ref] == nil {
                recording?[ref] = entries[i].state
                recordingOrder.append(ref)
            }
            entries[i].state = s
        }

        func startRecording() {
            recording = [:]
            recordingOrder = []
        }

        /// The undo images recorded since `startRecording`, in the order first changed.
        func takeRecording() -> [(ObjectReference, SyncObjectState)] {
            let images = recordingOrder.map { ($0, recording![$0]!) }
            recording = nil
            return images
        }

        func objectsMaybeLinking(to ref: ObjectReference) -> [ObjectReference] {
            var out = Set(entries.compactMap { e in e.state.object.map { o in o.fields.values.contains { Self.field($0, links: ref) } } == true ? e.ref : nil })
            // Objects of the file that hold a link to it (the ones loaded already are answered above).
            guard let key = entries[entry(ref)].original.key else { return out.sorted() }
            for b in core.bindingsByPartition().values where !b.info.schema.isEmbedded {
                let direct = b.info.schema.properties.indices.filter { b.info.schema.properties[$0].type == .object && b.info.schema.properties[$0].objectClassName == ref.type }
                let deep = b.info.schema.properties.indices.filter { i in
                    let p = b.info.schema.properties[i]
                    if p.type == .any { return true }
                    guard p.type == .object, let name = p.objectClassName, let target = reader.binding(name) else { return false }
                    return target.info.schema.isEmbedded && Self.canHoldLink(target, to: ref.type, reader: reader, depth: 0)
                }
                guard !direct.isEmpty || !deep.isEmpty else { continue }
                core.forEachRecord(b) { objectKey, record in
                    var holds = direct.contains { i in
                        switch record.value(i) {
                        case .link(let k): return k == key
                        case .list(let items): return items.contains(.link(key))
                        default: return false
                        }
                    }
                    if !holds && !deep.isEmpty {
                        let values = (0..<b.info.schema.properties.count).map { record.value($0) }
                        holds = deep.contains { i in reader.element(b.info.schema.properties[i], values[i]).links(to: ref) }
                    }
                    if holds, let r = reader.reference(b, (0..<b.info.schema.properties.count).map { record.value($0) }) { out.insert(r) }
                    return true
                }
            }
            return out.sorted()
        }

        static func field(_ f: FieldState, links ref: ObjectReference) -> Bool {
            switch f {
            case .value(let v): v.links(to: ref)
            case .list(let l): l.contains { $0.value.links(to: ref) }
            case .set(let s): s.contains { $0.links(to: ref) }
            case .map(let m): m.values.contains { $0.links(to: ref) }
            }
        }

        static func canHoldLink(_ b: TypeBinding, to type: String, reader: SyncReader, depth: Int) -> Bool {
            guard depth < 16 else { return true }
            return b.info.schema.properties.contains { p in
                if p.type == .any { return true }
                guard p.type == .object, let name = p.objectClassName else { return false }
                if name == type { return true }
                guard let t = reader.binding(name), t.info.schema.isEmbedded else { return false }
                return canHoldLink(t, to: type, reader: reader, depth: depth + 1)
            }
        }

        /// A primary key as the object layer stores it.
        static func stored(_ v: SyncValue) -> StoredValue? {
            switch v {
            case .null: .null
            case .int(let i): .int(i)
            case .string(let s): .string(s)
            case .uuid(let u): .uuid(u)
            case .objectId(let o): .objectId(o)
            default: nil
            }
        }
    }

    /// Applies server change sets (Invariant 1); throws, changing nothing, on a gap or a storage error.
    /// `clientSequence`: the server held this client's change sets through this sequence, all inside what is
    /// given (its own, or carried by another client's recovery), so they leave the outbox.
    func applyServerChanges(_ changes: [ServerChangeSet], snapshot: SyncSnapshot? = nil, clientSequence: UInt64? = nil) throws {
        guard write == nil else {
            fatalError("applyServerChanges(_:) begins a write transaction of its own: call it outside one")
        }
        try beginWrite()
        guard let w = write else { return }
        do {
            w.captures = false
            let view = w.tx.view
            guard var state = try syncClientState(at: view) ?? (configuration.capturesChanges ? .new() : nil) else {
                throw Realm.Error(
                    .fail, "\(shared.displayName) does not capture changes: set Realm.Configuration.capturesChanges to apply a server's changes",
                    fileURL: configuration.fileURL)
            }
            // A snapshot newer than this file's version stands in for the history up to its version.
            let snapshot = snapshot.flatMap { $0.version > state.serverVersion ? $0 : nil }
            let base = snapshot?.version ?? state.serverVersion
            let fresh = changes.filter { $0.version > base }.sorted { $0.version < $1.version }
            var expected = base + 1
            for c in fresh {
                guard c.version == expected else {
                    if c.version < expected { continue }  // The same version twice in one batch.
                    throw Realm.Error(
                        .invalidInput,
                        "server change sets must follow version \(base) of \(shared.displayName) without a gap: got \(c.version), expected \(expected)",
                        fileURL: configuration.fileURL)
                }
                expected += 1
            }
            var seenVersions = Set<UInt64>()
            let batch = fresh.filter { seenVersions.insert($0.version).inserted }
            let heldThrough = min(clientSequence ?? 0, state.nextSequence - 1)
            guard !batch.isEmpty || snapshot != nil || heldThrough > state.acknowledged else {
                cancelWrite()
                return
            }
            let entries = try outboxEntries(after: state.acknowledged, at: view)
            let store = WriteSyncStore(core: self, snapshot: view)
            store.reserve(batch.reduce(snapshot?.states.count ?? 0) { $0 + $1.changeSet.operations.count })
            let undoChunks = try undoOutbox(entries, into: store, at: view)
            var acknowledged = max(state.acknowledged, heldThrough)
            if let snapshot {
                for (ref, s) in snapshot.states { store.setState(s, of: ref) }
                acknowledged = max(acknowledged, min(snapshot.clientSequence, state.nextSequence - 1))
            }
            for c in batch {
                let cs = c.changeSet
                for op in cs.operations { SyncRules.apply(op, author: cs.clientID, base: cs.baseVersion, version: c.version, to: store) }
                if cs.clientID == state.clientID { acknowledged = max(acknowledged, cs.sequence) }
            }
            if acknowledged > state.acknowledged { try removeOutbox(through: acknowledged, at: view, in: w.tx) }
            for entry in entries where entry.changeSet.sequence > acknowledged {
                let cs = entry.changeSet
                try writeUndo(cs.sequence, applyAgain(cs, to: store), in: w.tx, replacing: undoChunks[cs.sequence] ?? 0)
            }
            try writeOut(store, w)
            try recordVersions((snapshot.map { $0.recent + [KnownVersion(version: $0.version, salt: $0.salt)] } ?? [])
                + batch.map { KnownVersion(version: $0.version, salt: $0.salt, identity: $0.changeSet.identity) }, at: view, in: w.tx)
            state.serverVersion = batch.last?.version ?? base
            state.acknowledged = acknowledged
            try w.tx.put(SyncStorage.stateKey, state.encoded(), in: SyncStorage.partition)
        } catch {
            cancelWrite()
            throw error
        }
        try commitWrite()
    }

    /// Applies a local change set again on top of the store (not ordered by the server yet), and returns its new
    /// undo images, chunked.
    func applyAgain(_ cs: ChangeSet, to store: WriteSyncStore) -> [[UInt8]] {
        store.startRecording()
        for op in cs.operations { SyncRules.apply(op, author: cs.clientID, base: cs.baseVersion, version: Tombstone.unordered, to: store) }
        var images = SyncStorage.ChunkBuilder()
        for (ref, s) in store.takeRecording() {
            images.add { out in
                SyncCoding.write(ref, into: &out)
                SyncCoding.write(UndoImage.state(s), into: &out)
            }
        }
        return images.finish()
    }

    /// Undoes the outbox's `entries` in `store`, newest first, from their undo images; returns each entry's
    /// count of undo chunks.
    @discardableResult
    func undoOutbox(_ entries: [OutboxEntry], into store: WriteSyncStore, at view: Snapshot) throws -> [UInt64: Int] {
        var undoChunks: [UInt64: Int] = [:]
        for entry in entries.reversed() {
            let (images, chunks) = try undoImages(entry.changeSet.sequence, at: view)
            undoChunks[entry.changeSet.sequence] = chunks
            for (ref, image) in images.reversed() {
                switch image {
                case .state(let before):
                    store.setState(before, of: ref)
                case .fields(let fields):
                    // The entry left the object live: its changed properties go back.
                    guard case .live(var o) = store.state(of: ref) else {
                        throw Realm.Error(.invalidDatabase, "the undo image of change set \(entry.changeSet.sequence) in \(shared.displayName) finds \(ref) not live; the file is damaged")
                    }
                    for (name, field) in fields { o.fields[name] = field }
                    store.setState(.live(o), of: ref)
                }
            }
        }
        return undoChunks
    }

    /// Gives every object the store changed its end state, through the object layer, and its metadata.
    func writeOut(_ store: WriteSyncStore, _ w: WriteState) throws {
        // Each changed object once, in reference order, as the positions of their entries. References of one
        // type with Int primary keys, the usual case, are ordered by the integers (the same order as theirs).
        let entries = store.entries
        var changed = entries.indices.filter { entries[$0].state != entries[$0].original.state }
        let intKeys = changed.map { i -> Int64? in if case .int(let v) = entries[i].ref.primaryKey { v } else { nil } }
        if let first = changed.first, !intKeys.contains(nil), changed.allSatisfy({ entries[$0].ref.type == entries[first].ref.type }) {
            changed = zip(intKeys, changed).sorted { $0.0! < $1.0! }.map(\.1)
        } else {
            changed.sort { entries[$0].ref < entries[$1].ref }
        }
        // Deletions first, then new objects (so that links between them resolve), then every value.
        for e in changed {
            let (ref, old, state) = (entries[e].ref, entries[e].original, entries[e].state)
            guard old.state.object != nil, state.object == nil, let key = old.key, let binding = store.reader.binding(ref.type) else { continue }
            deleteCascading(binding, key, w, nullifyLinks: true)
        }
        // A new object whose values hold no link is added whole; one with links gets its primary key now and
        // its values below, once every new object exists.
        var addedWhole = [Bool](repeating: false, count: entries.count)
        for e in changed where entries[e].state.object != nil && entries[e].original.state.object == nil {
            let ref = entries[e].ref
            guard let object = entries[e].state.object, let binding = store.reader.binding(ref.type), let pkIndex = binding.info.primaryKeyIndex
            else { continue }
            if binding.syncPlainValues, addPlain(ref.type, primaryKey: ref.primaryKey, object) {
                addedWhole[e] = true
                continue
            }
            var values: [String: Any?] = [binding.info.schema.properties[pkIndex].name: swiftValue(ref.primaryKey, binding.info.schema.properties[pkIndex])]
            if binding.syncPlainValues {
                for p in binding.info.schema.properties where p.type != .linkingObjects && !p.isPrimaryKey {
                    if case .value(let v)? = object.fields[p.columnName] { values[p.name] = swiftValue(v, p) }
                }
                addedWhole[e] = true
            }
            upsert(ref.type, values)
        }
        for e in changed {
            let (ref, original, state) = (entries[e].ref, entries[e].original, entries[e].state)
            try writeSyncMeta(SyncStorage.ObjectMeta.of(state), for: ref, old: original.meta, in: w.tx)
            guard let object = state.object, !addedWhole[e], let binding = store.reader.binding(ref.type) else { continue }
            // An object live before keeps its key; a new one's is looked up.
            let before = original.state.object
            let known = before != nil ? original.key : nil
            guard let key = known ?? WriteSyncStore.stored(ref.primaryKey).flatMap({ objectKey(forPrimaryKey: $0, binding: binding) }) else { continue }
            // A partial update: only the properties that differ are set (a dictionary given to `add` would set
            // every other property to its default).
            let managed = makeObject(binding: binding, key: key, record: nil)
            for (i, p) in binding.info.schema.properties.enumerated() where p.type != .linkingObjects && !p.isPrimaryKey {
                let field = object.fields[p.columnName]
                // A property the state lacks (an object created by a client whose schema has no such property)
                // keeps its default: a new object has it already.
                if before == nil && field == nil { continue }
                guard before == nil || normalized(field) != normalized(before?.fields[p.columnName]) else { continue }
                if field == nil, !p.isCollection, p.type != .object, p.type != .any, let accessor = managed._accessor {
                    accessor.set(i, binding.info.defaults[i])
                } else if p.type == .any && !p.isCollection, case .value(let v)? = field, let accessor = managed._accessor {
                    accessor.setAny(i, anyRealmValue(v))
                } else if !p.isCollection, p.type != .object, binding.info.integerTypes[i] == nil, case .value(let v)? = field,
                    let stored = Self.storedPlain(v, p), let accessor = managed._accessor
                {
                    // A plain value of its property's type, set as stored (key-value coding converted it back).
                    accessor.set(i, stored)
                } else {
                    managed.setValue(swiftField(field, p), forKey: p.name)
                }
            }
        }
    }

    private func normalized(_ f: FieldState?) -> FieldState? {
        switch f {
        case .list(let l)?: l.isEmpty ? nil : f
        case .set(let s)?: s.isEmpty ? nil : f
        case .map(let m)?: m.isEmpty ? nil : f
        default: f
        }
    }

    /// `upsert` of a new object of a declared type holding plain values, with its values given as its setters
    /// would have recorded them, so that `add` takes them as they are (a dictionary of `Any` values, read back by
    /// name and converted, was most of applying a batch of creates). False, doing nothing, when a value is not
    /// of its property's type or the type is not one whose objects an add takes that way: the dictionary path
    /// converts those.
    private func addPlain(_ type: String, primaryKey: SyncValue, _ object: SyncObject) -> Bool {
        guard let binding = boundType(named: type), let pkIndex = binding.info.primaryKeyIndex else { return false }
        let info = binding.info
        guard info.holdsValuesOnly, !info.schema.isEmbedded, let pk = Self.storedPlain(primaryKey, info.schema.properties[pkIndex]) else {
            return false
        }
        var values = [StoredValue?](repeating: nil, count: info.propertyCount)
        for (i, p) in info.schema.properties.enumerated() {
            if i == pkIndex {
                values[i] = pk
                continue
            }
            // A narrower integer's range is checked by the dynamic path; so is a property the state lacks (a
            // client whose schema has no such property), which keeps what a new instance holds (a default made
            // per object, as `UUID()`, or set by the model's `init()`).
            guard info.integerTypes[i] == nil, case .value(let v)? = object.fields[p.columnName], let stored = Self.storedPlain(v, p) else {
                return false
            }
            values[i] = stored
        }
        let made = Object.make(info.objectClass)
        // Values its `init()` set by name would take precedence over those recorded below.
        guard made._unmanagedValues == nil else { return false }
        made._setValues = values
        add(made, update: .modified)
        return true
    }

    /// A plain value as property `p` stores it; nil when it is not of the property's type (or is nil for a
    /// required property).
    private static func storedPlain(_ v: SyncValue, _ p: Property) -> StoredValue? {
        switch (v, p.type) {
        case (.null, _): p.isOptional ? .null : nil
        case (.bool(let b), .bool): .bool(b)
        case (.int(let i), .int): .int(i)
        case (.float(let f), .float): .float(f)
        case (.double(let d), .double): .double(d)
        case (.string(let s), .string): .string(s)
        case (.data(let d), .data): .data(d)
        case (.date(let d), .date): .date(d)
        case (.uuid(let u), .UUID): .uuid(u)
        case (.objectId(let o), .objectId): .objectId(o)
        case (.decimal(let d), .decimal128): .decimal(d)
        default: nil
        }
    }

    private func upsert(_ type: String, _ values: [String: Any?]) {
        let binding = boundType(named: type) ?? dynamicBinding(type)
        let object = Object.make(binding.info.objectClass)
        binding.info.assign(values, to: object)
        add(object, update: .modified)
    }

    /// A property's value as the dynamic API takes it.
    private func swiftField(_ f: FieldState?, _ p: Property) -> Any? {
        switch f {
        case .value(let v)?: return swiftValue(v, p)
        case .list(let l)?: return l.map { swiftValue($0.value, p) }
        case .set(let s)?: return s.map { swiftValue($0, p) }
        case .map(let m)?: return m.mapValues { swiftValue($0, p) }
        case nil:
            if p.isMap { return [String: Any?]() }
            if p.isCollection { return [Any?]() }
            return nil
        }
    }

    private func swiftValue(_ v: SyncValue, _ p: Property) -> Any? {
        if p.type == .any { return anyRealmValue(v) }
        switch v {
        case .link(let r):
            guard let pk = WriteSyncStore.stored(r.primaryKey), let target = boundType(named: r.type),
                let key = objectKey(forPrimaryKey: pk, binding: target)
            else { return nil }
            return makeObject(binding: target, key: key, record: nil)
        case .embedded(let fields):
            guard let name = p.objectClassName, let target = boundType(named: name) else { return nil }
            var out: [String: Any?] = [:]
            for q in target.info.schema.properties where q.type != .linkingObjects {
                guard let f = fields[q.columnName] else { continue }
                switch f {
                case .list(let items) where q.isCollection && !q.isMap: out[q.name] = items.map { swiftValue($0, q) }
                case .dictionary(let d) where q.isMap: out[q.name] = d.mapValues { swiftValue($0, q) }
                default: out[q.name] = swiftValue(f, q)
                }
            }
            return out
        default:
            return plainSwiftValue(v)
        }
    }

    private func plainSwiftValue(_ v: SyncValue) -> Any? {
        switch v {
        case .null: nil
        case .bool(let b): b
        case .int(let i): Int(i)
        case .float(let f): f
        case .double(let d): d
        case .string(let s): s
        case .data(let d): d
        case .date(let d): d
        case .uuid(let u): u
        case .objectId(let o): o
        case .decimal(let d): d
        case .link, .embedded, .list, .dictionary: nil
        }
    }

    private func anyRealmValue(_ v: SyncValue) -> AnyRealmValue {
        switch v {
        case .null: return .none
        case .bool(let b): return .bool(b)
        case .int(let i): return .int(Int(i))
        case .float(let f): return .float(f)
        case .double(let d): return .double(d)
        case .string(let s): return .string(s)
        case .data(let d): return .data(d)
        case .date(let d): return .date(d)
        case .uuid(let u): return .uuid(u)
        case .objectId(let o): return .objectId(o)
        case .decimal(let d): return .decimal128(d)
        case .link(let r):
            guard let pk = WriteSyncStore.stored(r.primaryKey), let target = boundType(named: r.type),
                let key = objectKey(forPrimaryKey: pk, binding: target)
            else { return .none }
            return .object(makeObject(binding: target, key: key, record: nil))
        case .list(let items):
            let list = List<AnyRealmValue>()
            list.append(objectsIn: items.map(anyRealmValue))
            return .list(list)
        case .embedded(let d), .dictionary(let d):
            let map = Map<String, AnyRealmValue>()
            for (k, x) in d { map[k] = anyRealmValue(x) }
            return .dictionary(map)
        }
    }
}

/// A server's objects at one version (live ones and tombstones), standing in for its history up to there: what a
/// new client starts from, and what a client behind a compacted history catches up with.
package struct SyncSnapshot: Sendable {
    package var version: UInt64
    /// The server's salt for `version` (0: none).
    package var salt: UInt64
    /// Versions before it, as the server named them (where a restored server parted from them is found there).
    package var recent: [KnownVersion] = []
    /// The last sequence of this client the server held at `version`: its change sets up to there are inside.
    package var clientSequence: UInt64
    package var states: [(ObjectReference, SyncObjectState)]

    package init(version: UInt64, salt: UInt64 = 0, clientSequence: UInt64, states: [(ObjectReference, SyncObjectState)]) {
        self.version = version
        self.salt = salt
        self.clientSequence = clientSequence
        self.states = states
    }
}
