import Engine
import Foundation

/// Collects the mistakes made in migration closures; one per open or per migrator batch, shared by every
/// object it hands out (a closure per object would cost an allocation each).
final class MigrationReporter {
    var messages: [String] = []
    /// The migration the objects belong to (links read through them give its objects). Held here, once, not
    /// by each object: a weak reference per object would move every retain of the migration to the slow path.
    weak var migration: Migration?
    /// The declared types with a property whose public name is not its stored one (`propertiesMapping()`):
    /// only their new objects look names up in the model first.
    var mappedTypes: Set<String> = []
}

/// The values of an object handed to a migration block, under one stored schema.
///
/// A state belongs to one migration on one thread: dynamic exclusivity checks are off for its state.
final class DynamicState: CustomStringConvertible {
    let type: StoredSchema.StoredType
    /// The values set on the object; every value once the object stopped viewing its record (`values`).
    @exclusivity(unchecked) private(set) var fields: FieldValues
    /// The record the object reads the fields it was not given from (a row view, decoded a field at a time):
    /// a copy of its bytes, kept in this buffer from record to record, in `rowLayout`. Nil layout: no record.
    @exclusivity(unchecked) private var rowBytes: [UInt8] = []
    @exclusivity(unchecked) private(set) var rowLayout: RecordLayout?
    @exclusivity(unchecked) private var rowPlaces = RecordLayout.Places(fixedStart: 0, tableStart: 0, variableStart: 0, minimumLength: 0)
    let writable: Bool
    let defaults: [String: StoredValue]
    @exclusivity(unchecked) var modified = false
    /// Whether the block set the primary key (which means re-keying the type).
    @exclusivity(unchecked) var wrotePrimaryKey = false
    /// Inside a migration, mistakes are recorded here (the open then throws) instead of trapping.
    @exclusivity(unchecked) var report: MigrationReporter?
    /// The object's key, when it is one the migration handed out (links to it store the key).
    @exclusivity(unchecked) var key: Int64?
    /// The migration that handed it out: links read through it give objects (`MigrationObject`s).
    var migration: Migration? { report?.migration }

    init(type: StoredSchema.StoredType, values: FieldValues, writable: Bool, defaults: [String: StoredValue]) {
        self.type = type
        self.fields = values
        self.writable = writable
        self.defaults = defaults
    }

    /// Every value of the object, its record's included: the object stops viewing its record (work on whole
    /// objects asks for this; reading and writing single properties does not).
    var values: FieldValues {
        get {
            materialize()
            return fields
        }
        _modify {
            materialize()
            yield &fields
        }
    }

    /// The object's values become `record`'s, read in place as they are asked for (format 2 records of a
    /// layout `layouts` has) or decoded now (format 1); values set before are forgotten.
    func view(_ record: UnsafeRawBufferPointer, layouts: RecordLayouts) throws {
        if record.first == RecordLayout.format, let layout = layouts.layout(try ObjectRecord.schemaVersion(record)) {
            rowPlaces = try layout.checkedPlaces(record)
            rowLayout = layout
            rowBytes.removeAll(keepingCapacity: true)
            rowBytes.append(contentsOf: record)
            fields.removeAll()
        } else {
            rowLayout = nil
            fields.replaceAll(with: try ObjectRecord.decodeAll(record, layouts: layouts).fields)
        }
    }

    /// Replaces every value of the object (it stops viewing a record).
    func setValues(_ values: FieldValues) {
        rowLayout = nil
        fields.replaceAll(with: values)
    }

    /// Calls `body` with the record the object views and its places; nil when it views none.
    func withRow<R>(_ body: (UnsafeRawBufferPointer, RecordLayout, RecordLayout.Places) throws -> R) rethrows -> R? {
        guard let layout = rowLayout else { return nil }
        return try rowBytes.withUnsafeBytes { try body($0, layout, rowPlaces) }
    }

    /// Field `id`'s value: set on the object, or read from its record; nil when neither has the field.
    func field(_ id: UInt32) -> StoredValue? {
        if let v = fields[id] { return v }
        guard let layout = rowLayout, let i = layout.fields.firstIndex(where: { $0.id == id }) else { return nil }
        do {
            return try rowBytes.withUnsafeBytes { try layout.value(i, in: $0, rowPlaces) }
        } catch {
            damaged(error)
            return nil
        }
    }

    private func materialize() {
        guard let layout = rowLayout else { return }
        rowLayout = nil
        do {
            try rowBytes.withUnsafeBytes { raw in
                for (i, f) in layout.fields.enumerated() where fields[f.id] == nil {
                    fields.appendNew(f.id, try layout.value(i, in: raw, rowPlaces))
                }
            }
        } catch {
            damaged(error)
        }
    }

    private func damaged(_ error: any Error) {
        fail("an object of \(type.name)\(key.map { " (key \($0))" } ?? "") has a damaged record: \(error)\(RealmCore.damageAdvice)")
    }

    func property(_ key: String) -> StoredSchema.StoredProperty? {
        for r in resolved where r.name == key { return type.properties[r.index] }
        guard let i = propertyIndex(key) else {
            // Realm's text (M058), then which object of the migration it was.
            fail("Invalid property name '\(key)' for class '\(type.name)'. (an \(writable ? "new" : "old") object of the migration)")
            return nil
        }
        if resolved.count < 32 { resolved.append((key, i)) }
        return type.properties[i]
    }

