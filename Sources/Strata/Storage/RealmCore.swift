import Engine
import Foundation
import Logging
import Atomics

// Invariants:
// (1) Reads outside a write go through `snapshot`; inside a write, through the pending records first, then
//     the write's view: its base snapshot (the latest version when the write began) with what the write
//     spilled above it (`RealmCore+Spill`).
// (2) A pending record holds every property value of its object (by property index), so commit encodes it
//     without reading anything else.
// (3) Object keys of types with an Int primary key are the primary key; others come from a counter in the
//     metadata partition, read and advanced only while the engine's writer lock is held.

/// The state of one Realm instance: its file, its version, and its write transaction.
@usableFromInline
final class RealmCore: @unchecked Sendable {
    let configuration: Realm.Configuration
    let shared: SharedFile
    private(set) var snapshot: Snapshot {
        didSet {
            if snapshot.sequence != oldValue.sequence { versionToken = Self.newVersionToken() }
        }
    }
    var autorefresh = true
    private(set) var isInvalidated = false
    // The bindings (read and set by RealmCore+Binding.swift).
    var bindings: [ObjectIdentifier: TypeBinding] = [:] {
        didSet {
            lastBinding = nil
            dynamicBindings = [:]
        }
    }
    /// `write`, unretained (`write` keeps it): a property's getter or setter in a write reads the write through
    /// it without a retain and a release, which are atomic operations and cost more than the rest of a set.
    @exclusivity(unchecked) private(set) var writeUnretained: Unmanaged<WriteState>?
    /// Bindings that make `DynamicObject`s, by type name (the dynamic API).
    var dynamicBindings: [String: TypeBinding] = [:]
    var lastBinding: TypeBinding? {
        didSet { lastBindingUnretained = lastBinding.map { Unmanaged.passUnretained($0) } }
    }
    /// `lastBinding`, unretained (`lastBinding` keeps it): `withBinding(forClass:)`.
    @exclusivity(unchecked) private(set) var lastBindingUnretained: Unmanaged<TypeBinding>?
    /// The write transaction under way (read by RealmCore+Reads.swift). Read at every property access in a
    /// write, on the Realm's thread, never while it is being set: dynamic exclusivity checks are off.
    @exclusivity(unchecked) var write: WriteState? {
        didSet {
            writeUnretained = write.map { Unmanaged.passUnretained($0) }
            // The instance caches hold Realms weakly; a write's Realm stays its thread's Realm until the write
            // commits or is cancelled, as RealmSwift's does (`try! Realm().beginWrite()`, then
            // `try! Realm().create(...)` in the same write). The thread's cache holds it meanwhile, so a thread
            // that ends with a write open still lets it go (and the write with it).
            inPlaceToken = write == nil ? versionToken : Self.writing
            if (write == nil) != (oldValue == nil) { RealmCache.holdWhileWriting(self, write != nil) }
            if write == nil, oldValue != nil { shared.writeEnded(by: self) }
        }
    }

    deinit {
        // A Realm let go with its write open (its thread ended): the write is cancelled, as RealmSwift's is,
        // before anything else goes. The file may close with this Realm, and its close waits for the writer
        // gate that the open write holds.
        if let write {
            write.tx.abort()
            shared.writeEnded(by: self)
        }
    }

    /// Change observers. Tokens refer to this list weakly, never to the core: a weak reference to the core
    /// would give it a side table, which makes each retain and release of it (one pair per object made)
    /// several times slower.
    let observerList: ObserverList
    /// The queue this Realm belongs to, if it was opened with one: notifications and autorefresh go there.
    let queue: DispatchQueue?
    /// For a Realm that belongs to an actor: runs notifications and autorefresh there, in order.
    let pump: ActorPump?
    /// The main thread's Realm (opened there without a queue): other instances' commits refresh it on the
    /// main queue, as RealmSwift's autorefresh does on the main run loop. Its own notifications stay as a
    /// thread's are (delivered where it commits).
    let isMainThreadRealm: Bool
    /// Whether a refresh for other instances' commits is queued on `queue` (or the main queue) and has not
    /// started: commits that come meanwhile are seen by it, so a burst of them (or a main queue that does not
    /// run) queues one block, not one per commit.
    private let refreshQueued = ManagedAtomic<Bool>(false)
    /// Whether the main thread's Realm is listed with its file (from its first observer on: a refresh with no
    /// observer to tell would change nothing anyone waits for).
    private var attachedForMainQueue = false

