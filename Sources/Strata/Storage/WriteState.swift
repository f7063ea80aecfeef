@_spi(EngineInternals) import Engine
import Foundation

/// What a write transaction holds until it commits: the pending records of the objects it added, changed or
/// deleted, by partition and key.
extension RealmCore {
    /// A pending object of the current write transaction.
    final class PendingRecord {
        let binding: TypeBinding
        // Dynamic exclusivity checks are off: a write transaction's state is used on its thread, without
        // re-entry (each check was a runtime call per property set).
        @exclusivity(unchecked) var values: [StoredValue]
        @exclusivity(unchecked) var deleted = false
        /// The primary-key index entry to add (types with a non-Int primary key).
        var primaryKeyIndexEntry: [UInt8]?
        init(binding: TypeBinding, values: [StoredValue]) {
            self.binding = binding
            self.values = values
        }
    }

    struct PendingKey: Hashable, Comparable {
        var partition: UInt32
        var key: Int64

        static func < (a: PendingKey, b: PendingKey) -> Bool {
            a.partition != b.partition ? a.partition < b.partition : a.key < b.key
        }

        /// Both fields in one word, for hashing (equal keys give equal words; unequal ones rarely do).
        private var packed: Int64 { Int64(bitPattern: UInt64(partition) << 48 ^ UInt64(bitPattern: key)) }
        func hash(into hasher: inout Hasher) { hasher.combine(packed) }
        /// One-word hashing, as Int64 does it: a large write hashes every key it touches several times, and a
        /// general `Hasher` per hash was a tenth of an insert.
        func _rawHashValue(seed: Int) -> Int { packed._rawHashValue(seed: seed) }
    }

    /// A pending object: a record to change (values by property index); for an object of a type that holds
    /// no links or collections, its record already encoded in the engine transaction's batch (the bytes
    /// `WriteTransaction.putPending` returned), read and patched there until commit; or, for an object of such
    /// a type without a primary-key index (no primary key, or an `Int` one, which is the object's key), its
    /// deletion (nothing of it to keep).
    enum PendingEntry {
        case record(PendingRecord)
        case encoded(Range<Int>)
        case deleted

        /// Whether it is a deletion.
        var isDeletion: Bool {
            switch self {
            case .record(let r): r.deleted
            case .encoded: false
            case .deleted: true
            }
        }
    }

    /// The pending objects of one partition: their keys in the order first added with a map to their positions,
    /// the entries at those positions, and which of them were added in this write (a bit each).
    final class PartitionPending {
        @exclusivity(unchecked) var index = KeyMap()
        @exclusivity(unchecked) var entries: [PendingEntry] = []
        /// Bit `i % 64` of word `i / 64`: the object at position `i` is new in this write.
        @exclusivity(unchecked) var addedBits: [UInt64] = []
        /// The binding of the encoded and deleted entries (to decode them when they must become records).
        var binding: TypeBinding?
        /// Pending objects of a type with a non-Int primary key, by primary-key index entry (the commit writes
        /// the entries of those still live), and the type's index partition.
        var primaryKeys: [[UInt8]: Int64] = [:]
        var primaryKeyPartition: UInt32?
        /// The largest object key stored in the write's view (`Int64.min`: none), once read (again after a spill).
        var largestStored: Int64?
        /// The object keys the write's spills may hold of the partition, as of spill `spills` (`spilledKeys`).
        @exclusivity(unchecked) var spilledKeys: (spills: Int, low: Int64, high: Int64)?

        @inline(__always)
        func entry(_ key: Int64) -> PendingEntry? {
            guard let i = index.find(key) else { return nil }
            return entries[i]
        }

        var keys: [Int64] { index.keys }

        /// The keys added in this write, in the order they were added.
        var added: [Int64] {
            index.keys.indices.compactMap { i in addedBits[i >> 6] & (1 << UInt64(i & 63)) != 0 ? index.keys[i] : nil }
        }

        /// Adds the entry of a key it has none for.
        @inline(__always)
        func append(_ key: Int64, _ entry: PendingEntry, added: Bool) {
            let i = index.append(key)
            entries.append(entry)
            if i & 63 == 0 { addedBits.append(0) }
            if added { addedBits[i >> 6] |= 1 << UInt64(i & 63) }
        }
    }

