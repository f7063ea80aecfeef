import Engine
import Foundation

// How a blocking migration walks a type: each old object with its new one, the new record written into the
// transaction as the closure returns (streamed), and brought back when later work needs the object again.

extension Migration {
    /// Every object of `typeName` in the old partition, old and new, with the generation of an older pending
    /// migration that already brought it to the new schema (if any).
    func forEachOldObject(_ typeName: String, _ body: (MigrationObject, MigrationObject?, TypeMigration.Generation?) -> Void) {
        guard let oldType = old.type(named: typeName) else { return }
        let newType = newModelType(typeName)
        let migration = priorMigration(typeName)
        let streams = newType.map(self.streams) ?? false
        // An old object (with its state) the block did not keep is handed out again for the next record, and so
        // is a streamed new one: no allocation per object for them.
        var spareOld: MigrationObject? = nil
        var spareNew: MigrationObject? = nil
        // Whether this enumeration rewrites the type whole: decided at its first object, which must stream, in a
        // partition the transaction has not written yet. The partition is dropped before that object is written,
        // and every object that does not stream is then copied as stored: at commit the type's new records
        // replace its old segments (released, not merged with twice the data), and its reads meet one version
        // of each object. A block that leaves the first object unchanged writes only what it changes.
        let mayRewriteWhole = newType.map { $0.partition == oldType.partition } ?? false
        var first = true
        var copying = false
        let layouts = layouts(oldType.partition)
        do {
            // The block runs as the scan reaches each object: nothing is collected first.
            try openTx.snapshot.scan(oldType.partition) { k, v in
                guard let key = ObjectKey.decode(k), deleted.isEmpty || !(deleted[oldType.partition]?.contains(key) ?? false) else { return true }
                // Runs the block on the object; whether its new record was streamed. (A closure applied at once:
                // a local function would box the variables it shares with the scan.)
                let streamedNow: Bool = try {
                    // The old and new objects view the record (a field is decoded when the block asks for it).
                    let version = try ObjectRecord.schemaVersion(v)
                    var oldObject: MigrationObject
                    if let spare = spareOld, let state = spare._dynamic {
                        spareOld = nil
                        try state.view(v, layouts: layouts)
                        state.key = key
                        oldObject = spare
                    } else {
                        let oldState = DynamicState(type: oldType, values: FieldValues(), writable: false, defaults: [:])
                        try oldState.view(v, layouts: layouts)
                        oldState.key = key
                        oldObject = dynamic(oldState)
                    }
                    let generation = migration?.generation(for: version)
                    guard let newType else {
                        body(oldObject, nil, generation)
                        if isKnownUniquelyReferenced(&oldObject), isKnownUniquelyReferenced(&oldObject._dynamic!) { spareOld = oldObject }
                        return false
                    }
                    var newObject: MigrationObject
                    // Whether the new object starts here (not one the block or an earlier enumeration left in `written`).
                    var fresh = false
                    let known = writtenStates.isEmpty && handedOut == nil ? nil : written[newType.partition]?[key]
                    if let state = known ?? unstream(newType, key) {
                        state.key = key
                        newObject = dynamic(state)
                    } else {
                        fresh = true
                        let state: DynamicState
                        if let spare = spareNew {
                            // The buffers the previous object used: no allocation, room for what the closure adds.
                            spareNew = nil
                            state = spare._dynamic!
                            state.modified = false
                            state.wrotePrimaryKey = false
                            newObject = spare
                        } else {
                            state = DynamicState(type: newType, values: FieldValues(), writable: true, defaults: defaults(for: newType.name))
                            newObject = dynamic(state)
                        }
                        try state.view(v, layouts: layouts)
                        state.key = key
                        if let generation {
                            // An older pending migration's transforms bring the record to the new schema first.
                            TypeMigration.run(generation, typeName: newType.name, fields: oldObject._dynamic!.values, into: state, report: reporter)
                        }
                    }
                    if fresh {
                        placeHandedOut()
                        handedOut = (newType.partition, key, newObject._dynamic!)
                    } else {
                        written[newType.partition, default: [:]][key] = newObject._dynamic!
                    }
                    body(oldObject, newObject, generation)
                    if isKnownUniquelyReferenced(&oldObject), isKnownUniquelyReferenced(&oldObject._dynamic!) { spareOld = oldObject }
                    if fresh, handedOut?.state === newObject._dynamic {
                        // Nothing looked in `written` while the block ran (a deletion, a link followed to it, another
                        // enumeration would have put the object there): it is the block's alone, or kept by it.
                        guard streams, deleted.isEmpty || !(deleted[newType.partition]?.contains(key) ?? false) else {
                            placeHandedOut()
                            return false
                        }
                        handedOut = nil
                        let partition = newType.partition
                        guard isKnownUniquelyReferenced(&newObject) else {
                            writtenStates[partition, default: [:]][key] = newObject._dynamic!
                            return false
                        }
                        let unique = isKnownUniquelyReferenced(&newObject._dynamic!)
                        let state = newObject._dynamic!
                        guard unique, state.modified else {
                            writtenStates[partition, default: [:]][key] = state
                            return false
                        }
                        if state.wrotePrimaryKey { primaryKeysWritten.insert(partition) }
                        if first, mayRewriteWhole { copying = try beginWholeRewrite(newType.partition) }
                        try stream(state, key: key, typeName: newType.name)
                        spareNew = newObject
                        return true
                    }
                    // Not when the block deleted the object (`delete` forgot its state already), nor when the key now
                    // holds another object (deleted and created again with the same key in the block).
                    guard streams, deleted.isEmpty || !(deleted[newType.partition]?.contains(key) ?? false),
                        written[newType.partition]?[key] === newObject._dynamic
                    else { return false }
                    // Streamed unless the block kept the object, its state (a collection of it) or needs it later.
                    guard isKnownUniquelyReferenced(&newObject) else { return false }
                    written[newType.partition]?[key] = nil
                    let unique = isKnownUniquelyReferenced(&newObject._dynamic!)
                    let state = newObject._dynamic!
                    guard unique, state.modified else {
                        written[newType.partition, default: [:]][key] = state
                        return false
                    }
                    if state.wrotePrimaryKey { primaryKeysWritten.insert(newType.partition) }
                    if first, mayRewriteWhole { copying = try beginWholeRewrite(newType.partition) }
                    try stream(state, key: key, typeName: newType.name)
                    spareNew = newObject
                    return true
                }()
                // An object the block kept (`finish` writes it if it changes) or left as it was.
                if copying, !streamedNow, rewritingWhole.contains(oldType.partition) { try copyAsStored(k, v, in: oldType.partition) }
                first = false
                return true
            }
        } catch {
            errors.append("migrating the objects of \(typeName) failed: \(error)")
        }
    }

