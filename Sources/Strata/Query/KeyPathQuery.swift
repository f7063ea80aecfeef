import Foundation

/// How a condition on a key path that reaches many values (through a list, a set or linking objects, or
/// into a list of values) combines them: `ANY` (the default), `ALL` (true for none at all) or `NONE`.
enum Quantifier: String, Sendable {
    case any = "ANY", all = "ALL", none = "NONE"
}

/// `@sum`, `@avg`, `@min`, `@max` over a collection.
enum AggregateOp: String, Sendable {
    case sum = "@sum", avg = "@avg", min = "@min", max = "@max"
}

/// A collection property a key path counts or aggregates.
enum QueryCollection: @unchecked Sendable {
    /// A `List` or `MutableSet` property; `target` is the element type for collections of objects.
    case property(Int, target: TypeBinding?)
    /// A `LinkingObjects` property: the objects of `origin` whose property `property` links here.
    case inverse(origin: TypeBinding, property: Int)
    /// The values of a `Map` property (stored as keys and values alternating).
    case mapValues(Int)
}

/// One step of a key path through links: from an object to the objects a property leads to.
enum LinkStep: @unchecked Sendable {
    case link(Int, TypeBinding)
    case list(Int, TypeBinding)
    case inverse(origin: TypeBinding, property: Int)

    var isToMany: Bool { if case .link = self { return false } else { return true } }
}

/// What a key path reads at its end.
enum PathLeaf: Sendable {
    /// A property of the object reached; a list or set property gives its elements.
    case value(Int)
    /// The values of a `Map` property.
    case mapValues(Int)
    /// A to-one link or a collection of objects at the end of the path (`best == nil`, `ANY dogs == %@`):
    /// inside a write transaction, a link to an object deleted in it reads as nil (a list leaves it out),
    /// as the object API shows it.
    case links(Int, TypeBinding)
    /// `@count` of a collection.
    case count(QueryCollection)
    /// `@sum`, `@avg`, `@min` or `@max` of a collection of values, or of property `of` of a collection of
    /// objects.
    case aggregate(AggregateOp, QueryCollection, of: Int?)
}

/// A key path that goes through links or reads a collection: `owner.name`, `dogs.age`, `dogs.@count`,
/// `dogs.@avg.age`, `owners.name`, `scores`.
struct KeyPathOperand: Sendable {
    let text: String
    let steps: [LinkStep]
    let leaf: PathLeaf
    /// Whether the path may reach several values (a quantifier applies).
    let isToMany: Bool

    /// Calls `body` with each value the path reaches from the object `key` (read through `r`), until `body`
    /// returns false; returns false when stopped. A to-one path through a nil link reaches nil.
    func forEachValue(_ r: RecordRef, key: Int64, _ context: QueryContext?, _ body: (StoredValue) -> Bool) -> Bool {
        walk(0, r, key, context, body)
    }

    private func walk(_ step: Int, _ r: RecordRef, _ key: Int64, _ context: QueryContext?, _ body: (StoredValue) -> Bool) -> Bool {
        if step == steps.count { return leafValues(r, key, context, body) }
        // Without a Realm (the fuzz target evaluates against defaults) links lead nowhere.
        guard let context else { return isToMany ? true : body(.null) }
        switch steps[step] {
        case .link(let i, let target):
            guard case .link(let k) = r.value(i),
                let result = context.core.withRecord(target, key: k, { walk(step + 1, $0, k, context, body) })
            else { return isToMany ? true : body(.null) }
            return result
        case .list(let i, let target):
            guard case .list(let items) = r.value(i) else { return true }
            for case .link(let k) in items {
                if context.core.withRecord(target, key: k, { walk(step + 1, $0, k, context, body) }) == false { return false }
            }
            return true
        case .inverse(let origin, let property):
            for k in context.origins(of: key, origin: origin, property: property) {
                if context.core.withRecord(origin, key: k, { walk(step + 1, $0, k, context, body) }) == false { return false }
            }
            return true
        }
    }

