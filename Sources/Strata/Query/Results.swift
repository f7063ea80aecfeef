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
///
/// Evaluation is lazy and cached per version: `count`, subscripts and iteration evaluate once, and again
/// only after the Realm moves to another version or changes in its write transaction.
public struct Results<Element: Object>: RandomAccessCollection, CustomStringConvertible {
    let core: RealmCore
    let binding: TypeBinding
    let predicate: Predicate?
    let sort: [(key: SortKey, ascending: Bool)]
    /// Properties (or key paths through to-one links) whose values must be distinct: the first object in sort
    /// order of each combination stays.
    let distinct: [SortKey]
    private let cache = ResultsCache()

    init(core: RealmCore, binding: TypeBinding, predicate: Predicate?, sort: [(key: SortKey, ascending: Bool)], distinct: [SortKey] = []) {
        self.core = core
        self.binding = binding
        self.predicate = predicate
        self.sort = sort
        self.distinct = distinct
    }

    final class ResultsCache {
        var token: RealmCore.ChangeToken?
        var keys: [Int64] = []
        /// Copies of the records of `keys`, when they were kept (empty otherwise: objects read by key).
        var records: [[UInt8]?] = []
        var recordsKept = false
    }

    /// The matching keys, evaluated for the current version, and with `needsRecords` copies of their records
    /// (for iteration and subscripts; counting needs none).
    private func evaluated(needsRecords: Bool = true) -> ResultsCache {
        let token = core.changeToken
        if cache.token == token && (cache.recordsKept || !needsRecords) { return cache }
        var rows: [(key: Int64, record: [UInt8]?, sortValues: [StoredValue], distinctValues: [StoredValue])] = []
        let context = queryContext()
        let compiled = predicate.map(RowPredicate.init)
        forEachCandidate { key, ref in
            if let compiled, !compiled.evaluate(ref, key: key, in: context) { return true }
            let record: [UInt8]?
            if needsRecords, case .bytes(let raw, _) = ref { record = [UInt8](raw) } else { record = nil }
            rows.append((key, record, sort.map { $0.key.value(ref, key: key, context) }, distinct.map { $0.value(ref, key: key, context) }))
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
        if !distinct.isEmpty {
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
    private func forEachCandidate(_ body: (Int64, RecordRef) -> Bool) {
        if let keys = primaryKeyCandidates() {
            core.forEachRecord(binding, keys: keys, body)
        } else {
            core.forEachRecord(binding, body)
        }
    }

    /// What the predicate (or a sort or distinct through links) needs to follow links, when it does.
    private func queryContext() -> QueryContext? {
        let throughLinks = (sort.map(\.key) + distinct).contains { if case .path = $0 { return true } else { return false } }
        guard predicate?.readsOtherObjects == true || throughLinks else { return nil }
        return QueryContext(core: core)
    }

    /// The partitions of other types the query or the sort reads through links.
    var linkedPartitions: Set<UInt32> {
        var out = predicate?.linkedPartitions ?? []
        for key in sort.map(\.key) + distinct {
            if case .path(let path) = key {
                for step in path.steps { if case .link(_, let t) = step { out.insert(t.partition) } }
            }
        }
        return out
    }

    /// Finds the bindings of the types a query's key paths lead to.
    private var bindingResolver: BindingResolver {
        { [core] in core.binding(forClass: $0) }
    }

    /// The matching keys for the current version, in order.
    func evaluatedKeys() -> [Int64] { evaluated().keys }

    /// The object keys of the objects that the predicate pins to a few values of the primary key or of an
    /// indexed property (`p == v`, `p IN {...}`, alone or ANDed with more); nil when it pins none (the type
    /// is scanned). The candidates are then checked against the whole predicate.
    private func primaryKeyCandidates() -> Set<Int64>? { candidates().keys }

    /// How the query finds its objects (the planner's choice, which tests assert).
    var plan: QueryPlan { candidates(planOnly: true).plan }

    private func candidates(planOnly: Bool = false) -> (keys: Set<Int64>?, plan: QueryPlan) {
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
            let partition = binding.indexPartitions[i],
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
    public var endIndex: Int { evaluated(needsRecords: false).keys.count }

    public var count: Int {
        if predicate == nil && sort.isEmpty && distinct.isEmpty, !core.isInWriteTransaction, cache.token != core.changeToken {
            // Every object of the type: counted by a scan that keeps nothing.
            var n = 0
            core.forEachRecord(binding) { _, _ in n += 1; return true }
            return n
        }
        if sort.isEmpty && distinct.isEmpty, let predicate, !core.isInWriteTransaction, cache.token != core.changeToken {
            // The rows are checked where they lie; only their keys are kept (and cached, for endIndex).
            var keys: [Int64] = []
            let context = queryContext()
            let rows = RowPredicate(predicate)
            forEachCandidate { key, ref in
                if rows.evaluate(ref, key: key, in: context) { keys.append(key) }
                return true
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
        let c = evaluated()
        require(position >= 0 && position < c.keys.count, "Index \(position) is out of bounds (must be less than \(c.keys.count)).")
        return object(c.keys[position], position < c.records.count ? c.records[position] : nil)
    }

    private func object(_ key: Int64, _ record: [UInt8]?) -> Element {
        // The binding is for Element's class, whose init() makes an Element.
        let object = core.makeObject(binding: binding, key: key, record: record)
        return binding.objectClass == Element.self ? unsafeDowncast(object, to: Element.self) : object as! Element
    }

    public var first: Element? {
        if sort.isEmpty && distinct.isEmpty, !core.isInWriteTransaction, cache.token != core.changeToken {
            // In scan order: the first match ends the scan (or the pinned candidates' reads).
            var found: (key: Int64, record: [UInt8]?)? = nil
            let context = queryContext()
            let compiled = predicate.map(RowPredicate.init)
            forEachCandidate { key, ref in
                if let compiled, !compiled.evaluate(ref, key: key, in: context) { return true }
                if case .bytes(let raw, _) = ref { found = (key, [UInt8](raw)) } else { found = (key, nil) }
                return false
            }
            return found.map { object($0.key, $0.record) }
        }
        let c = evaluated()
        return c.keys.isEmpty ? nil : object(c.keys[0], c.records.first ?? nil)
    }

    public var last: Element? {
        let c = evaluated()
        guard let key = c.keys.last else { return nil }
        return object(key, c.records.count == c.keys.count ? c.records[c.keys.count - 1] : nil)
    }

    public var isEmpty: Bool {
        if sort.isEmpty && distinct.isEmpty, !core.isInWriteTransaction, cache.token != core.changeToken {
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

    public func index(of object: Element) -> Int? {
        guard let a = object._accessor, a.core === core else { return nil }
        return evaluated().keys.firstIndex(of: a.key)
    }

    public var realm: Realm? { Realm(core: core) }
    public var isInvalidated: Bool { core.isInvalidated }

    public var description: String { "Results<\(binding.info.schema.className)> (\(count) objects)" }

    // MARK: Iteration

    /// The state of a streaming scan, shared by copies of its iterator (they move one scan): the engine's
    /// iterator and the object handed out last, which the next step reuses or lets keep its record.
    final class ScanState {
        let stream: MergingIterator
        // Used by one thread at a time, without re-entry (an iterator is not shared across threads): dynamic
        // exclusivity checks are off, as on an accessor's fields.
        @exclusivity(unchecked) var started = false
        @exclusivity(unchecked) var last: Element? = nil
        init(stream: MergingIterator) { self.stream = stream }
    }

    public struct Iterator: IteratorProtocol {
        let results: Results
        /// Streaming over the engine (no query, no sort; in a write, none of the type's objects changed yet): no
        /// list is built first.
        let state: ScanState?
        let keys: [Int64]
        let records: [[UInt8]?]
        var i = 0
        /// Whether the binding's objects are exactly `Element`s (then no dynamic cast is needed).
        let exactClass: Bool
        /// Whether records may need an online migration's transforms.
        let needsMigration: Bool
        /// Whether objects are lent their records in the scan's blocks. Not for a frozen Realm: its objects may
        /// be read on other threads while this one moves the scan on, and a lent record is copied then.
        let lends: Bool
        /// The version the stream reads, stamped on the objects it makes.
        let streamVersion: UInt64
        // The Results' core and binding, held directly: the hot path touches nothing else of `results`.
        private let core: RealmCore
        private let binding: TypeBinding
        /// `state` again, unretained, for the per-object steps: `state` (a `let` of this iterator) keeps it
        /// alive for as long as this reference can be used, and each retain and release of a use costs more
        /// than the rest of a step's bookkeeping.
        private unowned(unsafe) let scan: ScanState?
        /// Whether the type has `let` properties (`RealmProperty`), whose objects are never reused.
        private let hasLegacyProperties: Bool

        init(results: Results, stream: MergingIterator?, keys: [Int64], records: [[UInt8]?]) {
            self.results = results
            let state = stream.map { ScanState(stream: $0) }
            self.state = state
            self.keys = keys
            self.records = records
            exactClass = results.binding.objectClass == Element.self
            needsMigration = results.binding.migration != nil
            lends = !results.core.isFrozen
            streamVersion = results.core.versionToken
            core = results.core
            binding = results.binding
            scan = state
            hasLegacyProperties = results.binding.info.hasLegacyProperties
        }

        /// Before the scan moves on: the object handed out last when nothing but the scan refers to it any more
        /// (the loop body kept no reference), to be pointed at the next record; nil otherwise. Whatever may
        /// still read the bytes lent to it (the object, kept elsewhere; its accessor, held by a list or map
        /// view) first gets its own copy of them.
        /// Also says whether the object's accessor is its alone (then it is pointed at the next record too).
        @inline(__always)
        private func takeReusable(_ state: ScanState) -> (object: Element, ownAccessor: Bool)? {
            guard state.last != nil else { return nil }
            // An object with `let` properties is never reused: they may outlive it, bound to its accessor.
            if !hasLegacyProperties, isKnownUniquelyReferenced(&state.last!) {
                let object = state.last!
                guard object._accessor != nil else { return (object, false) }
                if isKnownUniquelyReferenced(&object._accessor!) { return (object, true) }
                object._accessor!.keepRecord()
                return (object, false)
            }
            state.last!._accessor?.keepRecord()
            state.last = nil
            return nil
        }

        public mutating func next() -> Element? {
            if state != nil, let scan {
                let stream = scan.stream
                let reusable = takeReusable(scan)
                do {
                    if scan.started { try stream.next() } else { scan.started = true }
                } catch {
                    fatalError("reading \(results.binding.info.schema.className) failed: \(error)\(RealmCore.damageAdvice)")
                }
                guard stream.isValid, let value = stream.value, let key = ObjectKey.decode(stream.currentKey) else { return nil }
                if needsMigration, let values = binding.migratedValues(value) {
                    // Through the pending transforms, re-encoded at the current version: the object owns the
                    // record, and the next one reuses the object as a lent record would.
                    let record = binding.encode(values)
                    if let (object, ownAccessor) = reusable, ownAccessor {
                        object._accessor!.reset(key: key, record: record, version: streamVersion)
                        return object
                    }
                    let made = core.makeObject(binding: binding, key: key, currentRecord: record, version: streamVersion)
                    let object = exactClass ? unsafeDowncast(made, to: Element.self) : made as! Element
                    if lends { scan.last = object }
                    return object
                }
                if !lends {
                    let made = core.makeObject(binding: binding, key: key, currentRecord: [UInt8](value), version: streamVersion)
                    return exactClass ? unsafeDowncast(made, to: Element.self) : made as! Element
                }
                if let (object, ownAccessor) = reusable {
                    if ownAccessor {
                        object._accessor!.lend(key: key, value, by: stream, version: streamVersion)
                    } else {
                        // A list or another view of the old object keeps its accessor (with its own copy, made
                        // above): this object gets a new one.
                        object._accessor = ObjectAccessor(core: core, binding: binding, key: key, lent: value, lender: stream, version: streamVersion)
                    }
                    return object
                }
                let made = core.makeObject(binding: binding, key: key, lent: value, lender: stream, version: streamVersion)
                let object = exactClass ? unsafeDowncast(made, to: Element.self) : made as! Element
                scan.last = object
                return object
            }
            guard i < keys.count else { return nil }
            defer { i += 1 }
            return results.object(keys[i], i < records.count ? records[i] : nil)
        }
    }

    public func makeIterator() -> Iterator {
        if predicate == nil && sort.isEmpty && distinct.isEmpty {
            if let w = core.write {
                // In a write, iteration sees the objects as they were when it began (Realm's snapshot of a
                // Results enumerated in a write). With none of the type's objects changed yet, that is the
                // write's base snapshot, streamed. An object the loop changes or deletes before the scan reaches
                // it still reads as the write left it: reads in a write look at the write's changes first.
                if !w.hasEntries(in: binding.partition), !w.isDropped(binding.partition) {
                    let stream = core.mustRead("the objects of \(binding.info.schema.className)") { try w.tx.snapshot.makeIterator(binding.partition) }
                    return Iterator(results: self, stream: stream, keys: [], records: [])
                }
            } else {
                let stream = core.mustRead("the objects of \(binding.info.schema.className)") {
                    try core.readSnapshot.makeIterator(binding.partition)
                }
                return Iterator(results: self, stream: stream, keys: [], records: [])
            }
        }
        let c = evaluated()
        return Iterator(results: self, stream: nil, keys: c.keys, records: c.records)
    }

    // MARK: Queries

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
    func filter(_ predicateFormat: String, arguments: [Any?]) throws -> Results<Element> {
        let expr = try QueryParser.parse(predicateFormat, arguments: arguments).resolve(binding.info, bindings: bindingResolver)
        return Results(core: core, binding: binding, predicate: predicate.map { .and($0, expr) } ?? expr, sort: sort, distinct: distinct)
    }

    /// The objects matching a type-safe query, e.g. `where { $0.age > 18 && $0.name.starts(with: "A") }`.
    public func `where`(_ isIncluded: (Query<Element>) -> Query<Bool>) -> Results<Element> {
        let expr: Predicate
        do {
            expr = try isIncluded(Query<Element>(.truePredicate)).expression.resolve(binding.info, bindings: bindingResolver)
        } catch {
            fatalError("Invalid query: \(error)")
        }
        return Results(core: core, binding: binding, predicate: predicate.map { .and($0, expr) } ?? expr, sort: sort, distinct: distinct)
    }

    public func sorted(byKeyPath keyPath: String, ascending: Bool = true) -> Results<Element> {
        sorted(by: [SortDescriptor(keyPath: keyPath, ascending: ascending)])
    }

    public func sorted<V>(by keyPath: KeyPath<Element, V>, ascending: Bool = true) -> Results<Element> {
        sorted(byKeyPath: binding.info.name(of: keyPath), ascending: ascending)
    }

    public func sorted<S: Sequence>(by descriptors: S) -> Results<Element> where S.Element == SortDescriptor {
        let keys = descriptors.map { d -> (key: SortKey, ascending: Bool) in (sortKey(d.keyPath, "sort"), d.ascending) }
        return Results(core: core, binding: binding, predicate: predicate, sort: keys + sort, distinct: distinct)
    }

    /// One object per distinct combination of the values of `keyPaths` (the first in sort order); key paths
    /// may go through to-one links (`owner.name`).
    public func distinct<S: Sequence>(by keyPaths: S) -> Results<Element> where S.Element == String {
        Results(core: core, binding: binding, predicate: predicate, sort: sort, distinct: distinct + keyPaths.map { sortKey($0, "distinct") })
    }

    /// `distinct(by:)` with key paths: `distinct(by: [\.firstName, \.owner?.name])`.
    public func distinct<S: Sequence>(by keyPaths: S) -> Results<Element> where S.Element == PartialKeyPath<Element> {
        distinct(by: keyPaths.map { binding.info.name(of: $0) })
    }

    /// A property or a key path through to-one links to a property, for sorting or distinct.
    private func sortKey(_ keyPath: String, _ verb: String) -> SortKey {
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

    // MARK: Aggregates

    private func values(of property: String, for verb: String) -> [StoredValue] {
        guard let i = binding.info.propertyIndex[property] else {
            fatalError("Invalid property name '\(property)' for class '\(binding.info.schema.className)'")
        }
        // Realm's aggregates: numbers (and mixed) for all four, dates too for min and max.
        let p = binding.info.schema.properties[i]
        let numeric: Set<PropertyType> = [.int, .float, .double, .decimal128, .any]
        let supported = !p.isCollection && (numeric.contains(p.type) || ((verb == "min" || verb == "max") && p.type == .date))
        guard supported else {
            let kind = p.isCollection ? "array" : QueryExpr.realmTypeName(p.type)
            fatalError("Cannot \(verb) property '\(property)': operation not supported for '\(kind)' properties")
        }
        var out: [StoredValue] = []
        let context = queryContext()
        core.forEachRecord(binding) { key, ref in
            if let predicate, !predicate.evaluate(ref, key: key, in: context) { return true }
            let v = ref.value(i)
            if !v.isNull { out.append(v) }
            return true
        }
        return out
    }

    public func min<T: _Persistable>(ofProperty property: String) -> T? {
        values(of: property, for: "min").min { (StoredValue.compare($0, $1) ?? 0) < 0 }.flatMap { T._fromStored($0) }
    }

    public func max<T: _Persistable>(ofProperty property: String) -> T? {
        values(of: property, for: "max").max { (StoredValue.compare($0, $1) ?? 0) < 0 }.flatMap { T._fromStored($0) }
    }

    public func sum<T: _Persistable>(ofProperty property: String) -> T {
        let vs = values(of: property, for: "sum")
        if T._propertyType == .int {
            let total = vs.reduce(Int64(0)) { acc, v in if case .int(let x) = v { return acc &+ x }; return acc }
            return T._fromStored(.int(total)) ?? T._zeroValue
        }
        let total = vs.reduce(0.0) { $0 + ($1.numeric ?? 0) }
        return T._fromStored(T._propertyType == .float ? .float(Float(total)) : .double(total)) ?? T._zeroValue
    }

    public func average<T: _Persistable>(ofProperty property: String) -> T? {
        let vs = values(of: property, for: "average")
        guard !vs.isEmpty else { return nil }
        let avg = vs.reduce(0.0) { $0 + ($1.numeric ?? 0) } / Double(vs.count)
        return T._fromStored(T._propertyType == .float ? .float(Float(avg)) : .double(avg))
    }

    public func min<V: _Persistable>(of keyPath: KeyPath<Element, V>) -> V? { min(ofProperty: binding.info.name(of: keyPath)) }
    public func max<V: _Persistable>(of keyPath: KeyPath<Element, V>) -> V? { max(ofProperty: binding.info.name(of: keyPath)) }
    public func sum<V: _Persistable>(of keyPath: KeyPath<Element, V>) -> V { sum(ofProperty: binding.info.name(of: keyPath)) }
    public func average<V: _Persistable>(of keyPath: KeyPath<Element, V>) -> V? { average(ofProperty: binding.info.name(of: keyPath)) }

    /// Sets one property of every object (in a write transaction).
    public func setValue(_ value: Any?, forKey key: String) {
        for object in Array(self) { object.setValue(value, forKey: key) }
    }

    /// The values of one property of every object (`value(forKeyPath:)` takes the same single-step paths).
    public func value(forKeyPath keyPath: String) -> [Any?] { value(forKey: keyPath) }

    /// The values of one property of every object.
    public func value(forKey key: String) -> [Any?] {
        guard let i = binding.info.propertyIndex[key] else {
            fatalError("Invalid property name '\(key)' for class '\(binding.info.schema.className)'")
        }
        return map { $0._accessor.map { $0.get(i).anyValue } ?? nil }
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
        let probe = objectClass.init()
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
        let probe = objectClass.init()
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
