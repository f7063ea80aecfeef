import Engine
import Foundation

/// A sort key: a property name and a direction.
public struct SortDescriptor: Sendable, Hashable {
    public var keyPath: String
    public var ascending: Bool
    public init(keyPath: String, ascending: Bool = true) {
        self.keyPath = keyPath
        self.ascending = ascending
    }
}

/// What a `Results` sorts or distincts on: a property of its type, or a key path through to-one links
/// (`owner.name`).
enum SortKey: @unchecked Sendable {
    case property(Int)
    case path(KeyPathOperand)

    /// The value for the object `key` read through `r` (nil through a nil link).
    func value(_ r: RecordRef, key: Int64, _ context: QueryContext?) -> StoredValue {
        switch self {
        case .property(let i): return r.value(i)
        case .path(let path):
            var first = StoredValue.null
            _ = path.forEachValue(r, key: key, context) { v in
                first = v
                return false
            }
            return first
        }
    }
}

/// The objects of one type matching a query, in a sort order: a live view of the Realm's current version.
/// Also the projections of such objects (`Results<PersonProjection>`), and the values of a collection of
/// values, filtered or sorted (`person.scores.sorted(ascending: false)` is a `Results<Int>`).
///
/// Evaluation is lazy and cached per version: `count`, subscripts and iteration evaluate once, and again
/// only after the Realm moves to another version or changes in its write transaction.
public struct Results<Element: _RealmResultsElement>: RandomAccessCollection, CustomStringConvertible {
    let core: RealmCore
    /// The objects' type (the projected type for projections; the owner's type for values).
    let binding: TypeBinding
    let predicate: Predicate?
    let sort: [(key: SortKey, ascending: Bool)]
    /// Properties (or key paths through to-one links) whose values must be distinct: the first object in sort
    /// order of each combination stays.
    let distinctKeys: [SortKey]
    /// The collection whose objects these are (`person.dogs.filter(...)`); nil: every object of the type.
    let base: ResultsBase?
    /// For projections: the projection of each object found.
    let projector: ((Object) -> Element)?
    /// For values: the collection they come from and what narrows and orders them.
    let values: ValueSource<Element>?
    let cache = ResultsCache()

    init(
        core: RealmCore, binding: TypeBinding, predicate: Predicate?, sort: [(key: SortKey, ascending: Bool)], distinct: [SortKey] = [],
        base: ResultsBase? = nil, projector: ((Object) -> Element)? = nil, values: ValueSource<Element>? = nil
    ) {
        self.core = core
        self.binding = binding
        self.predicate = predicate
        self.sort = sort
        self.distinctKeys = distinct
        self.base = base
        self.projector = projector
        self.values = values
    }

    /// The same results read from `core` (another version or instance of the file).
    func moved(to core: RealmCore) -> Results<Element> {
        let name = binding.info.schema.className
        let binding = self.binding.objectClass == DynamicObject.self ? core.dynamicBinding(name) : core.binding(forClass: self.binding.objectClass)
        return Results(
            core: core, binding: binding, predicate: predicate, sort: sort, distinct: distinctKeys, base: base, projector: projector, values: values)
    }

    final class ResultsCache {
        var token: RealmCore.ChangeToken?
        var keys: [Int64] = []
        /// Copies of the records of `keys`, when they were kept (empty otherwise: objects read by key).
        var records: [[UInt8]?] = []
        var recordsKept = false
        /// For values: the stored values, narrowed and ordered.
        var items: [StoredValue] = []
        /// Its part in Swift's Observation, from the first read under a Realm that tracks (`Observation.swift`).
        var observation: ResultsObservation?
    }

