import Engine
import Foundation
import Atomics

/// The handle a migration block receives: the old and new schemas, and the operations that change data.
///
/// Runs inside the opening transaction: nothing is written unless the whole migration succeeds. A migration
/// runs on one thread: the state touched once per object has dynamic exclusivity checks off.
public final class Migration {
    /// How a block call is used.
    enum Mode: Equatable {
        /// The open's own call: immediate operations take effect; transforms are recorded (online) or run at
        /// once, as `enumerateObjects` (blocking).
        case open(online: Bool)
        /// A call for an older version whose objects are still pending: only `transformObjects` counts.
        case transformsOnly
    }

    /// The type whose transform is running on this thread, if any: the operations a transform may not use trap.
    @TaskLocal static var runningTransform: String?

    let core: RealmCore
    let tx: WriteTransaction?
    let old: StoredSchema
    var new: StoredSchema {
        didSet {
            layoutCache = [:]
            streamTarget = nil
        }
    }
    /// The record layouts of each partition read so far (`layouts(_:)`).
    @exclusivity(unchecked) var layoutCache: [UInt32: RecordLayouts] = [:]

    /// The layouts the records of `partition` may be in: every version of the old schema's history, the old
    /// schema and the new one.
    func layouts(_ partition: UInt32) -> RecordLayouts {
        if let l = layoutCache[partition] { return l }
        let l = RecordLayouts(partition: partition, in: old, new)
        layoutCache[partition] = l
        return l
    }
    let declared: [String: TypeInfo]
    let mode: Mode
    /// Transforms registered by this call, per type, for records of `old.schemaVersion` and older.
    var transforms: [String: [ObjectTransform]] = [:]
    /// Transforms of older pending versions (from transforms-only calls), by version and type.
    let prior: [UInt64: [String: [ObjectTransform]]]
    var enumerated = Set<String>()
    var dataDeleted = Set<String>()
    /// The online migrations the open leaves pending, and how to read their types, once `finish` has run.
    var installed: [String: TypeMigration] = [:]
    /// Objects written in this migration, by partition and key: field id -> value under the new schema.
    /// Every use but the enumeration's own goes through `written`, which first puts the object the enumeration
    /// is handing out (`handedOut`) in its place.
    @exclusivity(unchecked) var writtenStates: [UInt32: [Int64: DynamicState]] = [:]
    var written: [UInt32: [Int64: DynamicState]] {
        _read {
            placeHandedOut()
            yield writtenStates
        }
        _modify {
            placeHandedOut()
            yield &writtenStates
        }
    }
    /// The new object an enumeration's block is running with, registered in `written` only when something looks
    /// there while the block runs: most blocks touch nothing else, and the object is streamed as the block
    /// returns, so it never enters the dictionary (two dictionary updates and lookups per object saved).
    @exclusivity(unchecked) var handedOut: (partition: UInt32, key: Int64, state: DynamicState)?
    /// Puts the object an enumeration is handing out in `written`, where everything else looks for it.
    @inline(__always) func placeHandedOut() {
        guard let h = handedOut else { return }
        handedOut = nil
        writtenStates[h.partition, default: [:]][h.key] = h.state
    }
    /// Objects a blocking migration's enumeration wrote into the transaction as their closure returned (no
    /// state kept), by partition; `unstream` brings one back as a state of `written`.
    @exclusivity(unchecked) var streamed: [UInt32: StreamedRecords] = [:]
    /// Partitions of types whose block wrote the primary key of objects that were then streamed: their keys are
    /// checked and their index rebuilt at the end (`rebuildPrimaryKeys`).
    @exclusivity(unchecked) var primaryKeysWritten = Set<UInt32>()
    /// Where the type streamed last writes (reset when the new schema changes).
    final class StreamTarget {
        let typeName: String
        let partition: UInt32
        @exclusivity(unchecked) var writer: RecordWriter
        let records: StreamedRecords
        init(typeName: String, partition: UInt32, writer: RecordWriter, records: StreamedRecords) {
            self.typeName = typeName
            self.partition = partition
            self.writer = writer
            self.records = records
        }
    }
    @exclusivity(unchecked) var streamTarget: StreamTarget?
    /// Partitions an enumeration is rewriting whole (`forEachOldObject`): dropped before the enumeration's first
    /// object streamed, so that the type's new records replace its old segments at commit instead of lying over
    /// them until a merge.
    @exclusivity(unchecked) var rewritingWhole = Set<UInt32>()
    @exclusivity(unchecked) var deleted: [UInt32: Set<Int64>] = [:]
    var nextKeys: [UInt32: Int64] = [:]
    /// Mistakes made by the block and its closures: the open fails with them, writing nothing.
    let reporter = MigrationReporter()
    var errors: [String] {
        get { reporter.messages }
        set { reporter.messages = newValue }
    }
    /// Names in the old schema as renames have moved them, per type: name -> field id.
    var renamed: [String: [String: UInt32]] = [:]

