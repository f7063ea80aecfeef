import Engine
import Foundation

// Links between objects: checking a link's target type, the keys a stored value links to.

extension RealmCore {
    /// Stores the links and lists of an object being added, adding the linked objects that are not managed yet.
    /// Models have no polymorphism (O046): a link or collection of `target` holds `target` objects only, never
    /// a subclass's (a subclass is another type, in another partition; its key would name the wrong object).
    static func checkLinkType(_ object: Object, _ target: Object.Type, _ place: String) {
        let actual = type(of: object)
        guard actual != target, target != Object.self, !(object is DynamicObject) else { return }
        fatalError(
            "Object of type '\(actual.className())' cannot be stored in \(place), which holds '\(target.className())' objects: "
                + "a subclass of a model is a separate type (Realm models have no polymorphism)")
    }

    static func linkKeys(_ v: StoredValue) -> [Int64] {
        switch v {
        case .link(let k): return [k]
        case .list(let items): return items.compactMap { if case .link(let k) = $0 { return k } else { return nil } }
        default: return []
        }
    }
}
