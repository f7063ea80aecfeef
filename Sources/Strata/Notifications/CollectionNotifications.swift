import Dispatch
import Engine
import Foundation

// Notifications of List and MutableSet properties: the property's old and new elements are compared when
// a commit touches the owning object; for collections of objects, a change to an element object (of the
// properties in `keyPaths`, when given) is a modification at its position.

final class CollectionObserver<C>: ChangeObserver {
    let collection: C
    let binding: TypeBinding
    let key: Int64
    let property: Int
    let queue: DispatchQueue?
    /// For collections of objects: the element type and the properties of it that count.
    let elements: (binding: TypeBinding, properties: [Int])?
    let block: (RealmCollectionChange<C>) -> Void
    /// For a `Results` of the collection's values: the values it shows (filtered, distinct, sorted).
    let narrow: (([StoredValue]) -> [StoredValue])?
    var done = false

    convenience init(
        collection: C, accessor: ObjectAccessor, property: Int, queue: DispatchQueue?, elements: (binding: TypeBinding, properties: [Int])?,
        block: @escaping (RealmCollectionChange<C>) -> Void
    ) {
        self.init(
            collection: collection, binding: accessor.binding, key: accessor.key, property: property, queue: queue, elements: elements,
            narrow: nil, block: block)
    }

    init(
        collection: C, binding: TypeBinding, key: Int64, property: Int, queue: DispatchQueue?,
        elements: (binding: TypeBinding, properties: [Int])?, narrow: (([StoredValue]) -> [StoredValue])?,
        block: @escaping (RealmCollectionChange<C>) -> Void
    ) {
        self.collection = collection
        self.binding = binding
        self.key = key
        self.property = property
        self.queue = queue
        self.elements = elements
        self.narrow = narrow
        self.block = block
    }

    func failed(_ error: Realm.Error) -> (() -> Void)? {
        done = true
        let block = self.block
        return { block(.error(error)) }
    }

    /// The collection's stored elements in `snapshot` (nil when the owning object is not there).
    private func items(_ snapshot: Snapshot) throws -> [StoredValue]? {
        let stored = try RealmCore.storedList(binding, key: key, property: property, in: snapshot)
        guard let narrow else { return stored }
        return stored.map(narrow)
    }

    func changes(core: RealmCore, old: Snapshot, new: Snapshot, summary: ChangeSummary) throws -> (() -> Void)? {
        guard !done else { return nil }
        let ownerTouched = summary.everything || summary.keys[binding.partition]?.contains(key) == true
        let elementKeys = elements.flatMap { summary.keys[$0.binding.partition] } ?? []
        guard ownerTouched || !elementKeys.isEmpty else { return nil }
        guard let before = try items(old) else { return nil }
        let block = self.block, collection = self.collection
        /// The elements shown: links to objects that no longer exist are not.
        func shown(_ values: [StoredValue], _ s: Snapshot) throws -> [StoredValue] {
            guard let elements else { return values }
            return try values.filter { v in
                guard case .link(let k) = v else { return false }
                return try s.withValue(forKey: ObjectKey.bytes(k), in: elements.binding.partition) { $0 != nil }
            }
        }
        let beforeShown = try shown(before, old)
        guard let afterRaw = try items(new) else {
            // The owning object was deleted: every element goes, and nothing more is reported.
            done = true
            let all = Array(beforeShown.indices)
            return all.isEmpty ? nil : { block(.update(collection, deletions: all, insertions: [], modifications: [])) }
        }
        let after = try shown(afterRaw, new)
        var (deletions, insertions, kept) = Self.diff(beforeShown, after)
        var modifications: [Int] = []
        if let elements, !elementKeys.isEmpty {
            for (_, j) in kept {
                guard case .link(let k) = after[j], elementKeys.contains(k) else { continue }
                if try RealmCore.differs(elements.binding, key: k, old: old, new: new, indices: elements.properties) { modifications.append(j) }
            }
        }
        deletions.sort()
        insertions.sort()
        modifications.sort()
        if deletions.isEmpty && insertions.isEmpty && modifications.isEmpty { return nil }
        return { block(.update(collection, deletions: deletions, insertions: insertions, modifications: modifications)) }
    }

