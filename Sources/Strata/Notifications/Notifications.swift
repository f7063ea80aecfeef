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
        attachToFileForMainQueueRefresh()
        shared.watchOtherProcesses()
        let id = ObjectIdentifier(observer)
        return NotificationToken(id: id) { [weak observerList] in observerList?.remove(id) }
    }

    var currentObservers: [any ChangeObserver] { observerList.current }

    /// The values of properties `indices` in a record read under `binding` (through pending transforms).
    static func values(_ binding: TypeBinding, _ record: UnsafeRawBufferPointer, _ indices: [Int]) -> [StoredValue] {
        if let migrated = binding.migratedRecord(record) { return migrated.withUnsafeBytes { raw in indices.map { binding.value($0, in: raw) } } }
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
