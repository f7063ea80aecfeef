// LOCK.writer with a turnstile in front of it, so that no process takes the writer lock again and again while
// another waits. `flock` wakes waiters in no particular order, and a process that releases LOCK.writer and asks
// again at once (two large writes back to back, a loop of commits) is usually still running when the waiter is
// woken: measured before this lock, a process committing one object waited 13.1 s while another ran two
// 1M-object writes one after the other.
//
// A taker first takes `LOCK.queue`, then LOCK.writer, then releases `LOCK.queue`. A process waiting for
// LOCK.writer therefore holds `LOCK.queue`, and the holder's next request waits behind it: when the holder
// releases LOCK.writer, the waiter is the only process asking for it. Two processes alternate; with more, each
// waits for at most the processes that reached the queue at once, never for one process's writes one after
// another.
//
// Invariants:
// (1) `LOCK.queue` is held only while waiting for LOCK.writer, never while holding it: a writer's work never
//     keeps another process out of the queue, and an idle process holds neither.
// (2) Mutual exclusion is LOCK.writer's alone: a process of an older release, which takes LOCK.writer without
//     the queue, is still excluded; it only does not get (or give) the turn.

/// `writer`, taken through `queue` (see above).
final class TurnstileLock: ProcessLock, @unchecked Sendable {
    let queue: any ProcessLock
    let writer: any ProcessLock

    init(queue: any ProcessLock, writer: any ProcessLock) {
        self.queue = queue
        self.writer = writer
    }

    func lock() throws {
        try queue.lock()
        defer { queue.unlock() }
        try writer.lock()
    }

    func unlock() { writer.unlock() }
}