    init(
        core: RealmCore, tx: WriteTransaction?, old: StoredSchema, new: StoredSchema, declared: [TypeInfo], mode: Mode,
        prior: [UInt64: [String: [ObjectTransform]]] = [:]
    ) {
        self.core = core
        self.tx = tx
        self.old = old
        self.new = new
        self.declared = Dictionary(declared.map { ($0.schema.className, $0) }, uniquingKeysWith: { a, _ in a })
        self.mode = mode
        self.prior = prior
        reporter.migration = self
        reporter.mappedTypes = Set(declared.filter { $0.schema.properties.contains { $0.name != $0.columnName } }.map(\.schema.className))
    }

    var isOnline: Bool { mode == .open(online: true) }

    /// Set once the block returned and the open used what it registered (`seal()`): the transforms it registered
    /// run later, on reads and in the background migrator, and an operation called on this migration then can
    /// only come from one of them (or from a reference kept past the block). Reads through a pending migration
    /// then need not mark their thread per record (a task-local costs about a tenth of such a read).
    private let sealed = ManagedAtomic<Bool>(false)

    /// Marks the block's call over (see `sealed`).
    func seal() { sealed.store(true, ordering: .releasing) }

    /// Traps when called from inside a transform, as the operation would not be deferrable.
    func refuseInsideTransform(_ operation: String) {
        if Self.runningTransform == nil, sealed.load(ordering: .acquiring), transforms.isEmpty {
            fatalError(
                "Migration.\(operation) was called after the migration block returned: a Migration is only valid inside its block. "
                    + "Do the work in the block, or open the Realm and use a write transaction.")
        }
        let afterTheBlock = sealed.load(ordering: .acquiring) ? transforms.keys.sorted().joined(separator: "\", \"") : nil
        if let typeName = Self.runningTransform ?? afterTheBlock {
            fatalError(
                "Migration.\(operation) was called inside transformObjects(ofType: \"\(typeName)\"): a transform may only read its "
                    + "old object and write its new one. Use enumerateObjects(ofType: \"\(typeName)\") for work that creates, deletes "
                    + "or reads other objects.")
        }
    }

    /// The write transaction of the open (absent only in transforms-only calls, which write nothing).
    var openTx: WriteTransaction {
        guard let tx else { fatalError("a transforms-only migration call has no transaction") }
        return tx
    }

    static func defaults(_ info: TypeInfo?) -> [String: StoredValue] {
        guard let info else { return [:] }
        return Dictionary(zip(info.schema.properties.map(\.columnName), info.defaults), uniquingKeysWith: { a, _ in a })
    }

    /// How records of `typeName` from older pending online migrations reach the new schema (nil when none).
    func priorMigration(_ typeName: String) -> TypeMigration? {
        let entries = old.pending(for: typeName)
        guard !entries.isEmpty, let newType = new.type(named: typeName) else { return nil }
        return TypeMigration(
            typeName: typeName, newType: newType, newVersion: new.schemaVersion, defaults: defaults(for: typeName),
            generations: entries.map { .init(fromVersion: $0.fromVersion, oldType: $0.oldType, transforms: prior[$0.fromVersion]?[typeName] ?? []) })
    }

