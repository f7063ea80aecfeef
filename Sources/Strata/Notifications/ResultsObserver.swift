import Dispatch
import Engine
import Foundation

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

extension TypeBinding {
    /// Whether object `key` exists in `snapshot` and matches `predicate` (one that reads no other object).
    func matches(_ key: Int64, in snapshot: Snapshot, predicate: Predicate?) throws -> Bool {
        try snapshot.withValue(forKey: ObjectKey.bytes(key), in: partition) { raw in
            guard let raw else { return false }
            guard let predicate else { return true }
            if let migrated = migratedRecord(raw) { return migrated.withUnsafeBytes { predicate.evaluate(.bytes($0, self)) } }
            return predicate.evaluate(.bytes(raw, self))
        }
    }
}

final class ResultsObserver<Element: _RealmResultsElement>: ChangeObserver {
    let results: Results<Element>
    let queue: DispatchQueue?
    /// The properties whose changes count as modifications (all when no key paths were given).
    let watched: [Int]
    /// Linked objects whose changes count as modifications of the objects linking to them.
    let linkWatches: [LinkWatch]
    /// Linking objects whose changes count as modifications of the objects they link to.
    let backlinkWatches: [BacklinkWatch]
    let block: (RealmCollectionChange<Results<Element>>) -> Void
    /// The contents as last delivered.
    var keys: [Int64]
    /// The partitions of other types the query reads through links.
    let linkedPartitions: Set<UInt32>

    init(
        results: Results<Element>, queue: DispatchQueue?, watched: [Int], linkWatches: [LinkWatch] = [], backlinkWatches: [BacklinkWatch] = [],
        block: @escaping (RealmCollectionChange<Results<Element>>) -> Void
    ) {
        self.results = results
        self.queue = queue
        self.watched = watched
        self.linkWatches = linkWatches
        self.backlinkWatches = backlinkWatches
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
        // Objects whose linking objects changed.
        var backlinked = Set<Int64>()
        for watch in backlinkWatches { backlinked.formUnion(try watch.affected(summary, old: old, new: new)) }
        if !summary.everything && changed.isEmpty && !linkedChanged && touchedTargets.isEmpty && backlinked.isEmpty { return nil }
        let oldKeys = keys
        var deletions: [Int] = []
        var insertions: [Int] = []
        var modifications: [Int] = []
        if results.sort.isEmpty && results.distinctKeys.isEmpty && results.base == nil && !summary.everything && linked.isEmpty {
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
            if removed.isEmpty && added.isEmpty && modified.isEmpty && touchedTargets.isEmpty && backlinked.isEmpty { return nil }
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
            // An object a list holds twice is two entries: its first and its second occurrence.
            let unique = results.base == nil
            let oldEntries = Self.entries(oldKeys, unique: unique), newEntries = Self.entries(next, unique: unique)
            let newIndex = Dictionary(newEntries.enumerated().map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
            let oldSet = Set(oldEntries)
            // Objects kept in both: those whose new positions form the longest increasing run stay; the others moved.
            var common: [(old: Int, new: Int, key: Int64)] = []
            for (i, e) in oldEntries.enumerated() {
                if let j = newIndex[e] { common.append((i, j, e.key)) } else { deletions.append(i) }
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
            for (j, e) in newEntries.enumerated() where !oldSet.contains(e) { insertions.append(j) }
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
        if !backlinked.isEmpty {
            // Objects (in the new contents, not inserted) that gained or lost a linking object.
            let inserted = Set(insertions)
            var extra = Set(modifications)
            for (j, key) in keys.enumerated() where backlinked.contains(key) && !inserted.contains(j) { extra.insert(j) }
            modifications = extra.sorted()
        }
        if deletions.isEmpty && insertions.isEmpty && modifications.isEmpty { return nil }
        return delivery(deletions, insertions, modifications)
    }

    /// An entry of the contents: an object key and which occurrence of it this is (0 but in a list that holds
    /// an object more than once).
    struct Entry: Hashable {
        let key: Int64
        let occurrence: Int
    }

    static func entries(_ keys: [Int64], unique: Bool) -> [Entry] {
        if unique { return keys.map { Entry(key: $0, occurrence: 0) } }
        var seen: [Int64: Int] = [:]
        return keys.map { k in
            let n = seen[k, default: 0]
            seen[k] = n + 1
            return Entry(key: k, occurrence: n)
        }
    }

    private func delivery(_ d: [Int], _ i: [Int], _ m: [Int]) -> () -> Void {
        let results = self.results
        let block = self.block
        return { block(.update(results, deletions: d, insertions: i, modifications: m)) }
    }

    /// Whether the object with `key` exists in `snapshot` and matches `predicate`.
    static func matches(_ key: Int64, in snapshot: Snapshot, binding: TypeBinding, predicate: Predicate?) throws -> Bool {
        try binding.matches(key, in: snapshot, predicate: predicate)
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
        if let values { return values.observe(self, on: queue ?? core.queue, block) }
        let watched = keyPaths.map { binding.info.indices(ofKeyPaths: $0) } ?? Array(binding.info.schema.properties.indices)
        let observer = ResultsObserver(
            results: self, queue: queue ?? core.queue, watched: watched, linkWatches: core.linkWatches(binding, keyPaths: keyPaths),
            backlinkWatches: core.backlinkWatches(binding, keyPaths: keyPaths), block: block)
        let token = core.addObserver(observer)
        let results = self
        RealmCore.deliver(observer.queue) { block(.initial(results)) }
        return token
    }

}

extension Results where Element: Object {
    /// `observe(keyPaths:on:_:)` with the properties named by key paths (`[\Dog.name]`).
    public func observe(
        keyPaths: [PartialKeyPath<Element>], on queue: DispatchQueue? = nil,
        _ block: @escaping (RealmCollectionChange<Results<Element>>) -> Void
    ) -> NotificationToken {
        observe(keyPaths: keyPaths.map { binding.info.name(of: $0) }, on: queue, block)
    }
}
