import Atomics

/// A small lock-free map from key path identity to property index, in front of `TypeInfo`'s locked table.
///
/// Every property read of a managed object starts by finding the property's index from its storage key path;
/// a lock there costs more than the read itself. Each slot is one atomic word packing the key path's address
/// with the index, so a reader sees either an empty slot or a whole entry, never half of one.
///
/// Invariants:
/// (1) A slot holds only the identity of a key path that `TypeInfo`'s table keeps alive for the life of the
///     `TypeInfo`, so the address cannot be reused by another key path while the slot names it.
/// (2) Slots go from empty to full once and never change again; a full table falls back to the lock.
final class KeyPathSlots: Sendable {
    private static let slotCount = 32
    /// Linear probing distance; an entry further away is not cached (the locked table still answers).
    private static let probeLength = 4
    /// Each slot is an `UnsafeAtomic` (a pointer to its word, freed in deinit): reading one takes no retain, as
    /// an array of class-based atomics would (a retain and a release per property read, measured).
    private let slots: [UnsafeAtomic<UInt64>] = (0..<KeyPathSlots.slotCount).map { _ in UnsafeAtomic.create(0) }

    deinit {
        for slot in slots { _ = slot.destroy() }
    }

    /// The packed entry for `id` and `index`, or nil when the address does not fit in 48 bits or the index
    /// in 16 (the lock answers those).
    @inline(__always)
    private static func pack(_ id: ObjectIdentifier, _ index: Int) -> UInt64? {
        let address = UInt64(UInt(bitPattern: id))
        guard address >> 48 == 0, index >= 0, index < 0xFFFF else { return nil }
        return address << 16 | UInt64(index + 1)
    }

    @inline(__always)
    private static func home(_ id: ObjectIdentifier) -> Int {
        // Objects are at least 16-byte aligned: the low bits carry no information.
        Int(truncatingIfNeeded: UInt(bitPattern: id) >> 4 ^ UInt(bitPattern: id) >> 11) & (slotCount - 1)
    }

    @inline(__always)
    func index(of id: ObjectIdentifier) -> Int? {
        let address = UInt64(UInt(bitPattern: id))
        var i = Self.home(id)
        for _ in 0..<Self.probeLength {
            let word = slots[i].load(ordering: .relaxed)
            if word == 0 { return nil }
            if word >> 16 == address { return Int(word & 0xFFFF) - 1 }
            i = (i + 1) & (Self.slotCount - 1)
        }
        return nil
    }

    /// Records `id` -> `index`; called under `TypeInfo`'s lock, so two inserts never race for a slot with the
    /// same entry (a lost race for an empty slot only moves on to the next one).
    func insert(_ id: ObjectIdentifier, _ index: Int) {
        guard let word = Self.pack(id, index) else { return }
        var i = Self.home(id)
        for _ in 0..<Self.probeLength {
            let existing = slots[i].load(ordering: .relaxed)
            if existing == word { return }
            if existing == 0 {
                if slots[i].compareExchange(expected: 0, desired: word, ordering: .relaxed).exchanged { return }
            }
            i = (i + 1) & (Self.slotCount - 1)
        }
    }
}
