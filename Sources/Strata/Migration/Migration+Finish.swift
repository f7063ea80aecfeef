import Engine
import Foundation

// The end of a migration call: what each type needs (online transforms installed as pending, or the type
// migrated whole now), and every change written into the opening transaction.

extension Migration {
    /// The generations of a type's online migration as it will stand after this open: older pending ones,
    /// then this call's transforms (online mode).
    func generations(_ typeName: String) -> [TypeMigration.Generation] {
        var out = old.pending(for: typeName).map {
            TypeMigration.Generation(fromVersion: $0.fromVersion, oldType: $0.oldType, transforms: prior[$0.fromVersion]?[typeName] ?? [])
        }
        if isOnline, let t = transforms[typeName], !t.isEmpty, let oldType = old.type(named: typeName) {
            out.append(.init(fromVersion: old.schemaVersion, oldType: oldType, transforms: t))
        }
        return out
    }

    /// Runs every generation's transforms once on the type's first object, reporting mistakes now rather than
    /// on some later read. Returns whether a transform wrote the primary key (whole-type work).
    func probe(_ t: StoredSchema.StoredType, _ generations: [TypeMigration.Generation]) throws -> Bool {
        var first: FieldValues? = nil
        let layouts = layouts(t.partition)
        try openTx.snapshot.scan(t.partition) { _, v in
            first = try ObjectRecord.decodeAll(v, layouts: layouts).fields
            return false
        }
        guard let fields = first else { return false }
        var wrotePrimaryKey = false
        for generation in generations {
            let state = DynamicState(type: t, values: fields, writable: true, defaults: defaults(for: t.name))
            let probeReport = MigrationReporter()
            TypeMigration.run(generation, typeName: t.name, fields: fields, into: state, report: probeReport)
            for message in probeReport.messages {
                errors.append("transformObjects(ofType: \"\(t.name)\") for schema version \(generation.fromVersion): \(message)")
            }
            if state.wrotePrimaryKey { wrotePrimaryKey = true }
        }
        return wrotePrimaryKey
    }

    /// Brings every object of a type to the new schema inside open: each through its generation's
    /// transforms, on top of what `enumerateObjects` did.
    func materialize(_ t: StoredSchema.StoredType, _ generations: [TypeMigration.Generation]) throws {
        let migration = TypeMigration(typeName: t.name, newType: t, newVersion: new.schemaVersion, defaults: defaults(for: t.name), generations: generations)
        var states = written[t.partition] ?? [:]
        let layouts = layouts(t.partition)
        try openTx.snapshot.scan(t.partition) { k, v in
            guard let key = ObjectKey.decode(k), !(deleted[t.partition]?.contains(key) ?? false) else { return true }
            // A streamed object went through its generation when enumerated (`freshState`), as kept states did.
            if streamed[t.partition]?.contains(key) == true { return true }
            let record = try ObjectRecord.decodeAll(v, layouts: layouts)
            guard let generation = migration.generation(for: record.schemaVersion) else { return true }
            if let state = states[key] {
                // enumerateObjects has been here: an older pending generation already ran (freshState); this
                // call's transforms run after the enumeration's closure.
                if generation.fromVersion == old.schemaVersion, isOnline {
                    TypeMigration.run(generation, typeName: t.name, fields: record.fields, into: state, report: state.report)
                }
            } else {
                let state = DynamicState(type: t, values: record.fields, writable: true, defaults: defaults(for: t.name))
                state.report = reporter
                TypeMigration.run(generation, typeName: t.name, fields: record.fields, into: state, report: state.report)
                states[key] = state
            }
            return true
        }
        written[t.partition] = states
    }

    /// The error a failed migration throws: Realm's code and, for one mistake, Realm's exact text.
    func failure() -> Realm.Error {
        Realm.Error(
            .fail, errors.joined(separator: "\n"), fileURL: core.configuration.fileURL,
            suggestion: "The migration from schema version \(old.schemaVersion) to \(new.schemaVersion) of \(core.shared.displayName) "
                + "failed; nothing was written.")
    }