    /// Its hot fields skip dynamic exclusivity checks (each cost more than the access): a write transaction
    /// belongs to one thread, and no method here calls out while it changes one of them.
    final class WriteState {
        let tx: WriteTransaction
        /// The pending objects by partition; add them with `setPending` or `addEncoded`, which keep `order`.
        @exclusivity(unchecked) private var partitions: [UInt32: PartitionPending] = [:]
        /// The partition used last, answered without hashing (a loop adding objects of one type). Unretained:
        /// `partitions` keeps it, and every change that could let it go there clears this.
        @exclusivity(unchecked) private var last: (partition: UInt32, pending: Unmanaged<PartitionPending>)?
        /// How many objects have a pending entry.
        @exclusivity(unchecked) private(set) var pendingCount = 0
        /// The schema version encoded records were written at (the stored schema's when the first was added).
        @exclusivity(unchecked) var encodedVersion: UInt64?
        /// Scratch space for encoding one record.
        @exclusivity(unchecked) private var scratch: [UInt8] = []
        /// Where a new object's setter values are encoded (`addEncoded(_:_:encodeRecord:)`): an append to it is a
        /// call of about 25 instructions, to an array about 200.
        @exclusivity(unchecked) private var recordScratch = GrowableBuffer(capacity: 256)
        /// About how many bytes the pending objects hold since the last spill (their records in the batch, and
        /// an estimate for each pending record), and how many make a spill due (`RealmCore+Spill`).
        @exclusivity(unchecked) private(set) var heldBytes = 0
        let spillThreshold: Int
        /// Whether the write has spilled, and the error a spill failed with (the commit throws it).
        private(set) var hasSpilled = false
        var spillError: (any Error)?

        init(tx: WriteTransaction, spillThreshold: Int) {
            self.tx = tx
            self.spillThreshold = spillThreshold
        }

        /// Puts the next spill off until the write holds as much again.
        func deferSpill() { heldBytes = 0 }

        /// Whether the pending objects hold enough for a spill (and no spill has failed).
        @inline(__always)
        var spillDue: Bool { heldBytes >= spillThreshold && spillError == nil }

        @inline(__always)
        private func existing(_ partition: UInt32) -> PartitionPending? {
            if let last, last.partition == partition { return last.pending.takeUnretainedValue() }
            guard let p = partitions[partition] else { return nil }
            last = (partition, Unmanaged.passUnretained(p))
            return p
        }

        /// `body` with the pending objects of `partition`, unretained (a retain and a release are atomic
        /// operations, and cost more than the rest of a property's set); nil when it has none. `body` must not
        /// spill, nor change which partitions have pending objects.
        @inline(__always)
        private func withExisting<R>(_ partition: UInt32, _ body: (PartitionPending) -> R) -> R? {
            if let last, last.partition == partition { return last.pending._withUnsafeGuaranteedRef(body) }
            guard let p = partitions[partition] else { return nil }
            last = (partition, Unmanaged.passUnretained(p))
            return body(p)
        }

        /// Sets the last-partition cache to `partition` (when it has pending objects), so that reads of them from
        /// two threads at once (`PlainCapture.Concurrent`, while the write changes nothing) write nothing here.
        func prepareConcurrentReads(_ partition: UInt32) {
            _ = withExisting(partition) { _ in 0 }
        }

        /// `withExisting`, making the partition's pending objects first when it has none.
        @inline(__always)
        private func withState<R>(_ partition: UInt32, _ body: (PartitionPending) -> R) -> R {
            if let last, last.partition == partition { return last.pending._withUnsafeGuaranteedRef(body) }
            return body(state(partition))
        }

        @inline(__always)
        private func state(_ partition: UInt32) -> PartitionPending {
            if let p = existing(partition) { return p }
            let p = PartitionPending()
            partitions[partition] = p
            last = (partition, Unmanaged.passUnretained(p))
            return p
        }

