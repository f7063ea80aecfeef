import Engine
import Foundation

// Object keys and primary keys: allocating keys for created objects, writing records, and checking and
// rebuilding a type's primary keys after the block.

extension Migration {
    /// A new object key for an object of `t` without an Int primary key: the type's counter, never a key an
    /// object has.
    func allocateKey(for t: StoredSchema.StoredType) -> Int64 {
        do {
            try prepareKeyCounter(t)
        } catch {
            errors.append("reading the objects of \(t.name) failed: \(error)")
        }
        do {
            var key = try RealmCore.allocateKey(partition: t.partition, in: openTx, cache: &nextKeys)
            while keyIsTaken(key, in: t) { key = try RealmCore.allocateKey(partition: t.partition, in: openTx, cache: &nextKeys) }
            return key
        } catch {
            errors.append("reading the key counter of \(t.name) failed: \(error)")
            return Int64.max
        }
    }

    /// Starts the key counter of a type whose objects were keyed by an Int primary key (keys that no counter
    /// counted) above the largest key it has, so that keys given once the primary key is gone are new (M048).
    func prepareKeyCounter(_ t: StoredSchema.StoredType) throws {
        guard nextKeys[t.partition] == nil, !dataDeleted.contains(t.name),
            old.type(named: t.name)?.properties.contains(where: { $0.isPrimaryKey && $0.type == .int }) == true
        else { return }
        var largest: Int64 = -1
        try openTx.snapshot.scan(t.partition) { k, _ in
            if let key = ObjectKey.decode(k) { largest = Swift.max(largest, key) }
            return true
        }
        for key in (written[t.partition] ?? [:]).keys { largest = Swift.max(largest, key) }
        for (key, _) in streamed[t.partition]?.all ?? [] { largest = Swift.max(largest, key) }
        let stored = try RealmCore.allocateKey(partition: t.partition, in: openTx, cache: &nextKeys)
        nextKeys[t.partition] = Swift.max(stored, largest &+ 1)
    }

    /// Whether an object of `t` has `key` now: one created or kept in this migration, or a stored one not deleted.
    func keyIsTaken(_ key: Int64, in t: StoredSchema.StoredType) -> Bool {
        if written[t.partition]?[key] != nil || streamed[t.partition]?.contains(key) == true { return true }
        // After deleteData the stored objects are gone (the transaction's snapshot still shows them).
        if dataDeleted.contains(t.name) || deleted[t.partition]?.contains(key) ?? false { return false }
        do {
            return try openTx.snapshot.get(ObjectKey.bytes(key), in: t.partition) != nil
        } catch {
            errors.append("reading the objects of \(t.name) failed: \(error)")
            return true
        }
    }

    func put(_ state: DynamicState, key: Int64, type t: StoredSchema.StoredType, with w: inout RecordWriter) throws {
        w.encode(state, schemaVersion: new.schemaVersion)
        let bytes = w.bytes
        try ObjectKey.withBytes(key) { try openTx.put($0, bytes, in: t.partition) }
    }

