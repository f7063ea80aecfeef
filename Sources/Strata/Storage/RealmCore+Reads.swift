import Engine
import Foundation

/// Reading objects: primary-key lookups, objects made for records, property reads, and the scans and keyed
/// reads that queries run on rows.
extension RealmCore {
    /// What a trap on a storage error tells the user to do.
    static let damageAdvice = "; run `strata verify` on the file, and `strata salvage` to copy what can still be read"

    /// A read from a path that cannot throw (property getters, queries, lookups by key): a storage error stops
    /// the program naming the file and what was read, as an answer from a damaged file would be wrong.
    func mustRead<R>(_ what: @autoclosure () -> String, _ body: () throws -> R) -> R {
        do {
            return try body()
        } catch {
            fatalError("reading \(what()) in \(shared.displayName) failed: \(error)\(RealmCore.damageAdvice)")
        }
    }

    /// `mustRead` where no Realm is at hand (change computations between two snapshots): the storage error
    /// itself names the file and offset.
    static func mustRead<R>(_ what: @autoclosure () -> String, _ body: () throws -> R) -> R {
        do {
            return try body()
        } catch {
            fatalError("reading \(what()) failed: \(error)\(RealmCore.damageAdvice)")
        }
    }

    // MARK: - Reads

    /// The object key of the object whose optional Int primary key is nil (an Int primary key is the object key).
    static let nilIntPrimaryKey = Int64.min

    /// The key of the object with primary key `value`, nil when there is none. `checked: false` skips the read
    /// that makes sure the object exists, for callers that read the key's record next anyway (and skip it
    /// when it is missing): then a key is returned for an Int primary key whether or not its object exists.
    func objectKey(forPrimaryKey value: StoredValue, binding: TypeBinding, checked: Bool = true) -> Int64? {
        let candidate: Int64?
        if binding.intPrimaryKey {
            if value.isNull {
                if !checked { return Self.nilIntPrimaryKey }
                return exists(binding: binding, key: Self.nilIntPrimaryKey) ? Self.nilIntPrimaryKey : nil
            }
            guard case .int(let v) = value else { return nil }
            candidate = v
        } else if let pkPartition = binding.primaryKeyPartition {
            let entry = PrimaryKeyIndex.entry(value)
            if let w = write {
                // An object of this write first: the key may have been deleted and given to a new object since.
                if let key = w.key(forPrimaryKeyEntry: entry, partition: binding.partition) { return key }
                if w.deletedPrimaryKeys.contains(where: { $0.0 == pkPartition && $0.1 == entry }) { return nil }
                if w.isDropped(pkPartition) { return nil }
            }
            candidate = mustRead("the primary key index of \(binding.info.schema.className)") {
                try readSnapshot.get(entry, in: pkPartition)
            }?.withUnsafeBytes { ObjectKey.decode($0) }
        } else {
            return nil
        }
        guard let key = candidate else { return nil }
        return !checked || exists(binding: binding, key: key) ? key : nil
    }

    /// The object with primary key `value`: its key and, when it is not pending in this write, a copy of its
    /// record (one engine read for an Int primary key).
    func lookup(primaryKey value: StoredValue, binding: TypeBinding) -> (Int64, [UInt8]?)? {
        if binding.intPrimaryKey, case .int(let key) = value {
            if let live = write?.isLive(PendingKey(partition: binding.partition, key: key)) { return live ? (key, nil) : nil }
            if let w = write, w.isDropped(binding.partition) { return nil }
            let snapshot = readSnapshot
            let bytes = mustRead("\(binding.info.schema.className) #\(key)") {
                try ObjectKey.withBytes(key) { try snapshot.get($0, in: binding.partition) }
            }
            guard let bytes else { return nil }
            return (key, bytes)
        }
        return objectKey(forPrimaryKey: value, binding: binding).map { ($0, nil) }
    }

    /// Whether object `key` is stored at the version this Realm (or its write) started from.
    func storedAtBase(_ binding: TypeBinding, _ key: Int64) -> Bool {
        // Once the write spilled, the largest key is the view's: the base snapshot is asked.
        if let w = write, !w.hasSpilled, key > largestStoredKey(binding, w) { return false }
        let snapshot = write?.tx.snapshot ?? snapshot
        return mustRead("\(binding.info.schema.className) #\(key)") {
            try ObjectKey.withBytes(key) { k in try snapshot.contains(k, in: binding.partition) }
        }
    }