    private func leafValues(_ r: RecordRef, _ key: Int64, _ context: QueryContext?, _ body: (StoredValue) -> Bool) -> Bool {
        switch leaf {
        case .value(let i):
            let v = r.value(i)
            if case .list(let items) = v {
                for item in items where !body(item) { return false }
                return true
            }
            return body(v)
        case .mapValues(let i):
            guard case .list(let items) = r.value(i) else { return true }
            var j = 1
            while j < items.count {
                if !body(items[j]) { return false }
                j += 2
            }
            return true
        case .links(let i, let target):
            let v = r.value(i)
            switch v {
            case .link(let k): return body(Self.isLive(k, target, context) ? v : .null)
            case .list(let items):
                for case .link(let k) in items where Self.isLive(k, target, context) {
                    if !body(.link(k)) { return false }
                }
                return true
            default: return body(v)
            }
        case .count(let collection):
            var n = 0
            Self.forEachElement(collection, of: nil, r, key, context) { _ in n += 1 }
            return body(.int(Int64(n)))
        case .aggregate(let op, let collection, let property):
            var values: [StoredValue] = []
            Self.forEachElement(collection, of: property, r, key, context) { if !$0.isNull { values.append($0) } }
            return body(Self.aggregate(op, values))
        }
    }

    /// The elements of a collection of the object read through `r` (for collections of objects, their
    /// property `property`, or their links when it is nil).
    static func forEachElement(
        _ collection: QueryCollection, of property: Int?, _ r: RecordRef, _ key: Int64, _ context: QueryContext?,
        _ body: (StoredValue) -> Void
    ) {
        switch collection {
        case .property(let i, let target):
            guard case .list(let items) = r.value(i) else { return }
            guard let target, let context else {
                for item in items { body(item) }
                return
            }
            guard let property else {
                for case .link(let k) in items where isLive(k, target, context) { body(.link(k)) }
                return
            }
            for case .link(let k) in items {
                if let v = context.core.withRecord(target, key: k, { $0.value(property) }) { body(v) }
            }
        case .mapValues(let i):
            guard case .list(let items) = r.value(i) else { return }
            var j = 1
            while j < items.count {
                body(items[j])
                j += 2
            }
        case .inverse(let origin, let originProperty):
            guard let context else { return }
            for k in context.origins(of: key, origin: origin, property: originProperty) {
                guard let property else {
                    body(.link(k))
                    continue
                }
                if let v = context.core.withRecord(origin, key: k, { $0.value(property) }) { body(v) }
            }
        }
    }

    /// Whether the object a link points to exists. Only a write transaction can hold a link to an object
    /// it deleted (the commit removes such links), so elsewhere nothing is read.
    static func isLive(_ key: Int64, _ target: TypeBinding, _ context: QueryContext?) -> Bool {
        guard let context, context.core.isInWriteTransaction else { return true }
        return context.core.withRecord(target, key: key, { _ in true }) ?? false
    }

    /// Realm's aggregates: the sum of nothing is 0; the average, minimum and maximum of nothing are nil.
    static func aggregate(_ op: AggregateOp, _ values: [StoredValue]) -> StoredValue {
        switch op {
        case .sum:
            if values.allSatisfy({ if case .int = $0 { return true } else { return false } }) {
                return .int(values.reduce(Int64(0)) { acc, v in if case .int(let x) = v { return acc &+ x } else { return acc } })
            }
            if values.allSatisfy({ if case .decimal = $0 { return true } else { return false } }) {
                return .decimal(values.reduce(Decimal(0)) { acc, v in if case .decimal(let x) = v { return acc + x } else { return acc } })
            }
            return .double(values.reduce(0.0) { $0 + ($1.numeric ?? 0) })
        case .avg:
            guard !values.isEmpty else { return .null }
            return .double(values.reduce(0.0) { $0 + ($1.numeric ?? 0) } / Double(values.count))
        case .min:
            return values.min { (StoredValue.compare($0, $1) ?? 0) < 0 } ?? .null
        case .max:
            return values.max { (StoredValue.compare($0, $1) ?? 0) < 0 } ?? .null
        }
    }
}

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

/// The test a query applies to each value a key path reaches.
enum ValueTest: Sendable {
    case compare(CompareOp, StoredValue, StringOptions)
    case string(StringOp, String, StringOptions)
    case isIn([StoredValue], StringOptions)
    case between(StoredValue, StoredValue)