    /// The matching keys, evaluated for the current version, and with `needsRecords` copies of their records
    /// (for iteration and subscripts; counting needs none).
    func evaluated(needsRecords: Bool = true) -> ResultsCache {
        let token = core.changeToken
        if cache.token == token && (cache.recordsKept || !needsRecords) { return cache }
        var rows: [(key: Int64, record: [UInt8]?, sortValues: [StoredValue], distinctValues: [StoredValue])] = []
        let context = queryContext()
        // A predicate the scanned key range says all of is not tested again per object.
        let rangeIsExact = base == nil && primaryKeyCandidates() == nil && primaryKeyBounds()?.exact == true
        let compiled = rangeIsExact ? nil : predicate.map(RowPredicate.init)
        forEachCandidate { key, ref in
            if let compiled, !compiled.evaluate(ref, key: key, in: context) { return true }
            let record: [UInt8]?
            if needsRecords, case .bytes(let raw, _) = ref { record = [UInt8](raw) } else { record = nil }
            rows.append((key, record, sort.map { $0.key.value(ref, key: key, context) }, distinctKeys.map { $0.value(ref, key: key, context) }))
            return true
        }
        if !sort.isEmpty {
            rows.sort { a, b in
                for (i, s) in sort.enumerated() {
                    let c = Self.order(a.sortValues[i], b.sortValues[i])
                    if c != 0 { return s.ascending ? c < 0 : c > 0 }
                }
                return false
            }
        }
        if !distinctKeys.isEmpty {
            var seen = Set<[StoredValue]>()
            rows = rows.filter { seen.insert($0.distinctValues).inserted }
        }
        cache.keys = rows.map(\.key)
        cache.records = needsRecords ? rows.map(\.record) : []
        cache.recordsKept = needsRecords
        cache.token = token
        return cache
    }

    /// Calls `body` with each record the query may match: with `pk == v` or `pk IN {...}` (alone or ANDed with
    /// more) the few candidates the primary key or an index finds, else every object of the type. The closure
    /// does not escape, so what it captures stays on the stack, without exclusivity checks per row.
    func forEachCandidate(_ body: (Int64, RecordRef) -> Bool) {
        if let base {
            // A collection's objects, in its order.
            core.forEachRecord(binding, inOrder: base.keys(in: core, elements: binding), body)
        } else if let keys = primaryKeyCandidates() {
            core.forEachRecord(binding, keys: keys, body)
        } else if let range = primaryKeyRange() {
            core.forEachRecord(binding, in: range, body)
        } else {
            core.forEachRecord(binding, body)
        }
    }

    /// The keys an Int primary key's comparisons (`<`, `<=`, `>`, `>=`, `BETWEEN`, ANDed with anything) leave
    /// possible: the key of an Int-keyed object is its primary key, so only that range of the type is read.
    /// Nil when the predicate does not bound the key.
    func primaryKeyRange() -> ClosedRange<Int64>? { primaryKeyBounds()?.range }

    /// `primaryKeyRange()`, and whether the range says all the predicate says (it is made of those comparisons
    /// only): every object in the range then matches, with nothing to test per object.
    func primaryKeyBounds() -> (range: ClosedRange<Int64>, exact: Bool)? {
        guard base == nil, binding.intPrimaryKey, let pk = binding.info.primaryKeyIndex, let predicate else { return nil }
        var lower = Int64.min, upper = Int64.max, bounded = false, empty = false, exact = true
        func visit(_ p: Predicate) {
            switch p {
            case .and(let a, let b):
                visit(a)
                visit(b)
            case .compare(pk, let op, .int(let v), let options) where options.isEmpty:
                switch op {
                case .greater: if v == .max { empty = true } else { lower = Swift.max(lower, v + 1) }
                case .greaterOrEqual: lower = Swift.max(lower, v)
                case .less: if v == .min { empty = true } else { upper = Swift.min(upper, v - 1) }
                case .lessOrEqual: upper = Swift.min(upper, v)
                case .equal, .notEqual:
                    exact = false
                    return
                }
                bounded = true
            case .between(pk, .int(let lo), .int(let hi)):
                lower = Swift.max(lower, lo)
                upper = Swift.min(upper, hi)
                bounded = true
            default: exact = false
            }
        }
        visit(predicate)
        guard bounded else { return nil }
        // An empty range: one key no scan reaches past (the predicate, checked on it, is false).
        if empty || lower > upper { return (Int64.max...Int64.max, false) }
        return (lower...upper, exact)
    }