    /// Old positions removed, new positions added, and the (old, new) pairs kept: the longest common
    /// subsequence after trimming the common prefix and suffix (a plain removal and insertion of the middle
    /// when it is too long for the quadratic table).
    static func diff(_ a: [StoredValue], _ b: [StoredValue]) -> (deletions: [Int], insertions: [Int], kept: [(Int, Int)]) {
        var kept: [(Int, Int)] = []
        var start = 0
        while start < a.count && start < b.count && a[start] == b[start] {
            kept.append((start, start))
            start += 1
        }
        var endA = a.count, endB = b.count
        var suffix: [(Int, Int)] = []
        while endA > start && endB > start && a[endA - 1] == b[endB - 1] {
            endA -= 1
            endB -= 1
            suffix.append((endA, endB))
        }
        let n = endA - start, m = endB - start
        var deletions: [Int] = [], insertions: [Int] = []
        if n > 0 || m > 0 {
            if n * m > 4_000_000 {
                deletions = Array(start..<endA)
                insertions = Array(start..<endB)
            } else {
                // lengths[i][j]: the LCS of a[start+i..<endA] and b[start+j..<endB].
                var lengths = [[Int]](repeating: [Int](repeating: 0, count: m + 1), count: n + 1)
                for i in stride(from: n - 1, through: 0, by: -1) {
                    for j in stride(from: m - 1, through: 0, by: -1) {
                        lengths[i][j] = a[start + i] == b[start + j] ? lengths[i + 1][j + 1] + 1 : max(lengths[i + 1][j], lengths[i][j + 1])
                    }
                }
                var i = 0, j = 0
                while i < n && j < m {
                    if a[start + i] == b[start + j] {
                        kept.append((start + i, start + j))
                        i += 1
                        j += 1
                    } else if lengths[i + 1][j] >= lengths[i][j + 1] {
                        deletions.append(start + i)
                        i += 1
                    } else {
                        insertions.append(start + j)
                        j += 1
                    }
                }
                while i < n { deletions.append(start + i); i += 1 }
                while j < m { insertions.append(start + j); j += 1 }
            }
        }
        kept += suffix.reversed()
        return (deletions, insertions, kept)
    }
}

extension RealmCore {
    /// The stored elements of list, set or map property `property` of the object `key` in `snapshot` (nil when
    /// the object is not there).
    static func storedList(_ binding: TypeBinding, key: Int64, property: Int, in snapshot: Snapshot) throws -> [StoredValue]? {
        try snapshot.withValue(forKey: ObjectKey.bytes(key), in: binding.partition) { raw -> [StoredValue]? in
            guard let raw else { return nil }
            guard case .list(let items) = values(binding, raw, [property])[0] else { return [] }
            return items
        }
    }

    /// The element type and watched properties of a collection of objects (nil for collections of values).
    func elementWatch(_ binding: TypeBinding, property: Int, keyPaths: [String]?) -> (binding: TypeBinding, properties: [Int])? {
        guard let cls = binding.info.listTargets[property] ?? nil else { return nil }
        let target = self.binding(forClass: cls)
        let properties = keyPaths.map { target.info.indices(ofKeyPaths: $0) } ?? Array(target.info.schema.properties.indices)
        return (target, properties)
    }
}

