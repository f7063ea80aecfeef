import Foundation

/// Finds the bindings of the types key paths lead to (those of the Realm that runs the query).
typealias BindingResolver = (Object.Type) -> TypeBinding

/// A key path resolved against a type: a plain property of the type itself, or a path.
enum ResolvedOperand: Sendable {
    case property(Int)
    case path(KeyPathOperand)

    /// Every value the operand reaches from the object `key` (a list of values gives its elements).
    func values(_ r: RecordRef, key: Int64, _ context: QueryContext?) -> [StoredValue] {
        switch self {
        case .property(let i):
            if case .list(let items) = r.value(i) { return items }
            return [r.value(i)]
        case .path(let p):
            var out: [StoredValue] = []
            _ = p.forEachValue(r, key: key, context) { v in
                out.append(v)
                return true
            }
            return out
        }
    }
}