        /// Sets `entry` for `key`; true when the key had none. `added`: the object is new in this write.
        private func set(_ key: PendingKey, _ entry: PendingEntry, added: Bool) -> Bool {
            let p = state(key.partition)
            if let i = p.index.find(key.key) {
                p.entries[i] = entry
                return false
            }
            insertNew(key.key, entry, added: added, into: p)
            return true
        }

        /// Adds the entry of a key `p` has none for (the caller looked).
        @inline(__always)
        private func insertNew(_ key: Int64, _ entry: PendingEntry, added: Bool, into p: PartitionPending) {
            p.append(key, entry, added: added)
            pendingCount += 1
        }

        /// Marks the object `key` of `binding`'s type deleted, without a record when it has none pending: for
        /// types that hold values only and have no primary-key index (nothing of a deleted one is read again).
        func markDeleted(_ key: PendingKey, _ binding: TypeBinding) {
            markDeleted(CollectionOfOne(key.key), binding)
        }

        /// `markDeleted` for several objects of `binding`'s type, its pending objects looked up once.
        func markDeleted(_ keys: some Collection<Int64>, _ binding: TypeBinding) {
            withState(binding.partition) { p in
                for key in keys {
                    if let i = p.index.find(key) {
                        switch p.entries[i] {
                        case .record(let r): r.deleted = true
                        case .encoded: p.entries[i] = .deleted
                        case .deleted: break
                        }
                        continue
                    }
                    // The key, its entry and slots, and the deletion the batch will hold.
                    if p.binding !== binding { p.binding = binding }
                    heldBytes &+= 64
                    insertNew(key, .deleted, added: false, into: p)
                }
            }
        }

        /// Sets the pending record of `key`; true when it had none. `added`: the object is new in this write.
        @discardableResult
        func setPending(_ key: PendingKey, _ record: PendingRecord, added: Bool = false) -> Bool {
            heldBytes &+= Self.recordBytes
            if let entry = record.primaryKeyIndexEntry {
                let p = state(key.partition)
                p.primaryKeys[entry] = key.key
                p.primaryKeyPartition = record.binding.primaryKeyPartition
            }
            return set(key, .record(record), added: added)
        }

        /// Adds a new object's record, encoded now from its values (by property index) at `version`; true when
        /// the key had no pending entry. Only for objects that need nothing else resolved (no links, lists or
        /// embedded objects) and have no primary-key index entry.
        @discardableResult
        func addEncoded(_ key: PendingKey, _ binding: TypeBinding, _ values: [StoredValue], version: UInt64) -> Bool {
            let encoded = addEncoded(key, binding) { out in
                binding.encode(values, schemaVersion: version, into: &out)
                return true
            }
            if encoded { return true }
            // Replaced whole (an object added again with the key of one deleted in this write).
            return set(key, .record(PendingRecord(binding: binding, values: values)), added: true)
        }

        /// Adds a new object's record as `encode` writes it (into a scratch buffer it replaces the contents of),
        /// straight into the engine transaction's batch; false, with nothing added, when the key has a pending
        /// entry, `encode` declines or the batch refuses the record (a limit: the general path then reports it
        /// at commit).
        func addEncoded(_ key: PendingKey, _ binding: TypeBinding, encode: (inout [UInt8]) -> Bool) -> Bool {
            withState(key.partition) { p in
                guard p.index.find(key.key) == nil, encode(&scratch), let range = putPending(key, scratch) else { return false }
                if p.binding !== binding { p.binding = binding }
                insertNew(key.key, .encoded(range), added: true, into: p)
                return true
            }
        }

        /// `addEncoded` for an encoder that writes into a `GrowableBuffer` (a new object's setter values).
        func addEncoded(_ key: PendingKey, _ binding: TypeBinding, encodeRecord encode: (inout GrowableBuffer) -> Bool) -> Bool {
            withState(key.partition) { p in
                // The buffer's bytes are lent directly (through `ByteContainer` they took a call of its conformance).
                guard p.index.find(key.key) == nil, encode(&recordScratch),
                    let range = recordScratch.withUnsafeBytes({ putPending(key, $0) })
                else { return false }
                if p.binding !== binding { p.binding = binding }
                insertNew(key.key, .encoded(range), added: true, into: p)
                return true
            }
        }

