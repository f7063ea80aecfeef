@_spi(Reflection) import Swift

/// Where the `@Persisted` storages of a model class lie in its instances, read once per class from the
/// class's metadata, so that each storage can be told which property it is (`Persisted.slot`).
///
/// A property's getter is handed its storage's key path. Asking a table which property that key path names
/// makes the key path an object at every read (a runtime call and a retain and release), which costs more than
/// the rest of a read. A read of the storage itself through the key path compiles to a load at a constant
/// offset: so the getter reads the property's index from its storage, which this table fills in, all of an
/// object's storages at once, at the first read that finds one unset.
///
/// Pointer code: the one write through a raw pointer into a model instance is here (`fill`), at offsets the
/// Swift runtime gives for the class's own fields, of a field whose type is `Persisted` (STYLE.md, "Unsafe code").
@usableFromInline
struct PersistedSlots: Sendable {
    /// What a storage's slot holds: a property's index in the schema (0 and up), `linking(k)` for the `k`th
    /// LinkingObjects property, `notInSchema` for a `@Persisted` property the schema leaves out
    /// (`ignoredProperties()`), and `unset` until it is filled.
    @usableFromInline static let unset: Int32 = -1
    static let notInSchema: Int32 = .min
    static func linking(_ k: Int) -> Int32 { -2 - Int32(k) }
    static func linkingOrdinal(_ slot: Int32) -> Int? { slot <= -2 && slot != notInSchema ? Int(-2 - slot) : nil }

    /// Per `@Persisted` field: the byte offset of its `slot` in an instance, and what to store there.
    private let entries: [(offset: Int, slot: Int32)]
    /// Per `@Persisted` field that is a stored property: its offset in an instance, its type and its index.
    private let storages: [(offset: Int, type: any PersistedSlot.Type, index: Int)]

    /// The table of `objectClass`: `labels` gives a field's property index, `linkingLabels` its LinkingObjects
    /// ordinal (both keyed by field name, as `Mirror` labels them).
    init(objectClass: Object.Type, labels: [String: Int], linkingLabels: [String: Int]) {
        var entries: [(offset: Int, slot: Int32)] = []
        var storages: [(offset: Int, type: any PersistedSlot.Type, index: Int)] = []
        // Every stored field of the class and its superclasses, with its offset in an instance. The option is
        // `_EachFieldOptions.classType`, named by its value: the standard library declares it a mutable static,
        // which strict concurrency does not let code read.
        let found = _forEachField(of: objectClass, options: _EachFieldOptions(rawValue: 1)) { name, offset, type, _ in
            // `Persisted` only: legacy `let` properties (`RealmProperty`, `List`, `LinkingObjects`) have no slot.
            guard let persisted = type as? any PersistedSlot.Type else { return true }
            let label = String(cString: name)
            let slot = labels[label].map { Int32($0) } ?? linkingLabels[label].map(Self.linking) ?? Self.notInSchema
            entries.append((offset + persisted.slotOffset, slot))
            if slot >= 0 { storages.append((offset, persisted, Int(slot))) }
            return true
        }
        guard found else { fatalError("\(objectClass.className()): the Swift runtime gives no field layout for this class") }
        self.entries = entries
        self.storages = storages
    }

    /// Writes every storage's slot in `object`, an instance of exactly this table's class.
    func fill(_ object: Object) {
        let base = UnsafeMutableRawPointer(Unmanaged.passUnretained(object).toOpaque())
        for entry in entries {
            base.storeBytes(of: entry.slot, toByteOffset: entry.offset, as: Int32.self)
        }
        withExtendedLifetime(object) {}
    }

    /// The values the stored properties' storages of `object` hold, an unmanaged instance of exactly this
    /// table's class (declared defaults, or what a `RealmProperty` holds), at their indices in `values`.
    func readValues(of object: Object, into values: inout [StoredValue]) {
        let base = UnsafeRawPointer(Unmanaged.passUnretained(object).toOpaque())
        for storage in storages where storage.index < values.count {
            values[storage.index] = storage.type.storedValue(at: base, offset: storage.offset)
        }
        withExtendedLifetime(object) {}
    }
}

/// A `Persisted` storage, found among a class's fields by its type.
protocol PersistedSlot: _PersistableMetatype {
    /// Where `slot` lies in the storage.
    static var slotOffset: Int { get }
    /// The stored form of the unmanaged value of the storage at `offset` from `base`.
    static func storedValue(at base: UnsafeRawPointer, offset: Int) -> StoredValue
}

extension Persisted: PersistedSlot {
    static var slotOffset: Int {
        guard let offset = MemoryLayout<Self>.offset(of: \Self.slot) else { fatalError("Persisted.slot is a stored property") }
        return offset
    }
    static func storedValue(at base: UnsafeRawPointer, offset: Int) -> StoredValue {
        base.load(fromByteOffset: offset, as: Self.self).storedValue
    }
}
