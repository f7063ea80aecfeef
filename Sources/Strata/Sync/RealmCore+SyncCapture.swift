import Engine
import Foundation

// Invariants:
// (1) A write of a file that captures changes commits, in the same engine transaction as its objects, one outbox
//     entry with the operations that take every object it touched from the version it began at to its end
//     state, the undo image (state before) of each such object, the objects' new metadata, and the client
//     state with the next sequence. A write that changed nothing sync sees writes none of these.
// (2) Capture compares states (before and after), so every path that changes an object is recorded: setters,
//     adds, deletes, deleteAll, links nulled by deletes, cascades of embedded objects.
// (3) A change set holds its creates first, each without the values that hold links (those follow as sets):
//     rules null a link to an object that does not exist, and an object may link to one created after it in
//     the same write.

/// Change capture: what a write transaction did, recorded as field operations at its commit.
extension RealmCore {
    /// The client state stored at `snapshot`, nil when the file has never captured changes.
    func syncClientState(at snapshot: Snapshot) throws -> SyncStorage.ClientState? {
        guard let bytes = try snapshot.get(SyncStorage.stateKey, in: SyncStorage.partition) else { return nil }
        do {
            return try SyncStorage.ClientState.decode(bytes)
        } catch {
            throw Realm.Error(.invalidDatabase, "the sync state of \(shared.displayName) cannot be read (\(error)); the file is damaged")
        }
    }

    /// Whether writes at `snapshot` capture changes: the configuration asks for it, or the file has captured
    /// before (then every write does, whatever its configuration, so that no process's edit is left out).
    func capturesChanges(at snapshot: Snapshot) throws -> Bool {
        if configuration.capturesChanges { return true }
        return try snapshot.get(SyncStorage.stateKey, in: SyncStorage.partition) != nil
    }

    /// Refuses, at open, a schema sync cannot name every object of: each type that is not embedded needs a
    /// primary key, as Realm's sync required.
    func checkSchemaForCapture() throws {
        guard try capturesChanges(at: snapshot) else { return }
        // Every type of the file is bound: capture and applying read and write objects through bindings, and a
        // type left out would have its changes (a deleteAll, a server's edits) lost.
        let bound = Set(bindings.values.map { $0.info.schema.className })
        let unbound = (shared.storedSchema.withLock { $0?.types.map(\.name) } ?? []).filter { !bound.contains($0) }
        guard unbound.isEmpty else {
            throw Realm.Error(
                .schemaMismatch,
                "\(shared.displayName) captures changes for sync, and this Realm's objectTypes leave out types the file holds: "
                    + "\(unbound.sorted().joined(separator: ", ")). Open it with every type of the file (an extension too), so that no "
                    + "change to them is missed",
                fileURL: configuration.fileURL)
        }
        let missing = bindings.values.filter { !$0.info.schema.isEmbedded && $0.info.primaryKeyIndex == nil }.map { $0.info.schema.className }
        guard missing.isEmpty else {
            throw Realm.Error(
                .schemaMismatch,
                "\(shared.displayName) captures changes for sync, and every type that is not embedded needs a primary key: "
                    + "\(Set(missing).sorted().joined(separator: ", ")) has none. Give each a `@Persisted(primaryKey: true)` property "
                    + "(sync names objects by primary key), or make it an EmbeddedObject",
                fileURL: configuration.fileURL)
        }
    }

    /// The bindings by partition (one per type; a declared class's over a dynamic one).
    func bindingsByPartition() -> [UInt32: TypeBinding] {
        var out: [UInt32: TypeBinding] = [:]
        for b in bindings.values where out[b.partition] == nil { out[b.partition] = b }
        return out
    }

