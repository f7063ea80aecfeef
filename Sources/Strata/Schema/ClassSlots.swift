import Engine
import Foundation
import Synchronization

/// Class identity -> `TypeInfo`, read without a lock: each slot is set once, atomically, to an immutable
/// entry; a class whose slot another class took is answered by the locked dictionary.
final class ClassSlots: Sendable {
    private final class Entry: Sendable {
        let id: ObjectIdentifier
        let info: TypeInfo
        init(id: ObjectIdentifier, info: TypeInfo) {
            self.id = id
            self.info = info
        }
    }
    /// An atomic reference of this module's own (not the engine's generic `LazyReference`: a generic class
    /// of another module is used through run-time metadata lookups, which cost more than the rest of a setter).
    private final class Slot: Sendable {
        private let storage = Atomic<Unmanaged<Entry>?>(nil)

        @inline(__always)
        func load() -> Entry? { storage.load(ordering: .acquiring)?.takeUnretainedValue() }

        func storeIfNil(_ desired: Entry) {
            let new = Unmanaged.passRetained(desired)
            if !storage.compareExchange(expected: nil, desired: new, ordering: .acquiringAndReleasing).exchanged { new.release() }
        }

        deinit { storage.load(ordering: .acquiring)?.release() }
    }
    private static let slotCount = 64
    private let slots: [Slot] = (0..<ClassSlots.slotCount).map { _ in Slot() }

    @inline(__always)
    private static func home(_ id: ObjectIdentifier) -> Int {
        Int(truncatingIfNeeded: UInt(bitPattern: id) >> 4 ^ UInt(bitPattern: id) >> 10) & (slotCount - 1)
    }

    @inline(__always)
    func info(for id: ObjectIdentifier) -> TypeInfo? {
        guard let e = slots[Self.home(id)].load(), e.id == id else { return nil }
        return e.info
    }

    /// Classes are never unloaded, so an identifier in a slot always names the same class.
    func publish(_ info: TypeInfo, for id: ObjectIdentifier) {
        slots[Self.home(id)].storeIfNil(Entry(id: id, info: info))
    }
}
