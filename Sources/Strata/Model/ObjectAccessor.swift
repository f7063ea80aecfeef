import Foundation

/// The state of a managed object: which Realm, which type, which record.
@usableFromInline
final class ObjectAccessor {
    @usableFromInline let core: RealmCore
    @usableFromInline let binding: TypeBinding
    @inlinable var info: TypeInfo { binding.info }
    // An accessor is used on its object's thread without re-entry: dynamic exclusivity checks are off on
    // these fields, read on every property access (they were a tenth of an enumeration).
    @exclusivity(unchecked) private(set) var key: Int64
    /// The record as last read, and the Realm version it was read at.
    @usableFromInline @exclusivity(unchecked) private(set) var record: [UInt8]?
    /// Instead of `record`, the record's bytes lent by a streaming scan of a `Results` (no copy per object):
    /// valid while the scan stays on this record. Before the scan moves on, it either lends this accessor the
    /// next record (nothing else refers to the object) or has it keep its own copy (`keepRecord()`); `lender`,
    /// the scan, keeps the bytes mapped meanwhile.
    @usableFromInline @exclusivity(unchecked) private(set) var lent: UnsafeRawBufferPointer?
    @exclusivity(unchecked) private var lender: AnyObject?
    @usableFromInline @exclusivity(unchecked) var recordVersion: UInt64 = .max
    /// The Realm's `invalidate()` count when this accessor was made: a later `invalidate()` invalidates it.
    @exclusivity(unchecked) private(set) var epoch: Int
    /// The write (`RealmCore.writeSerial`) that added the object, 0 when it was read: a cancel of that write
    /// invalidates it for good, as in Realm (it does not become unmanaged again).
    @exclusivity(unchecked) var addedIn: UInt64 = 0
    /// Deleted through this accessor: invalid for good, even if the write is cancelled (Realm does not revive
    /// invalidated instances).
    @exclusivity(unchecked) var removed = false
    /// Whether reads record accesses for Swift's Observation (`Realm.Configuration.observationTracking`).
    /// Last: the fields a read uses on every property stay in the object's first cache line.
    @usableFromInline let observes: Bool
    /// The object's part in Observation, from its first read under a tracking Realm on (`Observation.swift`).
    @exclusivity(unchecked) var observation: ObjectObservation?

    /// Invalid for good: deleted through it, or added by a cancelled write.
    var isDead: Bool { removed || (addedIn != 0 && core.cancelledWrites.contains(addedIn)) }

    init(core: RealmCore, binding: TypeBinding, key: Int64, record: [UInt8]?) {
        self.core = core
        self.observes = core.tracksObservation
        self.binding = binding
        self.key = key
        self.epoch = core.invalidations
        self.record = record.map(binding.upgraded)
        self.recordVersion = record == nil ? .max : core.versionToken
    }

    /// An accessor for a record read at `version` that needs no migration.
    @inline(__always)
    init(core: RealmCore, binding: TypeBinding, key: Int64, currentRecord: [UInt8], version: UInt64) {
        self.core = core
        self.observes = core.tracksObservation
        self.binding = binding
        self.key = key
        self.epoch = core.invalidations
        self.record = currentRecord
        self.recordVersion = version
    }

    /// An accessor for a record lent by a streaming scan (`lender`), read at `version` and needing no migration.
    @inline(__always)
    init(core: RealmCore, binding: TypeBinding, key: Int64, lent: UnsafeRawBufferPointer, lender: AnyObject, version: UInt64) {
        self.core = core
        self.observes = core.tracksObservation
        self.binding = binding
        self.key = key
        self.epoch = core.invalidations
        self.lent = lent
        self.lender = lender
        self.recordVersion = version
    }

    /// Points this accessor at another record of its type lent by the same kind of scan, read at `version` and
    /// needing no migration: a `Results` iteration reusing an object (and this accessor) that nothing else
    /// refers to.
    @inline(__always)
    func lend(key: Int64, _ bytes: UnsafeRawBufferPointer, by lender: AnyObject, version: UInt64) {
        self.key = key
        epoch = core.invalidations
        addedIn = 0
        removed = false
        // (Assigning nil to a nil record would still call the release of the old value.)
        if record != nil { record = nil }
        lent = bytes
        if self.lender !== lender { self.lender = lender }
        recordVersion = version
    }

    /// Points this accessor at another object's record of its own, read at `version` and in the current
    /// layout: a `Results` iteration reusing an object for a record it had to migrate.
    func reset(key: Int64, record bytes: [UInt8], version: UInt64) {
        self.key = key
        // Another record: the previous one's observation is not this one's.
        observation = nil
        epoch = core.invalidations
        addedIn = 0
        removed = false
        record = bytes
        lent = nil
        lender = nil
        recordVersion = version
    }

    /// Copies a lent record into this accessor's own storage: the scan that lent it is about to move on while
    /// something still refers to this accessor.
    func keepRecord() {
        guard let bytes = lent else { return }
        record = [UInt8](bytes)
        lent = nil
        lender = nil
    }

    /// Replaces the record with one read at `version` (this accessor's own).
    func setRecord(_ bytes: [UInt8], version: UInt64) {
        record = bytes
        lent = nil
        lender = nil
        recordVersion = version
    }

    /// The record's bytes, lent or owned, for `body`; nil when there is none.
    @inline(__always)
    func withRecord<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R? {
        if let lent { return body(lent) }
        return record?.withUnsafeBytes(body)
    }

