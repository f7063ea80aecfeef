@_spi(EngineInternals) import Engine
import Foundation

// Invariants:
// (1) For each object it takes, the direct path records what the general path (`SyncDiff`) records: a create
//     of every property for a new object, a set of each property whose value is not identical
//     (`StoredValue.isIdentical`) for a changed one, and the undo images that take the object back. What
//     differs: the encoding (runs, `SyncCoding+Runs`), an undo image per changed property rather than per
//     object, and the order of a type's operations (runs by property, written out as they fill), which commute.
// (2) It takes an object only whole: when it declines one (a record in another layout, a primary key that
//     changed, a value it cannot place), it has written nothing for it, and the caller takes the general path.

/// Capture's direct path for one type of plain values (`TypeBinding.syncPlainValues`): each new or changed
/// object's operations and undo images go into runs that name the type and each property once, written from the
/// records' bytes, with no model of the object. New objects only of a type with an `Int` primary key (another
/// key can be an object deleted and added again under another object key, which the general path matches).
final class PlainCapture {
    /// What the direct path knows of a type, made once per binding (`RealmCore.plainCapture(_:)`).
    final class Shape {
        let binding: TypeBinding
        /// The type's name and each property's, as `SyncCoding.writeString` writes them.
        let typeName: [UInt8]
        /// The properties capture names (no `LinkingObjects`), sorted by name: property indices and name bytes.
        let indices: [Int]
        let names: [[UInt8]]
        /// The primary key's property index, and its place in `indices`.
        let key: Int
        let keyPlace: Int
        /// Per byte of a record's fixed part (before the variable fields' start table): the place in `indices` of
        /// the property whose slot holds it; -1 for the header and the null bitmap (which properties share).
        let slotOwner: [Int8]

        /// Nil when `binding` is not a type the direct path takes.
        init?(_ binding: TypeBinding) {
            guard binding.syncPlainValues, let key = binding.info.primaryKeyIndex,
                let keyPlace = binding.syncSortedFields.firstIndex(where: { $0.index == key }),
                binding.syncSortedFields.count <= 64
            else { return nil }
            self.binding = binding
            typeName = SyncCoding.nameBytes(binding.info.schema.className)
            indices = binding.syncSortedFields.map(\.index)
            names = binding.syncSortedFields.map { SyncCoding.nameBytes($0.name) }
            self.key = key
            self.keyPlace = keyPlace
            var owner = [Int8](repeating: -1, count: binding.variableTableStart)
            for (place, i) in indices.enumerated() {
                let f = binding.directFields[i]
                guard f.mode == .fixed || f.mode == .bool, f.layoutIndex >= 0 else { continue }
                let start = Int(f.at), width = binding.recordLayout.fields[Int(f.layoutIndex)].kind.width
                for offset in start..<(start + width) where offset >= 0 && offset < owner.count { owner[offset] = Int8(place) }
            }
            slotOwner = owner
        }
    }

    let shape: Shape
    private let binding: TypeBinding
    private let typeName: [UInt8]
    private let indices: [Int]
    private let names: [[UInt8]]
    private let key: Int
    private let keyPlace: Int
    private let slotOwner: [Int8]
    // One capture on one thread uses it: dynamic exclusivity checks are off for its state.
    /// Per place in `indices`: the run of sets and of undo images being built (made at the first change of the
    /// property: a small write touches few), and how many each holds.
    @exclusivity(unchecked) private var sets: [GrowableBuffer?]
    @exclusivity(unchecked) private var undos: [GrowableBuffer?]
    @exclusivity(unchecked) private var counts: [Int]
    /// The rows of the run of creates, and their primary keys (the run of undo images of absent objects).
    @exclusivity(unchecked) private var rows: GrowableBuffer?
    @exclusivity(unchecked) private var absent: GrowableBuffer?
    @exclusivity(unchecked) private var created = 0
    /// Runs written out, for `finish` to hand to the change set's builders: creates, other operations, undo images.
    @exclusivity(unchecked) private var written: (creates: [Run], operations: [Run], undo: [Run]) = ([], [], [])
    private struct Run {
        var bytes: [UInt8]
        /// The operations (or undo images) it stands for.
        var stands: Int
    }

    /// A run is written out once it holds this many bytes (a chunk holds at most about `chunkBytes` more).
    private static let runBytes = SyncStorage.chunkBytes / 2

    init(_ shape: Shape) {
        self.shape = shape
        (binding, typeName, indices, names) = (shape.binding, shape.typeName, shape.indices, shape.names)
        (key, keyPlace, slotOwner) = (shape.key, shape.keyPlace, shape.slotOwner)
        sets = Array(repeating: nil, count: indices.count)
        undos = Array(repeating: nil, count: indices.count)
        counts = Array(repeating: 0, count: indices.count)
    }

