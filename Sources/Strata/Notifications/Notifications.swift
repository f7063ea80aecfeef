import Dispatch
import Engine
import Foundation

// Invariants:
// (1) Every commit made through Strata logs, before it publishes, the object keys it touched per partition
//     (`SharedFile.recordCommit`). A Realm moving from version a to version c diffs only the keys logged for
//     the commits in (a, c]; a commit missing from the log (a schema change, an evicted entry) makes every
//     observer re-evaluate from scratch, which is always correct.
// (2) Change sets follow Realm's index rules: deletions are indices in the old contents, insertions and
//     modifications indices in the new. Applying the deletions (descending) then the insertions (ascending)
//     to the old contents gives the new contents; an object whose position changed relative to the others is
//     reported as a deletion and an insertion.
// (3) Observers are computed on the Realm's own thread while it switches versions, against the old and the
//     new snapshot, and delivered after the switch, so callbacks see the new version.

/// What changed in an observed collection.
public enum RealmCollectionChange<CollectionType> {
    /// The collection as it was when observation started.
    case initial(CollectionType)
    /// The collection after a change: deletions in old indices, insertions and modifications in new ones.
    case update(CollectionType, deletions: [Int], insertions: [Int], modifications: [Int])
    case error(any Error)
}

/// One property of an observed object that changed.
public struct PropertyChange: @unchecked Sendable, CustomStringConvertible {
    public let name: String
    /// The value before the change.
    public let oldValue: Any?
    /// The value after the change.
    public let newValue: Any?

    public var description: String { "\(name): \(String(describing: oldValue)) -> \(String(describing: newValue))" }
}

/// What happened to an observed object.
public enum ObjectChange<T> {
    /// Properties changed; the object shows the new values.
    case change(T, [PropertyChange])
    /// The object was deleted; no further notification comes.
    case deleted
    case error(any Error)
}

/// The object keys a commit touched, per partition (inserted, changed or deleted alike).
struct ChangeSummary: Sendable {
    var keys: [UInt32: Set<Int64>] = [:]
    /// Unknown changes (a schema change, a dropped partition, a commit missing from the log).
    var everything = false

    static let unknown = ChangeSummary(everything: true)

    mutating func merge(_ other: ChangeSummary) {
        everything = everything || other.everything
        for (p, k) in other.keys { keys[p, default: []].formUnion(k) }
    }
}

/// Recent commits' summaries, by sequence.
struct CommitLog {
    static let capacity = 4096
    var entries: [UInt64: ChangeSummary] = [:]

    mutating func record(_ sequence: UInt64, _ summary: ChangeSummary) {
        entries[sequence] = summary
        if entries.count > Self.capacity, let oldest = entries.keys.min() { entries[oldest] = nil }
    }

    func changes(after a: UInt64, through c: UInt64) -> ChangeSummary {
        guard c > a else { return ChangeSummary() }
        guard c - a <= UInt64(Self.capacity) else { return .unknown }
        var out = ChangeSummary()
        for s in (a + 1)...c {
            guard let entry = entries[s] else { return .unknown }
            out.merge(entry)
        }
        return out
    }
}

/// A Realm's change observers; a token may be invalidated from any thread.
final class ObserverList: @unchecked Sendable {
    private let lock = NSLock()
    private var observers: [any ChangeObserver] = []
    /// The count of observers of every instance of the file, kept by each list.
    private let fileObservers: Counter

    init(fileObservers: Counter) { self.fileObservers = fileObservers }

    deinit { fileObservers.add(-observers.count) }

    func add(_ observer: any ChangeObserver) {
        lock.lock()
        observers.append(observer)
        fileObservers.add(1)
        lock.unlock()
    }

    func remove(_ id: ObjectIdentifier) {
        lock.lock()
        let before = observers.count
        observers.removeAll { ObjectIdentifier($0) == id }
        fileObservers.add(observers.count - before)
        lock.unlock()
    }

