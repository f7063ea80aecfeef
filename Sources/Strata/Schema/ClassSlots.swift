import Engine
import Foundation
import Atomics

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
    /// Each slot owns (+1) the entry it holds, released with the table. An `UnsafeAtomic` (a pointer to its
    /// word) takes no retain to read, and its operations are inlined into this file, so no generic code of
    /// another module runs on a getter's path.
    private static let slotCount = 64
    private let slots: [UnsafeAtomic<Unmanaged<Entry>?>] = (0..<ClassSlots.slotCount).map { _ in UnsafeAtomic.create(nil) }

    deinit {
        for slot in slots { slot.destroy()?.release() }
    }

    @inline(__always)
    private static func home(_ id: ObjectIdentifier) -> Int {
        Int(truncatingIfNeeded: UInt(bitPattern: id) >> 4 ^ UInt(bitPattern: id) >> 10) & (slotCount - 1)
    }

    @inline(__always)
    func info(for id: ObjectIdentifier) -> TypeInfo? {
        guard let e = slots[Self.home(id)].load(ordering: .acquiring)?.takeUnretainedValue(), e.id == id else { return nil }
        return e.info
    }

    /// Classes are never unloaded, so an identifier in a slot always names the same class.
    func publish(_ info: TypeInfo, for id: ObjectIdentifier) {
        let new = Unmanaged.passRetained(Entry(id: id, info: info))
        if !slots[Self.home(id)].compareExchange(expected: nil, desired: new, ordering: .acquiringAndReleasing).exchanged {
            new.release()
        }
    }
}