    /// Whether the caller lets it take new objects and changed ones (a write with no integer additions, which
    /// the general path records as such).
    var takesCreates = false
    var takesChanges = false
    /// The write's base when the type has sync metadata there: a new object whose primary key has a tombstone
    /// (deleted earlier, created again) is the general path's, which records it against the tombstone.
    var metadataAt: Snapshot?
    /// The metadata key being looked up (`SyncStorage.objectKey`), its buffer reused.
    @exclusivity(unchecked) private var metadataKey: [UInt8] = []

    /// Records object `key` of write `w` (new: absent at the write's base) from its records where they lie (an
    /// encoded pending record, or a spilled or stored one: `old` reads the base, `new` what the write spilled, or
    /// its view when it spilled nothing); false when it declines it (invariant 2). Everything is used unretained:
    /// the caller holds it for the call.
    func take(_ key: Int64, isNew: Bool, write w: RealmCore.WriteState, partition: UInt32, old: Unmanaged<OrderedLookup>, new: Unmanaged<OrderedLookup>) throws -> Bool {
        var took = false
        let b = binding
        func visitNew(_ body: (UnsafeRawBufferPointer) -> Void) throws {
            guard w.visitEncoded(RealmCore.PendingKey(partition: partition, key: key), binding: b, body) == .none else { return }
            try ObjectKey.withBytes(key) { k in try new._withUnsafeGuaranteedRef { try $0.visitValue(forKey: k) { raw in if let raw { body(raw) } } } }
        }
        if isNew {
            guard takesCreates else { return false }
            if let base = metadataAt {
                // An Int primary key is the object's key (checked in `create`), but nil's.
                guard key != RealmCore.nilIntPrimaryKey, try !hasMetadata(key, at: base) else { return false }
            }
            try visitNew { took = create($0, key: metadataAt == nil ? nil : key) }
        } else if takesChanges {
            try ObjectKey.withBytes(key) { k in
                try old._withUnsafeGuaranteedRef { lookup in
                    try lookup.visitValue(forKey: k) { before in
                        guard let before else { return }
                        try visitNew { took = change(before, $0) }
                    }
                }
            }
        }
        return took
    }

    /// Whether the object of Int primary key `pk` has sync metadata (a tombstone, for a new object) at `base`.
    private func hasMetadata(_ pk: Int64, at base: Snapshot) throws -> Bool {
        metadataKey.removeAll(keepingCapacity: true)
        metadataKey.append(contentsOf: SyncStorage.objectPrefix)
        metadataKey.append(contentsOf: typeName)
        metadataKey.append(3)  // `SyncValue.int`'s tag, then its zigzag varint, as `SyncCoding.write` writes it.
        metadataKey.appendVarint(UInt64(bitPattern: (pk << 1) ^ (pk >> 63)))
        var found = false
        try metadataKey.withUnsafeBytes { k in try base.visitValue(forKey: k, in: SyncStorage.partition) { found = $0 != nil } }
        return found
    }

    /// Records the create of the object whose record is `new` (whose primary key must be `key`, when given); false
    /// when it declines it (invariant 2).
    private func create(_ new: UnsafeRawBufferPointer, key expected: Int64?) -> Bool {
        guard binding.intPrimaryKey, binding.hasCurrentLayout(new) else { return false }
        if let expected {
            guard let (tag, start) = binding.directPayload(key, in: new), tag == DirectTag.int,
                DirectTag.word(new, start).map({ Int64(bitPattern: $0) }) == expected
            else { return false }
        }
        if rows == nil { (rows, absent) = (GrowableBuffer(), GrowableBuffer()) }
        let b = binding
        // Held by `self` for good: used unretained.
        let full = Unmanaged.passUnretained(rows.unsafelyUnwrapped)._withUnsafeGuaranteedRef { rows in
            for i in indices { Self.write(b, i, of: new, into: rows) }
            return rows.count >= Self.runBytes
        }
        Unmanaged.passUnretained(absent.unsafelyUnwrapped)._withUnsafeGuaranteedRef { Self.write(b, key, of: new, into: $0) }
        created += 1
        if full { flushCreates() }
        return true
    }