    var current: [any ChangeObserver] {
        lock.lock()
        defer { lock.unlock() }
        return observers
    }
}

/// One registered observer of a Realm: computes, when the Realm moves from `old` to `new`, what to deliver.
protocol ChangeObserver: AnyObject {
    var queue: DispatchQueue? { get }
    /// Updates the observer's state; returns the callback to run, or nil when there is nothing to report.
    /// Throws a storage error met while reading the two snapshots.
    func changes(core: RealmCore, old: Snapshot, new: Snapshot, summary: ChangeSummary) throws -> (() -> Void)?
    /// The callback that hands `error` to the observer's block (`.error`), or nil for observers without that
    /// case. The observer gets nothing more afterwards.
    func failed(_ error: Realm.Error) -> (() -> Void)?
}

extension RealmCore {
    /// Runs `body` on the observer's queue, or here.
    static func deliver(_ queue: DispatchQueue?, _ body: @escaping () -> Void) {
        if let queue {
            nonisolated(unsafe) let body = body
            queue.async { body() }
        } else {
            body()
        }
    }

    /// Registers `observer` and returns the token that ends it.
    func addObserver(_ observer: any ChangeObserver) -> NotificationToken {
        require(!isFrozen, "Frozen Realms do not change and do not have change notifications")
        observerList.add(observer)
        let id = ObjectIdentifier(observer)
        return NotificationToken(id: id) { [weak observerList] in observerList?.remove(id) }
    }

    var currentObservers: [any ChangeObserver] { observerList.current }

    /// The values of properties `indices` in a record read under `binding` (through pending transforms).
    static func values(_ binding: TypeBinding, _ record: UnsafeRawBufferPointer, _ indices: [Int]) -> [StoredValue] {
        if let all = binding.migratedValues(record) { return indices.map { all[$0] } }
        return indices.map { binding.value($0, in: record) }
    }

    /// Whether properties `indices` of the object with `key` differ between two snapshots (both holding it).
    static func differs(_ binding: TypeBinding, key: Int64, old: Snapshot, new: Snapshot, indices: [Int]) throws -> Bool {
        let k = ObjectKey.bytes(key)
        let a = try old.withValue(forKey: k, in: binding.partition) { $0.map { values(binding, $0, indices) } }
        let b = try new.withValue(forKey: k, in: binding.partition) { $0.map { values(binding, $0, indices) } }
        guard let a, let b else { return a != nil || b != nil }
        return !zip(a, b).allSatisfy { Self.same($0, $1) }
    }

    /// Equal values, NaN included.
    static func same(_ a: StoredValue, _ b: StoredValue) -> Bool {
        if a == b { return true }
        if case .double(let x) = a, case .double(let y) = b { return x.bitPattern == y.bitPattern }
        if case .float(let x) = a, case .float(let y) = b { return x.bitPattern == y.bitPattern }
        return false
    }
}

// MARK: - Results

/// A link or list property whose linked objects' changes count as modifications of the linking object:
/// `observe(keyPaths: ["dog.name"])`, or every link when no key paths are given (one level deep).
struct LinkWatch {
    /// The link or list property of the observed type.
    let property: Int
    /// The linked type.
    let target: TypeBinding
    /// Further links, for key paths through several (`dog.owner.name`): each a link or list property of the
    /// previous type, and the type it leads to.
    var further: [(property: Int, target: TypeBinding)] = []
    /// The properties of the last linked type that count.
    let targetProperties: [Int]

    /// The objects of the first linked type whose path leads to a change: the last type's objects whose
    /// watched properties changed, then, one level up at a time, the objects whose link leads to one of those
    /// or whose link itself changed.
    /// The objects of a type that may have changed: those the summary names, or, when it does not know
    /// (a commit nobody observed, or too old for the log), every object of the type in either version.
    static func candidates(_ summary: ChangeSummary, _ binding: TypeBinding, old: Snapshot, new: Snapshot) throws -> [Int64] {
        guard summary.everything else { return Array(summary.keys[binding.partition] ?? []) }
        var keys = Set<Int64>()
        for snapshot in [old, new] {
            try snapshot.scan(binding.partition) { k, _ in
                if let key = ObjectKey.decode(k) { keys.insert(key) }
                return true
            }
        }
        return Array(keys)
    }