        /// Replaces the pending record of a new object whose links and lists are resolved by its encoding in
        /// the batch at `version` (format 2 when its values fit), letting the record go (its primary-key index
        /// entry stays in `primaryKeys`); false, with nothing changed, when `key` has no live record or the batch
        /// refuses it.
        func encodeRecord(_ key: PendingKey, version: UInt64) -> Bool {
            guard let p = existing(key.partition), let i = p.index.find(key.key), case .record(let r) = p.entries[i], !r.deleted
            else { return false }
            r.binding.encode(r.values, schemaVersion: version, into: &scratch)
            guard let range = putPending(key, scratch) else { return false }
            if p.binding !== r.binding { p.binding = r.binding }
            p.entries[i] = .encoded(range)
            return true
        }

        /// Makes the stored record `bytes` of an existing object without a pending entry (the caller looked:
        /// `patch` said `.noEntry`, and nothing was added since) its pending encoded record, in `binding`'s
        /// current layout, with `value` written into property `index` on the way when a fixed-width slot holds it.
        /// Says whether the record was added (false when the batch refuses it) and whether `value` was written
        /// (when not, the caller encodes the record again with it).
        func addStored(_ key: PendingKey, _ binding: TypeBinding, _ bytes: UnsafeRawBufferPointer, setting index: Int,
            _ value: StoredValue) -> (added: Bool, set: Bool)
        {
            guard let range = putPending(key, bytes) else { return (false, false) }
            withState(key.partition) { p in
                if p.binding !== binding { p.binding = binding }
                insertNew(key.key, .encoded(range), added: false, into: p)
            }
            guard let write = binding.slotWrite(index, value) else { return (true, false) }
            apply(write, at: range.lowerBound, nullByte: write.nullByte >= 0 ? bytes[write.nullByte] : 0)
            return (true, true)
        }

        /// Writes a slot into the record at `start` in the batch, whose null byte (when the slot has one) is now
        /// `nullByte`.
        @inline(__always)
        private func apply(_ write: TypeBinding.SlotWrite, at start: Int, nullByte: UInt8) {
            if write.width > 0 { tx.setPendingWord(write.word, width: write.width, at: start + write.offset) }
            if write.nullByte >= 0 {
                let byte = write.isNull ? nullByte | write.nullMask : nullByte & ~write.nullMask
                tx.setPendingByte(byte, at: start + write.nullByte)
            }
        }

        private func putPending(_ key: PendingKey, _ bytes: UnsafeRawBufferPointer) -> Range<Int>? {
            do {
                // The record, its key, the batch's operation header and slot, and the pending entry.
                heldBytes &+= bytes.count &+ 96
                return try ObjectKey.withBytes(key.key) { k in try tx.putPending(k, bytes, in: key.partition) }
            } catch {
                // Not lost: the caller keeps the object as a pending record, whose commit reports this error.
                return nil
            }
        }

        private func putPending(_ key: PendingKey, _ bytes: some ByteContainer) -> Range<Int>? {
            bytes.withUnsafeBytes { putPending(key, $0) }
        }

        /// What `patch` did.
        enum Patch {
            /// The value was written in place.
            case done
            /// The key has no pending entry.
            case noEntry
            /// The key has a pending entry, but not an encoded record in the current layout with a fixed-width
            /// slot the value fits.
            case declined
        }

        /// Writes `value` into property `index` of the encoded pending record of `key`, in place.
        func patch(_ key: PendingKey, _ index: Int, _ value: StoredValue) -> Patch {
            withExisting(key.partition) { p -> Patch in
                guard let i = p.index.find(key.key) else { return .noEntry }
                guard case .encoded(let range) = p.entries[i] else { return .declined }
                guard let b = p.binding else { fatalError("encoded pending records have no binding") }
                return Unmanaged.passUnretained(b)._withUnsafeGuaranteedRef { binding in
                    guard let write = binding.slotWrite(index, value) else { return .declined }
                    var current = false
                    var nullByte: UInt8 = 0
                    tx.visitPendingBytes(range) { record in
                        current = binding.hasCurrentLayout(record)
                        if current, write.nullByte >= 0 { nullByte = record[write.nullByte] }
                    }
                    guard current else { return .declined }
                    apply(write, at: range.lowerBound, nullByte: nullByte)
                    return .done
                }
            } ?? .noEntry
        }

