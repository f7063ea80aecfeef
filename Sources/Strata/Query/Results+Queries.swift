import Engine
import Foundation

// Narrowing and ordering a Results: filters, sorts, distinct, and their key paths.

extension Results where Element: Object {
    /// The objects matching a predicate in Realm's syntax, e.g. `filter("age > %@ AND name BEGINSWITH 'A'", 18)`.
    /// A malformed predicate traps with the position and what was expected.
    public func filter(_ predicateFormat: String, _ args: Any...) -> Results<Element> {
        do {
            return try filter(predicateFormat, arguments: args.map { Optional($0) })
        } catch {
            fatalError("Invalid predicate: \(error)")
        }
    }

    /// `filter(_:_:)` with the arguments as an array; throws what that form traps with.
    package func filter(_ predicateFormat: String, arguments: [Any?]) throws -> Results<Element> {
        try filter(QueryParser.parse(predicateFormat, arguments: arguments))
    }

    /// The objects matching a parsed query (from a string, or from an `NSPredicate`).
    func filter(_ query: QueryExpr) throws -> Results<Element> {
        let expr = try query.resolve(binding.info, bindings: bindingResolver)
        return Results(core: core, binding: binding, predicate: predicate.map { .and($0, expr) } ?? expr, sort: sort, distinct: distinctKeys, base: base)
    }

    /// The objects matching a type-safe query, e.g. `where { $0.age > 18 && $0.name.starts(with: "A") }`.
    public func `where`(_ isIncluded: (Query<Element>) -> Query<Bool>) -> Results<Element> {
        let expr: Predicate
        do {
            expr = try isIncluded(Query<Element>(.truePredicate)).expression.resolve(binding.info, bindings: bindingResolver)
        } catch {
            fatalError("Invalid query: \(error)")
        }
        return Results(core: core, binding: binding, predicate: predicate.map { .and($0, expr) } ?? expr, sort: sort, distinct: distinctKeys, base: base)
    }

    public func sorted(byKeyPath keyPath: String, ascending: Bool = true) -> Results<Element> {
        sorted(by: [SortDescriptor(keyPath: keyPath, ascending: ascending)])
    }

    public func sorted<V>(by keyPath: KeyPath<Element, V>, ascending: Bool = true) -> Results<Element> {
        sorted(byKeyPath: binding.info.name(of: keyPath), ascending: ascending)
    }

    public func sorted<S: Sequence>(by descriptors: S) -> Results<Element> where S.Element == SortDescriptor {
        let keys = descriptors.map { d -> (key: SortKey, ascending: Bool) in (sortKey(d.keyPath, "sort"), d.ascending) }
        return Results(core: core, binding: binding, predicate: predicate, sort: keys + sort, distinct: distinctKeys, base: base)
    }

    /// One object per distinct combination of the values of `keyPaths` (the first in sort order); key paths
    /// may go through to-one links (`owner.name`).
    public func distinct<S: Sequence>(by keyPaths: S) -> Results<Element> where S.Element == String {
        Results(core: core, binding: binding, predicate: predicate, sort: sort, distinct: distinctKeys + keyPaths.map { sortKey($0, "distinct") }, base: base)
    }

    /// `distinct(by:)` with key paths: `distinct(by: [\.firstName, \.owner?.name])`.
    public func distinct<S: Sequence>(by keyPaths: S) -> Results<Element> where S.Element == PartialKeyPath<Element> {
        distinct(by: keyPaths.map { binding.info.name(of: $0) })
    }

    /// A property or a key path through to-one links to a property, for sorting or distinct.
    func sortKey(_ keyPath: String, _ verb: String) -> SortKey {
        if let i = binding.info.propertyIndex[keyPath] { return .property(i) }
        let resolved: ResolvedOperand
        do {
            resolved = try binding.info.resolveKeyPath(keyPath, bindings: bindingResolver).0
        } catch {
            fatalError("Cannot \(verb) on key path '\(keyPath)' of '\(binding.info.schema.className)': \(error)")
        }
        switch resolved {
        case .property(let i): return .property(i)
        case .path(let path):
            guard !path.isToMany, case .value = path.leaf else {
                fatalError(
                    "Cannot \(verb) on key path '\(keyPath)' of '\(binding.info.schema.className)': it must go through to-one links only, to a property")
            }
            return .path(path)
        }
    }
}
