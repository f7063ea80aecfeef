import Engine
import Foundation
import Observation

// Swift's Observation (`withObservationTracking`, SwiftUI's redraws on iOS 17 and later): objects and
// collections take part as `@Observable` classes do.
//
// - A managed object of a Realm opened with `observationTracking` records each property read with its
//   accessor's `ObjectObservation`, made by the first such read. A list, set or map property records a read of
//   its property on the same observation; a `Results` records a read of its count or of its contents on its
//   own (`ResultsObservation`).
// - The commit that changes what was read (from any thread, Realm or process) calls the tracking's `onChange`
//   when this Realm moves to that version. Objects: one change observer per Realm (`ObservationObserver`)
//   compares the records of the objects with an observation in the old and the new version and names the
//   properties that differ (a deleted object names every property read). The same observer evaluates each
//   observed `Results`' query again after a commit that touches its types, and compares.
// - The object a `for`-`in` loop over `Results` reuses from step to step (`ObjectAccessor.lent`) is a cursor,
//   not an object a view holds: its reads record nothing. A loop that keeps its objects (`Array(results)`) gets
//   objects of their own, which do.
// - Unmanaged objects record on `Object._observation`; their setters call the registrar's `willSet`/`didSet`,
//   as an `@Observable` class's do. An object added to such a Realm keeps its observation.
//
// The registrar's key paths name a property by its index (`\ObjectObservation.[property: 3]`): no key path of
// the model is needed, so a read's fast path is handed none (the getter's key paths cost a loop of reads 7%
// when merely referenced by the hook).

extension Object: Observable {}

/// The part in Observation of one object (one record: every instance of it in a Realm shares it): its registrar,
/// and which properties were read under it.
@usableFromInline
final class ObjectObservation: Observable, @unchecked Sendable {
    let registrar = ObservationRegistrar()
    /// How many properties the object has.
    let properties: Int
    /// The properties read since the observation began (those a commit compares): the first 64 as bits, any
    /// further ones in a set. Inline, so that an observation costs few allocations (one per object read with
    /// `observationTracking` on).
    private var readMask: UInt64 = 0
    private var readBeyond: Set<Int>?
    /// For a managed object: its type and key (set when it is watched).
    private(set) var binding: TypeBinding?
    private(set) var key: Int64 = 0

    init(properties: Int) {
        self.properties = properties
    }

    /// What the registrar's key paths lead to: nothing is read through them.
    subscript(property index: Int) -> Int { index }

    /// The key path naming property `index` to a registrar, the same for every object: made once for the first
    /// 64 properties (read without a lock), on demand beyond.
    private static let keyPaths: [any KeyPath<ObjectObservation, Int> & Sendable] = (0..<64).map { \ObjectObservation.[property: $0] }
    private static let furtherKeyPaths = Locked<[Int: KeyPath<ObjectObservation, Int>]>([:])

    private static func keyPath(_ index: Int) -> KeyPath<ObjectObservation, Int> {
        if index < keyPaths.count { return keyPaths[index] }
        return furtherKeyPaths.withLock { paths in
            if let k = paths[index] { return k }
            let k = \ObjectObservation.[property: index]
            paths[index] = k
            return k
        }
    }

    func wasRead(_ index: Int) -> Bool {
        index < 64 ? readMask & (1 << UInt64(index)) != 0 : readBeyond?.contains(index) == true
    }

    /// The properties read, in order.
    var readProperties: [Int] { (0..<properties).filter(wasRead) }

    func access(_ index: Int) {
        guard index >= 0 && index < properties else { return }
        if index < 64 {
            readMask |= 1 << UInt64(index)
        } else {
            readBeyond = (readBeyond ?? []).union([index])
        }
        registrar.access(self, keyPath: Self.keyPath(index))
    }

    /// Tells the trackings that read property `index`, or every property read when nil, that it changed.
    func changed(_ index: Int?) {
        if let index {
            guard index >= 0 && index < properties, wasRead(index) else { return }
            registrar.withMutation(of: self, keyPath: Self.keyPath(index)) {}
        } else {
            for i in readProperties { registrar.withMutation(of: self, keyPath: Self.keyPath(i)) {} }
        }
    }