    func touched(_ summary: ChangeSummary, old: Snapshot, new: Snapshot) throws -> Set<Int64> {
        let chain = [(property, target)] + further
        guard let last = chain.last else { return [] }
        var touched = Set(try Self.candidates(summary, last.1, old: old, new: new).filter {
            try RealmCore.differs(last.1, key: $0, old: old, new: new, indices: targetProperties)
        })
        var level = chain.count - 1
        while level > 0 {
            let (link, _) = chain[level]
            let holder = chain[level - 1].1
            var up = Set(try Self.candidates(summary, holder, old: old, new: new).filter {
                try RealmCore.differs(holder, key: $0, old: old, new: new, indices: [link])
            })
            if !touched.isEmpty {
                try new.scan(holder.partition) { k, raw in
                    guard let key = ObjectKey.decode(k) else { return true }
                    let v = RealmCore.values(holder, raw, [link])[0]
                    if RealmCore.linkKeys(v).contains(where: touched.contains) { up.insert(key) }
                    return true
                }
            }
            touched = up
            level -= 1
        }
        return touched
    }
}

final class ResultsObserver<Element: Object>: ChangeObserver {
    let results: Results<Element>
    let queue: DispatchQueue?
    /// The properties whose changes count as modifications (all when no key paths were given).
    let watched: [Int]
    /// Linked objects whose changes count as modifications of the objects linking to them.
    let linkWatches: [LinkWatch]
    let block: (RealmCollectionChange<Results<Element>>) -> Void
    /// The contents as last delivered.
    var keys: [Int64]
    /// The partitions of other types the query reads through links.
    let linkedPartitions: Set<UInt32>

    init(
        results: Results<Element>, queue: DispatchQueue?, watched: [Int], linkWatches: [LinkWatch] = [],
        block: @escaping (RealmCollectionChange<Results<Element>>) -> Void
    ) {
        self.results = results
        self.queue = queue
        self.watched = watched
        self.linkWatches = linkWatches
        self.block = block
        self.keys = results.evaluatedKeys()
        self.linkedPartitions = results.linkedPartitions
    }

    func failed(_ error: Realm.Error) -> (() -> Void)? {
        let block = self.block
        return { block(.error(error)) }
    }