    func matches(_ v: StoredValue) -> Bool {
        switch self {
        case .compare(let op, let value, let options): return Predicate.compare(v, op, value, options)
        case .string(let op, let s, let options):
            guard case .string(let value) = v else { return false }
            return Predicate.match(value, op, s, options)
        case .isIn(let values, let options): return values.contains { Predicate.compare(v, .equal, $0, options) }
        case .between(let lo, let hi):
            return Predicate.compare(v, .greaterOrEqual, lo, []) && Predicate.compare(v, .lessOrEqual, hi, [])
        }
    }
}

extension KeyPathOperand {
    /// Whether `test` holds for the values the path reaches from an object, combined by `quantifier`.
    func evaluate(_ r: RecordRef, key: Int64, _ context: QueryContext?, _ quantifier: Quantifier, _ test: ValueTest) -> Bool {
        switch quantifier {
        case .any, .none:
            var found = false
            _ = forEachValue(r, key: key, context) { v in
                if test.matches(v) { found = true; return false }
                return true
            }
            return quantifier == .any ? found : !found
        case .all:
            var all = true
            _ = forEachValue(r, key: key, context) { v in
                if !test.matches(v) { all = false; return false }
                return true
            }
            return all
        }
    }
}

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

extension TypeInfo {
    /// Resolves a key path of a query (`age`, `owner.name`, `dogs.@count`, `dogs.@avg.age`); errors name the
    /// type and the property that does not fit.
    func resolveKeyPath(_ text: String, bindings: BindingResolver?) throws -> (ResolvedOperand, type: PropertyType) {
        // The usual case, a stored scalar property of this type, without splitting the text.
        if let i = propertyIndex[text], !schema.properties[i].isCollection, schema.properties[i].type != .object {
            return (.property(i), schema.properties[i].type)
        }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        var info = self
        var steps: [LinkStep] = []
        var c = 0
        func need(_ resolver: BindingResolver?) throws -> BindingResolver {
            guard let resolver else { throw QueryError("key path '\(text)' goes through a link, which needs a Realm to resolve") }
            return resolver
        }
        func finish(_ leaf: PathLeaf, _ type: PropertyType, collectionLeaf: Bool) -> (ResolvedOperand, type: PropertyType) {
            let toMany = steps.contains { $0.isToMany } || collectionLeaf
            return (.path(KeyPathOperand(text: text, steps: steps, leaf: leaf, isToMany: toMany)), type)
        }
        while c < parts.count {
            let name = parts[c]
            let className = info.schema.className
            let isLast = c == parts.count - 1
            let next = isLast ? nil : parts[c + 1]
            // A LinkingObjects property: not stored, found among the inverse declarations.
            if let inverse = info.linkingObjects.first(where: { $0.name == name }) {
                let origin = try need(bindings)(inverse.origin)
                guard let p = origin.info.propertyIndex[inverse.property] else {
                    throw QueryError("'\(className).\(name)' links from '\(origin.info.schema.className).\(inverse.property)', which does not exist")
                }
                let collection = QueryCollection.inverse(origin: origin, property: p)
                if let next, next.hasPrefix("@") {
                    return try info.aggregateLeaf(next, collection, target: origin.info, parts: parts, at: c, steps: steps, text: text)
                }
                guard !isLast else { throw QueryError("'\(className).\(name)' is a LinkingObjects property: compare one of its objects' properties, or its @count") }
                steps.append(.inverse(origin: origin, property: p))
                info = origin.info
                c += 1
                continue
            }
            guard let i = info.propertyIndex[name] else {
                if name.hasPrefix("@") {
                    throw QueryError("'\(name)' in key path '\(text)' must follow a List, MutableSet or LinkingObjects property")
                }
                throw QueryError("'\(className)' has no property '\(name)'" + (c > 0 ? " (in key path '\(text)')" : ""))
            }
            let property = info.schema.properties[i]
            if property.isMap {
                if let next, next.hasPrefix("@") {
                    return try info.aggregateLeaf(next, .mapValues(i), target: nil, parts: parts, at: c, steps: steps, text: text)
                }
                guard isLast else { throw QueryError("'\(className).\(name)' is a Map of values; key path '\(text)' cannot go through it") }
                return finish(.mapValues(i), property.type, collectionLeaf: true)
            }
            if property.isCollection {
                let target = property.type == .object ? try info.listTargets[i].flatMap { $0 }.map { try need(bindings)($0) } : nil
                let collection = QueryCollection.property(i, target: target)
                if let next, next.hasPrefix("@") {
                    return try info.aggregateLeaf(next, collection, target: target?.info, parts: parts, at: c, steps: steps, text: text)
                }
                if isLast { return finish(target.map { .links(i, $0) } ?? .value(i), property.type, collectionLeaf: true) }
                guard let target else {
                    throw QueryError("'\(className).\(name)' is a collection of values; key path '\(text)' cannot go through it")
                }
                steps.append(.list(i, target))
                info = target.info
                c += 1
                continue
            }
            if isLast {
                if property.type == .object, let bindings, let targetClass = info.linkTargets[i] {
                    return finish(.links(i, bindings(targetClass)), property.type, collectionLeaf: false)
                }
                if steps.isEmpty { return (.property(i), property.type) }
                return finish(.value(i), property.type, collectionLeaf: false)
            }
            guard property.type == .object, let targetClass = info.linkTargets[i] else {
                if let next, next.hasPrefix("@") {
                    throw QueryError("'\(next)' needs a List, MutableSet or LinkingObjects property; '\(className).\(name)' is \(property.type)")
                }
                throw QueryError("'\(className).\(name)' is not a link; key path '\(text)' cannot go through it")
            }
            let target = try need(bindings)(targetClass)
            steps.append(.link(i, target))
            info = target.info
            c += 1
        }
        throw QueryError("empty key path in query")
    }