    var isInvalidated: Bool { isDead || core.isInvalidated || epoch != core.invalidations || !core.objectExists(self) }

    /// What a getter reports when the stored value is not of the property's type.
    @usableFromInline func mismatch(_ stored: StoredValue, _ type: Any.Type) -> String {
        FailableConversion.property(stored, type)
            ?? "\(info.schema.className) holds \(stored) where a \(type) is declared; the file and the model disagree"
    }

    /// Whether `record` is this object's record at the Realm's current version, outside a write transaction:
    /// then it can be read in place.
    @inlinable var recordIsCurrent: Bool {
        recordVersion == core.inPlaceToken && (lent != nil || record != nil)
    }

    /// Property `index` read straight from the record's bytes as a `V`, for the types that have a direct
    /// reader; nil when that path does not apply (the caller then uses `get`).
    @inlinable @inline(__always)
    func directValue<V: _Persistable>(_ index: Int, as type: V.Type) -> V? {
        guard recordIsCurrent else {
            // In a write: the object's record in the batch, or its stored one while the write has not changed it.
            var value: V?
            withDirectPayloadInWrite(index) { tag, start, bytes in value = V._decodeDirect(tag: tag, at: start, in: bytes) }
            return value
        }
        if let bytes = lent {
            guard let (tag, start) = binding.directPayload(index, in: bytes) else { return nil }
            return V._decodeDirect(tag: tag, at: start, in: bytes)
        }
        return record?.withUnsafeBytes { bytes in
            guard let (tag, start) = binding.directPayload(index, in: bytes) else { return nil }
            return V._decodeDirect(tag: tag, at: start, in: bytes)
        }
    }

    /// In a write transaction, calls `body` with the tag and start of property `index`'s payload and the record
    /// it lies in, when a direct read applies: the object's record encoded in the write's batch, or, when the
    /// write holds nothing of it, its record read at this version. Otherwise (no write, a pending record of
    /// values, a deleted or invalid object, a record the write may have spilled over) nothing: the getter's
    /// general path answers, or traps.
    @usableFromInline func withDirectPayloadInWrite(_ index: Int, _ body: (UInt8, Int, UnsafeRawBufferPointer) -> Void) {
        // The core, its write and the binding are used unretained (a retain and a release are atomic operations,
        // and cost more than the read): this accessor holds the core and the binding, the core holds its write,
        // and a read lets none of them go.
        Unmanaged.passUnretained(core)._withUnsafeGuaranteedRef { core in
            guard let write = core.writeUnretained, epoch == core.invalidations, !isDead else { return }
            write._withUnsafeGuaranteedRef { w in
                Unmanaged.passUnretained(binding)._withUnsafeGuaranteedRef { binding in
                    let pk = RealmCore.PendingKey(partition: binding.partition, key: key)
                    let found = w.visitEncoded(pk, binding: binding) { raw in
                        guard let (tag, start) = binding.directPayload(index, in: raw) else { return }
                        body(tag, start, raw)
                    }
                    guard found == .none, recordVersion == core.versionToken, !w.isDropped(binding.partition),
                        !core.spilledOver(w, binding.partition, key)
                    else { return }
                    _ = withRecord { raw in
                        guard let (tag, start) = binding.directPayload(index, in: raw) else { return }
                        body(tag, start, raw)
                    }
                }
            }
        }
    }

    /// How a trap on a damaged record names this object.
    /// How a trap on a damaged record names this object: its key, the file, and where the record is stored
    /// (a segment and the offset of its block), so that `strata verify` and a hex dump find the same bytes.
    var damagedObject: String {
        let place: String
        do {
            place = try core.readSnapshot.location(ofKey: ObjectKey.bytes(key), in: binding.partition).map { ", stored in \($0)" } ?? ""
        } catch {
            place = " (where it is stored cannot be read either: \(error))"
        }
        return "object \(key) in \(core.shared.displayName)\(place)"
    }

    @usableFromInline func get(_ index: Int) -> StoredValue {
        // The usual read: no write transaction, and the record is of the Realm's current version.
        if recordVersion == core.versionToken, !core.hasPendingWrite, let v = withRecord({ binding.value(index, in: $0, object: self.damagedObject) }) {
            return v
        }
        return core.read(self, index)
    }
    @usableFromInline func set(_ index: Int, _ value: StoredValue) { core.write(self, index, value) }
    @usableFromInline func linkedObject(_ stored: StoredValue, target: Object.Type) -> Object? { core.linkedObject(stored, target: target) }
    /// An AnyRealmValue property's value (objects resolved in this Realm).
    @usableFromInline func anyValue(at index: Int) -> AnyRealmValue { anyValue(get(index), property: index) }
    /// Sets an AnyRealmValue property, adding the unmanaged objects it holds.
    @usableFromInline func setAny(_ index: Int, _ value: AnyRealmValue) { core.write(self, index, core.storedAny(value)) }
    /// Sets a link, adding the linked object when it is unmanaged.
    @usableFromInline func setLink(_ index: Int, _ object: Object?) {
        if let object, let target = info.linkTargets[index] {
            RealmCore.checkLinkType(object, target, "'\(info.schema.className).\(info.schema.properties[index].name)'")
        }
        core.write(self, index, core.link(to: object))
    }
}