    func changes(core: RealmCore, old: Snapshot, new: Snapshot, summary: ChangeSummary) throws -> (() -> Void)? {
        let binding = results.binding
        let changed = summary.keys[binding.partition] ?? []
        // A query through links: a change to an object it reaches can change which objects match.
        let linked = linkedPartitions
        let linkedChanged = linked.contains { !(summary.keys[$0]?.isEmpty ?? true) }
        // Linked objects whose watched properties changed (or that went away).
        var touchedTargets: [Int: Set<Int64>] = [:]
        for (n, watch) in linkWatches.enumerated() {
            let touched = try watch.touched(summary, old: old, new: new)
            if !touched.isEmpty { touchedTargets[n] = touched }
        }
        if !summary.everything && changed.isEmpty && !linkedChanged && touchedTargets.isEmpty { return nil }
        let oldKeys = keys
        var deletions: [Int] = []
        var insertions: [Int] = []
        var modifications: [Int] = []
        if results.sort.isEmpty && results.distinct.isEmpty && !summary.everything && linked.isEmpty {
            // Key order: only the touched keys can enter, leave or change.
            var removed = Set<Int64>()
            var added: [Int64] = []
            var modified = Set<Int64>()
            for key in changed {
                let wasIn = Self.index(of: key, in: oldKeys) != nil
                let isIn = try Self.matches(key, in: new, binding: binding, predicate: results.predicate)
                switch (wasIn, isIn) {
                case (true, false): removed.insert(key)
                case (false, true): added.append(key)
                case (true, true):
                    if try RealmCore.differs(binding, key: key, old: old, new: new, indices: watched) { modified.insert(key) }
                case (false, false): break
                }
            }
            if removed.isEmpty && added.isEmpty && modified.isEmpty && touchedTargets.isEmpty { return nil }
            // Binary searches for the touched keys only: a change costs O(changes x log n), plus a move of the
            // key array when objects come or go.
            var next = oldKeys
            if !removed.isEmpty {
                deletions = removed.compactMap { Self.index(of: $0, in: oldKeys) }.sorted()
                if deletions.count > 64 {
                    next = oldKeys.filter { !removed.contains($0) }
                } else {
                    for i in deletions.reversed() { next.remove(at: i) }
                }
            }
            if !added.isEmpty {
                if added.count > 64 {
                    next.append(contentsOf: added)
                    next.sort()
                } else {
                    for k in added { next.insert(k, at: Self.lowerBound(k, in: next)) }
                }
                insertions = added.compactMap { Self.index(of: $0, in: next) }.sorted()
            }
            modifications = modified.compactMap { Self.index(of: $0, in: next) }.sorted()
            keys = next
            results.install(keys: next)
        } else {
            // The query runs again through paths that cannot throw: the blocks it reads are checked first
            // (checksums only, once per block), so that damage reaches this observer as its `.error`.
            for partition in [binding.partition] + linked.sorted() { try new.checkBlocks(in: partition) }
            let next = results.evaluatedKeys()
            let newIndex = Dictionary(next.enumerated().map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
            let oldSet = Set(oldKeys)
            // Objects kept in both: those whose new positions form the longest increasing run stay; the others moved.
            var common: [(old: Int, new: Int, key: Int64)] = []
            for (i, k) in oldKeys.enumerated() {
                if let j = newIndex[k] { common.append((i, j, k)) } else { deletions.append(i) }
            }
            let stable = Self.longestIncreasing(common.map(\.new))
            for (n, c) in common.enumerated() {
                if !stable.contains(n) {
                    deletions.append(c.old)
                    insertions.append(c.new)
                } else if summary.everything || changed.contains(c.key) {
                    if try RealmCore.differs(binding, key: c.key, old: old, new: new, indices: watched) { modifications.append(c.new) }
                }
            }
            for (j, k) in next.enumerated() where !oldSet.contains(k) { insertions.append(j) }
            deletions.sort()
            insertions.sort()
            modifications.sort()
            keys = next
        }
        if !touchedTargets.isEmpty {
            // Objects (in the new contents) whose watched links lead to a linked object that changed.
            var extra = Set(modifications)
            let inserted = Set(insertions)
            for (j, key) in keys.enumerated() where !extra.contains(j) && !inserted.contains(j) {
                let hit = try new.withValue(forKey: ObjectKey.bytes(key), in: results.binding.partition) { raw -> Bool in
                    guard let raw else { return false }
                    for (n, watch) in linkWatches.enumerated() {
                        guard let targets = touchedTargets[n] else { continue }
                        let v = RealmCore.values(results.binding, raw, [watch.property])[0]
                        if RealmCore.linkKeys(v).contains(where: targets.contains) { return true }
                    }
                    return false
                }
                if hit { extra.insert(j) }
            }
            modifications = extra.sorted()
        }
        if deletions.isEmpty && insertions.isEmpty && modifications.isEmpty { return nil }
        return delivery(deletions, insertions, modifications)
    }

    private func delivery(_ d: [Int], _ i: [Int], _ m: [Int]) -> () -> Void {
        let results = self.results
        let block = self.block
        return { block(.update(results, deletions: d, insertions: i, modifications: m)) }
    }

    /// Whether the object with `key` exists in `snapshot` and matches `predicate`.
    static func matches(_ key: Int64, in snapshot: Snapshot, binding: TypeBinding, predicate: Predicate?) throws -> Bool {
        try snapshot.withValue(forKey: ObjectKey.bytes(key), in: binding.partition) { raw in
            guard let raw else { return false }
            guard let predicate else { return true }
            if let values = binding.migratedValues(raw) { return predicate.evaluate(.values(values)) }
            return predicate.evaluate(.bytes(raw, binding))
        }
    }

    static func index(of key: Int64, in sorted: [Int64]) -> Int? {
        let lo = lowerBound(key, in: sorted)
        return lo < sorted.count && sorted[lo] == key ? lo : nil
    }

    static func lowerBound(_ key: Int64, in sorted: [Int64]) -> Int {
        var lo = 0
        var hi = sorted.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if sorted[mid] < key { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    /// The positions (in `xs`) of one longest strictly increasing subsequence.
    static func longestIncreasing(_ xs: [Int]) -> Set<Int> {
        var tails: [Int] = []  // index into xs of the smallest tail of each length
        var previous = [Int](repeating: -1, count: xs.count)
        for (i, x) in xs.enumerated() {
            var lo = 0
            var hi = tails.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if xs[tails[mid]] < x { lo = mid + 1 } else { hi = mid }
            }
            if lo > 0 { previous[i] = tails[lo - 1] }
            if lo == tails.count { tails.append(i) } else { tails[lo] = i }
        }
        var out = Set<Int>()
        var i = tails.last ?? -1
        while i >= 0 {
            out.insert(i)
            i = previous[i]
        }
        return out
    }
}

extension Results {
    /// Calls `block` with the results now (`.initial`), then after every change that adds, removes or moves
    /// an object, or modifies one of its properties (only the properties in `keyPaths`, when given).
    ///
    /// Delivery happens when this Realm moves to a newer version: after its own commits, on `refresh()`, on
    /// `beginWrite()`, and, for a Realm opened with a queue, after other Realm instances' commits (autorefresh).
    /// With a `queue`, callbacks run there; otherwise on the Realm's thread, `.initial` before this returns.
    public func observe(
        keyPaths: [String]? = nil, on queue: DispatchQueue? = nil,
        _ block: @escaping (RealmCollectionChange<Results<Element>>) -> Void
    ) -> NotificationToken {
        require(!core.isInWriteTransaction, "Cannot register notification blocks from within write transactions.")
        let watched = keyPaths.map { binding.info.indices(ofKeyPaths: $0) } ?? Array(binding.info.schema.properties.indices)
        let observer = ResultsObserver(
            results: self, queue: queue ?? core.queue, watched: watched, linkWatches: core.linkWatches(binding, keyPaths: keyPaths), block: block)
        let token = core.addObserver(observer)
        let results = self
        RealmCore.deliver(observer.queue) { block(.initial(results)) }
        return token
    }
}

// MARK: - Objects

final class ObjectObserver<T: Object>: ChangeObserver {
    let object: T
    let binding: TypeBinding
    let key: Int64
    let queue: DispatchQueue?
    let watched: [Int]
    let block: (ObjectChange<T>) -> Void
    var done = false

    init(object: T, accessor: ObjectAccessor, queue: DispatchQueue?, watched: [Int], block: @escaping (ObjectChange<T>) -> Void) {
        self.object = object
        self.binding = accessor.binding
        self.key = accessor.key
        self.queue = queue
        self.watched = watched
        self.block = block
    }

    func failed(_ error: Realm.Error) -> (() -> Void)? {
        done = true
        let block = self.block
        return { block(.error(error)) }
    }

    func changes(core: RealmCore, old: Snapshot, new: Snapshot, summary: ChangeSummary) throws -> (() -> Void)? {
        guard !done, summary.everything || summary.keys[binding.partition]?.contains(key) == true else { return nil }
        let k = ObjectKey.bytes(key)
        let before = try old.withValue(forKey: k, in: binding.partition) { $0.map { RealmCore.values(binding, $0, watched) } }
        let after = try new.withValue(forKey: k, in: binding.partition) { $0.map { RealmCore.values(binding, $0, watched) } }
        let block = self.block
        guard let after else {
            guard before != nil else { return nil }
            done = true
            return { block(.deleted) }
        }
        guard let before else { return nil }
        var changes: [PropertyChange] = []
        for (n, i) in watched.enumerated() where !RealmCore.same(before[n], after[n]) {
            changes.append(PropertyChange(name: binding.info.schema.properties[i].name, oldValue: before[n].anyValue, newValue: after[n].anyValue))
        }
        guard !changes.isEmpty else { return nil }
        let object = self.object
        return { block(.change(object, changes)) }
    }
}

extension Object {
    /// Calls `block` after each change to this managed object (of the properties in `keyPaths`, when given),
    /// with the names and the old and new values, and once with `.deleted` when it is deleted.
    public func observe<T: Object>(
        keyPaths: [String]? = nil, on queue: DispatchQueue? = nil, _ block: @escaping (ObjectChange<T>) -> Void
    ) -> NotificationToken {
        guard let accessor = _accessor, let object = self as? T else {
            fatalError("Only objects which are managed by a Realm support change notifications")
        }
        require(!accessor.core.isInWriteTransaction, "Cannot register notification blocks from within write transactions.")
        let info = accessor.binding.info
        let watched = keyPaths.map { info.indices(ofKeyPaths: $0) } ?? Array(info.schema.properties.indices)
        return accessor.core.addObserver(ObjectObserver(object: object, accessor: accessor, queue: queue ?? accessor.core.queue, watched: watched, block: block))
    }
}

// MARK: - Realm

final class RealmObserver: ChangeObserver {
    let realm: Realm
    let queue: DispatchQueue?
    let block: (Realm.Notification, Realm) -> Void

    init(realm: Realm, queue: DispatchQueue?, block: @escaping (Realm.Notification, Realm) -> Void) {
        self.realm = realm
        self.queue = queue
        self.block = block
    }

    /// A Realm notification reads nothing and has no error case.
    func failed(_ error: Realm.Error) -> (() -> Void)? { nil }

    func changes(core: RealmCore, old: Snapshot, new: Snapshot, summary: ChangeSummary) throws -> (() -> Void)? {
        let (realm, block) = (self.realm, self.block)
        return { block(.didChange, realm) }
    }
}

extension Realm {
    /// What a Realm-level notification reports.
    public enum Notification: String, Sendable {
        /// The Realm moved to a newer version.
        case didChange = "RLMRealmDidChangeNotification"
        /// Another instance wrote and this Realm does not refresh by itself (autorefresh is off).
        case refreshRequired = "RLMRealmRefreshRequiredNotification"
    }

    /// Calls `block` each time this Realm moves to a newer version.
    public func observe(_ block: @escaping (Notification, Realm) -> Void) -> NotificationToken {
        // The observer holds the core only weakly through the token; the Realm value it passes is rebuilt.
        core.addObserver(RealmObserver(realm: self, queue: core.queue, block: block))
    }
}

extension RealmCore {
    /// The links whose targets an observer of `binding`'s objects watches: those named by key paths through a
    /// link (`dog.name`: the dog's name; `dog`: the link itself only), or, without key paths, every link and
    /// list of objects with all of the linked type's properties (one level deep, as far as Strata follows).
    func linkWatches(_ binding: TypeBinding, keyPaths: [String]?) -> [LinkWatch] {
        let info = binding.info
        func target(_ i: Int) -> TypeBinding? {
            guard let cls = info.linkTargets[i] ?? info.listTargets[i] ?? nil else { return nil }
            return self.binding(forClass: cls)
        }
        guard let keyPaths else {
            return info.schema.properties.indices.compactMap { i in
                target(i).map { LinkWatch(property: i, target: $0, targetProperties: Array($0.info.schema.properties.indices)) }
            }
        }
        var out: [LinkWatch] = []
        for path in keyPaths {
            let parts = path.split(separator: ".").map(String.init)
            guard parts.count >= 2, let i = info.propertyIndex[parts[0]], let first = target(i) else { continue }
            var further: [(property: Int, target: TypeBinding)] = []
            var current = first
            for part in parts.dropFirst().dropLast() {
                guard let j = current.info.propertyIndex[part], let cls = current.info.linkTargets[j] ?? current.info.listTargets[j] ?? nil else {
                    fatalError("'\(part)' in key path '\(path)' is not a link of '\(current.info.schema.className)'")
                }
                let next = self.binding(forClass: cls)
                further.append((j, next))
                current = next
            }
            guard let last = parts.last, let j = current.info.propertyIndex[last] else {
                fatalError("Property '\(parts.last ?? "")' not found in object of type '\(current.info.schema.className)' (key path '\(path)')")
            }
            out.append(LinkWatch(property: i, target: first, further: further, targetProperties: [j]))
        }
        return out
    }
}

extension TypeInfo {
    /// Property indices of the names in `keyPaths`; an unknown name traps, naming the type and the property.
    func indices(ofKeyPaths keyPaths: [String]) -> [Int] {
        keyPaths.map { path in
            let name = path.split(separator: ".").first.map(String.init) ?? path
            guard let i = propertyIndex[name] else {
                fatalError("Property '\(name)' not found in object of type '\(schema.className)'")
            }
            return i
        }
    }
}

// MARK: - AsyncSequence forms

/// Hands a change to a stream's consumer. What the streams carry is frozen (immutable, readable from any
/// thread), which the compiler cannot know of `Results` and objects in general.
func hand<V>(_ continuation: AsyncStream<V>.Continuation, _ value: V) {
    nonisolated(unsafe) let frozen = value
    continuation.yield(frozen)
}

extension Results {
    /// The changes of these results as an `AsyncSequence`: `.initial`, then each `.update`, each carrying a
    /// frozen copy of the results (immutable, readable on whatever thread or actor iterates). The observation
    /// ends when the iteration does.
    public func changes(keyPaths: [String]? = nil) -> AsyncStream<RealmCollectionChange<Results<Element>>> {
        collectionChanges({ observe(keyPaths: keyPaths, $0) }, freeze: { $0.freeze() })
    }
}

/// The change notifications of a collection as an `AsyncStream` of frozen copies: `observe` registers the
/// callback, `freeze` copies the collection; the observation ends when the iteration does.
func collectionChanges<C>(
    _ observe: (@escaping (RealmCollectionChange<C>) -> Void) -> NotificationToken, freeze: @escaping (C) -> C
) -> AsyncStream<RealmCollectionChange<C>> {
    let (stream, continuation) = AsyncStream.makeStream(of: RealmCollectionChange<C>.self)
    let token = observe { change in
        switch change {
        case .initial(let c): hand(continuation, .initial(freeze(c)))
        case .update(let c, let d, let i, let m): hand(continuation, .update(freeze(c), deletions: d, insertions: i, modifications: m))
        case .error(let e): hand(continuation, .error(e))
        }
    }
    continuation.onTermination = { _ in token.invalidate() }
    return stream
}

extension Object {
    /// The changes of this managed object as an `AsyncSequence`, each `.change` carrying a frozen copy of the
    /// object; it finishes after `.deleted`.
    public func changes<T: Object>(keyPaths: [String]? = nil) -> AsyncStream<ObjectChange<T>> {
        let (stream, continuation) = AsyncStream.makeStream(of: ObjectChange<T>.self)
        let yield = continuation
        let token = observe(keyPaths: keyPaths) { (change: ObjectChange<T>) in
            switch change {
            case .change(let o, let properties): hand(yield, .change(o.freeze(), properties))
            case .deleted:
                yield.yield(.deleted)
                yield.finish()
            case .error(let e): hand(yield, .error(e))
            }
        }
        continuation.onTermination = { _ in token.invalidate() }
        return stream
    }
}