    @usableFromInline
    func willSet(_ index: Int) {
        guard index >= 0 && index < properties, wasRead(index) else { return }
        registrar.willSet(self, keyPath: Self.keyPath(index))
    }

    @usableFromInline
    func didSet(_ index: Int) {
        guard index >= 0 && index < properties, wasRead(index) else { return }
        registrar.didSet(self, keyPath: Self.keyPath(index))
    }

    func watch(_ binding: TypeBinding, key: Int64) {
        self.binding = binding
        self.key = key
    }
}

extension ObjectAccessor {
    /// Records a read of property `index` for Observation (the getter calls this only when `observes`).
    @usableFromInline
    func observeRead(_ index: Int) {
        guard lent == nil else { return }
        let observation = self.observation ?? core.observation(of: self, adopting: nil)
        observation.access(index)
    }
}

extension Object {
    /// Records a read of an unmanaged object's property for Observation.
    @usableFromInline
    static func _observeUnmanagedRead(_ object: Object, _ index: Int) {
        let observation = object._observation ?? {
            let info = object._unmanagedInfo ?? TypeRegistry.info(for: type(of: object))
            let new = ObjectObservation(properties: info.schema.properties.count)
            object._observation = new
            return new
        }()
        observation.access(index)
    }

    /// Adding an unmanaged object that was read under a tracking: managed by a Realm that tracks, its
    /// observation goes on hearing of changes, now from commits.
    func _keepObservation(_ accessor: ObjectAccessor) {
        guard let observation = _observation else { return }
        _observation = nil
        if accessor.observes && !accessor.core.isFrozen { _ = accessor.core.observation(of: accessor, adopting: observation) }
    }
}

extension RealmCore {
    /// The observation of `accessor`'s record (shared by every instance of it in this Realm), made or
    /// `adopting` the given one when it has none; set on the accessor.
    func observation(of accessor: ObjectAccessor, adopting: ObjectObservation?) -> ObjectObservation {
        let observation = observationWatcher().observation(binding: accessor.binding, key: accessor.key, adopting: adopting)
        accessor.observation = observation
        return observation
    }

    /// Starts watching a `Results` read under a tracking.
    func watch(_ observation: ResultsObservation) {
        observationWatcher().add(observation)
    }

    private func observationWatcher() -> ObservationObserver {
        if let watcher = observationObserver { return watcher }
        let watcher = ObservationObserver()
        observationObserver = watcher
        if !isFrozen {
            // No token: the observer lives as long as the list (a token held here would be released inside the
            // list's lock when the last object of this Realm goes with another observer).
            observerList.add(watcher)
            attachToFileForMainQueueRefresh()
            shared.watchOtherProcesses()
        }
        return watcher
    }
}

/// The change observer of a Realm's objects that Observation tracks, and the keeper of its `Results`'
/// observations.
///
/// How long an observation lives: a tracking may wait on an object or a `Results` that no instance holds any more
/// (a SwiftUI view's body that fetched it, read it and let it go), so the Realm keeps them. An object's
/// observation belongs to its record: every instance of it shares one, so a view that fetches its object again at
/// each redraw finds the same one; at most `maximumRows` are kept once no instance holds them, the oldest go
/// first (a tracking still waiting on one of those hears of nothing more). A `Results`' observation is kept, once
/// its `Results` is gone, until it has told of a change, at most `maximumResults` of them.
final class ObservationObserver: ChangeObserver {
    var queue: DispatchQueue? { nil }
    /// The objects' observations, oldest first, and where each record's is.
    private var watched: [ObjectObservation] = []
    private var rows: [ObjectKeyID: Int] = [:]
    private var results: [ResultsObservation] = []
    static let maximumRows = 4096
    private var sweepAt = 2 * maximumRows
    static let maximumResults = 64

    struct ObjectKeyID: Hashable {
        let partition: UInt32
        let key: Int64
    }