    /// Records what write `w` did in the outbox (Invariant 1). Called at commit, after links to deleted objects
    /// were nulled and orphaned embedded objects deleted.
    func captureChanges(_ w: WriteState) throws {
        let base = w.tx.snapshot
        let byPartition = bindingsByPartition()
        // The keys each partition's objects were touched under: pending, spilled, or emptied by deleteAll.
        var touched = w.pendingKeysByPartition()
        for k in w.spilledKeys { touched[k.partition, default: []].append(k.key) }
        // Objects deleteAll removed: every object the type had.
        for partition in w.clearedPartitions {
            try base.scan(partition) { k, _ in
                if let key = ObjectKey.decode(k) { touched[partition, default: []].append(key) }
                return true
            }
        }
        var topLevel: [UInt32: (binding: TypeBinding, keys: [Int64])] = [:]
        var embedded: [String: Set<Int64>] = [:]
        for (partition, keys) in touched {
            guard let b = byPartition[partition] else { continue }
            if b.info.schema.isEmbedded {
                embedded[b.info.schema.className, default: []].formUnion(keys)
            } else {
                topLevel[partition] = (b, keys)
            }
        }
        for (b, key) in ownersOfEmbedded(embedded, byPartition) {
            topLevel[b.partition, default: (b, [])].keys.append(key)
        }
        let before = SyncReader(core: self, snapshot: base)
        let after = SyncReader(core: self, snapshot: nil)
        var state = try syncClientState(at: base) ?? .new()
        let client = state.clientID
        // The change set's creates, then its other operations: a link to an object the same write created
        // finds it (invariant 3).
        var creates = SyncStorage.ChunkBuilder()
        var operations = SyncStorage.ChunkBuilder()
        func add(_ op: ChangeOperation) {
            if case .create = op {
                creates.add { SyncCoding.write(op, into: &$0) }
            } else {
                operations.add { SyncCoding.write(op, into: &$0) }
            }
        }
        var undo = SyncStorage.ChunkBuilder()
        func newID() -> ElementID {
            defer { state.nextElement += 1 }
            return ElementID(client: client, counter: state.nextElement)
        }
        /// Whether any object of the type has metadata at the write's base (one seek per type and commit, so
        /// that a bulk insert into a type without deletions or lists looks up no tombstones).
        var metaByType: [String: Bool] = [:]
        func typeHasMeta(_ type: String) throws -> Bool {
            if let known = metaByType[type] { return known }
            let found = try syncTypeHasMeta(type, at: base)
            metaByType[type] = found
            return found
        }
        /// The largest object key of each partition at the write's base: a key above it had no object before.
        var largestAtBase: [UInt32: Int64] = [:]
        func largestBaseKey(_ partition: UInt32) throws -> Int64 {
            if let known = largestAtBase[partition] { return known }
            let largest = try base.largestKey(in: partition).flatMap { $0.withUnsafeBytes { ObjectKey.decode($0) } } ?? .min
            largestAtBase[partition] = largest
            return largest
        }
        func increments(_ ref: ObjectReference) -> [String: Int64] { w.increments.isEmpty ? [:] : w.increments[ref] ?? [:] }
        /// Records one object's operations, undo image and metadata (whole states: a created or deleted object).
        func record(_ ref: ObjectReference, _ binding: TypeBinding, before old: SyncObject?, after new: SyncObject?) throws {
            // Only a new object (its tombstone) or a type with lists can have metadata, and only a type with
            // some metadata at all.
            let meta = try (old == nil || binding.hasListProperties) && typeHasMeta(ref.type) ? syncMeta(ref, at: base) : nil
            let beforeState = Self.syncState(old, meta: meta)
            let (ops, afterObject) = SyncDiff.operations(
                ref, before: beforeState.object, after: new, increments: increments(ref), names: binding.syncFieldNames, newID: newID)
            guard !ops.isEmpty else { return }
            for op in ops { add(op) }
            undo.add { out in
                SyncCoding.write(ref, into: &out)
                SyncCoding.write(UndoImage.state(beforeState), into: &out)
            }
            let newState: SyncObjectState = afterObject.map { .live($0) } ?? .deleted(Tombstone(version: Tombstone.unordered, client: client))
            try writeSyncMeta(SyncStorage.ObjectMeta.of(newState), for: ref, old: meta, in: w.tx)
        }
        /// Records the changes of an object that was live before and after: only the properties whose stored
        /// values differ (`changed`, by property index; `old[j]` and `new[j]` are property `changed[j]`'s values)
        /// are read as sync's model, and its undo image holds only those.
        func recordChanged(_ ref: ObjectReference, _ binding: TypeBinding, _ changed: [Int], _ old: [StoredValue], _ new: [StoredValue]) throws {
            let properties = binding.info.schema.properties
            var beforeFields: [String: FieldState] = [:]
            var afterFields: [String: FieldState] = [:]
            for (j, i) in changed.enumerated() {
                beforeFields[properties[i].columnName] = before.field(properties[i], old[j])
                afterFields[properties[i].columnName] = after.field(properties[i], new[j])
            }
            let meta = try binding.hasListProperties && typeHasMeta(ref.type) ? syncMeta(ref, at: base) : nil
            guard case .live(let beforeObject) = Self.syncState(SyncObject(fields: beforeFields), meta: meta) else { return }
            let names = changed.map { properties[$0].columnName }
            let (ops, afterObject) = SyncDiff.operations(
                ref, before: beforeObject, after: SyncObject(fields: afterFields), increments: increments(ref), names: names, newID: newID)
            guard !ops.isEmpty else { return }
            for op in ops { add(op) }
            undo.add { out in
                SyncCoding.write(ref, into: &out)
                SyncCoding.write(UndoImage.fields(beforeObject.fields), into: &out)
            }
            guard binding.hasListProperties, let afterObject else { return }
            // The lists' ids: those of the lists that changed replaced, the others kept.
            var lists: [String: [(id: ElementID, position: ListPosition)]] = [:]
            if case .lists(let l)? = meta { lists = l }
            for name in names {
                guard case .list(let elements)? = afterObject.fields[name] else { continue }
                lists[name] = elements.isEmpty ? nil : elements.map { ($0.id, $0.position) }
            }
            try writeSyncMeta(lists.isEmpty ? nil : .lists(lists), for: ref, old: meta, in: w.tx)
        }
        // The objects in key order (the same write records the same operations in the same order). An object
        // deleted and added again under another key (a primary key that is not an Int) is one reference: the
        // halves (an object only before, or only after) are matched by reference at the end.
        var halves: [ObjectReference: (binding: TypeBinding, before: SyncObject?, after: SyncObject?)] = [:]
        var halfOrder: [ObjectReference] = []
        // The direct path reads an object's version in the write from its pending record, or else from what the
        // write spilled alone (its version at the base is read on the other side): each key's base version is
        // decoded once, not on both sides. A key found on neither side is declined, and the general path reads it
        // through the write's whole view.
        let spilledAlone = w.tx.spillsOnlyView()
        defer { spilledAlone?.close() }
        func writesOwn(_ b: TypeBinding) -> OrderedLookup? {
            spilledAlone.map { OrderedLookup($0, partition: b.partition) } ?? after.inOrder(b).lookup
        }
        // Each partition's keys ascending, once each: the objects are read back in order (`SyncReader.inOrder`).
        for partition in topLevel.keys.sorted() {
            guard let (b, unsorted) = topLevel[partition] else { continue }
            let largestBase = try largestBaseKey(partition)
            let fields = b.info.schema.properties.indices.filter { b.info.schema.properties[$0].type != .linkingObjects }
            let count = b.info.schema.properties.count
            let (oldReader, newReader) = (before.inOrder(b), after.inOrder(b))
            // The direct path of a type of plain values: runs written from the records (`PlainCapture`), read
            // where they lie (an encoded pending record, or a spilled or stored one); an object it declines, or
            // whose records are not both bytes, takes the general path below.
            let plain = w.isDropped(partition) || oldReader.lookup == nil || newReader.lookup == nil ? nil : plainCapture(b)
            if let plain {
                // Sync metadata is looked for only when the write created objects of the type.
                let created = unsorted.isSorted ? unsorted.last.map { $0 > largestBase } ?? false : unsorted.contains { $0 > largestBase }
                plain.takesCreates = created
                plain.metadataAt = try created && typeHasMeta(b.info.schema.className) ? base : nil
                plain.takesChanges = w.increments.isEmpty
            }
            // Held by `plain`, `oldReader` and `written` for the loop: used unretained.
            let direct = plain.map { Unmanaged.passUnretained($0) }
            let written = plain == nil ? nil : writesOwn(b)
            let (oldLookup, newLookup) = (oldReader.lookup.map { Unmanaged.passUnretained($0) }, written.map { Unmanaged.passUnretained($0) })
            let keys = unsorted.isSorted ? unsorted : unsorted.sorted()
            // The general path for one object: its records before and after, compared where they lie (nothing
            // may change the write meanwhile): a property whose bytes are equal is not decoded.
            func general(_ key: Int64, _ oldReader: SyncReader.InOrder, _ newReader: SyncReader.InOrder) throws {
                var compared = Compared.whole(nil, nil)
                func compare(_ old: RecordRef?) throws {
                    try newReader.visit(key) { new in
                        compared = Self.compare(b, fields, count, old, new)
                    }
                }
                if key > largestBase { try compare(nil) } else { try oldReader.visit(key, compare) }
                let oldValues: [StoredValue]?, newValues: [StoredValue]?
                switch compared {
                case .unchanged: return
                case .changed(let pk, let changed, let old, let new):
                    try recordChanged(ObjectReference(type: b.info.schema.className, primaryKey: before.plain(pk)), b, changed, old, new)
                    return
                case .whole(let old, let new): (oldValues, newValues) = (old, new)
                }
                let oldRef = oldValues.flatMap { before.reference(b, $0) }
                let newRef = newValues.flatMap { after.reference(b, $0) }
                let old = oldValues.map { before.object(b, $0) }
                let new = newValues.map { after.object(b, $0) }
                // An Int primary key is the object's key: its object has no other key.
                if b.intPrimaryKey, let ref = oldRef ?? newRef {
                    try record(ref, b, before: old, after: new)
                    return
                }
                for (ref, o, isBefore) in [(oldRef, old, true), (newRef, new, false)] {
                    guard let ref, let o else { continue }
                    if halves[ref] == nil {
                        halfOrder.append(ref)
                        halves[ref] = (b, nil, nil)
                    }
                    if isBefore { halves[ref]?.before = o } else { halves[ref]?.after = o }
                }
            }
            guard let direct, let oldLookup, let newLookup else {
                var previous: Int64?
                for key in keys where key != previous {
                    previous = key
                    try general(key, oldReader, newReader)
                }
                continue
            }
            // The direct path. A large type's upper half is taken on another core meanwhile
            // (`PlainCapture.Concurrent`); the objects either half declines take the general path afterwards, on
            // this thread, in key order (it writes to the transaction, which the other core reads).
            let split = PlainCapture.Concurrent.split(keys)
            let other = try split < keys.count
                ? direct._withUnsafeGuaranteedRef { plain in
                    try PlainCapture.Concurrent(
                        keys[split...], like: plain, write: w, partition: partition, largestBase: largestBase, old: before.inOrder(b).lookup,
                        new: writesOwn(b))
                } : nil
            var declined: [Int64] = []
            var previous: Int64?
            do {
                for key in keys[..<split] where key != previous {
                    previous = key
                    let took = try direct._withUnsafeGuaranteedRef { plain in
                        try plain.take(key, isNew: key > largestBase, write: w, partition: partition, old: oldLookup, new: newLookup)
                    }
                    if !took { declined.append(key) }
                }
            } catch {
                _ = try? other?.wait()  // try?: the error of this half is the one thrown; the other half is only waited for
                throw error
            }
            if let other { declined += try other.wait() }
            // Read in order again with lookups of their own: the direct path's have moved past these keys.
            if !declined.isEmpty {
                let (oldAgain, newAgain) = (before.inOrder(b), after.inOrder(b))
                for key in declined { try general(key, oldAgain, newAgain) }
            }
            plain?.finish(creates: &creates, operations: &operations, undo: &undo)
            other?.capture.finish(creates: &creates, operations: &operations, undo: &undo)
        }
        for ref in halfOrder {
            guard let h = halves[ref] else { continue }
            try record(ref, h.binding, before: h.before, after: h.after)
        }
        guard creates.total + operations.total > 0 else { return }
        let schemaVersion = shared.storedSchema.withLock { $0?.schemaVersion } ?? configuration.schemaVersion
        let header = ChangeSet(clientID: client, sequence: state.nextSequence, baseVersion: state.serverVersion, schemaVersion: schemaVersion, operations: [])
        let chunks = (creates.total > 0 ? creates.finish() : []) + (operations.total > 0 ? operations.finish() : [])
        try writeOutboxEntry(header, operationCount: creates.total + operations.total, operations: chunks, undo: undo.finish(), in: w.tx)
        state.nextSequence += 1
        try w.tx.put(SyncStorage.stateKey, state.encoded(), in: SyncStorage.partition)
    }

