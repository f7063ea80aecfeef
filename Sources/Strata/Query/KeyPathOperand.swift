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
    /// The values of a `Map` property (`map`, `map.@values`).
    case mapValues(Int)
    /// The keys of a `Map` property (`map.@keys`).
    case mapKeys(Int)
    /// The value of a `Map` property for one key (`map['key']`); nil when the map has no such key.
    case mapValue(Int, key: String)
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
        case .mapValues(let i), .mapKeys(let i):
            guard case .list(let items) = r.value(i) else { return true }
            var j = { if case .mapKeys = leaf { 0 } else { 1 } }()
            while j < items.count {
                if !body(items[j]) { return false }
                j += 2
            }
            return true
        case .mapValue(let i, let key):
            guard case .list(let items) = r.value(i) else { return body(.null) }
            var j = 0
            while j + 1 < items.count {
                if case .string(let k) = items[j], k == key { return body(items[j + 1]) }
                j += 2
            }
            return body(.null)
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
                return .decimal(Decimal128(value: values.reduce(Decimal(0)) { acc, v in if case .decimal(let x) = v { return acc + x.value } else { return acc } }))
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