    func observation(binding: TypeBinding, key: Int64, adopting: ObjectObservation?) -> ObjectObservation {
        let id = ObjectKeyID(partition: binding.partition, key: key)
        if let i = rows[id] { return watched[i] }
        let observation = adopting ?? ObjectObservation(properties: binding.info.schema.properties.count)
        observation.watch(binding, key: key)
        if watched.count >= sweepAt {
            forgetRows()
            // Held observations stay: the next look waits until as many again have come.
            sweepAt = max(2 * Self.maximumRows, 2 * watched.count)
        }
        rows[id] = watched.count
        watched.append(observation)
        return observation
    }

    /// Lets go of the oldest observations no instance holds, down to `maximumRows` of them.
    private func forgetRows() {
        var unheld = 0
        for i in watched.indices where isKnownUniquelyReferenced(&watched[i]) { unheld += 1 }
        var surplus = unheld - Self.maximumRows
        guard surplus > 0 else { return }
        var kept: [ObjectObservation] = []
        for i in watched.indices {
            if surplus > 0, isKnownUniquelyReferenced(&watched[i]) {
                surplus -= 1
                continue
            }
            kept.append(watched[i])
        }
        watched = kept
        rows = [:]
        for (i, o) in watched.enumerated() {
            if let binding = o.binding { rows[ObjectKeyID(partition: binding.partition, key: o.key)] = i }
        }
    }

    func add(_ observation: ResultsObservation) {
        // A Results' observation that told of a change once its Results was gone has done its work.
        results.removeAll { $0.told && $0.owner == nil }
        var unheld = results.filter { $0.owner == nil }.count
        if unheld >= Self.maximumResults {
            results.removeAll { o in
                guard unheld >= Self.maximumResults, o.owner == nil else { return false }
                unheld -= 1
                return true
            }
        }
        results.append(observation)
    }

    func changes(core: RealmCore, old: Snapshot, new: Snapshot, summary: ChangeSummary) throws -> (() -> Void)? {
        var calls: [(ObjectObservation, Int?)] = []
        for observation in watched {
            guard let binding = observation.binding else { continue }
            let partition = binding.partition
            guard summary.everything || summary.keys[partition]?.contains(observation.key) == true else { continue }
            let key = ObjectKey.bytes(observation.key)
            let before = try old.get(key, in: partition)
            guard let after = try new.get(key, in: partition) else {
                if before != nil { calls.append((observation, nil)) }
                continue
            }
            guard let before, before != after else { continue }
            let read = observation.readProperties
            let (was, now) = before.withUnsafeBytes { b in after.withUnsafeBytes { a in (RealmCore.values(binding, b, read), RealmCore.values(binding, a, read)) } }
            for (n, index) in read.enumerated() where !RealmCore.same(was[n], now[n]) { calls.append((observation, index)) }
        }
        var told: [(ResultsObservation, Bool)] = []
        for observation in results {
            if let count = try observation.changes(core: core, old: old, new: new, summary: summary) { told.append((observation, count)) }
        }
        guard !calls.isEmpty || !told.isEmpty else { return nil }
        return {
            for (observation, index) in calls { observation.changed(index) }
            for (observation, count) in told { observation.changed(count: count) }
        }
    }

    func failed(_ error: Realm.Error) -> (() -> Void)? { nil }
}

/// A `Results`' part in Observation: a read of its count or its contents registers here. The Realm's
/// `ObservationObserver` tells the trackings what a commit changed. It holds the query, never the Realm (which
/// holds it).
final class ResultsObservation: Observable, @unchecked Sendable {
    let registrar = ObservationRegistrar()
    /// The cache of the `Results` this is for, while it lives.
    weak var owner: AnyObject?
    /// Whether it has told of a change.
    private(set) var told = false
    /// The query's type (for values: the owner's) and the other partitions whose commits can change it.
    let binding: TypeBinding
    let partitions: Set<UInt32>
    let mode: Mode
    /// For `.contents`: the contents at the version last seen.
    var last: Contents?
    var count: Int { 0 }
    var contents: Int { 0 }

    /// How a commit's effect is found.
    enum Mode {
        /// The objects of one type that match a predicate reading nothing else (in any order): from the
        /// objects the commit changed alone, nothing evaluated in advance.
        case changedObjects(Predicate?)
        /// Anything else (a collection's objects, distinct, links, values): the query evaluated again and
        /// compared with its contents before.
        case contents((RealmCore) -> Contents)
    }