    /// What the predicate (or a sort or distinct through links) needs to follow links, when it does.
    func queryContext() -> QueryContext? {
        let throughLinks = (sort.map(\.key) + distinctKeys).contains { if case .path = $0 { return true } else { return false } }
        guard predicate?.readsOtherObjects == true || throughLinks else { return nil }
        return QueryContext(core: core)
    }

    /// The partitions of other types the query or the sort reads through links.
    var linkedPartitions: Set<UInt32> {
        var out = predicate?.linkedPartitions ?? []
        if let partition = base?.partition(in: core) { out.insert(partition) }
        for key in sort.map(\.key) + distinctKeys {
            if case .path(let path) = key {
                for step in path.steps { if case .link(_, let t) = step { out.insert(t.partition) } }
            }
        }
        return out
    }

    /// Finds the bindings of the types a query's key paths lead to.
    var bindingResolver: BindingResolver {
        { [core] in core.binding(forClass: $0) }
    }

    /// The matching keys for the current version, in order.
    func evaluatedKeys() -> [Int64] { evaluated().keys }

    /// The object keys of the objects that the predicate pins to a few values of the primary key or of an
    /// indexed property (`p == v`, `p IN {...}`, alone or ANDed with more); nil when it pins none (the type
    /// is scanned). The candidates are then checked against the whole predicate.
    func primaryKeyCandidates() -> Set<Int64>? { candidates().keys }

    /// How the query finds its objects (the planner's choice, which tests assert).
    var plan: QueryPlan {
        let plan = candidates(planOnly: true).plan
        if plan == .scan, base == nil, primaryKeyRange() != nil, let pk = binding.info.primaryKeyIndex {
            return .primaryKeyRange(property: binding.info.schema.properties[pk].name)
        }
        return plan
    }

    func candidates(planOnly: Bool = false) -> (keys: Set<Int64>?, plan: QueryPlan) {
        guard let predicate else { return (nil, .scan) }
        let info = binding.info
        /// The property and values a conjunct pins. Folded comparisons ([c], [d]) match values that differ
        /// from the constant, so they scan.
        func pinned(_ p: Predicate, _ accept: (Int) -> Bool) -> (Int, [StoredValue])? {
            switch p {
            case .compare(let i, .equal, let v, let options) where accept(i) && options.isEmpty: return (i, [v])
            case .isIn(let i, let vs, let options) where accept(i) && options.isEmpty: return (i, vs)
            case .and(let a, let b): return pinned(a, accept) ?? pinned(b, accept)
            default: return nil
            }
        }
        if let pk = info.primaryKeyIndex, let (_, values) = pinned(predicate, { $0 == pk }) {
            let property = info.schema.properties[pk]
            /// Only a constant of the key's own type finds the key (an Int key compared with 5.0 scans).
            func isKeyValue(_ v: StoredValue) -> Bool {
                switch (property.type, v) {
                case (.int, .int), (.string, .string), (.UUID, .uuid), (.objectId, .objectId): return true
                case (_, .null): return property.isNullable
                default: return false
                }
            }
            if values.allSatisfy(isKeyValue) {
                if planOnly { return (nil, .primaryKey(property: property.name)) }
                var keys = Set<Int64>()
                for v in values {
                    if let key = core.objectKey(forPrimaryKey: v, binding: binding, checked: false) { keys.insert(key) }
                }
                return (keys, .primaryKey(property: property.name))
            }
        }
        // A secondary index, unless an online migration of the type is under way (records still change).
        guard binding.migration == nil, !binding.indexPartitions.isEmpty,
            let (i, values) = pinned(predicate, { binding.indexPartitions[$0] != nil }),
            let partition = binding.indexPartitions[i], core.fileHasIndex(partition, of: binding),
            values.allSatisfy({ SecondaryIndex.canLookUp($0, info.schema.properties[i]) })
        else { return (nil, .scan) }
        let plan = QueryPlan.index(type: info.schema.className, property: info.schema.properties[i].name)
        if planOnly { return (nil, plan) }
        var keys = core.mustRead("the index of \(info.schema.className).\(info.schema.properties[i].name)") {
            try SecondaryIndex.lookUp(values, in: partition, snapshot: core.readSnapshot)
        }
        // The index is of the last commit: objects this write transaction touched are candidates too.
        keys.formUnion(core.pendingKeys(partition: binding.partition))
        return (keys, plan)
    }