        /// Writes `value` into property `index` of the encoded pending record of `key` by encoding the record
        /// again at `version` and putting it into the batch once more (the later put of a key wins; the earlier
        /// bytes stay in the batch until the next spill): a string, data or any other value no slot holds,
        /// without a pending record. False, with nothing changed, when the key has no encoded record or the
        /// batch refuses the record.
        func reencode(_ key: PendingKey, _ index: Int, _ value: StoredValue, version: UInt64) -> Bool {
            guard let p = existing(key.partition), let i = p.index.find(key.key), case .encoded(let range) = p.entries[i] else { return false }
            var values = decode(p, range)
            values[index] = value
            encodedBinding(p).encode(values, schemaVersion: version, into: &scratch)
            guard let moved = putPending(key, scratch) else { return false }
            p.entries[i] = .encoded(moved)
            return true
        }

        /// The values (by property index) of an encoded record of `p`.
        private func decode(_ p: PartitionPending, _ range: Range<Int>) -> [StoredValue] {
            let binding = encodedBinding(p)
            var values: [StoredValue] = []
            tx.visitPendingBytes(range) { raw in values = binding.info.schema.properties.indices.map { binding.value($0, in: raw) } }
            return values
        }

        /// How many pending objects are encoded records (tests).
        var encodedObjects: Int {
            partitions.values.reduce(0) { n, p in
                n + p.entries.reduce(0) { m, e in
                    if case .encoded = e { return m + 1 }
                    return m
                }
            }
        }

        /// The pending record of `key`, made from its encoded bytes first if it has only those; nil when the
        /// object has no pending entry.
        func record(_ key: PendingKey) -> PendingRecord? {
            guard let p = existing(key.partition), let i = p.index.find(key.key) else { return nil }
            switch p.entries[i] {
            case .record(let r): return r
            case .encoded(let range): return materialize(p, i, range)
            case .deleted: return materializeDeletion(p, i)
            }
        }

        /// A deleted record in place of a `.deleted` entry (its values the type's defaults).
        private func materializeDeletion(_ p: PartitionPending, _ i: Int) -> PendingRecord {
            let binding = encodedBinding(p)
            let r = PendingRecord(binding: binding, values: binding.info.defaults)
            r.deleted = true
            p.entries[i] = .record(r)
            return r
        }

        private func materialize(_ p: PartitionPending, _ i: Int, _ range: Range<Int>) -> PendingRecord {
            let r = PendingRecord(binding: encodedBinding(p), values: decode(p, range))
            p.entries[i] = .record(r)
            return r
        }

        private func encodedBinding(_ p: PartitionPending) -> TypeBinding {
            guard let b = p.binding else { fatalError("encoded pending records have no binding") }
            return b
        }

        /// The binding of the encoded records of `partition`.
        func encodedBinding(_ partition: UInt32) -> TypeBinding { encodedBinding(state(partition)) }

        /// What a read finds pending for a key.
        enum Lookup { case none, deleted, live }

        /// Calls `body` with the pending object of `key` when it is live (its values, or its encoded record in
        /// place); says what was found.
        @discardableResult
        func visit(_ key: PendingKey, _ body: (RecordRef) -> Void) -> Lookup {
            guard let p = existing(key.partition), let e = p.entry(key.key) else { return .none }
            return visit(p, e, body)
        }

        /// `visit` for a direct read of a property of an object of `binding`'s type: the bytes of its encoded
        /// record, when that is what the write holds of it and in that binding (the pending objects, their
        /// binding and the bytes are all used unretained; nothing here lets them go).
        @inline(__always)
        func visitEncoded(_ key: PendingKey, binding: TypeBinding, _ body: (UnsafeRawBufferPointer) -> Void) -> Lookup {
            withExisting(key.partition) { p -> Lookup in
                guard let i = p.index.find(key.key) else { return .none }
                switch p.entries[i] {
                case .record(let r): return r.deleted ? .deleted : .live
                case .encoded(let range):
                    if p.binding === binding { tx.visitPendingBytes(range, body) }
                    return .live
                case .deleted: return .deleted
                }
            } ?? .none
        }