    /// A record's state under the new schema, writable: through an older pending migration's transforms
    /// when its version has one, as read under the new schema otherwise.
    func freshState(_ newType: StoredSchema.StoredType, version: UInt64, fields: FieldValues, through migration: TypeMigration?) -> DynamicState {
        let state = DynamicState(type: newType, values: fields, writable: true, defaults: defaults(for: newType.name))
        state.report = reporter
        if let migration, let generation = migration.generation(for: version) {
            TypeMigration.run(generation, typeName: newType.name, fields: fields, into: state, report: state.report)
        }
        return state
    }

    /// The schema of the file before this migration.
    public var oldSchema: Schema { Self.schema(of: old) }
    /// The schema the code declares.
    /// The schema the code declares: exactly the model's types (those of `objectTypes` when it is set).
    public var newSchema: Schema {
        var model = new
        model.types = new.types.filter { newModelType($0.name) != nil }
        return Self.schema(of: model)
    }

    static func schema(of s: StoredSchema) -> Schema {
        Schema(objectSchema: s.types.map(objectSchema(of:)))
    }

    /// A stored type as an `ObjectSchema` (stored names and kinds).
    static func objectSchema(of t: StoredSchema.StoredType) -> ObjectSchema {
        ObjectSchema(
            className: t.name,
            properties: t.properties.map {
                Property(name: $0.name, columnName: $0.name, type: $0.type, isOptional: $0.isOptional, isIndexed: $0.isIndexed,
                         isPrimaryKey: $0.isPrimaryKey, objectClassName: $0.objectClassName,
                         isArray: ($0.isList ?? false) && !($0.isMap ?? false) && !($0.isSet ?? false),
                         isSet: ($0.isSet ?? false) && !($0.isMap ?? false), isMap: $0.isMap ?? false,
                         hasOptionalElements: $0.hasOptionalElements ?? false)
            },
            isEmbedded: t.isEmbedded ?? false, objectClass: nil)
    }

    /// Declared defaults by column name, per type (asked for once per migrated object).
    @exclusivity(unchecked) var defaultsByType: [String: [String: StoredValue]] = [:]

    func defaults(for typeName: String) -> [String: StoredValue] {
        if let cached = defaultsByType[typeName] { return cached }
        let d = Self.defaults(declared[typeName])
        defaultsByType[typeName] = d
        return d
    }

    func dynamic(_ state: DynamicState) -> MigrationObject {
        state.report = reporter
        let o = DynamicObject()
        o._dynamic = state
        return o
    }

    /// Calls `block` with every object of `typeName`: as it was (old schema, read-only) and as it will be (new
    /// schema, writable; nil when the type was removed). Runs inside open, for this type only.
    public func enumerateObjects(ofType typeName: String, _ block: (_ oldObject: MigrationObject?, _ newObject: MigrationObject?) -> Void) {
        refuseInsideTransform("enumerateObjects")
        guard mode != .transformsOnly else { return }
        // After deleteData nothing is enumerated, not even objects created since (Realm does the same).
        guard !dataDeleted.contains(typeName) else { return }
        guard old.type(named: typeName) != nil else {
            // A type new in this version: the objects this block created, as (nil, new). An unknown type: nothing.
            guard let t = newModelType(typeName) else { return }
            let created = written[t.partition] ?? [:]
            for key in created.keys.sorted() where !(deleted[t.partition]?.contains(key) ?? false) {
                if let state = created[key] { block(nil, dynamic(state)) }
            }
            return
        }
        enumerated.insert(typeName)
        forEachOldObject(typeName) { oldObject, newObject, _ in block(oldObject, newObject) }
    }