    /// Whether objects of `t` are written into the transaction as their enumeration closure returns (inside
    /// open, in either mode: an enumerated type is migrated whole there). An object whose primary key the block
    /// wrote streams too and marks its type (`primaryKeysWritten`), so that `finish` checks and rebuilds the
    /// type's keys.
    func streams(_ t: StoredSchema.StoredType) -> Bool {
        // Every type streams. What needs the whole type at the end reads it back one object at a time: a type made
        // embedded (`convertToEmbedded` counts parents from the links), a changed or written primary key
        // (`rebuildPrimaryKeys` keeps a map of key values, and the encoded records of objects that move).
        true
    }

    /// Empties `partition` in the transaction, before an enumeration writes the first of its objects again
    /// (`rewritingWhole`), unless the transaction has written it since the enumeration began (the block on that
    /// first object may have: a nested enumeration of the type streams its objects). Returns whether it did: the
    /// enumeration copies what it does not stream from then on.
    func beginWholeRewrite(_ partition: UInt32) throws -> Bool {
        guard !openTx.hasWritten(in: partition) else { return false }
        try openTx.dropPartition(partition)
        rewritingWhole.insert(partition)
        core.shared.typesRewrittenWhole.add(1)
        return true
    }

    /// Writes an object's record as stored into a partition an enumeration rewrites whole (`rewritingWhole`): the
    /// block left the object unchanged, or kept it (`finish` writes it again if it changed).
    func copyAsStored(_ key: UnsafeRawBufferPointer, _ record: UnsafeRawBufferPointer, in partition: UInt32) throws {
        try openTx.putBytes(key, record, in: partition)
        try spillIfFull()
    }

