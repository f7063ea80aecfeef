import Engine
import Foundation

// Invariants:
// (1) A record passes through exactly one generation's transforms: the one with the smallest `fromVersion`
//     at or above the record's own version. The block called with that version registers, in Realm's
//     cumulative style, every step from there to the current version.
// (2) A record written at the current schema version never passes through a transform, so a record the
//     background migrator rewrote is never transformed twice.
// (3) A TypeMigration is immutable once installed and outlives the pending entry it serves: old snapshots
//     may still hold records that need it.

/// A per-object transform registered with `Migration.transformObjects(ofType:_:)`.
typealias ObjectTransform = (_ oldObject: MigrationObject, _ newObject: MigrationObject) -> Void

/// How the records of one object type written under older schema versions become objects of the current one.
final class TypeMigration: @unchecked Sendable {
    struct Generation {
        /// Records of this version or older (and newer than the previous generation's) use this generation.
        let fromVersion: UInt64
        /// The type as it was at `fromVersion`: what the transforms' old objects show.
        let oldType: StoredSchema.StoredType
        let transforms: [ObjectTransform]
    }

    let typeName: String
    let newType: StoredSchema.StoredType
    let newVersion: UInt64
    /// The layout migrated records are written in.
    let newLayout: RecordLayout
    /// The declared defaults of the current model, by property name.
    let defaults: [String: StoredValue]
    let generations: [Generation]
    /// Called the first time a read passes a record through the transforms (the migrator then takes this type next).
    let onFirstUse: (@Sendable (String) -> Void)?
    private let used = AtomicFlag()

    init(
        typeName: String, newType: StoredSchema.StoredType, newVersion: UInt64, defaults: [String: StoredValue],
        generations: [Generation], onFirstUse: (@Sendable (String) -> Void)? = nil
    ) {
        self.typeName = typeName
        self.newType = newType
        self.newVersion = newVersion
        newLayout = RecordLayout(newType.properties)
        self.defaults = defaults
        self.generations = generations.sorted { $0.fromVersion < $1.fromVersion }
        self.onFirstUse = onFirstUse
    }

    /// The generation whose transforms a record of `version` passes through, or nil when it needs none.
    func generation(for version: UInt64) -> Generation? {
        guard version < newVersion else { return nil }
        return generations.first { $0.fromVersion >= version }
    }

    /// Runs `generation`'s transforms on a record's fields into `newObject`'s state. Mistakes go to `report`
    /// when given (open, the background migrator), and trap otherwise, naming the type and the property, as
    /// RealmSwift's exceptions in migration blocks do.
    static func run(
        _ generation: Generation, typeName: String, fields: FieldValues, into state: DynamicState,
        report: MigrationReporter?
    ) {
        let old = DynamicState(type: generation.oldType, values: fields, writable: false, defaults: [:])
        old.report = report
        state.report = report
        let oldObject = DynamicObject()
        oldObject._dynamic = old
        let newObject = DynamicObject()
        newObject._dynamic = state
        if Migration.runningTransform == typeName {
            // A batch already marked the thread (setting a task-local costs an allocation per call).
            for transform in generation.transforms { transform(oldObject, newObject) }
        } else {
            Migration.$runningTransform.withValue(typeName) {
                for transform in generation.transforms { transform(oldObject, newObject) }
            }
        }
        state.modified = true
    }

    /// A record's fields under the current schema, through its generation's transforms; nil when the record
    /// needs no transform.
    func migrate(fields: FieldValues, version: UInt64, report: MigrationReporter? = nil) -> FieldValues? {
        guard let generation = generation(for: version) else { return nil }
        if onFirstUse != nil, used.setOnce() { onFirstUse?(typeName) }
        let state = DynamicState(type: newType, values: fields, writable: true, defaults: defaults)
        Self.run(generation, typeName: typeName, fields: fields, into: state, report: report)
        return state.values
    }

    /// A record rewritten at the current version: every property of the new type, as `Migration` writes them.
    func encode(_ values: FieldValues) -> [UInt8] {
        let fields = newType.properties.map { p -> (id: UInt32, value: StoredValue) in
            (p.fieldId, values[p.fieldId] ?? defaults[p.name] ?? .null)
        }
        return ObjectRecord.encode(schemaVersion: newVersion, fields: fields, layout: newLayout)
    }
}

/// A flag set once, from any thread.
final class AtomicFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    /// Sets the flag; true only for the call that set it.
    func setOnce() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        if value { return false }
        value = true
        return true
    }
}