    /// A type of the new model: one the configuration declares (with no `objectTypes`, types are bound as they
    /// are used, and every stored type counts).
    func newModelType(_ typeName: String) -> StoredSchema.StoredType? {
        guard declared[typeName] != nil || (core.configuration.objectTypes == nil && ModelDiscovery.schemaClasses.isEmpty) else { return nil }
        return new.type(named: typeName)
    }

    /// Registers a per-object transform of `typeName` (Strata's addition; the closure has `enumerateObjects`'
    /// shape). In `.online` mode it is recorded, not run: objects pass through it when read, and the
    /// background migrator rewrites the type. In `.blocking` mode it runs now, as `enumerateObjects` would.
    ///
    /// A transform may only read its old object and write its new one: `create`, `delete`,
    /// `enumerateObjects` and `deleteData` trap inside it. It is called once at open on one object, so that
    /// mistakes (an unknown property, a value of the wrong type) show at the first open.
    public func transformObjects(
        ofType typeName: String, _ block: @escaping (_ oldObject: MigrationObject, _ newObject: MigrationObject) -> Void
    ) {
        refuseInsideTransform("transformObjects")
        guard old.type(named: typeName) != nil || mode == .transformsOnly else {
            errors.append("Cannot transform objects of type '\(typeName)': it is not in the old schema (version \(old.schemaVersion))")
            return
        }
        guard new.type(named: typeName) != nil else {
            errors.append("Cannot transform objects of type '\(typeName)': it is not in the new schema (version \(new.schemaVersion))")
            return
        }
        switch mode {
        case .transformsOnly, .open(online: true):
            transforms[typeName, default: []].append(block)
        case .open(online: false):
            // After deleteData there is nothing to transform (as `enumerateObjects` enumerates nothing).
            guard !dataDeleted.contains(typeName) else { return }
            let generation = TypeMigration.Generation(fromVersion: old.schemaVersion, oldType: old.type(named: typeName)!, transforms: [block])
            Self.$runningTransform.withValue(typeName) {
                forEachOldObject(typeName) { oldObject, newObject, earlier in
                    // An object an older pending migration brought here went through the block called with its own version.
                    guard earlier == nil, let newObject, let state = newObject._dynamic else { return }
                    TypeMigration.run(generation, typeName: typeName, oldObject: oldObject, newObject: newObject)
                    state.modified = true
                }
            }
        }
    }

    /// Creates an object of `typeName` in the new schema.
    @discardableResult
    public func create(_ typeName: String, value: Any = [Any]()) -> MigrationObject {
        refuseInsideTransform("create")
        guard mode != .transformsOnly else { return DynamicObject() }
        guard let t = newModelType(typeName) else {
            errors.append("Object type '\(typeName)' not managed by the Realm")
            return DynamicObject()
        }
        if t.isEmbedded ?? false {
            errors.append(
                "Embedded objects cannot be created directly: '\(typeName)' is embedded; assign a dictionary or an object to its "
                    + "parent's property instead")
            return DynamicObject()
        }
        return dynamic(insert(t, value: value))
    }

    /// Unmanaged model objects already added by assigning them, with their keys (the objects are kept, so
    /// that their identifiers stay theirs).
    var adopted: [ObjectIdentifier: (object: Object, key: Int64)] = [:]

    /// Deletes an object handed out by `enumerateObjects` or `create`.
    public func delete(_ object: MigrationObject) {
        refuseInsideTransform("delete")
        guard mode != .transformsOnly else { return }
        guard let state = object._dynamic else {
            errors.append("Only objects handed out by this migration can be deleted in it")
            return
        }
        for (partition, objects) in written {
            if let (key, _) = objects.first(where: { $0.value === state }) {
                written[partition]?[key] = nil
                deleted[partition, default: []].insert(key)
                return
            }
        }
    }

