import Engine
import Foundation

/// Results grouped into sections by a key (`results.sectioned(by: \.lastName.first)`), as RealmSwift's
/// `SectionedResults`: the sections in the order their first object has in the sorted results, each holding
/// every object of its key. Live, as `Results` are: the sections are computed again when the Realm moves to
/// another version. Index paths are `[section, item]` (`IndexPath(indexes: [s, i])`; `section` and `item`
/// exist where UIKit or AppKit adds them).
public struct SectionedResults<Key: _Persistable & Hashable, SectionElement: Object>: RandomAccessCollection, CustomStringConvertible {
    let results: Results<SectionElement>
    let sectionKey: (SectionElement) -> Key
    private let cache = Cache()

    final class Cache {
        var token: RealmCore.ChangeToken?
        var sections: [(key: Key, keys: [Int64])] = []
    }

    init(results: Results<SectionElement>, sectionKey: @escaping (SectionElement) -> Key) {
        self.results = results
        self.sectionKey = sectionKey
    }

    /// The sections at the current version: each key and the object keys of its objects, in results order.
    var sections: [(key: Key, keys: [Int64])] {
        let token = results.core.changeToken
        if cache.token == token { return cache.sections }
        var order: [Key] = []
        var members: [Key: [Int64]] = [:]
        for (i, key) in results.evaluatedKeys().enumerated() {
            let sectionKey = sectionKey(results[i])
            if members[sectionKey] == nil { order.append(sectionKey) }
            members[sectionKey, default: []].append(key)
        }
        cache.sections = order.map { ($0, members[$0] ?? []) }
        cache.token = token
        return cache.sections
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { sections.count }
    public subscript(position: Int) -> ResultsSection<Key, SectionElement> { ResultsSection(parent: self, key: sections[position].key) }
    /// The object at `[section, item]`.
    public subscript(indexPath: IndexPath) -> SectionElement { self[indexPath[0]][indexPath[1]] }
    /// The key of every section, in order.
    public var allKeys: [Key] { sections.map(\.key) }
    public var description: String { "SectionedResults<\(Key.self), \(SectionElement.className())> (\(count) sections)" }

    public var realm: Realm? { results.realm }
    public var isInvalidated: Bool { results.isInvalidated }
    public var isFrozen: Bool { results.isFrozen }
    public func freeze() -> SectionedResults { SectionedResults(results: results.freeze(), sectionKey: sectionKey) }
    public func thaw() -> SectionedResults? { results.thaw().map { SectionedResults(results: $0, sectionKey: sectionKey) } }

    func object(_ key: Int64) -> SectionElement { results.element(key, nil) }

    /// Calls `block` with the sections now (`.initial`), then after each change: objects deleted (in old index
    /// paths), inserted and modified (in new ones), and the sections inserted and deleted.
    public func observe(
        keyPaths: [String]? = nil, on queue: DispatchQueue? = nil, _ block: @escaping (SectionedResultsChange<SectionedResults>) -> Void
    ) -> NotificationToken {
        var previous = sections
        let sectioned = self
        return results.observe(keyPaths: keyPaths, on: queue) { change in
            switch change {
            case .initial:
                previous = sectioned.sections
                block(.initial(sectioned))
            case .update(let r, _, _, let modifications):
                let now = sectioned.sections
                block(Self.difference(previous, now, modified: Set(modifications.map { r.evaluatedKeys()[$0] }), sectioned))
                previous = now
            case .error(let e):
                block(.error(e))
            }
        }
    }

    /// The change from sections `old` to `new`, `modified` naming the objects whose properties changed.
    static func difference(
        _ old: [(key: Key, keys: [Int64])], _ new: [(key: Key, keys: [Int64])], modified: Set<Int64>, _ collection: SectionedResults
    ) -> SectionedResultsChange<SectionedResults> {
        let oldIndex = Dictionary(old.enumerated().map { ($1.key, $0) }, uniquingKeysWith: { a, _ in a })
        let newIndex = Dictionary(new.enumerated().map { ($1.key, $0) }, uniquingKeysWith: { a, _ in a })
        var deletions: [IndexPath] = [], insertions: [IndexPath] = [], modifications: [IndexPath] = []
        let sectionsToDelete = IndexSet(old.indices.filter { newIndex[old[$0].key] == nil })
        let sectionsToInsert = IndexSet(new.indices.filter { oldIndex[new[$0].key] == nil })
        for (s, section) in new.enumerated() {
            guard let o = oldIndex[section.key] else { continue }
            let before = old[o].keys
            let position = Dictionary(section.keys.enumerated().map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
            // Objects kept in the section: those whose new positions keep their order stay; the others moved.
            var kept: [(old: Int, new: Int)] = []
            for (i, key) in before.enumerated() {
                if let j = position[key] { kept.append((i, j)) } else { deletions.append(IndexPath(indexes: [o, i])) }
            }
            let stable = ResultsObserver<SectionElement>.longestIncreasing(kept.map(\.new))
            var present = Set<Int>()
            for (n, k) in kept.enumerated() {
                if stable.contains(n) {
                    present.insert(k.new)
                    if modified.contains(section.keys[k.new]) { modifications.append(IndexPath(indexes: [s, k.new])) }
                } else {
                    deletions.append(IndexPath(indexes: [o, k.old]))
                }
            }
            for j in section.keys.indices where !present.contains(j) { insertions.append(IndexPath(indexes: [s, j])) }
        }
        return .update(
            collection, deletions: deletions.sorted(), insertions: insertions.sorted(), modifications: modifications.sorted(),
            sectionsToInsert: sectionsToInsert, sectionsToDelete: sectionsToDelete)
    }
}

/// One section of `SectionedResults`: its key and its objects, live.
public struct ResultsSection<Key: _Persistable & Hashable, Element: Object>: RandomAccessCollection, Identifiable, CustomStringConvertible {
    let parent: SectionedResults<Key, Element>
    public let key: Key
    public var id: Key { key }

    private var keys: [Int64] { parent.sections.first { $0.key == key }?.keys ?? [] }

    public var startIndex: Int { 0 }
    public var endIndex: Int { keys.count }
    public subscript(position: Int) -> Element {
        let keys = self.keys
        require(position >= 0 && position < keys.count, "Index \(position) is out of bounds (must be less than \(keys.count)).")
        return parent.object(keys[position])
    }
    public var description: String { "ResultsSection<\(Key.self), \(Element.className())> (\(count) objects)" }

    /// Calls `block` with the section now (`.initial`), then after each change to its objects: deletions in old
    /// positions, insertions and modifications in new ones (a section that goes away reports its objects
    /// deleted; one that comes back, inserted).
    public func observe(
        keyPaths: [String]? = nil, on queue: DispatchQueue? = nil, _ block: @escaping (RealmCollectionChange<ResultsSection>) -> Void
    ) -> NotificationToken {
        let key = self.key
        var previous: (index: Int?, count: Int) = (parent.allKeys.firstIndex(of: key), count)
        let section = self
        return parent.observe(keyPaths: keyPaths, on: queue) { change in
            switch change {
            case .initial:
                block(.initial(section))
            case .update(let sections, let deletions, let insertions, let modifications, let inserted, let deleted):
                let now = sections.allKeys.firstIndex(of: key)
                let count = now.map { sections[$0].count } ?? 0
                defer { previous = (now, count) }
                var d: [Int] = [], i: [Int] = [], m: [Int] = []
                if let old = previous.index {
                    d = deleted.contains(old) || now == nil ? Array(0..<previous.count) : deletions.filter { $0[0] == old }.map { $0[1] }
                }
                if let now {
                    i = inserted.contains(now) || previous.index == nil ? Array(0..<count) : insertions.filter { $0[0] == now }.map { $0[1] }
                    m = modifications.filter { $0[0] == now }.map { $0[1] }
                }
                if !d.isEmpty || !i.isEmpty || !m.isEmpty { block(.update(section, deletions: d, insertions: i, modifications: m)) }
            case .error(let e):
                block(.error(e))
            }
        }
    }
}

/// A change to `SectionedResults`, as RealmSwift delivers it.
public enum SectionedResultsChange<Collection> {
    case initial(Collection)
    /// Deletions in the old index paths; insertions and modifications in the new ones; sections inserted (new
    /// indices) and deleted (old indices).
    case update(Collection, deletions: [IndexPath], insertions: [IndexPath], modifications: [IndexPath], sectionsToInsert: IndexSet, sectionsToDelete: IndexSet)
    case error(any Error)
}

extension Results where Element: Object {
    /// The results sorted by `keyPath` and grouped into one section per value.
    public func sectioned<K: _Persistable & Hashable>(by keyPath: KeyPath<Element, K>, ascending: Bool = true) -> SectionedResults<K, Element> {
        SectionedResults(results: sorted(by: keyPath, ascending: ascending), sectionKey: { $0[keyPath: keyPath] })
    }

    /// The results sorted by `sortDescriptors` (the first must be `keyPath`'s) and grouped by `keyPath`.
    public func sectioned<K: _Persistable & Hashable>(by keyPath: KeyPath<Element, K>, sortDescriptors: [SortDescriptor]) -> SectionedResults<K, Element> {
        guard let first = sortDescriptors.first else { fatalError("Can not section Results with empty sortDescriptor parameter.") }
        require(first.keyPath == binding.info.name(of: keyPath), "The section key path must match the primary sort descriptor.")
        return SectionedResults(results: sorted(by: sortDescriptors), sectionKey: { $0[keyPath: keyPath] })
    }

    /// The results sorted by `sortDescriptors` and grouped by the key `block` gives each object (the first sort
    /// descriptor should decide it, so that each section's objects are together).
    public func sectioned<K: _Persistable & Hashable>(by block: @escaping (Element) -> K, sortDescriptors: [SortDescriptor]) -> SectionedResults<K, Element> {
        guard !sortDescriptors.isEmpty else { fatalError("Can not section Results with empty sortDescriptor parameter.") }
        return SectionedResults(results: sorted(by: sortDescriptors), sectionKey: block)
    }
}

/// What `SectionedResults` and `ResultsSection` have in common, for generic code written against RealmSwift's
/// protocol of that name: a live, freezable collection of a Realm.
public protocol RealmSectionedResult: RandomAccessCollection, Equatable, ThreadConfined {
    var count: Int { get }
}

extension SectionedResults: RealmSectionedResult {
    /// The same sectioned results (copies of one value, or of its frozen or thawed forms are not the same).
    public static func == (a: SectionedResults, b: SectionedResults) -> Bool { a.cache === b.cache }
}

extension ResultsSection: RealmSectionedResult {
    public var realm: Realm? { parent.realm }
    public var isInvalidated: Bool { parent.isInvalidated }
    public var isFrozen: Bool { parent.isFrozen }
    /// This section as of the Realm's current version, immutable, readable from any thread.
    public func freeze() -> ResultsSection { ResultsSection(parent: parent.freeze(), key: key) }
    /// The live section; nil when its Realm cannot give the sectioned results again.
    public func thaw() -> ResultsSection? { parent.thaw().map { ResultsSection(parent: $0, key: key) } }
    /// The same section of the same sectioned results.
    public static func == (a: ResultsSection, b: ResultsSection) -> Bool { a.parent == b.parent && a.key == b.key }
}

extension SectionedResults: Referable {
    var referenceCore: RealmCore? { results.core }
    func referenceMaker() -> @Sendable (RealmCore) -> Any? {
        let make = results.referenceMaker()
        nonisolated(unsafe) let sectionKey = self.sectionKey
        return { core in (make(core) as? Results<SectionElement>).map { SectionedResults(results: $0, sectionKey: sectionKey) } }
    }
}

extension ResultsSection: Referable {
    var referenceCore: RealmCore? { parent.results.core }
    func referenceMaker() -> @Sendable (RealmCore) -> Any? {
        let make = parent.referenceMaker()
        nonisolated(unsafe) let key = self.key
        return { core in (make(core) as? SectionedResults<Key, Element>).map { ResultsSection(parent: $0, key: key) } }
    }
}
