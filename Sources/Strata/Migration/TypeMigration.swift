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
        run(generation, typeName: typeName, oldObject: oldObject, newObject: newObject)
        state.modified = true
    }

    /// Runs `generation`'s transforms on objects made for them. `markThread`: set the task-local that makes a
    /// migration operation called from a transform trap; not needed once the migrations that registered the
    /// transforms are sealed (after open: reads through a pending migration, the background migrator).
    static func run(_ generation: Generation, typeName: String, oldObject: DynamicObject, newObject: DynamicObject, markThread: Bool = true) {
        if !markThread || Migration.runningTransform == typeName {
            // A batch already marked the thread (setting a task-local costs an allocation per call).
            for transform in generation.transforms { transform(oldObject, newObject) }
        } else {
            Migration.$runningTransform.withValue(typeName) {
                for transform in generation.transforms { transform(oldObject, newObject) }
            }
        }
    }

    /// Calls `body` with a record's object under the current schema, after its generation's transforms ran on
    /// it; nil when the record needs no transform. The old and new objects view the record: a transform decodes
    /// the fields it reads, and `body` reads the others from the record (or a `RecordWriter` copies them).
    /// `body` must not keep the state.
    func migrate<R>(
        _ record: UnsafeRawBufferPointer, layouts: RecordLayouts, report: MigrationReporter? = nil, _ body: (DynamicState) throws -> R
    ) throws -> R? {
        guard let generation = generation(for: try ObjectRecord.schemaVersion(record)) else { return nil }
        if onFirstUse != nil, used.setOnce() { onFirstUse?(typeName) }
        var pair = takeSpare(generation.fromVersion) ?? Spare(
            fromVersion: generation.fromVersion,
            old: DynamicState(type: generation.oldType, values: FieldValues(), writable: false, defaults: [:]),
            new: DynamicState(type: newType, values: FieldValues(), writable: true, defaults: defaults))
        // The states are reached through the objects, not held in locals: a local would keep a second
        // reference alive to the end of the function, and the pair could never be given back.
        try pair.old._dynamic!.view(record, layouts: layouts)
        pair.old._dynamic!.report = report
        do {
            let new = pair.new._dynamic!
            try new.view(record, layouts: layouts)
            new.modified = false
            new.wrotePrimaryKey = false
            new.report = report
        }
        // Only after open (its migrations are sealed): reads and the background migrator.
        Self.run(generation, typeName: typeName, oldObject: pair.old, newObject: pair.new, markThread: false)
        pair.new._dynamic!.modified = true
        let result = try body(pair.new._dynamic!)
        if isKnownUniquelyReferenced(&pair.old), isKnownUniquelyReferenced(&pair.new) { giveBack(pair) }
        return result
    }

    /// The record at the current version that `record` becomes after its generation's transforms, as the
    /// background migrator writes it (fields the transforms did not set are copied from the old record's bytes
    /// where their slot is unchanged); nil when the record needs no transform. Reads through a pending
    /// migration see exactly what the rewrite will store.
    func migratedRecord(_ record: UnsafeRawBufferPointer, layouts: RecordLayouts, report: MigrationReporter? = nil) throws -> [UInt8]? {
        // Most records read while a migration is pending may need none (already rewritten, or written since).
        guard generation(for: try ObjectRecord.schemaVersion(record)) != nil else { return nil }
        let box = takeWriter() ?? WriterBox(recordWriter())
        defer { giveBack(box) }
        return try migrate(record, layouts: layouts, report: report) { state in
            box.writer.encode(state, schemaVersion: newVersion)
            return box.writer.bytes
        }
    }

    /// A record writer kept from one `migratedRecord` to the next (its field plan and buffers), taken by one
    /// reader at a time; boxed, so that taking it moves one reference rather than copying its arrays.
    private final class WriterBox {
        var writer: RecordWriter
        init(_ writer: RecordWriter) { self.writer = writer }
    }
    private var spareWriter: WriterBox?

    private func takeWriter() -> WriterBox? {
        spareLock.lock()
        defer { spareLock.unlock() }
        let w = spareWriter
        spareWriter = nil
        return w
    }

    private func giveBack(_ w: WriterBox) {
        spareLock.lock()
        spareWriter = w
        spareLock.unlock()
    }

    /// The migration objects `migrate` hands to the transforms, kept for the next record when the transforms
    /// kept neither (nor their states' collections): one pair, taken by one reader at a time.
    private struct Spare {
        let fromVersion: UInt64
        var old: DynamicObject
        var new: DynamicObject
        init(fromVersion: UInt64, old: DynamicState, new: DynamicState) {
            self.fromVersion = fromVersion
            self.old = DynamicObject()
            self.old._dynamic = old
            self.new = DynamicObject()
            self.new._dynamic = new
        }
    }
    private let spareLock = NSLock()
    private var spare: Spare?

    private func takeSpare(_ fromVersion: UInt64) -> Spare? {
        spareLock.lock()
        defer { spareLock.unlock() }
        guard let s = spare, s.fromVersion == fromVersion else { return nil }
        spare = nil
        return s
    }

    private func giveBack(_ s: Spare) {
        // The states too must be the objects' alone (a transform may keep a collection view of one).
        guard isKnownUniquelyReferenced(&s.old._dynamic!), isKnownUniquelyReferenced(&s.new._dynamic!) else { return }
        spareLock.lock()
        spare = s
        spareLock.unlock()
    }

    /// A writer of records at the current version: every property of the new type, as `Migration` writes them.
    func recordWriter() -> RecordWriter { RecordWriter(newType, defaults: defaults) }
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