    /// Capture's direct path for type `b` for one write, nil when the type is not one it takes.
    func plainCapture(_ b: TypeBinding) -> PlainCapture? {
        if let shape = plainCaptureShapes[b.partition], shape.binding === b { return PlainCapture(shape) }
        guard let shape = PlainCapture.Shape(b) else { return nil }
        plainCaptureShapes[b.partition] = shape
        return PlainCapture(shape)
    }

    /// An object's records before and after a write, as capture compares them.
    enum Compared {
        /// Live before and after under the same primary key, with equal values.
        case unchanged
        /// Live before and after under primary key `pk`: the indices of the properties whose values differ (an
        /// embedded object's always: its own record may have changed), and their values before and after.
        case changed(pk: StoredValue, [Int], old: [StoredValue], new: [StoredValue])
        /// Every value of each side that has the object (absent, or another primary key: sync's model decides).
        case whole([StoredValue]?, [StoredValue]?)
    }

    /// Compares an object's records before and after (properties `fields` of `count`): bytes first, where both
    /// records are in the binding's layout, then the decoded values of the properties whose bytes differ.
    static func compare(_ b: TypeBinding, _ fields: [Int], _ count: Int, _ old: RecordRef?, _ new: RecordRef?) -> Compared {
        func all(_ r: RecordRef) -> [StoredValue] { (0..<count).map { r.value($0) } }
        guard let old, let new, let pk = b.info.primaryKeyIndex else { return .whole(old.map(all), new.map(all)) }
        let key = old.value(pk)
        guard key.isIdentical(to: new.value(pk)) else { return .whole(all(old), all(new)) }
        var changed: [Int] = []
        var before: [StoredValue] = [], after: [StoredValue] = []
        for i in fields {
            if !b.holdsEmbedded(i), case .bytes(let x, _) = old, case .bytes(let y, _) = new, b.sameStoredBytes(i, x, y) == true { continue }
            let (o, n) = (old.value(i), new.value(i))
            guard b.holdsEmbedded(i) || !o.isIdentical(to: n) else { continue }
            changed.append(i)
            before.append(o)
            after.append(n)
        }
        return changed.isEmpty ? .unchanged : .changed(pk: key, changed, old: before, new: after)
    }