    func exists(binding: TypeBinding, key: Int64) -> Bool {
        // The write unretained (the core holds it; a lookup lets nothing go).
        if let write = writeUnretained,
            let known = write._withUnsafeGuaranteedRef({ w -> Bool? in
                if let live = w.isLive(PendingKey(partition: binding.partition, key: key)) { return live }
                if w.isDropped(binding.partition) { return false }
                // Keys above the largest stored one (a bulk insert of increasing keys) are new without a lookup.
                if key > largestStoredKey(binding, w) { return false }
                return nil
            })
        {
            return known
        }
        let snapshot = readSnapshot
        return mustRead("\(binding.info.schema.className) #\(key)") {
            try ObjectKey.withBytes(key) { k in try snapshot.contains(k, in: binding.partition) }
        }
    }

    /// The largest key of `binding`'s type stored in the write's view (`Int64.min`: none), read once per write
    /// and again after each spill.
    func largestStoredKey(_ binding: TypeBinding, _ w: WriteState) -> Int64 {
        w.largestStoredKey(binding.partition) {
            mustRead("the objects of \(binding.info.schema.className)") {
                try w.tx.view.largestKey(in: binding.partition)
            }.flatMap { $0.withUnsafeBytes { ObjectKey.decode($0) } } ?? .min
        }
    }

    func objectExists(_ accessor: ObjectAccessor) -> Bool {
        if accessor.isDead { return false }
        if let w = write, w.isDropped(accessor.binding.partition), w.isLive(PendingKey(partition: accessor.binding.partition, key: accessor.key)) == nil {
            return false
        }
        // An object whose record was read at this version exists unless this write changed that.
        if accessor.recordVersion == versionToken, accessor.record != nil || accessor.lent != nil,
            write?.isLive(PendingKey(partition: accessor.binding.partition, key: accessor.key)) == nil,
            write.map({ spilledOver($0, accessor.binding.partition, accessor.key) }) != true
        {
            return true
        }
        return exists(binding: accessor.binding, key: accessor.key)
    }

    func makeObject(binding: TypeBinding, key: Int64, record: [UInt8]?) -> Object {
        let object = Object.make(binding.objectClass)
        object._accessor = ObjectAccessor(core: self, binding: binding, key: key, record: record)
        if binding.info.hasLegacyProperties { binding.info.bindLegacyProperties(of: object) }
        // A frozen object may be read on several threads at once: its properties' slots are filled before it
        // is shared, not by whichever read comes first (`PersistedSlots`). A `DynamicObject` has none.
        if isFrozen && binding.objectClass == binding.info.objectClass { object._fillPersistedSlots() }
        return object
    }

    /// An object for a record lent by a streaming scan, read at `version` and needing no migration.
    @inline(__always)
    func makeObject(binding: TypeBinding, key: Int64, lent: UnsafeRawBufferPointer, lender: AnyObject, version: UInt64) -> Object {
        let object = Object.make(binding.objectClass)
        object._accessor = ObjectAccessor(core: self, binding: binding, key: key, lent: lent, lender: lender, version: version)
        if binding.info.hasLegacyProperties { binding.info.bindLegacyProperties(of: object) }
        // A frozen object may be read on several threads at once: its properties' slots are filled before it
        // is shared, not by whichever read comes first (`PersistedSlots`). A `DynamicObject` has none.
        if isFrozen && binding.objectClass == binding.info.objectClass { object._fillPersistedSlots() }
        return object
    }

    /// An object for a record read at `version` that needs no migration (a scan outside a write transaction).
    @inline(__always)
    func makeObject(binding: TypeBinding, key: Int64, currentRecord record: [UInt8], version: UInt64) -> Object {
        let object = Object.make(binding.objectClass)
        object._accessor = ObjectAccessor(core: self, binding: binding, key: key, currentRecord: record, version: version)
        if binding.info.hasLegacyProperties { binding.info.bindLegacyProperties(of: object) }
        // A frozen object may be read on several threads at once: its properties' slots are filled before it
        // is shared, not by whichever read comes first (`PersistedSlots`). A `DynamicObject` has none.
        if isFrozen && binding.objectClass == binding.info.objectClass { object._fillPersistedSlots() }
        return object
    }