    /// The end of a key path at `@count`, `@sum`... applied to `collection` (property `parts[at]`).
    private func aggregateLeaf(
        _ op: String, _ collection: QueryCollection, target: TypeInfo?, parts: [String], at c: Int, steps: [LinkStep], text: String
    ) throws -> (ResolvedOperand, type: PropertyType) {
        let toMany = steps.contains { $0.isToMany }
        func result(_ leaf: PathLeaf, _ type: PropertyType) -> (ResolvedOperand, type: PropertyType) {
            (.path(KeyPathOperand(text: text, steps: steps, leaf: leaf, isToMany: toMany)), type)
        }
        switch op.lowercased() {
        case "@count", "@size":
            guard c + 2 == parts.count else { throw QueryError("'\(op)' must end key path '\(text)'") }
            return result(.count(collection), .int)
        case "@sum", "@avg", "@min", "@max":
            guard let aggregate = AggregateOp(rawValue: op.lowercased()) else {
                throw QueryError("unknown collection operator '\(op)' in key path '\(text)'")
            }
            if let target {
                // A collection of objects: the aggregated property follows.
                guard c + 3 == parts.count else {
                    throw QueryError("'\(op)' over the objects of '\(parts[c])' needs one property of '\(target.schema.className)' after it, as in '\(parts[c]).\(op).age'")
                }
                guard let p = target.propertyIndex[parts[c + 2]] else {
                    throw QueryError("'\(target.schema.className)' has no property '\(parts[c + 2])' (in key path '\(text)')")
                }
                let type = target.schema.properties[p].type
                guard [.int, .float, .double, .decimal128, .date].contains(type) || (aggregate != .sum && aggregate != .avg && type != .object) else {
                    throw QueryError("'\(op)' needs a numeric property; '\(target.schema.className).\(parts[c + 2])' is \(type)")
                }
                return result(.aggregate(aggregate, collection, of: p), aggregate == .avg ? .double : type)
            }
            guard c + 2 == parts.count else { throw QueryError("'\(op)' must end key path '\(text)'") }
            let i: Int
            switch collection {
            case .property(let p, _), .mapValues(let p): i = p
            case .inverse: throw QueryError("'\(op)' needs a collection in '\(text)'")
            }
            let type = schema.properties.indices.contains(i) ? schema.properties[i].type : .int
            return result(.aggregate(aggregate, collection, of: nil), aggregate == .avg ? .double : type)
        default:
            throw QueryError("unknown collection operator '\(op)' in key path '\(text)'; expected @count, @sum, @avg, @min or @max")
        }
    }
}

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