    /// Whether any object of `type` has sync metadata at `snapshot` (one seek): a type without any (no deletion
    /// and no list seen yet) needs no lookup of it per object.
    func syncTypeHasMeta(_ type: String, at snapshot: Snapshot) throws -> Bool {
        var prefix = SyncStorage.objectKey(ObjectReference(type: type, primaryKey: .null))
        prefix.removeLast()  // The primary key's tag: the prefix is the tag and the type's name.
        let cursor = try snapshot.cursor(SyncStorage.partition, from: prefix)
        return try cursor.next().map { $0.key.starts(with: prefix) } ?? false
    }

    /// Writes an outbox entry: its header (chunk 0), its operations (chunks 1…) and its undo images.
    func writeOutboxEntry(_ header: ChangeSet, operationCount: Int, operations: [[UInt8]], undo: [[UInt8]], in tx: WriteTransaction) throws {
        var head: [UInt8] = []
        SyncCoding.writeHeader(header, operationCount: operationCount, into: &head)
        head.appendVarint(UInt64(operations.count))
        try tx.put(SyncStorage.outboxKey(header.sequence, chunk: 0), head, in: SyncStorage.partition)
        for (i, chunk) in operations.enumerated() {
            try tx.put(SyncStorage.outboxKey(header.sequence, chunk: UInt32(i + 1)), chunk, in: SyncStorage.partition)
        }
        try writeUndo(header.sequence, undo, in: tx)
    }

