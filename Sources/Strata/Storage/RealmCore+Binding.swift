import Engine
import Foundation

/// Binding model classes to the stored schema at open (and to types first used later): validation, version
/// rules, migrations and the types' bindings.
extension RealmCore {
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

    func bindDeclaredTypes() throws {
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
        if write == nil, try bindUnchanged(infos) { return }
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
                            core: self, tx: tx, old: base.fillingElementOptionality(from: infos), new: schema, declared: infos,
                            mode: .open(online: configuration.migrationMode == .online), prior: prior)
                        configuration.migrationBlock?(migration, base.schemaVersion)
                        schema = try migration.finish()
                        migration.seal()
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
            let boundSchema = shared.storedSchema.withLock { $0 }
            for (info, t, version) in toBind {
                bindings[ObjectIdentifier(info.objectClass)] = TypeBinding(
                    info: info, stored: t, schemaVersion: version, migration: shared.migration(for: t.name),
                    layouts: layouts(t.partition, boundSchema))
            }
            scheduleBackgroundRewrites()
        } catch {
            if ownTx { tx.abort() }
            if let e = error as? StorageError { throw realmError(e, fileURL: configuration.fileURL) }
            throw error
        }
    }

    /// Online migrations under way, and types of an earlier release whose records are still in format 1: the
    /// background migrator rewrites them.
    private func scheduleBackgroundRewrites() {
        let background = shared.storedSchema.withLock { s -> Set<String> in
            Set((s?.pending ?? []).map(\.typeName)).union((s?.types ?? []).filter { $0.recordFormat != RecordLayout.storedFormat }.map(\.name))
        }
        if !background.isEmpty {
            shared.migrator.schedule(background.sorted(), start: configuration.backgroundMigration)
        }
    }

    /// Binds `infos` without a write transaction when the file's schema, as this Realm reads it, already holds
    /// them exactly as declared: at the configuration's schema version, every property and index as declared,
    /// and no online migration under way (this process may lack its transforms). That is the usual open, which
    /// then neither waits for another thread's write nor commits an empty one (two write transactions per
    /// open before: the schema's and the indexes'). False when anything would change: the general path decides.
    private func bindUnchanged(_ infos: [TypeInfo]) throws -> Bool {
        guard let stored = shared.storedSchema.withLock({ $0 }), stored.schemaVersion == configuration.schemaVersion,
            (stored.pending ?? []).isEmpty
        else { return false }
        // The schema this Realm's version holds: another process may have changed it since the file was opened here.
        let bytes: [UInt8]?
        do {
            bytes = try snapshot.get(StoredSchema.schemaKey, in: StoredSchema.metadataPartition)
        } catch let e as StorageError {
            throw realmError(e, fileURL: configuration.fileURL)
        }
        guard let bytes, try StoredSchema.decode(bytes, file: shared.displayName) == stored else { return false }
        guard SchemaDiff.differences(stored: stored, declared: infos).isEmpty else { return false }
        var applied = stored
        for info in infos where SchemaDiff.apply(info, to: &applied) { return false }
        var bound: [(ObjectIdentifier, TypeBinding)] = []
        for info in infos {
            guard let t = stored.type(named: info.schema.className) else { return false }
            let binding = TypeBinding(
                info: info, stored: t, schemaVersion: stored.schemaVersion, migration: shared.migration(for: t.name),
                layouts: layouts(t.partition, stored))
            // The indexes as `reconcileIndexes` would leave them: each stored one declared as it is, each declared one stored.
            let indexes = t.indexes ?? []
            for index in indexes {
                guard let i = binding.fieldIds.firstIndex(of: index.fieldId), SecondaryIndex.matches(index, info: info, property: i) else { return false }
            }
            for (i, p) in info.schema.properties.enumerated() where SecondaryIndex.isIndexable(p) {
                guard indexes.contains(where: { $0.fieldId == binding.fieldIds[i] }) else { return false }
            }
            bound.append((ObjectIdentifier(info.objectClass), binding))
        }
        for (id, binding) in bound { bindings[id] = binding }
        scheduleBackgroundRewrites()
        return true
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
            migration.seal()
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

    /// The record layouts of a partition in `schema`, and, for versions written later by another instance of
    /// the file, in the file's schema as it is when such a record is read.
    func layouts(_ partition: UInt32, _ schema: StoredSchema?) -> RecordLayouts {
        var l = RecordLayouts(partition: partition, in: schema)
        l.fallback = { [weak shared] version in
            shared?.storedSchema.withLock { RecordLayouts(partition: partition, in: $0).layout(version) }
        }
        return l
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
                info: info, stored: t, schemaVersion: stored.schemaVersion, migration: shared.migration(for: t.name),
                layouts: layouts(t.partition, stored))
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
        let b = TypeBinding(
            info: bound.info, stored: stored, schemaVersion: bound.schemaVersion, migration: bound.migration, objectClass: DynamicObject.self,
            layouts: bound.layouts)
        dynamicBindings[name] = b
        return b
    }

    /// The binding of the type named `name`, when one is bound here.
    func boundType(named name: String) -> TypeBinding? {
        bindings.values.first { $0.info.schema.className == name }
    }

    /// `body` with the binding of `type`: the last one asked for unretained (the core holds its bindings, and
    /// `body` must not change them), another as `binding(forClass:)` gives it.
    @inline(__always)
    func withBinding<R>(forClass type: Object.Type, _ body: (TypeBinding) -> R) -> R {
        if let last = lastBindingUnretained, last._withUnsafeGuaranteedRef({ $0.objectClass == type }) {
            return last._withUnsafeGuaranteedRef(body)
        }
        return body(binding(forClass: type))
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
}