    private func propertyIndex(_ key: String) -> Int? {
        // A new object also answers to the model's public names (`propertiesMapping()`, M071).
        if writable, let report, !report.mappedTypes.isEmpty, report.mappedTypes.contains(type.name),
            let info = migration?.declared[type.name], let declared = info.schema.properties.first(where: { $0.name == key }),
            declared.columnName != key, let i = type.properties.firstIndex(where: { $0.name == declared.columnName })
        {
            return i
        }
        return type.properties.firstIndex(where: { $0.name == key })
    }

    /// The names looked up so far with their property's index. A state is handed out again for the next
    /// object of a streaming enumeration, so a closure's names are resolved once per type, not per object.
    @exclusivity(unchecked) private var resolved: [(name: String, index: Int)] = []

    /// A mistake: recorded when a migration is listening, a trap otherwise (as RealmSwift's exceptions).
    func fail(_ message: String) {
        guard let report else { fatalError(message) }
        report.messages.append(message)
    }

    func stored(forKey key: String) -> StoredValue {
        guard let p = property(key) else { return .null }
        return stored(p)
    }

    func stored(_ p: StoredSchema.StoredProperty) -> StoredValue {
        let v = field(p.fieldId) ?? defaults[p.name] ?? .null
        return v.isNull && !p.isOptional ? (defaults[p.name] ?? v) : v
    }

    func value(forKey key: String) -> Any? {
        guard let p = property(key) else { return nil }
        let v = stored(p)
        // Collections are live views typed as RealmSwift types them (`List<MigrationObject>`, `Map<String, Int>`…).
        if (p.isList ?? false) || (p.isMap ?? false) { return MigrationCollection.view(of: self, p) }
        // Links read as the objects they name (in this object's schema, old or new).
        if p.type == .object, let target = p.objectClassName, let migration {
            guard case .link(let k) = v else { return nil }
            return migration.linkedObject(target, key: k, old: !writable)
        }
        // An AnyRealmValue holding an object reads as that object, a migration object.
        if p.type == .any, let (className, k) = AnyRealmValue.objectReference(v), let migration {
            return migration.linkedObject(className, key: k, old: !writable)
        }
        return v.anyValue
    }

    /// The stored form of an object given for link or collection property `p`: a link to an object this
    /// migration handed out, to an unmanaged model object (added to the new schema now), or to a new object
    /// made from a dictionary or an array; `.null` for nil; nil (after reporting it) for anything else.
    func link(to value: Any?, for p: StoredSchema.StoredProperty) -> StoredValue? {
        guard let migration else {
            fail("Objects can be assigned to '\(type.name).\(p.name)' only inside a migration")
            return nil
        }
        return migration.link(to: value, target: p.objectClassName ?? "", property: "\(type.name).\(p.name)")
    }

    /// Replaces collection property `p`'s stored elements.
    func setCollection(_ items: [StoredValue], of p: StoredSchema.StoredProperty) {
        guard writable else {
            fail("Cannot modify '\(type.name).\(p.name)' of an old object in a migration: old objects are read-only; write the new object")
            return
        }
        fields[p.fieldId] = .list(items)
        modified = true
    }

    func setValue(_ value: Any?, forKey key: String) {
        guard writable else {
            fail("Cannot modify '\(type.name).\(key)' of an old object in a migration: old objects are read-only; write the new object")
            return
        }
        guard let p = property(key) else { return }
        if p.isMap ?? false {
            // A map: a dictionary (or a Map), stored as its keys in order with their values.
            let dict: [String: Any?]
            if let d = value as? [String: Any?] {
                dict = d
            } else if let d = value as? [String: Any] {
                dict = d.mapValues { Optional($0) }
            } else if let storage = value as? any ListStorage {
                let flat = storage.anyElements
                dict = Dictionary(stride(from: 0, to: flat.count - 1, by: 2).compactMap { i in (flat[i] as? String).map { ($0, flat[i + 1]) } },
                                  uniquingKeysWith: { _, b in b })
            } else {
                fail("Invalid value '\(String(describing: value))' for Map property '\(type.name).\(key)': give a dictionary")
                return
            }
            var items: [StoredValue] = []
            for (k, v) in dict.sorted(by: { $0.key < $1.key }) {
                let stored: StoredValue?
                if p.type == .object {
                    stored = link(to: v, for: p)
                } else {
                    stored = StoredValue.from(any: v, as: p.type).flatMap { $0.isNull ? (p.isOptional ? $0 : nil) : (Self.fits($0, p.type) ? $0 : nil) }
                }
                guard let stored else {
                    fail("Invalid value '\(String(describing: v))' for key '\(k)' of Map property '\(type.name).\(key)'")
                    return
                }
                items += [.string(k), stored]
            }
            setCollection(items, of: p)
            return
        }
        if p.isList ?? false {
            // A list or set: an array, a List, a MutableSet, any sequence.
            guard let elements = TypeInfo.elements(of: value) else {
                fail("Invalid value '\(String(describing: value))' for collection property '\(type.name).\(key)': give an array")
                return
            }
            var items: [StoredValue] = []
            for e in elements {
                let stored = p.type == .object ? link(to: e, for: p) : StoredValue.from(any: e, as: p.type).flatMap { Self.fits($0, p.type) ? $0 : nil }
                guard let stored else {
                    fail("Invalid value '\(String(describing: value))' for collection property '\(type.name).\(key)'")
                    return
                }
                if (p.isSet ?? false) && items.contains(stored) { continue }
                items.append(stored)
            }
            setCollection(items, of: p)
            return
        }
        if p.type == .object {
            guard let v = link(to: value, for: p) else { return }
            fields[p.fieldId] = v
            modified = true
            return
        }
        if p.type == .any {
            // An AnyRealmValue: any value, or an object (a migration object, or an unmanaged one added now).
            func object(_ o: Object) -> StoredValue? {
                let className = o._dynamic?.type.name ?? Swift.type(of: o).className()
                guard let migration, case .link(let k)? = migration.link(to: o, target: className, property: "\(type.name).\(key)") else { return nil }
                return AnyRealmValue.objectForm(className, k)
            }
            let stored: StoredValue?
            switch value {
            case nil, is NSNull: stored = .null
            case let any as AnyRealmValue:
                if case .object(let o) = any { stored = object(o) } else { stored = any.storedForm }
            case let o as Object: stored = object(o)
            default: stored = StoredValue.from(any: value)
            }
            guard let stored else {
                fail("Invalid value '\(String(describing: value))' of type '\(Swift.type(of: value))' for 'mixed' property '\(type.name).\(key)'.")
                return
            }
            fields[p.fieldId] = stored
            modified = true
            return
        }
        guard let v = StoredValue.from(any: value, as: p.type), v.isNull || Self.fits(v, p.type) else {
            fail(Self.invalidValue(value, p, type.name))
            return
        }
        guard !v.isNull || p.isOptional else {
            fail(Self.invalidValue(nil, p, type.name))
            return
        }
        fields[p.fieldId] = v
        if p.isPrimaryKey { wrotePrimaryKey = true }
        modified = true
    }