    /// Replaces the undo images of outbox entry `sequence`.
    func writeUndo(_ sequence: UInt64, _ chunks: [[UInt8]], in tx: WriteTransaction, replacing old: Int = 0) throws {
        for (i, chunk) in chunks.enumerated() {
            try tx.put(SyncStorage.undoKey(sequence, chunk: UInt32(i)), chunk, in: SyncStorage.partition)
        }
        if old > chunks.count {
            for i in chunks.count..<old { try tx.delete(SyncStorage.undoKey(sequence, chunk: UInt32(i)), in: SyncStorage.partition) }
        }
    }

    func writeSyncMeta(_ meta: SyncStorage.ObjectMeta?, for ref: ObjectReference, old: SyncStorage.ObjectMeta?, in tx: WriteTransaction) throws {
        guard meta != old else { return }
        if let meta {
            try tx.put(SyncStorage.objectKey(ref), meta.encoded(), in: SyncStorage.partition)
        } else {
            try tx.delete(SyncStorage.objectKey(ref), in: SyncStorage.partition)
        }
    }

    /// The top-level objects that hold the embedded objects `keys` (by embedded type name), through any depth
    /// of embedding: one scan of each type that holds such a type, in the write's view.
    private func ownersOfEmbedded(_ keys: [String: Set<Int64>], _ byPartition: [UInt32: TypeBinding]) -> [(TypeBinding, Int64)] {
        var pending = keys
        var out: [(TypeBinding, Int64)] = []
        var rounds = 0
        while !pending.isEmpty && rounds < SyncCoding.maxDepth {
            rounds += 1
            var next: [String: Set<Int64>] = [:]
            for b in byPartition.values {
                let holding = b.info.schema.properties.indices.filter { i in
                    let p = b.info.schema.properties[i]
                    return p.type == .object && pending[p.objectClassName ?? ""] != nil
                }
                guard !holding.isEmpty else { continue }
                forEachRecord(b) { key, record in
                    let holds = holding.contains { i in
                        let wanted = pending[b.info.schema.properties[i].objectClassName ?? ""] ?? []
                        switch record.value(i) {
                        case .link(let k): return wanted.contains(k)
                        case .list(let items): return items.contains { if case .link(let k) = $0 { wanted.contains(k) } else { false } }
                        default: return false
                        }
                    }
                    guard holds else { return true }
                    if b.info.schema.isEmbedded {
                        next[b.info.schema.className, default: []].insert(key)
                    } else {
                        out.append((b, key))
                    }
                    return true
                }
            }
            pending = next
        }
        return out
    }
}