    /// Records the changes of the object whose records before and after are `old` and `new`; false when it
    /// declines it (invariant 2).
    private func change(_ old: UnsafeRawBufferPointer, _ new: UnsafeRawBufferPointer) -> Bool {
        // The places whose bytes differ, found before anything is written; the primary key's may not.
        guard binding.hasCurrentLayout(old), binding.hasCurrentLayout(new), var differ = differingPlaces(old, new),
            differ & (1 << UInt64(keyPlace)) == 0
        else { return false }
        let b = binding
        while differ != 0 {
            let place = differ.trailingZeroBitCount
            differ &= differ - 1
            let i = indices[place]
            // Values whose bytes differ but may still be one value are decoded and compared.
            if Self.mayBeIdentical(b, i, old, new), b.value(i, in: old).isIdentical(to: b.value(i, in: new)) { continue }
            if sets[place] == nil { (sets[place], undos[place]) = (GrowableBuffer(capacity: 64), GrowableBuffer(capacity: 64)) }
            // The buffers are held by `sets` and `undos` for good: used unretained.
            let setFull = Unmanaged.passUnretained(sets[place].unsafelyUnwrapped)._withUnsafeGuaranteedRef { set in
                Self.write(b, key, of: new, into: set)
                Self.write(b, i, of: new, into: set)
                return set.count >= Self.runBytes
            }
            let undoFull = Unmanaged.passUnretained(undos[place].unsafelyUnwrapped)._withUnsafeGuaranteedRef { undo in
                Self.write(b, key, of: new, into: undo)
                Self.write(b, i, of: old, into: undo)
                return undo.count >= Self.runBytes
            }
            counts[place] += 1
            if setFull || undoFull { flushSets(place) }
        }
        return true
    }

    /// The places of the properties whose bytes differ in two records of the current layout (a bit each); nil
    /// when a record's start table is damaged.
    private func differingPlaces(_ old: UnsafeRawBufferPointer, _ new: UnsafeRawBufferPointer) -> UInt64? {
        var differ: UInt64 = 0
        // Records of one length: compared a word at a time, each differing byte of the fixed part named by its
        // slot's owner. Anything else (another length, a null bitmap that differs) is compared property by
        // property, as are the variable fields when a byte after the fixed part differs.
        var variable = old.count != new.count
        var exact = !variable
        var i = 0
        scan: while exact && i < old.count {
            var x: UInt64 = 0
            if i + 8 <= old.count {
                x = old.loadUnaligned(fromByteOffset: i, as: UInt64.self) ^ new.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            } else {
                for j in i..<old.count { x |= UInt64(old[j] ^ new[j]) << UInt64(8 * (j - i)) }
            }
            // Byte j of the word is the record's byte i + j (the platforms Strata runs on are little-endian).
            while x != 0 {
                let byte = x.trailingZeroBitCount / 8
                x &= ~(0xFF << UInt64(8 * byte))
                let offset = i + byte
                if offset >= slotOwner.count {
                    variable = true
                    break scan
                }
                let owner = slotOwner[offset]
                if owner < 0 {
                    exact = false
                    break scan
                }
                differ |= 1 << UInt64(owner)
            }
            i += 8
        }
        for (place, index) in indices.enumerated() {
            if exact && !(variable && binding.directFields[index].mode == .variable) { continue }
            guard let same = binding.sameStoredBytes(index, old, new) else { return nil }
            if !same { differ |= 1 << UInt64(place) }
        }
        return differ
    }

    /// Hands every run to the change set's builders.
    func finish(creates: inout SyncStorage.ChunkBuilder, operations: inout SyncStorage.ChunkBuilder, undo: inout SyncStorage.ChunkBuilder) {
        flushCreates()
        for place in indices.indices { flushSets(place) }
        for run in written.creates { creates.add(standingFor: run.stands) { $0.append(contentsOf: run.bytes) } }
        for run in written.operations { operations.add(standingFor: run.stands) { $0.append(contentsOf: run.bytes) } }
        for run in written.undo { undo.add(standingFor: run.stands) { $0.append(contentsOf: run.bytes) } }
        written = ([], [], [])
    }

    private func flushCreates() {
        let n = created
        guard n > 0, let rows, let absent else { return }
        var out: [UInt8] = [SyncCoding.RunTag.creates]
        out.append(contentsOf: typeName)
        out.appendVarint(UInt64(names.count))
        for name in names { out.append(contentsOf: name) }
        out.appendVarint(UInt64(keyPlace))
        out.appendVarint(UInt64(n))
        rows.withUnsafeBytes { out.append(contentsOf: $0) }
        written.creates.append(Run(bytes: out, stands: n))
        out = [0, SyncCoding.UndoRunTag.absent]
        out.append(contentsOf: typeName)
        out.appendVarint(UInt64(n))
        absent.withUnsafeBytes { out.append(contentsOf: $0) }
        written.undo.append(Run(bytes: out, stands: n))
        rows.removeAll()
        absent.removeAll()
        created = 0
    }