        private func visit(_ p: PartitionPending, _ e: PendingEntry, _ body: (RecordRef) -> Void) -> Lookup {
            switch e {
            case .record(let r):
                if r.deleted { return .deleted }
                body(.values(r.values))
            case .encoded(let range):
                let binding = encodedBinding(p)
                tx.visitPendingBytes(range) { body(.bytes($0, binding)) }
            case .deleted:
                return .deleted
            }
            return .live
        }

        /// Whether `key` has a pending entry: true for a live object, false for a deleted one, nil for none.
        @inline(__always)
        func isLive(_ key: PendingKey) -> Bool? {
            withExisting(key.partition) { p in p.entry(key.key).map { !$0.isDeletion } } ?? nil
        }

        /// Every pending record of `partition` (encoded ones are made records first).
        func records(in partition: UInt32) -> [(key: PendingKey, record: PendingRecord)] {
            guard let p = existing(partition) else { return [] }
            return p.entries.indices.map { i in
                let r: PendingRecord
                switch p.entries[i] {
                case .record(let record): r = record
                case .encoded(let range): r = materialize(p, i, range)
                case .deleted: r = materializeDeletion(p, i)
                }
                return (PendingKey(partition: partition, key: p.keys[i]), r)
            }
        }

        /// The pending entry of `key` as commit writes it.
        func entry(_ key: PendingKey) -> PendingEntry? { withExisting(key.partition) { $0.entry(key.key) } ?? nil }

        /// Whether any object of `partition` has a pending entry.
        func hasEntries(in partition: UInt32) -> Bool { withExisting(partition) { !$0.keys.isEmpty } ?? false }

        /// Whether any pending object is live (added or changed, not deleted).
        var hasLiveObjects: Bool {
            partitions.values.contains { p in
                p.entries.contains { !$0.isDeletion }
            }
        }

        /// The pending object of a type with a non-Int primary key whose index entry is `entry`.
        func key(forPrimaryKeyEntry entry: [UInt8], partition: UInt32) -> Int64? {
            // A primary key never changes once its object is added, and object keys of such types are never
            // reused: the entry is the object's for as long as the object is live.
            guard let key = existing(partition)?.primaryKeys[entry], isLive(PendingKey(partition: partition, key: key)) == true else {
                return nil
            }
            return key
        }

        /// The primary-key index entries of the live objects added in this write, with their index partitions.
        func livePrimaryKeyEntries() -> [(partition: UInt32, entry: [UInt8], key: Int64)] {
            var out: [(partition: UInt32, entry: [UInt8], key: Int64)] = []
            for (partition, p) in partitions {
                guard let pkPartition = p.primaryKeyPartition else { continue }
                for (entry, key) in p.primaryKeys where isLive(PendingKey(partition: partition, key: key)) == true {
                    out.append((pkPartition, entry, key))
                }
            }
            return out
        }

        /// The smallest and largest object key the write's spills may hold entries of in `partition` (low above
        /// high: none), read from the transaction once per spill.
        @inline(__always)
        func spilledKeys(_ partition: UInt32) -> (low: Int64, high: Int64) {
            // Kept with the partition's pending objects; a read of a type without any makes no entry for it (it is
            // asked again, at the cost of two lookups).
            if let known = withExisting(partition, { $0.spilledKeys }) ?? nil, known.spills == tx.spillCount() { return (known.low, known.high) }
            var range: (low: Int64, high: Int64) = (.min, .max)
            switch tx.spilledExtent(in: partition) {
            case .none: range = (1, 0)
            case .dropped: break
            case .keys(let low, let high):
                // Keys of other lengths than an object's (none in an object partition) leave the whole range.
                if let l = low.withUnsafeBytes(ObjectKey.decode), let h = high.withUnsafeBytes(ObjectKey.decode) { range = (l, h) }
            }
            _ = withExisting(partition) { $0.spilledKeys = (tx.spillCount(), range.low, range.high) }
            return range
        }

