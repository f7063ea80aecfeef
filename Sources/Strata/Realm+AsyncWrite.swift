import Dispatch
import Foundation

/// Identifies a queued asynchronous write or commit callback (`cancelAsyncWrite`).
public typealias AsyncTransactionId = UInt32

/// The asynchronous write family of one Realm: blocks and callbacks queued in order, run where the Realm
/// delivers its notifications (its queue or actor). A Realm with neither has no loop to run them later on
/// Linux, so their work runs at once, in order, and a cancel after the call is a no-op.
final class AsyncWriteQueue {
    private var nextId: AsyncTransactionId = 1
    private var cancelled = Set<AsyncTransactionId>()
    private(set) var pending = 0

    func schedule(_ core: RealmCore, _ work: @escaping () -> Void) -> AsyncTransactionId {
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
        if let queue = core.queue {
            nonisolated(unsafe) let step = run
            queue.async { step() }
        } else if let pump = core.pump {
            pump.send(run)
        } else {
            run()
        }
        return id
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
        return core.asyncWrites.schedule(core) {
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

    /// Moves the Realm to the latest version (RealmSwift's asynchronous refresh; Strata's refresh does not block).
    @discardableResult
    public func asyncRefresh() async -> Bool { refresh() }
}