    /// Reads property `index` of a managed object.
    func read(_ accessor: ObjectAccessor, _ index: Int) -> StoredValue {
        // An object read before `invalidate()` is invalidated (O038); the fast path never gets here for it, as
        // the invalidation moved the Realm's version.
        if accessor.epoch != invalidations || accessor.isDead { fatalError("Object has been deleted or invalidated.") }
        if let w = write {
            var value: StoredValue?
            switch w.visit(PendingKey(partition: accessor.binding.partition, key: accessor.key), { value = $0.value(index) }) {
            case .live: if let value { return value }
            case .deleted: fatalError("Object has been deleted or invalidated.")
            case .none: break
            }
        }
        if let w = write, w.isDropped(accessor.binding.partition) { fatalError("Object has been deleted or invalidated.") }
        if accessor.recordVersion != versionToken || (accessor.record == nil && accessor.lent == nil)
            || write.map({ spilledOver($0, accessor.binding.partition, accessor.key) }) == true
        {
            let read = mustRead("\(accessor.binding.info.schema.className) #\(accessor.key)") {
                try readSnapshot.get(ObjectKey.bytes(accessor.key), in: accessor.binding.partition)
            }
            guard let bytes = read else { fatalError("Object has been deleted or invalidated.") }
            accessor.setRecord(accessor.binding.upgraded(bytes), version: versionToken)
        }
        guard let value = accessor.withRecord({ accessor.binding.value(index, in: $0, object: accessor.damagedObject) }) else {
            fatalError("Object has been deleted or invalidated.")
        }
        return value
    }


    /// Calls `body` with every live object of a type (key and a way to read its properties), pending changes
    /// included: the view's keys ascending, then the keys this write added and still holds pending, in the
    /// order added (a write that spilled finds the objects it added before the spill among the view's, in key
    /// order: unsorted results promise no order, in Realm too).
    func forEachRecord(_ binding: TypeBinding, _ body: (Int64, RecordRef) -> Bool) {
        forEachRecord(binding, range: nil, body)
    }

    /// `forEachRecord(_:_:)` for the objects whose keys are in `range`: the view's from the range's start, then
    /// the keys this write added in range.
    func forEachRecord(_ binding: TypeBinding, in range: ClosedRange<Int64>, _ body: (Int64, RecordRef) -> Bool) {
        forEachRecord(binding, range: range, body)
    }

    private func forEachRecord(_ binding: TypeBinding, range: ClosedRange<Int64>?, _ body: (Int64, RecordRef) -> Bool) {
        let partition = binding.partition
        let w = write
        var stop = false
        do {
            if !(w?.isDropped(partition) ?? false) {
                // Without a range, from nil: a compacted partition's scan takes its fast path.
                try readSnapshot.scan(partition, from: range.map { ObjectKey.bytes($0.lowerBound) }) { k, v in
                    guard let key = ObjectKey.decode(k) else { return true }
                    if let range, key > range.upperBound { return false }
                    if let w, w.visit(PendingKey(partition: partition, key: key), { stop = !body(key, $0) }) != .none {
                        // Pending: read there (or deleted).
                    } else if let migrated = binding.migratedRecord(v) {
                        migrated.withUnsafeBytes { stop = !body(key, .bytes($0, binding)) }
                    } else {
                        stop = !body(key, .bytes(v, binding))
                    }
                    return !stop
                }
            }
        } catch {
            // A query cannot throw, and a scan that stopped at damaged bytes would give a wrong answer.
            fatalError("reading the objects of \(binding.info.schema.className) in \(shared.displayName) failed: \(error)\(RealmCore.damageAdvice)")
        }
        if stop { return }
        guard let w else { return }
        for key in w.added(in: partition) where range?.contains(key) ?? true {
            let pk = PendingKey(partition: partition, key: key)
            guard w.isLive(pk) == true else { continue }
            // Added keys that were already in the snapshot were handled above.
            if exists(inSnapshot: key, partition: partition) { continue }
            w.visit(pk) { stop = !body(key, $0) }
            if stop { return }
        }
    }

    /// Outside a write transaction: calls `body` with each object's key and its record where it lies (through
    /// the pending transforms when an online migration needs them), in key order, until it returns false. What
    /// `forEachRecord(_:_:)` gives without a write, with no `RecordRef` and no write checks per object: a
    /// query's count reads every object of a type this way.
    func forEachStoredRecord(_ binding: TypeBinding, _ body: (Int64, UnsafeRawBufferPointer) -> Bool) {
        require(write == nil, "forEachStoredRecord reads no write's changes")
        do {
            try readSnapshot.scan(binding.partition) { k, v in
                guard let key = ObjectKey.decode(k) else { return true }
                if let migrated = binding.migratedRecord(v) { return migrated.withUnsafeBytes { body(key, $0) } }
                return body(key, v)
            }
        } catch {
            // A query cannot throw, and a scan that stopped at damaged bytes would give a wrong answer.
            fatalError("reading the objects of \(binding.info.schema.className) in \(shared.displayName) failed: \(error)\(RealmCore.damageAdvice)")
        }
    }

