import Foundation
import Logging
import PostgresNIO

/// Long polls waiting for a partition's next push. A pull registers before it reads, so that a push committed
/// between its read and its wait still wakes it; pushes of every server reach it through PostgreSQL's
/// `LISTEN`/`NOTIFY` (`listen(...)`), and this server's own pushes directly.
actor PartitionWaiters {
    private var waiting: [String: [Int: CheckedContinuation<Void, Never>]] = [:]
    /// Tickets signalled before their pull began to wait.
    private var signalled = Set<Int>()
    private var registered: [Int: String] = [:]
    private var nextTicket = 0

    /// A ticket for the next push to `partition`.
    func register(_ partition: String) -> Int {
        nextTicket += 1
        registered[nextTicket] = partition
        return nextTicket
    }

    /// Waits until a push to the ticket's partition after it was registered, or `timeout`.
    func wait(_ ticket: Int, timeout: Duration) async {
        guard let partition = registered[ticket] else { return }
        if signalled.remove(ticket) != nil {
            registered[ticket] = nil
            return
        }
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            await self?.wake(ticket: ticket)
        }
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            waiting[partition, default: [:]][ticket] = c
        }
        timer.cancel()
    }

    /// Ends a ticket that did not wait (its pull found changes).
    func cancel(_ ticket: Int) {
        registered[ticket] = nil
        signalled.remove(ticket)
    }

    private func wake(ticket: Int) {
        guard let partition = registered.removeValue(forKey: ticket) else { return }
        waiting[partition]?.removeValue(forKey: ticket)?.resume()
    }

    /// A push to `partition` committed.
    func notify(_ partition: String) {
        for (ticket, p) in registered where p == partition {
            if let c = waiting[partition]?.removeValue(forKey: ticket) {
                registered[ticket] = nil
                c.resume()
            } else {
                signalled.insert(ticket)
            }
        }
    }

    /// Wakes every waiter (the listening connection was lost: a push may have gone unheard).
    func notifyAll() {
        for p in Set(registered.values) { notify(p) }
    }

    /// Listens for pushes of every server until cancelled, reconnecting after a lost connection.
    nonisolated func listen(configuration: PostgresConnection.Configuration, channel: String, logger: Logger) async {
        var attempt = 0
        while !Task.isCancelled {
            do {
                let connection = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: logger)
                attempt = 0
                defer { Task { try? await connection.close() } }
                try await connection.listen(on: channel) { notifications in
                    await self.notifyAll()
                    for try await n in notifications { await self.notify(n.payload) }
                }
            } catch {
                if Task.isCancelled { return }
                logger.warning("sync: listening for pushes failed (\(error)); retrying")
            }
            await notifyAll()
            attempt += 1
            try? await Task.sleep(for: .milliseconds(min(2000, 50 << min(attempt, 6))))
        }
    }
}
