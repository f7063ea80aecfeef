import Foundation

/// `SUBQUERY(collection, $x, predicate).@count`: the elements of a collection of objects of the queried type
/// that match a predicate over the element type (its key paths start with `$x.`), counted.
struct Subquery: @unchecked Sendable {
    /// To-one links leading to the object that holds the collection (`owner.dogs`: the link `owner`).
    var links: [(property: Int, target: TypeBinding)] = []
    let collection: QueryCollection
    let element: TypeBinding
    let predicate: Predicate

    func count(_ r: RecordRef, key: Int64, _ context: QueryContext?) -> Int {
        guard let context else { return 0 }
        var keys: [Int64] = []
        func collect(_ step: Int, _ r: RecordRef, _ key: Int64) {
            guard step < links.count else {
                KeyPathOperand.forEachElement(collection, of: nil, r, key, context) { v in
                    if case .link(let k) = v { keys.append(k) }
                }
                return
            }
            guard case .link(let k) = r.value(links[step].property) else { return }
            _ = context.core.withRecord(links[step].target, key: k) { collect(step + 1, $0, k) }
        }
        collect(0, r, key)
        var n = 0
        for k in keys where context.core.withRecord(element, key: k, { predicate.evaluate($0, key: k, in: context) }) == true { n += 1 }
        return n
    }

    static func resolve(_ collectionPath: String, _ variable: String, _ inner: QueryExpr, in info: TypeInfo, bindings: BindingResolver?) throws -> Subquery {
        guard let bindings else { throw QueryError("SUBQUERY needs a Realm to resolve") }
        // To-one links first (`owner.dogs`), then the collection on the type they lead to.
        var parts = collectionPath.split(separator: ".").map(String.init)
        let collectionName = parts.removeLast()
        var links: [(property: Int, target: TypeBinding)] = []
        var info = info
        for part in parts {
            guard let i = info.propertyIndex[part], let cls = info.linkTargets[i] else {
                throw QueryError("'\(part)' in SUBQUERY's collection '\(collectionPath)' is not a to-one link of '\(info.schema.className)'")
            }
            let target = bindings(cls)
            links.append((i, target))
            info = target.info
        }
        let collectionPath = collectionName
        let collection: QueryCollection
        let element: TypeBinding
        if let inverse = info.linkingObjects.first(where: { $0.name == collectionPath }) {
            let origin = bindings(inverse.origin)
            guard let p = origin.info.propertyIndex[inverse.property] else {
                throw QueryError("'\(info.schema.className).\(collectionPath)' links from a property that does not exist")
            }
            collection = .inverse(origin: origin, property: p)
            element = origin
        } else {
            guard let i = info.propertyIndex[collectionPath], info.schema.properties[i].isCollection, let cls = info.listTargets[i] ?? nil else {
                throw QueryError("SUBQUERY needs a List, MutableSet or LinkingObjects of objects of '\(info.schema.className)'; '\(collectionPath)' is not one")
            }
            element = bindings(cls)
            collection = .property(i, target: element)
        }
        let predicate = try rename(inner, variable).resolve(element.info, bindings: bindings)
        return Subquery(links: links, collection: collection, element: element, predicate: predicate)
    }

    /// The inner predicate with `$x.` removed from its key paths (they are key paths of the element type).
    private static func rename(_ e: QueryExpr, _ variable: String) throws -> QueryExpr {
        func strip(_ name: String) throws -> String {
            guard name.hasPrefix(variable + ".") else {
                throw QueryError("inside SUBQUERY, key paths start with \(variable). ('\(name)' does not)")
            }
            return String(name.dropFirst(variable.count + 1))
        }
        switch e {
        case .property(let n): return .property(try strip(n))
        case .quantified(let q, let n): return .quantified(q, try strip(n))
        case .comparison(let a, let op, let b, let o): return .comparison(try rename(a, variable), op, try rename(b, variable), o)
        case .stringOp(let a, let op, let b, let o): return .stringOp(try rename(a, variable), op, try rename(b, variable), o)
        case .isIn(let a, let b, let o): return .isIn(try rename(a, variable), try rename(b, variable), o)
        case .between(let a, let b): return .between(try rename(a, variable), try rename(b, variable))
        case .and(let a, let b): return .and(try rename(a, variable), try rename(b, variable))
        case .or(let a, let b): return .or(try rename(a, variable), try rename(b, variable))
        case .not(let a): return .not(try rename(a, variable))
        case .truePredicate, .falsePredicate, .value, .list, .subquery: return e
        }
    }
}