    /// Lists the main thread's Realm with its file, so that other instances' commits reach it on the main queue.
    func attachToFileForMainQueueRefresh() {
        guard isMainThreadRealm, !attachedForMainQueue else { return }
        attachedForMainQueue = true
        shared.attach(self)
    }

    /// A frozen Realm: pinned to one version; it never refreshes, writes or notifies.
    let isFrozen: Bool
    /// The queued `beginAsyncWrite`/`commitAsyncWrite` work of this Realm.
    let asyncWrites = AsyncWriteQueue()
    /// The last frozen Realm of this one, held weakly (it pins its version only while something frozen uses
    /// it), so that freezing many objects of one version shares one.
    private var frozenCache: (sequence: UInt64, core: WeakCore)?
    /// A Realm held weakly (the frozen cache here, the instances of a file in SharedFile).
    struct WeakCore { weak var core: RealmCore? }

    /// A frozen copy of `core` at its current version, sharing its file and bindings.
    private init(frozenFrom core: RealmCore) throws {
        require(!core.isInWriteTransaction, "Cannot freeze a Realm in a write transaction; commit or cancel it first")
        configuration = core.configuration
        queue = nil
        pump = nil
        isMainThreadRealm = false
        shared = core.shared
        observerList = ObserverList(fileObservers: core.shared.observers)
        snapshot = try core.snapshot.duplicate()
        versionToken = Self.newVersionToken()
        inPlaceToken = versionToken  // (observers do not run in an init)
        bindings = core.bindings
        isFrozen = true
        // A frozen Realm never changes: nothing to tell a tracking.
        tracksObservation = false
    }

    /// The frozen Realm of this one's current version (this one, if it is frozen).
    func frozen() -> RealmCore {
        if isFrozen { return self }
        let sequence = snapshot.sequence
        if let cached = frozenCache, cached.sequence == sequence, let f = cached.core.core { return f }
        do {
            let f = try RealmCore(frozenFrom: self)
            frozenCache = (sequence, WeakCore(core: f))
            return f
        } catch {
            fatalError("freezing \(shared.displayName) failed: \(error)")
        }
    }

    /// `identity`: the configuration's, when the caller has it already (it resolves the file's path).
    init(
        configuration: Realm.Configuration, queue: DispatchQueue? = nil, actor: (any Actor)? = nil, mainThread: Bool = false,
        identity: String? = nil
    ) throws {
        isFrozen = false
        tracksObservation = configuration.observationTracking
        isMainThreadRealm = mainThread && queue == nil && actor == nil
        Self.validate(configuration)
        self.configuration = configuration
        self.queue = queue
        self.pump = actor.map(ActorPump.init)
        let shared = try SharedFile.shared(for: configuration, identity: identity)
        self.shared = shared
        observerList = ObserverList(fileObservers: shared.observers)
        self.snapshot = try shared.database.snapshot()
        versionToken = Self.newVersionToken()
        inPlaceToken = versionToken  // (observers do not run in an init)
        try bindDeclaredTypes()
        try checkSchemaForCapture()
        // Only a Realm with a queue or an actor, and the main thread's once it has an observer, acts on other
        // instances' commits (autorefresh there); the others are not listed, so that they are never referred
        // to weakly (see `observerList`): a weak reference makes every retain of the core slower, and the
        // main thread's Realm is the one most code uses.
        if queue != nil || pump != nil { shared.attach(self) }
    }

    var database: Database { shared.database }

    /// Changes whenever this Realm's view of the data changes (a snapshot of another version, a write ended
    /// without a commit), to a value no Realm of the process had before: a record stamped with it is the
    /// record at this view. Stored, because every property read checks it.
    private(set) var versionToken: UInt64 = 0 {
        didSet { inPlaceToken = write == nil ? versionToken : Self.writing }
    }
    /// `versionToken` while no write transaction is open, `writing` during one: an object whose record was read
    /// at this token reads it in place (`ObjectAccessor.recordIsCurrent`), one load and one comparison on every
    /// property read, compiled into the getter.
    @usableFromInline @exclusivity(unchecked) private(set) var inPlaceToken: UInt64 = 0
    /// No version's token (`newVersionToken` counts up from 2).
    static let writing = UInt64.max - 1

    private static let versionTokens = ManagedAtomic<UInt64>(1)
    static func newVersionToken() -> UInt64 { versionTokens.wrappingIncrementThenLoad(by: 1, ordering: .relaxed) }