    /// Installs contents computed incrementally by an observer for the current version (records are read
    /// when objects are made).
    func install(keys: [Int64]) {
        cache.keys = keys
        cache.records = []  // none cached: objects read their records when made
        cache.token = core.changeToken
    }

    /// Realm's sort order: nil first, then by value.
    static func order(_ a: StoredValue, _ b: StoredValue) -> Int {
        switch (a.isNull, b.isNull) {
        case (true, true): return 0
        case (true, false): return -1
        case (false, true): return 1
        default: return StoredValue.compare(a, b) ?? 0
        }
    }

    // MARK: Collection

    public var startIndex: Int { 0 }
    /// Cached with the keys (collection algorithms ask for it at every step).
    public var endIndex: Int {
        if core.tracksObservation { observeRead(count: true) }
        return values != nil ? valueItems().count : evaluated(needsRecords: false).keys.count
    }

    public var count: Int {
        if core.tracksObservation { observeRead(count: true) }
        if values != nil { return valueItems().count }
        if predicate == nil && sort.isEmpty && distinctKeys.isEmpty && base == nil, !core.isInWriteTransaction, cache.token != core.changeToken {
            // Every object of the type: counted by a scan that keeps nothing.
            var n = 0
            core.forEachRecord(binding) { _, _ in n += 1; return true }
            return n
        }
        if sort.isEmpty && distinctKeys.isEmpty, let predicate, !core.isInWriteTransaction, cache.token != core.changeToken {
            // The rows are checked where they lie; only their keys are kept (and cached, for endIndex).
            var keys: [Int64] = []
            let context = queryContext()
            let rows = RowPredicate(predicate)
            if base == nil && primaryKeyCandidates() == nil && primaryKeyRange() == nil {
                // Every object of the type, read where it lies.
                let binding = self.binding
                core.forEachStoredRecord(binding) { key, record in
                    if rows.matches(record, binding, key: key, in: context) { keys.append(key) }
                    return true
                }
            } else {
                forEachCandidate { key, ref in
                    if rows.evaluate(ref, key: key, in: context) { keys.append(key) }
                    return true
                }
            }
            cache.keys = keys
            cache.records = []
            cache.recordsKept = false
            cache.token = core.changeToken
            return keys.count
        }
        return evaluated(needsRecords: false).keys.count
    }

    public subscript(position: Int) -> Element {
        if core.tracksObservation { observeRead(count: false) }
        if let values {
            let items = valueItems()
            require(position >= 0 && position < items.count, "Index \(position) is out of bounds (must be less than \(items.count)).")
            return values.element(items[position], in: core)
        }
        let c = evaluated()
        require(position >= 0 && position < c.keys.count, "Index \(position) is out of bounds (must be less than \(c.keys.count)).")
        return element(c.keys[position], position < c.records.count ? c.records[position] : nil)
    }

    /// The object `key` (with a copy of its record, when one was kept), as an `Element`.
    func element(_ key: Int64, _ record: [UInt8]?) -> Element {
        element(core.makeObject(binding: binding, key: key, record: record))
    }

    /// `object` as an `Element`: itself, or its projection.
    func element(_ object: Object) -> Element {
        if let projector { return projector(object) }
        // The binding is for Element's class, whose init() makes an Element.
        return binding.objectClass == Element.self ? unsafeBitCast(object, to: Element.self) : object as! Element
    }

