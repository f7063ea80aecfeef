import Dispatch
import Engine
import Foundation
import Testing
import TestSupport

/// LOCK.writer goes to the process that waited for it, not back to the one that just released it
/// (`TurnstileLock.swift`). Two instances in one process stand for two processes: each has its own descriptors,
/// and `flock` excludes descriptors, not processes.
@Suite struct WriterTurnTests {
    /// Whether some descriptor holds `LOCK.queue` of the database at `path` now: a process waits for LOCK.writer.
    static func someoneIsQueued(_ path: String) -> Bool {
        // An exclusive lock through a descriptor of its own, not waiting: refused while another holds it.
        guard let lock = try? PosixFileSystem().lock(atPath: path + "/LOCK.queue") else { return true }
        lock.unlock()
        return false
    }

    /// A process that commits and asks for the writer lock again at once waits for the process already waiting:
    /// two processes alternate. Before the turnstile, the releasing process, still running, took the lock back,
    /// and the waiter could wait through any number of its writes.
    @Test func aWaitingProcessWritesBeforeTheHoldersNextWrite() throws {
        let temp = try TemporaryDirectory()
        let path = temp.child("db")
        var options = Database.Options()
        options.sharing = .shared
        // No background job of either instance queues for the lock: the only one queued is b's write.
        options.backgroundMaintenance = false
        let a = try Database.open(at: path, options: options)
        let b = try Database.open(at: path, options: options)
        defer {
            try? b.close()  // try?: the test's result is already decided; a failure to close is not what it checks
            try? a.close()  // try?: as above
        }
        /// The commit sequence of each write, by name.
        let sequences = Locked<[String: UInt64]>([:])
        @Sendable func commit(_ db: Database, _ key: [UInt8], _ name: String) throws {
            let tx = try db.beginWrite()
            try tx.put(key, [1], in: 0)
            let sequence = try tx.commit()
            sequences.withLock { $0[name] = sequence }
        }
        for round in 0..<3 {
            let held = try a.beginWrite()
            try held.put([1, UInt8(round)], [1], in: 0)
            let bDone = DispatchSemaphore(value: 0)
            let bFailure = Locked<(any Error)?>(nil)
            Thread.detachNewThread {
                do {
                    try commit(b, [2, UInt8(round)], "b\(round)")
                } catch {
                    bFailure.withLock { $0 = error }
                }
                bDone.signal()
            }
            // b is waiting for LOCK.writer once it holds the queue (bounded: a minute).
            var waited = 0
            while !Self.someoneIsQueued(path), waited < 60_000 {
                Thread.sleep(forTimeInterval: 0.001)
                waited += 1
            }
            #expect(Self.someoneIsQueued(path), "b never queued for the writer lock")
            _ = try held.commit()
            // At once again, as a second large write or a commit loop does.
            try commit(a, [3, UInt8(round)], "a\(round)")
            #expect(bDone.wait(timeout: .now() + 60) == .success, "b's write never finished")
            if let error = bFailure.withLock({ $0 }) { throw error }
        }
        let order = sequences.withLock { $0 }.sorted { $0.value < $1.value }.map(\.key)
        #expect(order == ["b0", "a0", "b1", "a1", "b2", "a2"], "the writes by commit sequence")
        // Both instances see all nine records.
        _ = try a.refresh()
        for round in 0..<3 {
            for tag: UInt8 in [1, 2, 3] { #expect(try a.snapshot().get([tag, UInt8(round)], in: 0) != nil) }
        }
    }
}