    enum Contents: Equatable {
        case keys([Int64])
        case values([StoredValue])

        var count: Int {
            switch self {
            case .keys(let k): k.count
            case .values(let v): v.count
            }
        }
    }

    private var allProperties: [Int] { Array(binding.info.schema.properties.indices) }

    init(owner: AnyObject, binding: TypeBinding, partitions: Set<UInt32>, mode: Mode, contents: Contents?) {
        self.owner = owner
        self.binding = binding
        self.partitions = partitions
        self.mode = mode
        self.last = contents
    }

    /// What a commit from `old` to `new` changed (the Realm now reads `new`): nil when nothing, else whether
    /// the count changed too (the contents did).
    func changes(core: RealmCore, old: Snapshot, new: Snapshot, summary: ChangeSummary) throws -> Bool? {
        guard summary.everything || partitions.contains(where: { !(summary.keys[$0]?.isEmpty ?? true) }) else { return nil }
        switch mode {
        case .changedObjects(let predicate):
            // A commit whose changes are not known one by one: every object of the type in either version.
            let changed = try LinkWatch.candidates(summary, binding, old: old, new: new)
            var delta = 0
            var touched = false
            for key in changed {
                let was = try binding.matches(key, in: old, predicate: predicate)
                let now = try binding.matches(key, in: new, predicate: predicate)
                if was != now {
                    touched = true
                    delta += now ? 1 : -1
                } else if was, try RealmCore.differs(binding, key: key, old: old, new: new, indices: allProperties) {
                    touched = true
                }
            }
            return touched ? delta != 0 : nil
        case .contents(let evaluate):
            let now = evaluate(core)
            let before = last
            last = now
            guard let before else { return true }
            if now != before { return now.count != before.count }
            // The same objects: did one of them change?
            guard case .keys(let keys) = now else { return nil }
            let changed = Set(try LinkWatch.candidates(summary, binding, old: old, new: new))
            for key in keys where changed.contains(key) {
                if try RealmCore.differs(binding, key: key, old: old, new: new, indices: allProperties) { return false }
            }
            return nil
        }
    }

    /// Calls the registrar's mutations for a change: the contents always, the count when it changed.
    func changed(count: Bool) {
        told = true
        registrar.withMutation(of: self, keyPath: \.contents) {}
        if count { registrar.withMutation(of: self, keyPath: \.count) {} }
    }
}

extension Results {
    /// Records a read of the count (`count: true`) or of the contents for Observation.
    func observeRead(count: Bool) {
        guard !core.isFrozen else { return }
        let observation = cache.observation ?? {
            var partitions = linkedPartitions
            partitions.insert(binding.partition)
            let new: ResultsObservation
            // In a write, what was read includes the write's own changes, which its commit then brings: compared with
            // the contents as read.
            if base == nil && values == nil && distinctKeys.isEmpty && partitions.count == 1 && queryContext() == nil && !core.isInWriteTransaction
            {
                new = ResultsObservation(owner: cache, binding: binding, partitions: partitions, mode: .changedObjects(predicate), contents: nil)
            } else {
                // What the query needs again later, without the Realm.
                let (binding, predicate, sort, distinct, base, values) = (self.binding, self.predicate, self.sort, distinctKeys, self.base, self.values)
                let evaluate = { (core: RealmCore) -> ResultsObservation.Contents in
                    let results = Results(core: core, binding: binding, predicate: predicate, sort: sort, distinct: distinct, base: base, values: values)
                    return values != nil ? .values(results.valueItems()) : .keys(results.evaluatedKeys())
                }
                new = ResultsObservation(owner: cache, binding: binding, partitions: partitions, mode: .contents(evaluate), contents: evaluate(core))
            }
            cache.observation = new
            core.watch(new)
            return new
        }()
        if count {
            observation.registrar.access(observation, keyPath: \.count)
        } else {
            observation.registrar.access(observation, keyPath: \.contents)
        }
    }
}

/// A projection reads through its root object, whose reads record for Observation: it observes as its object.
extension Projection: Observable {}
