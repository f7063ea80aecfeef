import Foundation

extension TypeInfo {
    /// Resolves a key path of a query (`age`, `owner.name`, `dogs.@count`, `dogs.@avg.age`); errors name the
    /// type and the property that does not fit.
    func resolveKeyPath(_ text: String, bindings: BindingResolver?) throws -> (ResolvedOperand, type: PropertyType) {
        // The usual case, a stored scalar property of this type, without splitting the text.
        if let i = propertyIndex[text], !schema.properties[i].isCollection, schema.properties[i].type != .object {
            return (.property(i), schema.properties[i].type)
        }
        let parts = Self.keyPathParts(text)
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
            var name = parts[c]
            // `map['key']`: the parser writes a subscript as `map[key]`.
            var subscriptKey: String? = nil
            if name.hasSuffix("]"), let open = name.firstIndex(of: "[") {
                subscriptKey = String(name[name.index(after: open)..<name.index(before: name.endIndex)])
                name = String(name[..<open])
            }
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
            if let subscriptKey {
                guard property.isMap else { throw QueryError("'\(className).\(name)' is not a Map; only a Map takes a key ('\(text)')") }
                guard isLast else { throw QueryError("key path '\(text)' cannot go on after a Map's value") }
                return finish(.mapValue(i, key: subscriptKey), property.type, collectionLeaf: false)
            }
            if property.isMap {
                if let next, next.lowercased() == "@keys" || next.lowercased() == "@allkeys" {
                    guard c + 2 == parts.count else { throw QueryError("'\(next)' must end key path '\(text)'") }
                    return finish(.mapKeys(i), .string, collectionLeaf: true)
                }
                if let next, next.lowercased() == "@values" || next.lowercased() == "@allvalues" {
                    guard c + 2 == parts.count else { throw QueryError("'\(next)' must end key path '\(text)'") }
                    return finish(.mapValues(i), property.type, collectionLeaf: true)
                }
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

    /// The steps of a key path, split at dots outside a map subscript (`settings[a.b].x` is `settings[a.b]`, `x`).
    static func keyPathParts(_ text: String) -> [String] {
        guard text.contains("[") else { return text.split(separator: ".", omittingEmptySubsequences: false).map(String.init) }
        var parts: [String] = []
        var current = ""
        var inSubscript = false
        let chars = Array(text)
        for (n, ch) in chars.enumerated() {
            if inSubscript {
                current.append(ch)
                // A subscript ends at a `]` that ends the text or comes before a dot.
                if ch == "]", n + 1 == chars.count || chars[n + 1] == "." { inSubscript = false }
            } else if ch == "[" {
                current.append(ch)
                inSubscript = true
            } else if ch == "." {
                parts.append(current)
                current = ""
            } else {
                current.append(ch)
            }
        }
        parts.append(current)
        return parts
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