    /// Calls `body` with each live object among `keys` (no duplicates), pending changes included, in the
    /// order a scan gives them (`forEachRecord(_:_:)`: keys of the snapshot ascending, then keys added by
    /// this write in the order they were added; once a write has spilled, the keys it spilled are among the
    /// snapshot's): the objects a query pins by primary key, read one by one instead of scanning the type.
    func forEachRecord(_ binding: TypeBinding, keys unordered: Set<Int64>, _ body: (Int64, RecordRef) -> Bool) {
        let partition = binding.partition
        var keys: [Int64] = [], late: [Int64] = []
        if write == nil {
            // Outside a write every key is in the snapshot or nowhere: the reads below skip the missing.
            keys = unordered.sorted()
        } else {
            for key in unordered {
                if exists(inSnapshot: key, partition: partition) { keys.append(key) } else { late.append(key) }
            }
            keys.sort()
        }
        if !late.isEmpty, let w = write {
            // In the order they were added (a key's pending position).
            keys += late.sorted { (w.position(PendingKey(partition: partition, key: $0)) ?? .max) < (w.position(PendingKey(partition: partition, key: $1)) ?? .max) }
        }
        forEachRecord(binding, inOrder: keys, body)
    }

    /// Calls `body` with the live object of each of `keys` in their order (a key given twice is read twice),
    /// pending changes included; keys of no live object are skipped. The objects of a collection property
    /// (`person.dogs.filter(...)`) are read with it.
    func forEachRecord(_ binding: TypeBinding, inOrder keys: [Int64], _ body: (Int64, RecordRef) -> Bool) {
        let partition = binding.partition
        let snapshot = readSnapshot
        for key in keys {
            var stop = false
            if let w = write, w.visit(PendingKey(partition: partition, key: key), { stop = !body(key, $0) }) != .none {
                if stop { return }
                continue
            }
            // A type deleteAll dropped in this write has no objects but those the write added since.
            if let w = write, w.isDropped(partition) { continue }
            do {
                try ObjectKey.withBytes(key) { k in
                    try snapshot.visitValue(forKey: k, in: partition) { v in
                        guard let v else { return }
                        if let migrated = binding.migratedRecord(v) {
                            migrated.withUnsafeBytes { stop = !body(key, .bytes($0, binding)) }
                        } else {
                            stop = !body(key, .bytes(v, binding))
                        }
                    }
                }
            } catch {
                fatalError("reading \(binding.info.schema.className) #\(key) in \(shared.displayName) failed: \(error)\(RealmCore.damageAdvice)")
            }
            if stop { return }
        }
    }

    /// Calls `body` with the live object `key` of a type (pending changes included); nil when there is none.
    /// Queries through links read the objects they reach with it.
    func withRecord<R>(_ binding: TypeBinding, key: Int64, _ body: (RecordRef) -> R) -> R? {
        let partition = binding.partition
        var out: R?
        if let w = write {
            switch w.visit(PendingKey(partition: partition, key: key), { out = body($0) }) {
            case .live: return out
            case .deleted: return nil
            case .none: break
            }
        }
        if let w = write, w.isDropped(partition) { return nil }
        mustRead("\(binding.info.schema.className) #\(key)") {
            try ObjectKey.withBytes(key) { k in
                try readSnapshot.visitValue(forKey: k, in: partition) { v in
                    guard let v else { return }
                    if let migrated = binding.migratedRecord(v) {
                        out = migrated.withUnsafeBytes { body(.bytes($0, binding)) }
                    } else {
                        out = body(.bytes(v, binding))
                    }
                }
            }
        }
        return out
    }

    /// The keys of the objects of a partition that this write transaction changed, added or deleted.
    func pendingKeys(partition: UInt32) -> [Int64] {
        guard let w = write else { return [] }
        return w.keys(in: partition)
    }

    private func exists(inSnapshot key: Int64, partition: UInt32) -> Bool {
        if let w = write, w.isDropped(partition) { return false }
        return mustRead("object #\(key) of partition \(partition)") {
            try ObjectKey.withBytes(key) { k in try readSnapshot.contains(k, in: partition) }
        }
    }
}

/// A way to read an object's properties during a scan: its record bytes or its pending values.
enum RecordRef {
    case bytes(UnsafeRawBufferPointer, TypeBinding)
    case values([StoredValue])

    @inline(__always)
    func value(_ index: Int) -> StoredValue {
        switch self {
        case .bytes(let raw, let binding): binding.value(index, in: raw)
        case .values(let v): v[index]
        }
    }
}