    /// When a type's primary key was added, removed or changed, or the block wrote primary-key values: checks
    /// that the keys are unique, moves objects of an Int key to that key, and rebuilds the key index. Whole-type
    /// work, inside open, reading the type's objects one at a time (streamed ones included) twice: what it keeps
    /// is a map of key values and of the moves, not the objects (their rewritten records go into the
    /// transaction's batch, which is not spilled here: a type of several GiB that moves hits the transaction
    /// limit). Returns false when there was nothing to do.
    func rebuildPrimaryKeys(_ t: StoredSchema.StoredType) throws -> Bool {
        let tx = openTx
        let oldType = old.type(named: t.name)
        let newPK = t.properties.first(where: \.isPrimaryKey)
        let oldPK = oldType?.properties.first(where: \.isPrimaryKey)
        let pkChanged = newPK?.fieldId != oldPK?.fieldId || newPK?.type != oldPK?.type || oldType?.partition != t.partition
        let states = written[t.partition] ?? [:]
        let wrotePK = newPK != nil && (primaryKeysWritten.contains(t.partition) || states.values.contains { $0.wrotePrimaryKey })
        guard pkChanged || wrotePK else { return false }
        let defaults = self.defaults(for: t.name)
        var writer = RecordWriter(t, defaults: defaults)
        guard let pk = newPK else {
            // The primary key was removed: keys stay, the index goes; new objects get keys above the old ones.
            if let p = oldType?.primaryKeyPartition { try tx.dropPartition(p) }
            try prepareKeyCounter(t)
            for key in states.keys.sorted() where states[key]!.modified { try put(states[key]!, key: key, type: t, with: &writer) }
            return true
        }
        // A key that is no longer an Int: objects keep their keys, new ones count above them.
        if pk.type != .int { try prepareKeyCounter(t) }
        // First pass: every object's key value (duplicates), and the objects an Int key moves.
        var keyOf: [StoredValue: Int64] = [:]
        var duplicates: [StoredValue] = []
        var moves: [Int64: Int64] = [:]
        try forEachObject(after: t) { key, fields in
            let value = fields[pk.fieldId] ?? defaults[pk.name] ?? .null
            if keyOf[value] != nil { duplicates.append(value) } else { keyOf[value] = key }
            if pk.type == .int, let target = Self.objectKey(ofIntPrimaryKey: value), target != key { moves[key] = target }
        }
        if !duplicates.isEmpty {
            let shown = duplicates.prefix(3).map { Object.describe($0) }.joined(separator: ", ")
            throw Realm.Error(
                .fail,
                "Primary key property '\(t.name).\(pk.name)' has duplicate values after migration.",
                fileURL: core.configuration.fileURL,
                suggestion: "The migration from schema version \(old.schemaVersion) to \(new.schemaVersion) of \(core.shared.displayName) "
                    + "failed; nothing was written: \(duplicates.count) duplicate values (e.g. \(shown)); give each object its own key in the block.")
        }
        keyOf = [:]
        if let p = oldType?.primaryKeyPartition { try tx.dropPartition(p) }
        // Second pass: the index, the objects the block changed, and those that move, written at their new key
        // at once. Reads are not disturbed by these writes: snapshot records come from the snapshot, streamed ones
        // from their own bytes in the batch or from spilled segments (nothing spills here). The old keys no object
        // moves onto go last, so that one object moving onto another's old key is not deleted by it.
        try forEachObject(after: t) { key, fields in
            let value = fields[pk.fieldId] ?? defaults[pk.name] ?? .null
            if let target = moves[key] {
                try put(states[key] ?? DynamicState(type: t, values: fields, writable: true, defaults: defaults), key: target, type: t, with: &writer)
            } else if let state = states[key], state.modified {
                try put(state, key: key, type: t, with: &writer)
            }
            if let pkPartition = t.primaryKeyPartition {
                try tx.put(PrimaryKeyIndex.entry(value), ObjectKey.bytes(key), in: pkPartition)
            }
        }
        let targets = Set(moves.values)
        for key in moves.keys where !targets.contains(key) { try tx.delete(ObjectKey.bytes(key), in: t.partition) }
        return true
    }

    /// The object key an Int primary key value gives its object: the value, or the key of nil for an optional one.
    static func objectKey(ofIntPrimaryKey value: StoredValue) -> Int64? {
        switch value {
        case .int(let k): k
        case .null: RealmCore.nilIntPrimaryKey
        default: nil
        }
    }

    /// Whether a type's primary key was added, removed or changed: whole-type work, inside open.
    func primaryKeyChanged(_ t: StoredSchema.StoredType) -> Bool {
        guard let oldType = old.type(named: t.name) else { return false }
        let newPK = t.properties.first(where: \.isPrimaryKey)
        let oldPK = oldType.properties.first(where: \.isPrimaryKey)
        return newPK?.fieldId != oldPK?.fieldId || newPK?.type != oldPK?.type || oldType.partition != t.partition
    }
}