    /// After a write that ended without a commit: what was read in it (records copied from the write's pending
    /// bytes into objects and `Results` caches) must not pass for current at the version the Realm is back
    /// at, so the version token takes a value no snapshot has and the change token moves.
    func discardWriteReads() {
        writeChanges += 1
        versionToken = Self.newVersionToken()
    }

    /// Whether a write transaction is open (its pending values take precedence over records).
    var hasPendingWrite: Bool { write != nil }

    /// Identifies what this Realm shows: its version and the changes of its write so far.
    struct ChangeToken: Equatable {
        var sequence: UInt64
        var writeChanges: Int
    }
    var writeChanges = 0
    /// How deep `resolve` is: the links and lists of objects being added (managed embedded objects met there are copied).
    @exclusivity(unchecked) var resolvingAdd = 0
    /// Above zero while `Realm.create(_:value:update:)` adds its object: objects of other Realms among its
    /// values are copied, not refused.
    var creatingFromValue = 0 {
        didSet { if creatingFromValue == 0 { foreignCopies = [:] } }
    }
    /// The copies `create` made of other Realms' objects, by the stored object they copy.
    var foreignCopies: [ForeignRow: Object] = [:]
    /// A stored object of another Realm: its file, type partition and key.
    struct ForeignRow: Hashable {
        let file: ObjectIdentifier
        let partition: UInt32
        let key: Int64
        init(_ accessor: ObjectAccessor) {
            file = ObjectIdentifier(accessor.core.shared)
            partition = accessor.binding.partition
            key = accessor.key
        }
    }
    /// How many adds are nested now, and the link resolutions queued below `maxAddDepth`
    /// (`RealmCore+ObjectGraph`).
    @exclusivity(unchecked) var addDepth = 0
    /// Unchecked (a check cost each `add` about 80 instructions): a queued resolution is taken out before it runs,
    /// so the adds it makes append while no access to the array is open.
    @exclusivity(unchecked) var deferredAdds: [() -> Void] = []
    var changeToken: ChangeToken { ChangeToken(sequence: snapshot.sequence, writeChanges: writeChanges) }

    var schema: Schema {
        let stored = shared.storedSchema.withLock { $0 }
        let bound = Dictionary(bindings.values.map { ($0.info.schema.className, $0.info.schema) }, uniquingKeysWith: { a, _ in a })
        var result: [ObjectSchema] = Array(bound.values)
        // With `objectTypes`, the schema is exactly those types (Realm's class subset); without, every stored type.
        for t in stored?.types ?? [] where bound[t.name] == nil && configuration.objectTypes == nil {
            result.append(Migration.objectSchema(of: t))
        }
        return Schema(objectSchema: result.sorted { $0.className < $1.className })
    }

    // MARK: - Versions

    /// Moves to the latest version and tells observers what changed (all but those in `skipping`).
    /// `moveToLatest` where the caller cannot throw: a Realm that cannot see the latest version would answer
    /// from an old one, so it stops instead, saying why.
    func mustMoveToLatest(skipping: Set<ObjectIdentifier> = [], catchingUp: Bool = true) {
        do {
            try moveToLatest(skipping: skipping, catchingUp: catchingUp)
        } catch {
            fatalError("moving \(shared.displayName) to its latest version failed: \(error)\(RealmCore.damageAdvice)")
        }
    }

    /// `catchingUp: false` skips reading other processes' commits: right after this instance's own write ended,
    /// which caught up as it began (the next refresh, write or poll reads what came since).
    func moveToLatest(skipping: Set<ObjectIdentifier> = [], catchingUp: Bool = true) throws {
        if database.isShared, write == nil, catchingUp {
            // Other processes' commits (a write caught up as it began).
            if try database.refresh() { shared.absorbOtherCommits() }
        }
        let next = try database.snapshot()
        if database.isShared, write == nil, shared.schemaIsStale.withLock({ $0 }) {
            try database.ifNoWriteIsOpen { try shared.reloadSchemaIfStale(from: next) }
        }
        let old = snapshot
        snapshot = next
        let observers = currentObservers
        guard !observers.isEmpty, next.sequence != old.sequence else {
            old.close()
            return
        }
        let summary = shared.changes(after: old.sequence, through: next.sequence)
        var deliveries: [(DispatchQueue?, () -> Void)] = []
        for o in observers {
            let delivery: (() -> Void)?
            do {
                delivery = try o.changes(core: self, old: old, new: next, summary: summary)
            } catch {
                // A damaged file: the observer gets its `.error` case (never a change computed from what could
                // be read) and nothing more.
                observerList.remove(ObjectIdentifier(o))
                if o === observationObserver { observationObserver = nil }
                delivery = o.failed(Realm.Error(
                    .fail, "computing the changes of version \(next.sequence) for an observer of \(shared.displayName) failed: \(error)",
                    fileURL: configuration.fileURL, underlying: error,
                    suggestion: "Run `strata verify` on the file, and `strata salvage` to copy what can still be read."))
            }
            guard let d = delivery else { continue }
            if !skipping.contains(ObjectIdentifier(o)) { deliveries.append((o.queue, d)) }
        }
        old.close()
        for (queue, d) in deliveries {
            if queue == nil, let pump { pump.send(d) } else { Self.deliver(queue, d) }
        }
    }