    /// Spills the transaction once its batch reaches `migrationSpillBytes`, so that memory stays bounded whatever
    /// the file's size.
    func spillIfFull() throws {
        let tx = openTx
        guard tx.batchBytes >= core.configuration.migrationSpillBytes else { return }
        try tx.spill()
        for records in streamed.values { records.spilled() }
    }

    /// Writes a state's record into the transaction now, in the new type as it stands, and forgets the state.
    func stream(_ state: DynamicState, key: Int64, typeName: String) throws {
        let target: StreamTarget
        if let current = streamTarget, current.typeName == typeName {
            target = current
        } else {
            guard let t = new.type(named: typeName) else { return }
            let layout = RecordLayout(t.properties)
            // Records streamed under another layout of the type (the new schema changed since) come back first.
            if let earlier = streamed[t.partition], earlier.layout != layout { unstreamAll(t) }
            let records = streamed[t.partition] ?? StreamedRecords(layout: layout, schemaVersion: new.schemaVersion)
            streamed[t.partition] = records
            target = StreamTarget(typeName: typeName, partition: t.partition, writer: RecordWriter(t, defaults: defaults(for: t.name)), records: records)
            streamTarget = target
        }
        target.writer.encode(state, schemaVersion: new.schemaVersion)
        let tx = openTx
        let range = try ObjectKey.withBytes(key) { k in
            try target.writer.bytes.withUnsafeBytes { try tx.putPending(k, $0, in: target.partition) }
        }
        target.records.add(key, range)
        core.shared.objectsStreamed.add(1)
        // The batch goes to segments of the transaction's own.
        try spillIfFull()
    }

    /// The fields of a streamed object: its old record's (as `freshState` starts from them) with its streamed
    /// record's over them.
    func streamedFields(_ t: StoredSchema.StoredType, _ key: Int64, _ range: Range<Int>, _ records: StreamedRecords) throws -> FieldValues {
        var fields = FieldValues()
        if let oldType = old.type(named: t.name), let bytes = try openTx.snapshot.get(ObjectKey.bytes(key), in: oldType.partition) {
            let layouts = layouts(oldType.partition)
            fields = try bytes.withUnsafeBytes { try ObjectRecord.decodeAll($0, layouts: layouts) }.fields
        }
        let streamedFields: FieldValues
        if range == StreamedRecords.spilledRange {
            let tx = openTx
            let decoded = try ObjectKey.withBytes(key) { k in
                try tx.withSpilledValue(forKey: k, in: t.partition) { raw in try raw.map { try ObjectRecord.decodeAll($0, layouts: records.layouts).fields } }
            }
            guard let decoded else {
                throw Realm.Error(
                    .fail, "the migrated object \(key) of '\(t.name)' is missing from what the migration wrote to disk",
                    fileURL: core.configuration.fileURL, suggestion: "This is a bug in Strata; nothing was written. Please report it.")
            }
            streamedFields = decoded
        } else {
            var result: Result<FieldValues, any Error> = .success(FieldValues())
            openTx.visitPendingBytes(range) { raw in result = Result { try ObjectRecord.decodeAll(raw, layouts: records.layouts).fields } }
            streamedFields = try result.get()
        }
        for (id, v) in streamedFields { fields[id] = v }
        return fields
    }

    /// A streamed object back as a state of `written`, to be written again at the end (in the new type as it
    /// then stands: a rename may follow); nil when `key` was not streamed.
    func unstream(_ t: StoredSchema.StoredType, _ key: Int64) -> DynamicState? {
        guard let records = streamed[t.partition], let range = records.take(key) else { return nil }
        let fields: FieldValues
        do {
            fields = try streamedFields(t, key, range, records)
        } catch {
            errors.append("reading the migrated objects of \(t.name) failed: \(error)")
            return nil
        }
        let state = DynamicState(type: new.type(named: t.name) ?? t, values: fields, writable: true, defaults: defaults(for: t.name))
        state.report = reporter
        state.key = key
        state.modified = true
        written[t.partition, default: [:]][key] = state
        return state
    }

    /// Every streamed object of `t` back as states (before work that needs them all: a rename, a primary-key
    /// rebuild).
    func unstreamAll(_ t: StoredSchema.StoredType) {
        guard let records = streamed[t.partition] else { return }
        for (key, _) in records.all { _ = unstream(t, key) }
        streamed[t.partition] = nil
        streamTarget = nil
    }
}