        /// The largest object key stored in `partition` in the write's view (`Int64.min` when there is none),
        /// read with `read` once per write and after each spill: a key above it needs no lookup to know it is new.
        @inline(__always)
        func largestStoredKey(_ partition: UInt32, read: () -> Int64) -> Int64 {
            if let k = withState(partition, { $0.largestStored }) { return k }
            let k = read()
            withState(partition) { $0.largestStored = k }
            return k
        }

        /// Where `key` stands among the pending keys of its partition (the order they were first added).
        func position(_ key: PendingKey) -> Int? { withExisting(key.partition) { $0.index.find(key.key) } ?? nil }

        /// Keys added in this transaction to `partition`, in order, for queries.
        func added(in partition: UInt32) -> [Int64] { existing(partition)?.added ?? [] }

        /// Forgets every pending object of `partition` (deleteAll).
        func removePending(partition: UInt32) {
            if captures { clearedPartitions.insert(partition) }
            pendingCount -= partitions[partition]?.keys.count ?? 0
            partitions[partition] = nil
            last = nil
        }

        /// The partitions with pending objects.
        var pendingPartitions: [UInt32] { Array(partitions.keys) }

        /// The binding of the encoded and deleted entries of `partition`, nil when it has none.
        func encodedBindingIfAny(_ partition: UInt32) -> TypeBinding? { existing(partition)?.binding }

        /// The keys of the pending objects of `partition`, in the order they were first added.
        func keys(in partition: UInt32) -> [Int64] { existing(partition)?.keys ?? [] }

        /// What a pending record is reckoned to hold (the object, its values), for `heldBytes`.
        static let recordBytes = 160

        /// Every pending key, partition by partition, each in the order first added.
        func allKeys() -> [PendingKey] {
            var out: [PendingKey] = []
            out.reserveCapacity(pendingCount)
            for (partition, p) in partitions {
                for k in p.keys { out.append(PendingKey(partition: partition, key: k)) }
            }
            return out
        }

        /// After a spill wrote every encoded record and every deletion into the view (`WriteTransaction.view`):
        /// the write forgets them, keeping the live pending records (those it could not encode); reads find
        /// the rest in the view. What was read from the base version once per write is read again, and the
        /// partitions deleteAll dropped are dropped in the view.
        func forgetSpilled() {
            if captures { spilledKeys += allKeys() }
            var kept: [UInt32: PartitionPending] = [:]
            var count = 0
            for (partition, p) in partitions {
                let q = PartitionPending()
                q.binding = p.binding
                q.primaryKeyPartition = p.primaryKeyPartition
                for (i, key) in p.keys.enumerated() {
                    guard case .record(let r) = p.entries[i], !r.deleted else { continue }
                    q.append(key, p.entries[i], added: p.addedBits[i >> 6] & (1 << UInt64(i & 63)) != 0)
                }
                for (entry, key) in p.primaryKeys where q.index.find(key) != nil { q.primaryKeys[entry] = key }
                count += q.keys.count
                if !q.keys.isEmpty || q.primaryKeyPartition != nil { kept[partition] = q }
            }
            partitions = kept
            last = nil
            pendingCount = count
            // Counted from zero again, the records that stay included: those that cannot be spilled (an
            // embedded object without a parent, a record at another schema version) must not make every
            // following operation spill.
            heldBytes = 0
            dropped = []
            deletedPrimaryKeys = []
            hasSpilled = true
        }