    /// RealmSwift's text for a value of the wrong type (M061): `Invalid value '<v>' of type '<class>' for
    /// '<type>[?]'[ array| set| dictionary] property '<Type>.<prop>'.`
    static func invalidValue(_ value: Any?, _ p: StoredSchema.StoredProperty, _ typeName: String) -> String {
        let kind = (p.isMap ?? false) ? " dictionary" : (p.isList ?? false) ? ((p.isSet ?? false) ? " set" : " array") : ""
        return TypeInfo.invalidValueMessage(
            value, type: p.type, target: p.objectClassName, nullable: p.isOptional, collection: kind, property: "\(typeName).\(p.name)")
    }

    static func fits(_ v: StoredValue, _ t: PropertyType) -> Bool {
        switch (v, t) {
        case (.bool, .bool), (.int, .int), (.float, .float), (.double, .double), (.string, .string), (.data, .data),
            (.date, .date), (.uuid, .UUID), (.objectId, .objectId), (.link, .object), (.decimal, .decimal128):
            return true
        default:
            return false
        }
    }

    var description: String {
        "\(type.name) {\n" + type.properties.map { "\t\($0.name) = \(Object.describe(stored(forKey: $0.name)));" }.joined(separator: "\n") + "\n}"
    }
}

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
    private(set) var new: StoredSchema {
        didSet {
            layoutCache = [:]
            streamTarget = nil
        }
    }
    /// The record layouts of each partition read so far (`layouts(_:)`).
    @exclusivity(unchecked) private var layoutCache: [UInt32: RecordLayouts] = [:]

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
    private(set) var transforms: [String: [ObjectTransform]] = [:]
    /// Transforms of older pending versions (from transforms-only calls), by version and type.
    private let prior: [UInt64: [String: [ObjectTransform]]]
    private var enumerated = Set<String>()
    private var dataDeleted = Set<String>()
    /// The online migrations the open leaves pending, and how to read their types, once `finish` has run.
    private(set) var installed: [String: TypeMigration] = [:]
    /// Objects written in this migration, by partition and key: field id -> value under the new schema.
    @exclusivity(unchecked) private var written: [UInt32: [Int64: DynamicState]] = [:]
    /// Objects a blocking migration's enumeration wrote into the transaction as their closure returned (no
    /// state kept), by partition; `unstream` brings one back as a state of `written`.
    @exclusivity(unchecked) private var streamed: [UInt32: StreamedRecords] = [:]
    /// Where the type streamed last writes (reset when the new schema changes).
    private final class StreamTarget {
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
    @exclusivity(unchecked) private var streamTarget: StreamTarget?
    @exclusivity(unchecked) private var deleted: [UInt32: Set<Int64>] = [:]
    private var nextKeys: [UInt32: Int64] = [:]
    /// Mistakes made by the block and its closures: the open fails with them, writing nothing.
    private let reporter = MigrationReporter()
    private var errors: [String] {
        get { reporter.messages }
        set { reporter.messages = newValue }
    }
    /// Names in the old schema as renames have moved them, per type: name -> field id.
    private var renamed: [String: [String: UInt32]] = [:]

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

    private var isOnline: Bool { mode == .open(online: true) }

    /// Traps when called from inside a transform, as the operation would not be deferrable.
    private func refuseInsideTransform(_ operation: String) {
        if let typeName = Self.runningTransform {
            fatalError(
                "Migration.\(operation) was called inside transformObjects(ofType: \"\(typeName)\"): a transform may only read its "
                    + "old object and write its new one. Use enumerateObjects(ofType: \"\(typeName)\") for work that creates, deletes "
                    + "or reads other objects.")
        }
    }

    /// The write transaction of the open (absent only in transforms-only calls, which write nothing).
    private var openTx: WriteTransaction {
        guard let tx else { fatalError("a transforms-only migration call has no transaction") }
        return tx
    }

    static func defaults(_ info: TypeInfo?) -> [String: StoredValue] {
        guard let info else { return [:] }
        return Dictionary(zip(info.schema.properties.map(\.columnName), info.defaults), uniquingKeysWith: { a, _ in a })
    }

    /// How records of `typeName` from older pending online migrations reach the new schema (nil when none).
    private func priorMigration(_ typeName: String) -> TypeMigration? {
        let entries = old.pending(for: typeName)
        guard !entries.isEmpty, let newType = new.type(named: typeName) else { return nil }
        return TypeMigration(
            typeName: typeName, newType: newType, newVersion: new.schemaVersion, defaults: defaults(for: typeName),
            generations: entries.map { .init(fromVersion: $0.fromVersion, oldType: $0.oldType, transforms: prior[$0.fromVersion]?[typeName] ?? []) })
    }

    /// A record's state under the new schema, writable: through an older pending migration's transforms
    /// when its version has one, as read under the new schema otherwise.
    private func freshState(_ newType: StoredSchema.StoredType, version: UInt64, fields: FieldValues, through migration: TypeMigration?) -> DynamicState {
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
                         isSet: ($0.isSet ?? false) && !($0.isMap ?? false), isMap: $0.isMap ?? false)
            },
            isEmbedded: t.isEmbedded ?? false, objectClass: nil)
    }

    /// Declared defaults by column name, per type (asked for once per migrated object).
    @exclusivity(unchecked) private var defaultsByType: [String: [String: StoredValue]] = [:]

    private func defaults(for typeName: String) -> [String: StoredValue] {
        if let cached = defaultsByType[typeName] { return cached }
        let d = Self.defaults(declared[typeName])
        defaultsByType[typeName] = d
        return d
    }

    private func dynamic(_ state: DynamicState) -> MigrationObject {
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
    private func newModelType(_ typeName: String) -> StoredSchema.StoredType? {
        guard declared[typeName] != nil || (core.configuration.objectTypes == nil && ModelDiscovery.schemaClasses.isEmpty) else { return nil }
        return new.type(named: typeName)
    }

    /// Every object of `typeName` in the old partition, old and new, with the generation of an older pending
    /// migration that already brought it to the new schema (if any).
    private func forEachOldObject(_ typeName: String, _ body: (MigrationObject, MigrationObject?, TypeMigration.Generation?) -> Void) {
        guard let oldType = old.type(named: typeName) else { return }
        let newType = newModelType(typeName)
        let migration = priorMigration(typeName)
        let streams = newType.map(self.streams) ?? false
        // An old object (with its state) the block did not keep is handed out again for the next record, and so
        // is a streamed new one: no allocation per object for them.
        var spareOld: MigrationObject? = nil
        var spareNew: MigrationObject? = nil
        do {
            // The block runs as the scan reaches each object: nothing is collected first.
            let layouts = layouts(oldType.partition)
            try openTx.snapshot.scan(oldType.partition) { k, v in
                guard let key = ObjectKey.decode(k), deleted.isEmpty || !(deleted[oldType.partition]?.contains(key) ?? false) else { return true }
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
                    return true
                }
                var newObject: MigrationObject
                if let state = written[newType.partition]?[key] ?? unstream(newType, key) {
                    state.key = key
                    newObject = dynamic(state)
                } else {
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
                written[newType.partition, default: [:]][key] = newObject._dynamic!
                body(oldObject, newObject, generation)
                if isKnownUniquelyReferenced(&oldObject), isKnownUniquelyReferenced(&oldObject._dynamic!) { spareOld = oldObject }
                // Not when the block deleted the object (`delete` forgot its state already), nor when the key now
                // holds another object (deleted and created again with the same key in the block).
                guard streams, deleted.isEmpty || !(deleted[newType.partition]?.contains(key) ?? false),
                    written[newType.partition]?[key] === newObject._dynamic
                else { return true }
                // Streamed unless the block kept the object, its state (a collection of it) or needs it later.
                guard isKnownUniquelyReferenced(&newObject) else { return true }
                written[newType.partition]?[key] = nil
                let unique = isKnownUniquelyReferenced(&newObject._dynamic!)
                let state = newObject._dynamic!
                guard unique, state.modified, !state.wrotePrimaryKey else {
                    written[newType.partition, default: [:]][key] = state
                    return true
                }
                try stream(state, key: key, typeName: newType.name)
                spareNew = newObject
                return true
            }
        } catch {
            errors.append("migrating the objects of \(typeName) failed: \(error)")
        }
    }

    /// Whether objects of `t` are written into the transaction as their enumeration closure returns (inside
    /// open, in either mode: an enumerated type is migrated whole there): for a type whose records need no
    /// whole-type work at the end (a primary-key change, an embedded type's parent counts). A type with a
    /// primary-key index streams too: an object whose key the block did not write keeps its index entry, and
    /// one whose key it wrote is kept as a state (`stream` is not called for it), which makes `finish` check
    /// and rebuild the type's keys, every streamed object brought back first.
    private func streams(_ t: StoredSchema.StoredType) -> Bool {
        !primaryKeyChanged(t) && !(t.isEmbedded ?? false)
    }

    /// Writes a state's record into the transaction now, in the new type as it stands, and forgets the state.
    private func stream(_ state: DynamicState, key: Int64, typeName: String) throws {
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
        if tx.batchBytes >= core.configuration.migrationSpillBytes {
            // The batch goes to segments of the transaction's own: memory stays bounded whatever the type's size.
            try tx.spill()
            for records in streamed.values { records.spilled() }
        }
    }

    /// The fields of a streamed object: its old record's (as `freshState` starts from them) with its streamed
    /// record's over them.
    private func streamedFields(_ t: StoredSchema.StoredType, _ key: Int64, _ range: Range<Int>, _ records: StreamedRecords) throws -> FieldValues {
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
    private func unstream(_ t: StoredSchema.StoredType, _ key: Int64) -> DynamicState? {
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
    private func unstreamAll(_ t: StoredSchema.StoredType) {
        guard let records = streamed[t.partition] else { return }
        for (key, _) in records.all { _ = unstream(t, key) }
        streamed[t.partition] = nil
        streamTarget = nil
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

    /// A new object of `t` in the new schema with `value`: a dictionary by name, an array in property order,
    /// or an unmanaged model object's values (its links and lists added too).
    private func insert(_ t: StoredSchema.StoredType, value: Any) -> DynamicState {
        let state = DynamicState(type: t, values: FieldValues(), writable: true, defaults: defaults(for: t.name))
        state.report = reporter
        if let object = value as? Object, object._dynamic == nil {
            let info = TypeRegistry.info(for: type(of: object))
            for (i, p) in info.schema.properties.enumerated() where t.properties.contains(where: { $0.name == p.columnName }) {
                if info.linkTargets[i] != nil {
                    state.setValue(info.linkedObject(of: object, at: i), forKey: p.columnName)
                } else if info.listTargets[i] != nil {
                    // The collection itself: the state's setter takes a List, a MutableSet or a Map.
                    state.setValue(info.listStorage(of: object, at: i) ?? (p.isMap ? [String: Any?]() : [Any?]()) as Any, forKey: p.columnName)
                } else {
                    state.setValue(info.storedValue(of: object, at: i).anyValue, forKey: p.columnName)
                }
            }
        } else if let dict = value as? [String: Any?] ?? (value as? [String: Any])?.mapValues({ Optional($0) }) {
            for (k, v) in dict { state.setValue(v, forKey: k) }
        } else if let array = value as? [Any?] ?? (value as? [Any])?.map({ Optional($0) }) {
            for (i, v) in array.enumerated() where i < t.properties.count { state.setValue(v, forKey: t.properties[i].name) }
        } else {
            errors.append("Invalid value '\(value)' to create an object of type '\(t.name)': give a dictionary, an array or an object")
        }
        state.modified = true
        // A key of its own, whatever its primary key: keys may repeat until the block returns (an Int key moves
        // the object to it then, and duplicates fail the migration), so a create never replaces another object.
        var key: Int64
        // Whether the type's keys must be checked and rebuilt when the block returns (`rebuildPrimaryKeys`).
        var needsRebuild = t.properties.contains(where: \.isPrimaryKey)
        if let pk = t.properties.first(where: \.isPrimaryKey), pk.type == .int {
            // An Int primary key is the object key: taken at once when free, so links to the new object hold.
            // When another object has it, a placeholder from the bottom of the key space stands in until the
            // block returns; then the object moves to its key, or the duplicate fails the migration.
            if case .int(let v) = state.stored(forKey: pk.name), !keyIsTaken(v, in: t) {
                key = v
                // No other object can hold that value (an Int key is its object's key, and one whose key the
                // block changes is rebuilt anyway): nothing to move or check for this one.
                needsRebuild = false
            } else {
                key = placeholderKeys[t.partition] ?? Int64.min
                while keyIsTaken(key, in: t) { key += 1 }
                placeholderKeys[t.partition] = key + 1
            }
        } else {
            key = allocateKey(for: t)
        }
        state.wrotePrimaryKey = needsRebuild
        state.key = key
        // A key freed by a delete in this block now belongs to the new object (its put replaces the record).
        deleted[t.partition]?.remove(key)
        written[t.partition, default: [:]][key] = state
        return state
    }

    /// Unmanaged model objects already added by assigning them, with their keys (the objects are kept, so
    /// that their identifiers stay theirs).
    private var adopted: [ObjectIdentifier: (object: Object, key: Int64)] = [:]

    /// The stored link for an object assigned to property `property` (`Type.name`) linking to `target`: an
    /// object this migration handed out, an unmanaged model object (added now, once), or a dictionary or
    /// array for a new object (embedded ones included); `.null` for nil. Reports anything else and gives nil.
    func link(to value: Any?, target: String, property: String) -> StoredValue? {
        switch value {
        case nil, is NSNull:
            return .null
        case let o as Object where o._dynamic != nil:
            guard let state = o._dynamic, let key = state.key else {
                errors.append("Cannot set '\(property)' to an object this migration did not hand out")
                return nil
            }
            guard state.type.name == target else {
                errors.append("Cannot set '\(property)' to an object of type '\(state.type.name)': it links to '\(target)'")
                return nil
            }
            return .link(key)
        case let o as Object:
            let name = type(of: o).className()
            guard name == target, let t = new.type(named: target) else {
                errors.append("Cannot set '\(property)' to an object of type '\(name)': it links to '\(target)'")
                return nil
            }
            guard o._accessor == nil else {
                errors.append("Cannot set '\(property)' to a managed '\(name)': in a migration, link objects the migration hands out")
                return nil
            }
            if let known = adopted[ObjectIdentifier(o)] { return .link(known.key) }
            let state = insert(t, value: o)
            guard let key = state.key else { return nil }
            adopted[ObjectIdentifier(o)] = (o, key)
            return .link(key)
        case let some?:
            guard let t = new.type(named: target) else {
                errors.append("Object type '\(target)' not managed by the Realm")
                return nil
            }
            guard some is [String: Any] || some is [String: Any?] || some is [Any] || some is [Any?] else {
                errors.append("Invalid value '\(some)' for '\(property)': give an object, a dictionary or an array")
                return nil
            }
            return insert(t, value: some).key.map { .link($0) }
        }
    }

    /// A type the code now declares embedded that was top-level needs exactly one parent per object once the
    /// block has run: a link or list entry of another object. An object without one would be lost, one with
    /// several cannot be embedded; either is an error with the counts.
    /// Types made embedded in this migration, after the block, as RealmSwift converts them: an object no
    /// parent links to is deleted; an object with several parents is copied, so that each parent has its own;
    /// a link from an AnyRealmValue property (which cannot hold an embedded object) fails the migration.
    private func convertToEmbedded() throws {
        for t in new.types where t.isEmbedded ?? false {
            guard let before = old.type(named: t.name), !(before.isEmbedded ?? false) else { continue }
            // Every incoming link: (parent type, parent key, property, position in a collection's items).
            var incoming: [Int64: [(type: StoredSchema.StoredType, key: Int64, property: StoredSchema.StoredProperty, item: Int?)]] = [:]
            // Every stored type counts as a parent, in the model or not: its objects and their links stay in the file.
            for u in new.types {
                let links = u.properties.filter { $0.type == .object && $0.objectClassName == t.name }
                let mixed = u.properties.filter { $0.type == .any }
                guard !links.isEmpty || !mixed.isEmpty else { continue }
                try forEachObject(after: u) { key, fields in
                    for p in links {
                        switch fields[p.fieldId] ?? .null {
                        case .link(let k): incoming[k, default: []].append((u, key, p, nil))
                        case .list(let items):
                            for (i, item) in items.enumerated() {
                                if case .link(let k) = item { incoming[k, default: []].append((u, key, p, i)) }
                            }
                        default: break
                        }
                    }
                    for p in mixed where Self.holdsObject(of: t.name, fields[p.fieldId] ?? .null) {
                        errors.append(
                            "Cannot convert '\(t.name)' to embedded: there is an incoming link from the Mixed property '\(u.name).\(p.name)', "
                                + "which does not support linking to embedded objects.")
                    }
                }
            }
            guard errors.isEmpty else { return }
            var children: [(key: Int64, values: FieldValues)] = []
            try forEachObject(after: t) { key, fields in children.append((key, fields)) }
            for (key, values) in children {
                let parents = incoming[key] ?? []
                if parents.isEmpty {
                    deleted[t.partition, default: []].insert(key)
                    written[t.partition]?[key] = nil
                    continue
                }
                // The first parent keeps the object; each other one gets a copy of its own.
                for parent in parents.dropFirst() {
                    let copy = DynamicState(type: t, values: values, writable: true, defaults: defaults(for: t.name))
                    copy.modified = true
                    copy.report = reporter
                    let copyKey = allocateKey(for: t)
                    copy.key = copyKey
                    written[t.partition, default: [:]][copyKey] = copy
                    guard let owner = try writableState(parent.type, key: parent.key) else { continue }
                    if let item = parent.item, case .list(var items) = owner.values[parent.property.fieldId] ?? .null, item < items.count {
                        items[item] = .link(copyKey)
                        owner.values[parent.property.fieldId] = .list(items)
                    } else {
                        owner.values[parent.property.fieldId] = .link(copyKey)
                    }
                    owner.modified = true
                }
            }
        }
    }

    /// The objects that `rebuildPrimaryKeys` will move, per type name: old key -> new key (an Int primary key is
    /// the object key, so an object whose key value changed moves).
    private func plannedMoves() throws -> [String: [Int64: Int64]] {
        var out: [String: [Int64: Int64]] = [:]
        for t in new.types {
            guard let pk = t.properties.first(where: \.isPrimaryKey), pk.type == .int else { continue }
            let oldType = old.type(named: t.name)
            let oldPK = oldType?.properties.first(where: \.isPrimaryKey)
            let pkChanged = pk.fieldId != oldPK?.fieldId || pk.type != oldPK?.type || oldType?.partition != t.partition
            let wrotePK = (written[t.partition] ?? [:]).values.contains { $0.wrotePrimaryKey }
            guard pkChanged || wrotePK else { continue }
            let defaults = self.defaults(for: t.name)
            var moves: [Int64: Int64] = [:]
            try forEachObject(after: t) { key, fields in
                if case .int(let target) = fields[pk.fieldId] ?? defaults[pk.name] ?? .null, target != key { moves[key] = target }
            }
            if !moves.isEmpty { out[t.name] = moves }
        }
        return out
    }

    /// Rewrites the links (to-one, List, MutableSet, Map, AnyRealmValue) that name objects about to move.
    private func relinkMovedObjects() throws {
        let moves = try plannedMoves()
        guard !moves.isEmpty else { return }
        // Links of a property of objects (a map's keys are strings and stay).
        func remapLinks(_ v: StoredValue, _ m: [Int64: Int64]) -> StoredValue {
            switch v {
            case .link(let k): return .link(m[k] ?? k)
            case .list(let items): return .list(items.map { remapLinks($0, m) })
            default: return v
            }
        }
        // Objects held by an AnyRealmValue, at any depth of its nested collections.
        func remapAny(_ v: StoredValue) -> StoredValue {
            if let (name, k) = AnyRealmValue.objectReference(v) { return AnyRealmValue.objectForm(name, moves[name]?[k] ?? k) }
            if case .list(let items) = v { return .list(items.map(remapAny)) }
            return v
        }
        func remap(_ v: StoredValue, _ p: StoredSchema.StoredProperty) -> StoredValue {
            if p.type == .any { return remapAny(v) }
            guard let m = p.objectClassName.flatMap({ moves[$0] }) else { return v }
            return remapLinks(v, m)
        }
        for u in new.types {
            let affected = u.properties.filter { p in
                p.type == .any || (p.type == .object && p.objectClassName.map { moves[$0] != nil } == true)
            }
            guard !affected.isEmpty else { continue }
            var toFix: [Int64] = []
            try forEachObject(after: u) { key, fields in
                if affected.contains(where: { p in let v = fields[p.fieldId] ?? .null; return remap(v, p) != v }) {
                    toFix.append(key)
                }
            }
            for key in toFix {
                guard let state = try writableState(u, key: key) else { continue }
                for p in affected {
                    let v = state.values[p.fieldId] ?? .null
                    let r = remap(v, p)
                    if r != v {
                        state.values[p.fieldId] = r
                        state.modified = true
                    }
                }
            }
        }
    }

    /// Whether an AnyRealmValue's stored form holds an object of `typeName`, at any depth.
    private static func holdsObject(of typeName: String, _ v: StoredValue) -> Bool {
        if let (name, _) = AnyRealmValue.objectReference(v) { return name == typeName }
        guard case .list(let items) = v else { return false }
        return items.contains { holdsObject(of: typeName, $0) }
    }

    /// The new-schema state of an object this migration writes: the one it has, or its record brought to the
    /// new schema (through its pending transforms, this call's included) and kept for writing.
    private func writableState(_ t: StoredSchema.StoredType, key: Int64) throws -> DynamicState? {
        if let state = written[t.partition]?[key] ?? unstream(t, key) { return state }
        guard let bytes = try openTx.snapshot.get(ObjectKey.bytes(key), in: t.partition) else { return nil }
        let layouts = layouts(t.partition)
        let record = try bytes.withUnsafeBytes { try ObjectRecord.decodeAll($0, layouts: layouts) }
        let gens = generations(t.name)
        let migration = gens.isEmpty ? nil : TypeMigration(
            typeName: t.name, newType: t, newVersion: new.schemaVersion, defaults: defaults(for: t.name), generations: gens)
        let state = freshState(t, version: record.schemaVersion, fields: record.fields, through: migration)
        state.key = key
        written[t.partition, default: [:]][key] = state
        return state
    }

    /// Every object of `t` as the migration leaves it (the file's objects, with the block's changes, creations
    /// and deletions), by key, with its fields.
    private func forEachObject(after t: StoredSchema.StoredType, _ body: (Int64, FieldValues) throws -> Void) throws {
        let changed = written[t.partition] ?? [:]
        let gone = deleted[t.partition] ?? []
        let records = streamed[t.partition]
        if !dataDeleted.contains(t.name) {
            let layouts = layouts(t.partition)
            try openTx.snapshot.scan(t.partition) { k, v in
                guard let key = ObjectKey.decode(k), !gone.contains(key), changed[key] == nil, !(records?.contains(key) ?? false) else { return true }
                try body(key, try ObjectRecord.decodeAll(v, layouts: layouts).fields)
                return true
            }
        }
        if let records {
            for (key, range) in records.all where !gone.contains(key) && changed[key] == nil {
                try body(key, try streamedFields(t, key, range, records))
            }
        }
        for (key, state) in changed where !gone.contains(key) { try body(key, state.values) }
    }

    /// The object of `typeName` with `key`, as links in migration objects name it: in the old schema
    /// (read-only, as the file had it) or in the new one (writable, with what the migration did to it).
    func linkedObject(_ typeName: String, key: Int64, old isOld: Bool) -> MigrationObject? {
        guard let t = isOld ? old.type(named: typeName) : new.type(named: typeName) else { return nil }
        if !isOld {
            if let state = written[t.partition]?[key] ?? unstream(t, key) { return dynamic(state) }
            if deleted[t.partition]?.contains(key) ?? false { return nil }
        }
        let record: (schemaVersion: UInt64, fields: FieldValues)
        do {
            guard let bytes = try openTx.snapshot.get(ObjectKey.bytes(key), in: t.partition) else { return nil }
            let layouts = layouts(t.partition)
            record = try bytes.withUnsafeBytes { try ObjectRecord.decodeAll($0, layouts: layouts) }
        } catch {
            errors.append("reading \(typeName) object \(key), linked from a migration object, failed: \(error)")
            return nil
        }
        if isOld {
            let state = DynamicState(type: t, values: record.fields, writable: false, defaults: [:])
            state.key = key
            return dynamic(state)
        }
        let state = freshState(t, version: record.schemaVersion, fields: record.fields, through: priorMigration(typeName))
        state.key = key
        written[t.partition, default: [:]][key] = state
        return dynamic(state)
    }

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
            if oldProperty.isOptional && !target.isOptional {
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

    /// A new object key for an object of `t` without an Int primary key: the type's counter, never a key an
    /// object has.
    private func allocateKey(for t: StoredSchema.StoredType) -> Int64 {
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
    private func prepareKeyCounter(_ t: StoredSchema.StoredType) throws {
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

    /// The next placeholder key per partition of a type with an Int primary key (see `create`).
    private var placeholderKeys: [UInt32: Int64] = [:]

    /// Whether an object of `t` has `key` now: one created or kept in this migration, or a stored one not deleted.
    private func keyIsTaken(_ key: Int64, in t: StoredSchema.StoredType) -> Bool {
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

    /// Names that renames left outside the new model, per type (an error unless renamed again).
    private var intermediateNames: [String: Set<String>] = [:]

    private func put(_ state: DynamicState, key: Int64, type t: StoredSchema.StoredType, with w: inout RecordWriter) throws {
        w.encode(state, schemaVersion: new.schemaVersion)
        let bytes = w.bytes
        try ObjectKey.withBytes(key) { try openTx.put($0, bytes, in: t.partition) }
    }

    /// When a type's primary key was added, removed or changed, or the block wrote primary-key values: checks
    /// that the keys are unique, moves objects of an Int key to that key, and rebuilds the key index. Whole-type
    /// work, inside open. Returns false when there was nothing to do.
    private func rebuildPrimaryKeys(_ t: StoredSchema.StoredType) throws -> Bool {
        let tx = openTx
        let oldType = old.type(named: t.name)
        let newPK = t.properties.first(where: \.isPrimaryKey)
        let oldPK = oldType?.properties.first(where: \.isPrimaryKey)
        let pkChanged = newPK?.fieldId != oldPK?.fieldId || newPK?.type != oldPK?.type || oldType?.partition != t.partition
        let wrotePK = newPK != nil && (written[t.partition] ?? [:]).values.contains { $0.wrotePrimaryKey }
        guard pkChanged || wrotePK else { return false }
        unstreamAll(t)
        let pending = written[t.partition] ?? [:]
        // Every object of the type, as it will be.
        var objects: [(key: Int64, state: DynamicState)] = []
        var seen = Set<Int64>()
        let defaults = self.defaults(for: t.name)
        let layouts = layouts(t.partition)
        // After deleteData, only the objects the block created count.
        try tx.snapshot.scan(t.partition) { k, v in
            guard !dataDeleted.contains(t.name), let key = ObjectKey.decode(k) else { return false }
            if deleted[t.partition]?.contains(key) == true { return true }
            seen.insert(key)
            if let state = pending[key] {
                objects.append((key, state))
            } else {
                let state = DynamicState(type: t, values: try ObjectRecord.decodeAll(v, layouts: layouts).fields, writable: true, defaults: defaults)
                state.modified = false
                objects.append((key, state))
            }
            return true
        }
        for (key, state) in pending where !seen.contains(key) { objects.append((key, state)) }
        guard let pk = newPK else {
            // The primary key was removed: keys stay, the index goes; new objects get keys above the old ones.
            if let p = oldType?.primaryKeyPartition { try tx.dropPartition(p) }
            try prepareKeyCounter(t)
            var writer = RecordWriter(t, defaults: defaults)
            for (key, state) in objects where state.modified { try put(state, key: key, type: t, with: &writer) }
            return true
        }
        // A key that is no longer an Int: objects keep their keys, new ones count above them.
        if pk.type != .int { try prepareKeyCounter(t) }
        var keyOf: [StoredValue: Int64] = [:]
        var duplicates: [StoredValue] = []
        for (key, state) in objects {
            let value = state.values[pk.fieldId] ?? defaults[pk.name] ?? .null
            if keyOf[value] != nil { duplicates.append(value) } else { keyOf[value] = key }
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
        if let p = oldType?.primaryKeyPartition { try tx.dropPartition(p) }
        // An Int primary key is the object key: such objects move. All moves delete first, then write, so that
        // one object moving onto another's old key is not deleted by it.
        var puts: [(Int64, DynamicState)] = []
        for (key, state) in objects {
            let value = state.values[pk.fieldId] ?? defaults[pk.name] ?? .null
            if pk.type == .int, case .int(let target) = value, target != key {
                try tx.delete(ObjectKey.bytes(key), in: t.partition)
                puts.append((target, state))
            } else if state.modified {
                puts.append((key, state))
            }
            if let pkPartition = t.primaryKeyPartition {
                try tx.put(PrimaryKeyIndex.entry(value), ObjectKey.bytes(key), in: pkPartition)
            }
        }
        var writer = RecordWriter(t, defaults: defaults)
        for (key, state) in puts.sorted(by: { $0.0 < $1.0 }) { try put(state, key: key, type: t, with: &writer) }
        return true
    }

    /// Whether a type's primary key was added, removed or changed: whole-type work, inside open.
    private func primaryKeyChanged(_ t: StoredSchema.StoredType) -> Bool {
        guard let oldType = old.type(named: t.name) else { return false }
        let newPK = t.properties.first(where: \.isPrimaryKey)
        let oldPK = oldType.properties.first(where: \.isPrimaryKey)
        return newPK?.fieldId != oldPK?.fieldId || newPK?.type != oldPK?.type || oldType.partition != t.partition
    }

    /// The generations of a type's online migration as it will stand after this open: older pending ones,
    /// then this call's transforms (online mode).
    private func generations(_ typeName: String) -> [TypeMigration.Generation] {
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
    private func probe(_ t: StoredSchema.StoredType, _ generations: [TypeMigration.Generation]) throws -> Bool {
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
    private func materialize(_ t: StoredSchema.StoredType, _ generations: [TypeMigration.Generation]) throws {
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

    /// Writes what the block did into the opening transaction and returns the schema to store. Types left to
    /// migrate online get pending entries in it, and `installed` says how to read them.
    /// The types whose records this migration writes, deletes or drops inside the open.
    private(set) var rewrittenTypes = Set<String>()

    /// The error a failed migration throws: Realm's code and, for one mistake, Realm's exact text.
    private func failure() -> Realm.Error {
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
