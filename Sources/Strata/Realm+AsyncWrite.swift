import Dispatch
import Foundation

/// Identifies a queued asynchronous write or commit callback (`cancelAsyncWrite`).
public typealias AsyncTransactionId = UInt32

/// The asynchronous write family of one Realm: blocks and callbacks queued in order, run where the Realm
/// delivers its notifications (its queue or actor; the main queue for the main thread's Realm, as RealmSwift
/// waits for the main run loop, so a program whose main queue never runs never runs them). A Realm of another
/// thread has no loop to run them later on Linux, so its work runs at once, in order, as a run loop would
/// turn: work scheduled while other work
/// runs, or while a write transaction is open, runs when that ends. A block that needs a write transaction
/// and finds one open (a `beginAsyncWrite` inside `write {}` or inside another asynchronous write) runs when it
/// is committed or cancelled, as in RealmSwift, instead of trapping. A cancel after work ran is a no-op.
final class AsyncWriteQueue {
    private var nextId: AsyncTransactionId = 1
    private var cancelled = Set<AsyncTransactionId>()
    private(set) var pending = 0
    /// Work waiting for the write transaction, or for the work, that runs now, in order.
    private var waiting: [() -> Void] = []
    /// How deep inside its own queued work a Realm with no queue or actor is.
    private var depth = 0

    func schedule(_ core: RealmCore, needsWrite: Bool = false, _ work: @escaping () -> Void) -> AsyncTransactionId {
        let id = nextId
        nextId &+= 1
        pending += 1
        // The queue (and its Realm) stay alive until their queued work has run, as RealmSwift's do.
        let run = { [core] in
            _ = core
            self.pending -= 1
            if self.cancelled.remove(id) != nil { return }
            work()
        }
        // The main thread's Realm queues its work on the main queue, as RealmSwift's waits for the main run loop:
        // a write cancelled right after it was asked for never runs.
        let queue = core.queue ?? (core.isMainThreadRealm ? DispatchQueue.main : nil)
        if queue != nil || core.pump != nil {
            // On the Realm's queue or actor: the work waits there, and then for a write left open, if it needs one.
            let step = { [core] in
                if needsWrite && core.isInWriteTransaction { self.waiting.append(run) } else { run() }
            }
            if let queue {
                nonisolated(unsafe) let step = step
                queue.async { step() }
            } else if let pump = core.pump {
                pump.send(step)
            }
        } else if depth > 0 || core.isInWriteTransaction {
            waiting.append(run)
        } else {
            runNow(core, run)
        }
        return id
    }

    /// Runs `work`, then what waits, in order, until a write transaction is left open or nothing waits.
    private func runNow(_ core: RealmCore, _ work: () -> Void) {
        depth += 1
        defer { depth -= 1 }
        work()
        while !core.isInWriteTransaction, !waiting.isEmpty {
            waiting.removeFirst()()
        }
    }

    /// A write transaction of the Realm ended (committed or cancelled): what waited for it runs, unless the work
    /// running now will run it when it returns.
    func writeEnded(_ core: RealmCore) {
        guard depth == 0, !waiting.isEmpty else { return }
        runNow(core) {}
    }

    func cancel(_ id: AsyncTransactionId) {
        if pending > 0 { cancelled.insert(id) }
    }
}

extension Realm {
    /// Begins a write transaction when the Realm's earlier asynchronous work is done, then calls `block` in it.
    /// The block should end with `commitAsyncWrite` or `commitWrite`; returning without one cancels the write.
    @discardableResult
    public func beginAsyncWrite(_ asyncWriteBlock: @escaping () -> Void) -> AsyncTransactionId {
        let core = self.core
        return core.asyncWrites.schedule(core, needsWrite: true) {
            do {
                try core.beginWrite()
            } catch {
                fatalError("\(error)")
            }
            asyncWriteBlock()
            if core.isInWriteTransaction { core.cancelWrite() }
        }
    }

    /// Commits the current write transaction, then calls `onComplete` (on the Realm's queue or actor) with
    /// nil or the error. Strata's commit is durable when it returns, so `allowGrouping` changes nothing.
    @discardableResult
    public func commitAsyncWrite(allowGrouping: Bool = false, _ onComplete: (((any Swift.Error)?) -> Void)? = nil) -> AsyncTransactionId {
        var failure: (any Swift.Error)? = nil
        do {
            try commitWrite()
        } catch {
            failure = error
        }
        let result = failure
        return core.asyncWrites.schedule(core) { onComplete?(result) }
    }

    /// Cancels a queued `beginAsyncWrite` block (the write never happens) or a `commitAsyncWrite` callback (the
    /// commit happened; only the callback is dropped), if it has not run yet.
    public func cancelAsyncWrite(_ asyncTransactionId: AsyncTransactionId) throws {
        core.asyncWrites.cancel(asyncTransactionId)
    }

    /// Whether asynchronous writes or their callbacks are still queued.
    public var isPerformingAsynchronousWriteOperations: Bool { core.asyncWrites.pending > 0 }

    /// Runs `block` in an asynchronous write transaction and commits it, then calls `onComplete`.
    @discardableResult
    public func writeAsync(_ block: @escaping () -> Void, onComplete: (((any Swift.Error)?) -> Void)? = nil) -> AsyncTransactionId {
        let realm = self
        return beginAsyncWrite {
            block()
            if realm.isInWriteTransaction { realm.commitAsyncWrite(onComplete) }
        }
    }

    /// Moves the Realm to the latest version (RealmSwift's asynchronous refresh; Strata's refresh does not block)
    /// and says whether it moved. A cancelled task does not refresh (false). A Realm confined to a dispatch queue
    /// traps, as in RealmSwift: it has no actor to await on.
    @discardableResult
    public func asyncRefresh(isolation: isolated (any Actor)? = #isolation) async -> Bool {
        if core.queue != nil { fatalError("asyncRefresh() can only be called on main thread or actor-isolated Realms") }
        if Task.isCancelled { return false }
        return refresh()
    }
}