    /// Deletes every object of `typeName` (and the type, when the code no longer declares it).
    @discardableResult
    public func deleteData(forType typeName: String) -> Bool {
        refuseInsideTransform("deleteData")
        guard mode != .transformsOnly else { return false }
        guard let t = old.type(named: typeName) ?? new.type(named: typeName) else { return false }
        dataDeleted.insert(typeName)
        do {
            try openTx.dropPartition(t.partition)
            if let p = t.primaryKeyPartition { try openTx.dropPartition(p) }
        } catch {
            errors.append("deleting the data of \(typeName) failed: \(error)")
        }
        written[t.partition] = nil
        streamed[t.partition] = nil
        rewritingWhole.remove(t.partition)
        streamTarget = nil
        if declared[typeName] == nil { new.types.removeAll { $0.name == typeName } }
        return true
    }

    /// Renames a property, keeping its values: the new property takes the old one's field id. Cheap: no
    /// record is rewritten. Renames may chain through names in neither model (`a → tmp`, `tmp → b`); a name
    /// left outside the new model when the block returns fails the migration, as in Realm.
    public func renameProperty(onType typeName: String, from oldName: String, to newName: String) {
        guard mode != .transformsOnly else { return }
        let newIndex = new.types.firstIndex { $0.name == typeName && declared[typeName] != nil }
        guard let oldType = old.type(named: typeName) else {
            errors.append(newIndex == nil
                ? "Cannot rename properties for type '\(typeName)' because it does not exist."
                : "Cannot rename property '\(typeName).\(oldName)' because it does not exist.")
            return
        }
        guard let ti = newIndex else {
            errors.append("Cannot rename properties for type '\(typeName)' because it has been removed from the Realm.")
            return
        }
        if new.types[ti].properties.contains(where: { $0.name == oldName }) {
            errors.append("Cannot rename property '\(typeName).\(oldName)' to '\(newName)' because the source property still exists.")
            return
        }
        // Records streamed under the names before the rename come back as states, which renames follow.
        unstreamAll(new.types[ti])
        var names = renamed[typeName] ?? Dictionary(oldType.properties.map { ($0.name, $0.fieldId) }, uniquingKeysWith: { a, _ in a })
        guard let fieldId = names[oldName] else {
            errors.append("Cannot rename property '\(typeName).\(oldName)' because it does not exist.")
            return
        }
        names[oldName] = nil
        if let pi = new.types[ti].properties.firstIndex(where: { $0.name == newName }),
            let oldProperty = oldType.properties.first(where: { $0.fieldId == fieldId })
        {
            let target = new.types[ti].properties[pi]
            let from = SchemaDiff.typeName(oldProperty), to = SchemaDiff.typeName(target)
            if from != to {
                errors.append("Cannot rename property '\(typeName).\(oldName)' to '\(newName)' because it would change from type '\(from)' to '\(to)'.")
                return
            }
            if (oldProperty.isOptional && !target.isOptional) || (oldProperty.hasOptionalElements == true && target.hasOptionalElements == false) {
                errors.append("Cannot rename property '\(typeName).\(oldName)' to '\(newName)' because it would change from optional to required.")
                return
            }
            new.types[ti].properties[pi].fieldId = fieldId
            intermediateNames[typeName]?.remove(newName)
        } else {
            // An intermediate name of a chain: it must be renamed again before the block returns.
            intermediateNames[typeName, default: []].insert(newName)
        }
        intermediateNames[typeName]?.remove(oldName)
        names[newName] = fieldId
        renamed[typeName] = names
    }

    /// The next placeholder key per partition of a type with an Int primary key (see `create`).
    var placeholderKeys: [UInt32: Int64] = [:]

    /// Names that renames left outside the new model, per type (an error unless renamed again).
    var intermediateNames: [String: Set<String>] = [:]

    /// Writes what the block did into the opening transaction and returns the schema to store. Types left to
    /// migrate online get pending entries in it, and `installed` says how to read them.
    /// The types whose records this migration writes, deletes or drops inside the open.
    var rewrittenTypes = Set<String>()
}