    private func flushSets(_ place: Int) {
        let n = counts[place]
        guard n > 0, let set = sets[place], let undo = undos[place] else { return }
        var out: [UInt8] = [SyncCoding.RunTag.sets]
        out.append(contentsOf: typeName)
        out.append(contentsOf: names[place])
        out.appendVarint(UInt64(n))
        set.withUnsafeBytes { out.append(contentsOf: $0) }
        written.operations.append(Run(bytes: out, stands: n))
        out = [0, SyncCoding.UndoRunTag.fields]
        out.append(contentsOf: typeName)
        out.append(contentsOf: names[place])
        out.appendVarint(UInt64(n))
        undo.withUnsafeBytes { out.append(contentsOf: $0) }
        written.undo.append(Run(bytes: out, stands: n))
        set.removeAll()
        undo.removeAll()
        counts[place] = 0
    }

    /// Whether property `index` may hold identical values in `old` and `new` although their bytes differ (NaNs of
    /// other payloads, strings Swift finds equal): false only for kinds whose values differ when their bytes do
    /// (integers, data, UUIDs, ObjectIds), and for nil (in an optional property) or a Bool against anything else.
    private static func mayBeIdentical(_ binding: TypeBinding, _ index: Int, _ old: UnsafeRawBufferPointer, _ new: UnsafeRawBufferPointer) -> Bool {
        guard let (a, _) = binding.directPayload(index, in: old), let (b, _) = binding.directPayload(index, in: new) else { return true }
        // A stored nil in a required property reads as the property's default.
        if (a == DirectTag.null || b == DirectTag.null) && !binding.isOptional[index] { return true }
        if a != b { return a > DirectTag.trueValue && b > DirectTag.trueValue }
        return !(a == DirectTag.int || a == ObjectRecord.Tag.data.rawValue || a == ObjectRecord.Tag.uuid.rawValue || a == ObjectRecord.Tag.objectId.rawValue)
    }

    /// Writes property `index` of `record` (of the current layout) as `SyncCoding.write` writes its plain value:
    /// from the record's bytes for the usual kinds, decoded for the rest.
    private static func write(_ binding: TypeBinding, _ index: Int, of record: UnsafeRawBufferPointer, into out: GrowableBuffer) {
        if let (tag, start) = binding.directPayload(index, in: record) {
            switch tag {
            case DirectTag.null:
                // A required property reads a stored nil as its default (`TypeBinding.value`): decoded below.
                guard binding.isOptional[index] else { break }
                out.append(0)
                return
            case DirectTag.falseValue:
                out.append(1)
                return
            case DirectTag.trueValue:
                out.append(2)
                return
            case DirectTag.int:
                if let word = DirectTag.word(record, start) {
                    let i = Int64(bitPattern: word)
                    out.append(3)
                    out.appendVarint(UInt64(bitPattern: (i << 1) ^ (i >> 63)))
                    return
                }
            case DirectTag.double, DirectTag.date:
                // A Double's bits, and a Date's own Double (seconds since 2001), as sync writes them.
                if let word = DirectTag.word(record, start) {
                    out.append(tag == DirectTag.double ? 5 : 8)
                    out.appendUInt64LE(word)
                    return
                }
            case DirectTag.float:
                if let bits = Bytes.loadUInt32LE(record, at: start) {
                    out.append(4)
                    out.appendUInt32LE(bits)
                    return
                }
            case DirectTag.string:
                // ASCII text is its own UTF-8 as any decoding gives it; other text is decoded (repairing what a
                // damaged record holds, as every read does).
                if let (n, width) = DirectTag.length(record, start), start + width + n <= record.count {
                    let text = UnsafeRawBufferPointer(rebasing: record[(start + width)..<(start + width + n)])
                    if Self.isASCII(text) {
                        out.append(6)
                        out.appendVarint(UInt64(n))
                        out.append(text)
                        return
                    }
                }
            default:
                break
            }
        }
        var bytes: [UInt8] = []
        SyncCoding.write(RealmCore.SyncReader.plainValue(binding.value(index, in: record)), into: &bytes)
        bytes.withUnsafeBytes { out.append($0) }
    }

    /// Whether every byte of `text` is below 0x80, eight at a time.
    private static func isASCII(_ text: UnsafeRawBufferPointer) -> Bool {
        var i = 0
        while i + 8 <= text.count {
            if text.loadUnaligned(fromByteOffset: i, as: UInt64.self) & 0x8080_8080_8080_8080 != 0 { return false }
            i += 8
        }
        while i < text.count {
            if text[i] >= 0x80 { return false }
            i += 1
        }
        return true
    }
}
