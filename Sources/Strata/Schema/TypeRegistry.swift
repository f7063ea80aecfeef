import Engine
import Foundation

/// Reflected type information, once per class.
@usableFromInline
enum TypeRegistry {
    private static let infos = Locked<[ObjectIdentifier: TypeInfo]>([:])
    /// Lock-free front of `infos`: every setter of an unmanaged object asks for its class's information.
    private static let slots = ClassSlots()

    /// The type's information; traps on an invalid model (Realm's open reports the same problem as an error).
    @usableFromInline
    static func info(for cls: Object.Type) -> TypeInfo {
        do {
            return try checkedInfo(for: cls)
        } catch {
            fatalError("\(error)")
        }
    }

    static func checkedInfo(for cls: Object.Type) throws -> TypeInfo {
        let id = ObjectIdentifier(cls)
        if let info = slots.info(for: id) { return info }
        if let info = infos.withLock({ $0[id] }) {
            slots.publish(info, for: id)
            return info
        }
        let info = try TypeInfo(objectClass: cls)
        let kept = infos.withLock { d in
            if let existing = d[id] { return existing }
            d[id] = info
            return info
        }
        slots.publish(kept, for: id)
        return kept
    }
}
