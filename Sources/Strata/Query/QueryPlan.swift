/// How a query finds its objects: the planner's choice for a predicate, made before any record is read.
/// Tests assert it; its description is what a person reading a slow query needs.
enum QueryPlan: Equatable, CustomStringConvertible {
    /// Every object of the type is read and checked where it lies (`RowPredicate`).
    case scan
    /// `pk == v` or `pk IN {...}`, alone or ANDed with more: the primary key gives the few candidates, which
    /// the whole predicate then checks.
    case primaryKey(property: String)
    /// The same through a secondary index on `type.property`.
    case index(type: String, property: String)
    /// `pk > v`, `pk <= v`, `pk BETWEEN {a, b}` on an Int primary key (alone or ANDed with more): only the
    /// objects whose keys are in range are read, and the whole predicate checks them.
    case primaryKeyRange(property: String)

    var description: String {
        switch self {
        case .scan: "scan"
        case .primaryKey(let p): "primary key \(p)"
        case .index(let t, let p): "index on \(t).\(p)"
        case .primaryKeyRange(let p): "primary key range of \(p)"
        }
    }
}