    public var first: Element? {
        if core.tracksObservation { observeRead(count: false) }
        if let values { return valueItems().first.map { values.element($0, in: core) } }
        if sort.isEmpty && distinctKeys.isEmpty, !core.isInWriteTransaction, cache.token != core.changeToken {
            // In scan order: the first match ends the scan (or the pinned candidates' reads).
            var found: (key: Int64, record: [UInt8]?)? = nil
            let context = queryContext()
            let compiled = predicate.map(RowPredicate.init)
            forEachCandidate { key, ref in
                if let compiled, !compiled.evaluate(ref, key: key, in: context) { return true }
                if case .bytes(let raw, _) = ref { found = (key, [UInt8](raw)) } else { found = (key, nil) }
                return false
            }
            return found.map { element($0.key, $0.record) }
        }
        let c = evaluated()
        return c.keys.isEmpty ? nil : element(c.keys[0], c.records.first ?? nil)
    }

    public var last: Element? {
        if core.tracksObservation { observeRead(count: false) }
        if let values { return valueItems().last.map { values.element($0, in: core) } }
        let c = evaluated()
        guard let key = c.keys.last else { return nil }
        return element(key, c.records.count == c.keys.count ? c.records[c.keys.count - 1] : nil)
    }

    public var isEmpty: Bool {
        if core.tracksObservation { observeRead(count: true) }
        if values != nil { return valueItems().isEmpty }
        if sort.isEmpty && distinctKeys.isEmpty, !core.isInWriteTransaction, cache.token != core.changeToken {
            var any = false
            let context = queryContext()
            let compiled = predicate.map(RowPredicate.init)
            forEachCandidate { key, ref in
                if let compiled, !compiled.evaluate(ref, key: key, in: context) { return true }
                any = true
                return false
            }
            return !any
        }
        return evaluated().keys.isEmpty
    }

    public var realm: Realm? { Realm(core: core) }
    public var isInvalidated: Bool { core.isInvalidated }

    /// RealmSwift's format: `Results<Dog> <0x…> (` and each object nested, five levels at most.
    public var description: String { description(depth: RealmDescription.maxDepth) }
}

extension Results where Element: Object {
    public func index(of object: Element) -> Int? {
        guard let a = object._accessor, a.core === core else { return nil }
        if core.tracksObservation { observeRead(count: false) }
        return evaluated().keys.firstIndex(of: a.key)
    }
}

extension TypeInfo {
    /// The property a key path of the model reads (found once with a recording probe instance).
    func name<O, V>(of keyPath: KeyPath<O, V>) -> String {
        // Queries name their properties through key paths each time they are built: probe each once.
        if let known = keyPathNames.withLock({ $0[KeyPathKey(keyPath: keyPath)] }) { return known }
        let name = probeName(of: keyPath)
        keyPathNames.withLock { $0[KeyPathKey(keyPath: keyPath)] = name }
        return name
    }

    /// The key path a partial key path of the model reads (`distinct(by:)`).
    func name<O>(of keyPath: PartialKeyPath<O>) -> String {
        if let known = keyPathNames.withLock({ $0[KeyPathKey(keyPath: keyPath)] }) { return known }
        let probe = Object.make(objectClass)
        let recorder = KeyPathRecorder()
        probe._recorder = recorder
        guard let typed = probe as? O else { fatalError("key path \(keyPath) does not belong to \(schema.className)") }
        _ = typed[keyPath: keyPath]
        guard !recorder.names.isEmpty else { fatalError("key path \(keyPath) of \(schema.className) does not read a @Persisted property") }
        let name = recorder.names.joined(separator: ".")
        keyPathNames.withLock { $0[KeyPathKey(keyPath: keyPath)] = name }
        return name
    }

    private func probeName<O, V>(of keyPath: KeyPath<O, V>) -> String {
        let probe = Object.make(objectClass)
        let recorder = KeyPathRecorder()
        probe._recorder = recorder
        guard let typed = probe as? O else { fatalError("key path \(keyPath) does not belong to \(schema.className)") }
        _ = typed[keyPath: keyPath]
        guard !recorder.names.isEmpty else {
            fatalError("key path \(keyPath) of \(schema.className) does not read a @Persisted property")
        }
        return recorder.names.joined(separator: ".")
    }
}