extension List {
    /// Calls `block` with the list now (`.initial`), then after each change to its elements: deletions in
    /// old positions, insertions and modifications in new ones. For a list of objects, a change to an element
    /// (of the properties in `keyPaths`, when given) is a modification. Deleting the owning object reports
    /// every element deleted, once.
    public func observe(
        keyPaths: [String]? = nil, on queue: DispatchQueue? = nil, _ block: @escaping (RealmCollectionChange<List<Element>>) -> Void
    ) -> NotificationToken {
        guard let accessor else { fatalError("Only lists of managed objects support change notifications") }
        require(!accessor.core.isInWriteTransaction, "Cannot register notification blocks from within write transactions.")
        let observer = CollectionObserver(
            collection: self, accessor: accessor, property: property, queue: queue ?? accessor.core.queue,
            elements: accessor.core.elementWatch(accessor.binding, property: property, keyPaths: keyPaths), block: block)
        let token = accessor.core.addObserver(observer)
        let list = self
        RealmCore.deliver(observer.queue) { block(.initial(list)) }
        return token
    }
}

extension MutableSet {
    /// Calls `block` with the set now (`.initial`), then after each change, as `List.observe` does (positions
    /// are those of the set's iteration order).
    public func observe(
        keyPaths: [String]? = nil, on queue: DispatchQueue? = nil, _ block: @escaping (RealmCollectionChange<MutableSet<Element>>) -> Void
    ) -> NotificationToken {
        guard let accessor = list.accessor else { fatalError("Only sets of managed objects support change notifications") }
        require(!accessor.core.isInWriteTransaction, "Cannot register notification blocks from within write transactions.")
        let observer = CollectionObserver(
            collection: self, accessor: accessor, property: list.property, queue: queue ?? accessor.core.queue,
            elements: accessor.core.elementWatch(accessor.binding, property: list.property, keyPaths: keyPaths), block: block)
        let token = accessor.core.addObserver(observer)
        let set = self
        RealmCore.deliver(observer.queue) { block(.initial(set)) }
        return token
    }
}

extension List where Element: Object {
    /// `observe(keyPaths:on:_:)` with the properties of the elements named by key paths.
    public func observe(
        keyPaths: [PartialKeyPath<Element>], on queue: DispatchQueue? = nil, _ block: @escaping (RealmCollectionChange<List<Element>>) -> Void
    ) -> NotificationToken {
        let info = TypeRegistry.info(for: Element.self)
        return observe(keyPaths: keyPaths.map { info.name(of: $0) }, on: queue, block)
    }
}

extension MutableSet where Element: Object {
    /// `observe(keyPaths:on:_:)` with the properties of the elements named by key paths.
    public func observe(
        keyPaths: [PartialKeyPath<Element>], on queue: DispatchQueue? = nil,
        _ block: @escaping (RealmCollectionChange<MutableSet<Element>>) -> Void
    ) -> NotificationToken {
        let info = TypeRegistry.info(for: Element.self)
        return observe(keyPaths: keyPaths.map { info.name(of: $0) }, on: queue, block)
    }
}

// MARK: - Frozen collections and AsyncSequence forms

extension List {
    /// The changes of this list as an `AsyncSequence`: `.initial`, then each `.update`, each carrying a
    /// frozen copy of the list. The observation ends when the iteration does.
    public func changes(keyPaths: [String]? = nil) -> AsyncStream<RealmCollectionChange<List<Element>>> {
        collectionChanges({ observe(keyPaths: keyPaths, $0) }, freeze: { $0.freeze() })
    }
}

extension MutableSet {
    /// The changes of this set as an `AsyncSequence` of frozen copies, as `List.changes` gives them.
    public func changes(keyPaths: [String]? = nil) -> AsyncStream<RealmCollectionChange<MutableSet<Element>>> {
        collectionChanges({ observe(keyPaths: keyPaths, $0) }, freeze: { $0.freeze() })
    }
}

extension Realm {
    /// Each move of this Realm to a newer version (`.didChange`), or `.refreshRequired`, as an `AsyncSequence`.
    /// The observation ends when the iteration does.
    public var changes: AsyncStream<Notification> {
        let (stream, continuation) = AsyncStream.makeStream(of: Notification.self)
        let token = observe { notification, _ in continuation.yield(notification) }
        continuation.onTermination = { _ in token.invalidate() }
        return stream
    }
}


