import Foundation

/// What one evaluation of a query needs beyond the record at hand: the Realm, to read the objects links
/// lead to, and the inverse links found so far.
final class QueryContext {
    let core: RealmCore
    private var inverse: [InverseKey: [Int64: [Int64]]] = [:]

    struct InverseKey: Hashable {
        let partition: UInt32
        let property: Int
    }

    init(core: RealmCore) { self.core = core }

    /// The objects of `origin` whose property `property` links to `key` (each once, in key order). The
    /// first call scans `origin` once and keeps the answer for the rest of the evaluation.
    func origins(of key: Int64, origin: TypeBinding, property: Int) -> [Int64] {
        let id = InverseKey(partition: origin.partition, property: property)
        if let map = inverse[id] { return map[key] ?? [] }
        var map: [Int64: [Int64]] = [:]
        core.forEachRecord(origin) { k, ref in
            switch ref.value(property) {
            case .link(let target): map[target, default: []].append(k)
            case .list(let items):
                var seen = Set<Int64>()
                for case .link(let target) in items where seen.insert(target).inserted { map[target, default: []].append(k) }
            default: break
            }
            return true
        }
        inverse[id] = map
        return map[key] ?? []
    }
}