    func finish() throws -> StoredSchema {
        let tx = openTx
        for (typeName, names) in intermediateNames.sorted(by: { $0.key < $1.key }) {
            for name in names.sorted() { errors.append("Renamed property '\(typeName).\(name)' does not exist.") }
        }
        // Objects still pending from an older online migration need their transforms from this code's block.
        for entry in old.pending ?? [] where !dataDeleted.contains(entry.typeName) && new.type(named: entry.typeName) != nil {
            if prior[entry.fromVersion]?[entry.typeName]?.isEmpty ?? true {
                errors.append(
                    "objects of '\(entry.typeName)' are still being migrated online from schema version \(entry.fromVersion), but the "
                        + "migration block, called with oldSchemaVersion \(entry.fromVersion), registered no transformObjects(ofType: "
                        + "\"\(entry.typeName)\"); keep the migration code for every version a file may still be at")
            }
        }
        var pending: [StoredSchema.PendingMigration] = []
        var installed: [String: TypeMigration] = [:]
        var wholeType: [(StoredSchema.StoredType, [TypeMigration.Generation])] = []
        var rekeyed = Set<String>()
        if errors.isEmpty {
            for t in new.types where !dataDeleted.contains(t.name) {
                let gens = generations(t.name)
                guard !gens.isEmpty else { continue }
                let wrotePrimaryKey = try probe(t, gens)
                if !isOnline || enumerated.contains(t.name) || primaryKeyChanged(t) || wrotePrimaryKey {
                    wholeType.append((t, gens))
                    continue
                }
                pending += old.pending(for: t.name)
                if isOnline, transforms[t.name]?.isEmpty == false, let oldType = old.type(named: t.name) {
                    pending.append(.init(typeName: t.name, fromVersion: old.schemaVersion, oldType: oldType))
                }
                installed[t.name] = TypeMigration(
                    typeName: t.name, newType: t, newVersion: new.schemaVersion, defaults: defaults(for: t.name), generations: gens)
            }
        }
        guard errors.isEmpty else {
            throw failure()
        }
        for (t, gens) in wholeType {
            // This call's transforms of an enumerated type run on its objects after the enumeration's closure:
            // streamed ones come back as states for them.
            if isOnline, transforms[t.name]?.isEmpty == false { unstreamAll(t) }
            try Self.$runningTransform.withValue(t.name) { try materialize(t, gens) }
        }
        if errors.isEmpty { try convertToEmbedded() }
        guard errors.isEmpty else {
            throw failure()
        }
        // Objects an Int primary key moves to a new key keep every link to them (M047, M102).
        try relinkMovedObjects()
        for (partition, keys) in deleted {
            for key in keys { try tx.delete(ObjectKey.bytes(key), in: partition) }
        }
        for t in new.types {
            if try rebuildPrimaryKeys(t) {
                rekeyed.insert(t.name)
                continue
            }
            var writer = RecordWriter(t, defaults: defaults(for: t.name))
            // In key order: sorting the keys alone is much cheaper than sorting (key, state) pairs.
            let states = written[t.partition] ?? [:]
            for key in states.keys.sorted() {
                guard let state = states[key], state.modified else { continue }
                try put(state, key: key, type: t, with: &writer)
                if let pkPartition = t.primaryKeyPartition, let pk = t.properties.first(where: \.isPrimaryKey) {
                    try tx.put(PrimaryKeyIndex.entry(state.values[pk.fieldId] ?? .null), ObjectKey.bytes(key), in: pkPartition)
                }
            }
        }
        for (partition, next) in nextKeys {
            try tx.put(StoredSchema.nextKeyKey(partition), ObjectKey.bytes(next), in: StoredSchema.metadataPartition)
        }
        var result = new
        result.pending = pending.isEmpty ? nil : pending
        self.installed = installed
        let touched = Set(written.keys).union(deleted.keys).union(streamed.keys)
        rewrittenTypes = enumerated.union(dataDeleted).union(rekeyed).union(wholeType.map(\.0.name))
            .union(new.types.filter { touched.contains($0.partition) }.map(\.name))
            .union((old.types.filter { touched.contains($0.partition) }).map(\.name))
        return result
    }
}