// MARK: - Maps

/// What changed in an observed `Map`: keys removed, added, and whose value changed.
public enum RealmMapChange<Collection> {
    case initial(Collection)
    case update(Collection, deletions: [String], insertions: [String], modifications: [String])
    case error(any Error)
}

final class MapObserver<M>: ChangeObserver {
    let map: M
    let binding: TypeBinding
    let key: Int64
    let property: Int
    let queue: DispatchQueue?
    let block: (RealmMapChange<M>) -> Void
    var done = false

    init(map: M, accessor: ObjectAccessor, property: Int, queue: DispatchQueue?, block: @escaping (RealmMapChange<M>) -> Void) {
        self.map = map
        self.binding = accessor.binding
        self.key = accessor.key
        self.property = property
        self.queue = queue
        self.block = block
    }

    func failed(_ error: Realm.Error) -> (() -> Void)? {
        done = true
        let block = self.block
        return { block(.error(error)) }
    }

    /// The map's entries in `snapshot` by key (nil when the owning object is not there).
    private func entries(_ snapshot: Snapshot) throws -> [String: StoredValue]? {
        guard let items = try RealmCore.storedList(binding, key: key, property: property, in: snapshot) else { return nil }
        var out: [String: StoredValue] = [:]
        var i = 0
        while i + 1 < items.count {
            if case .string(let k) = items[i] { out[k] = items[i + 1] }
            i += 2
        }
        return out
    }

    func changes(core: RealmCore, old: Snapshot, new: Snapshot, summary: ChangeSummary) throws -> (() -> Void)? {
        guard !done, summary.everything || summary.keys[binding.partition]?.contains(key) == true, let before = try entries(old) else { return nil }
        let block = self.block, map = self.map
        guard let after = try entries(new) else {
            done = true
            let all = before.keys.sorted()
            return all.isEmpty ? nil : { block(.update(map, deletions: all, insertions: [], modifications: [])) }
        }
        let deletions = before.keys.filter { after[$0] == nil }.sorted()
        let insertions = after.keys.filter { before[$0] == nil }.sorted()
        let modifications = after.keys.filter { k in before[k].map { !RealmCore.same($0, after[k] ?? .null) } ?? false }.sorted()
        if deletions.isEmpty && insertions.isEmpty && modifications.isEmpty { return nil }
        return { block(.update(map, deletions: deletions, insertions: insertions, modifications: modifications)) }
    }
}

extension Map {
    /// Calls `block` with the map now (`.initial`), then after each change: the keys removed, added and
    /// whose value changed. Deleting the owning object reports every key removed, once.
    public func observe(on queue: DispatchQueue? = nil, _ block: @escaping (RealmMapChange<Map<Key, Value>>) -> Void) -> NotificationToken {
        guard let accessor else { fatalError("Only maps of managed objects support change notifications") }
        require(!accessor.core.isInWriteTransaction, "Cannot register notification blocks from within write transactions.")
        let observer = MapObserver(map: self, accessor: accessor, property: property, queue: queue ?? accessor.core.queue, block: block)
        let token = accessor.core.addObserver(observer)
        let map = self
        RealmCore.deliver(observer.queue) { block(.initial(map)) }
        return token
    }

    /// The changes of this map as an `AsyncSequence` of frozen copies.
    public func changes() -> AsyncStream<RealmMapChange<Map<Key, Value>>> {
        let (stream, continuation) = AsyncStream.makeStream(of: RealmMapChange<Map<Key, Value>>.self)
        let token = observe { change in
            switch change {
            case .initial(let m): hand(continuation, .initial(m.freeze()))
            case .update(let m, let d, let i, let mods): hand(continuation, .update(m.freeze(), deletions: d, insertions: i, modifications: mods))
            case .error(let e): hand(continuation, .error(e))
            }
        }
        continuation.onTermination = { _ in token.invalidate() }
        return stream
    }
}