    /// Another instance of this file committed: a Realm with a queue (the main queue, for the main thread's)
    /// and autorefresh moves forward there.
    func otherInstanceCommitted() {
        let step = { [weak self] in
            guard let self, self.write == nil, !self.currentObservers.isEmpty else { return }
            if self.autorefresh {
                _ = self.refresh()
            } else {
                for case let o as RealmObserver in self.currentObservers {
                    if o.queue == nil, let pump = self.pump {
                        pump.send { o.block(.refreshRequired, o.realm) }
                    } else {
                        Self.deliver(o.queue) { o.block(.refreshRequired, o.realm) }
                    }
                }
            }
        }
        if let queue = queue ?? (isMainThreadRealm ? DispatchQueue.main : nil) {
            guard refreshQueued.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
            nonisolated(unsafe) let step = step
            let queued = refreshQueued
            queue.async {
                queued.store(false, ordering: .releasing)
                step()
            }
        } else if let pump {
            pump.send(step)
        }
    }

    @discardableResult
    func refresh() -> Bool {
        guard write == nil, !isFrozen else { return false }
        let before = snapshot.sequence
        mustMoveToLatest()
        isInvalidated = false
        return snapshot.sequence != before
    }

    /// How many times `invalidate()` was called: objects read before a call are invalidated by it.
    private(set) var invalidations = 0

    /// Counts write transactions (`beginWrite`); the serials of those cancelled, whose added objects are invalid
    /// (read at every access to an object added in a write: dynamic exclusivity checks are off).
    var writeSerial: UInt64 = 0
    @exclusivity(unchecked) var cancelledWrites = Set<UInt64>()
    // Last, after the fields every read uses (`versionToken`, `invalidations`), which keep their place: added in
    // the middle, these two slowed a loop of property reads by 7% (measured).
    /// The change observer of this Realm's objects that Swift's Observation tracks, from the first one on
    /// (`Observation.swift`); registered for the Realm's life.
    var observationObserver: ObservationObserver?
    /// `configuration.observationTracking` (each accessor keeps a copy, read on every property read).
    let tracksObservation: Bool
    /// Bytes of pending objects past which a write transaction spills (`RealmCore+Spill`; tests lower it).
    var spillThreshold = RealmCore.defaultSpillThreshold
    /// Capture's direct path: what it knows of each type of plain values, by partition, made at the type's first
    /// captured write (`plainCapture(_:)`; a binding that changed makes it again).
    var plainCaptureShapes: [UInt32: PlainCapture.Shape] = [:]

    func invalidate() {
        guard write == nil else { return }
        invalidations += 1
        mustMoveToLatest()
    }

    var isEmpty: Bool {
        let stored = shared.storedSchema.withLock { $0 }
        for t in stored?.types ?? [] {
            var any = false
            if let write, write.isDropped(t.partition) { continue }
            mustRead("the objects of \(t.name)") { try readSnapshot.scan(t.partition) { _, _ in any = true; return false } }
            if any { return false }
        }
        if let write, write.hasLiveObjects { return false }
        return true
    }

    /// The snapshot reads go through: while writing, the write's base with what the write spilled above it
    /// (`WriteTransaction.view`; its pending objects since the last spill are read from `write` first).
    var readSnapshot: Snapshot { write?.tx.view ?? snapshot }

}

extension Array where Element: Comparable {
    /// Whether the elements are in ascending order (checked in one pass, before deciding to sort).
    var isSorted: Bool {
        var i = 1
        while i < count {
            if self[i] < self[i - 1] { return false }
            i += 1
        }
        return true
    }
}