        /// Every pending key in (partition, key) order: the order commit hands operations to the engine in, so
        /// that it need not sort them (keys first added in increasing order, a bulk insert, are in order).
        /// With each key its position, so that the commit reads its entry without hashing (`entry(at:in:)`).
        func sortedKeys() -> [(key: PendingKey, position: Int)] {
            var out: [(key: PendingKey, position: Int)] = []
            out.reserveCapacity(pendingCount)
            for partition in partitions.keys.sorted() {
                guard let p = partitions[partition] else { continue }
                let keys = p.keys
                if p.index.isSorted || keys.isSorted {
                    for (i, k) in keys.enumerated() { out.append((PendingKey(partition: partition, key: k), i)) }
                } else {
                    for i in keys.indices.sorted(by: { keys[$0] < keys[$1] }) { out.append((PendingKey(partition: partition, key: keys[i]), i)) }
                }
            }
            return out
        }

        /// The entry at `position` among the pending objects of `partition` (from `sortedKeys`).
        @inline(__always)
        func entry(at position: Int, in partition: UInt32) -> PendingEntry? {
            withExisting(partition) { p in position < p.entries.count ? p.entries[position] : nil } ?? nil
        }

        /// The keys of the pending objects, by partition.
        func pendingKeysByPartition() -> [UInt32: [Int64]] {
            partitions.mapValues(\.keys)
        }
        var nextKeys: [UInt32: Int64] = [:]
        var deletedPrimaryKeys: [(UInt32, [UInt8])] = []
        /// Keys of deleted objects by partition, with their type's name, whose links are nulled at commit (a key
        /// may be listed twice: an object added again with a deleted one's key and deleted again).
        @exclusivity(unchecked) var deletedKeys: [UInt32: (name: String, keys: [Int64])] = [:]

        /// Lists the key of a deleted object of `binding`'s type, for `nullifyLinks`.
        @inline(__always)
        func noteDeleted(_ binding: TypeBinding, _ key: Int64) {
            deletedKeys[binding.partition, default: (binding.info.schema.className, [])].keys.append(key)
        }
        func noteDeleted(_ binding: TypeBinding, _ keys: some Collection<Int64>) {
            deletedKeys[binding.partition, default: (binding.info.schema.className, [])].keys.append(contentsOf: keys)
        }
        /// Whether the commit records what the write did as field operations (`RealmCore+SyncCapture`): the
        /// file captures changes and the write is not one applying remote changes.
        var captures = false
        /// With `captures`: the keys of the objects spilled so far (a spill forgets them), the partitions
        /// deleteAll emptied, and the amounts `increment(_:by:)` added, by object and stored property name.
        var spilledKeys: [PendingKey] = []
        var clearedPartitions = Set<UInt32>()
        var increments: [ObjectReference: [String: Int64]] = [:]
        /// Embedded objects added in this write that no parent has taken yet (`adopt`).
        var orphans = Set<PendingKey>()
        var schemaChanged = false
        /// deleteAll dropped partitions: observers re-evaluate.
        var droppedPartitions = false
        /// The partitions deleteAll dropped since the last spill: the write's view still holds their objects,
        /// which the rest of the write must not see (a spill drops them in the view, and empties this). Read at every property access in the write (one thread, no re-entry):
        /// dynamic exclusivity checks are off.
        @exclusivity(unchecked) var dropped = Set<UInt32>()
        @inline(__always)
        func isDropped(_ partition: UInt32) -> Bool { !dropped.isEmpty && dropped.contains(partition) }
        /// Objects added with links or collections, whose unmanaged state the commit (or cancel) lets go. Held
        /// weakly: an added object holds its Realm, so a strong list would keep a Realm let go with its write
        /// open (its thread ended) alive for good, and the write's lock with it. An object freed meanwhile has
        /// nothing left to let go.
        @exclusivity(unchecked) var objectsToInvalidate: [WeakObject] = []
        struct WeakObject {
            weak var object: Object?
        }

        /// Lets go of what the added objects held while unmanaged. Each is held here until all are done: one
        /// that held the only reference to the next (a chain of thousands of links) would otherwise free the
        /// rest of the chain recursively, one stack frame per object.
        func releaseUnmanagedState() {
            let alive = objectsToInvalidate.compactMap(\.object)
            for o in alive {
                o._unmanagedLinks = nil
                o._unmanagedCollections = nil
                o._setValues = nil
            }
            objectsToInvalidate = []
            // Freed one by one as the array goes: none links to another any more.
            withExtendedLifetime(alive) {}
        }
    }
}
