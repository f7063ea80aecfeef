import Dispatch
import Engine
import Foundation
import Strata
import StrataSyncWire

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension Realm {
    /// This file's sync session: nil when its configuration has no `syncConfiguration`. The first call starts it;
    /// one session serves every Realm of the file in this process (another process sharing the file, an app
    /// extension, runs its own, and the server takes each change set once).
    public var syncSession: SyncSession? {
        guard configuration.syncConfiguration != nil else { return nil }
        return SyncSession.session(for: configuration)
    }
}

/// Uploads a file's change sets to its sync server and applies the server's, in the background, reconnecting
/// with backoff. RealmSwift's shapes where they fit: `state`, `connectionState`, `suspend()`, `resume()`,
/// `wait(for:)`.
public final class SyncSession: @unchecked Sendable {
    public enum State: Sendable, Hashable {
        /// Syncing (or retrying to).
        case active
        /// Suspended (`suspend()`).
        case inactive
        /// Stopped for good: the server refused this file's partition or requests (the error handler was told).
        case invalid
    }

    public enum ConnectionState: Sendable, Hashable {
        case disconnected, connecting, connected
    }

    /// What `wait(for:)` waits for.
    public enum ProgressDirection: Sendable, Hashable {
        /// Every change set committed here before the call is on the server.
        case upload
        /// Every change set on the server when the call began is applied here.
        case download
    }

    private static let sessions = Locked<[String: SyncSession]>([:])

    static func session(for configuration: Realm.Configuration) -> SyncSession {
        let key = configuration.fileURL?.standardizedFileURL.path ?? configuration.inMemoryIdentifier ?? ""
        return sessions.withLock { all in
            if let s = all[key] { return s }
            let s = SyncSession(configuration: configuration)
            all[key] = s
            s.start()
            return s
        }
    }

    private let configuration: Realm.Configuration
    private let sync: SyncConfiguration
    private let transport: SyncTransport
    /// The queue this session's Realm lives on (opened, read and written only there).
    private let queue = DispatchQueue(label: "strata.sync-session")
    private let status = Locked(Status())

    private struct Status {
        var state: State = .active
        var connection: ConnectionState = .disconnected
        /// The last sequence the server said it holds from this client.
        var uploaded: UInt64 = 0
        /// Bumped by each local commit the change feed reports, and by `resume()`.
        var wakeUps: [CheckedContinuation<Void, Never>] = []
        var pendingWake = false
        var resumers: [CheckedContinuation<Void, Never>] = []
        var tasks: [Task<Void, Never>] = []
    }

    init(configuration: Realm.Configuration) {
        self.configuration = configuration
        self.sync = configuration.syncConfiguration!
        self.transport = SyncTransport(sync: configuration.syncConfiguration!)
    }

    deinit {
        for t in status.withLock({ $0.tasks }) { t.cancel() }
    }

    public var state: State { status.withLock { $0.state } }
    public var connectionState: ConnectionState { status.withLock { $0.connection } }

    /// Stops uploading and downloading until `resume()`.
    public func suspend() {
        status.withLock { s in if s.state == .active { s.state = .inactive } }
    }

    /// Starts uploading and downloading again after `suspend()`.
    public func resume() {
        let resumers = status.withLock { s -> [CheckedContinuation<Void, Never>] in
            guard s.state == .inactive else { return [] }
            s.state = .active
            defer { s.resumers = [] }
            return s.resumers
        }
        for r in resumers { r.resume() }
        wake()
    }

    /// Ends this session (Strata's addition: RealmSwift ends a session when its last Realm closes): its requests
    /// are cancelled, and this returns once it has let go of the file. `syncSession` then starts a new one.
    public func stop() async {
        let running = status.withLock { s -> [Task<Void, Never>] in
            s.state = .invalid
            defer { s.tasks = [] }
            return s.tasks
        }
        Self.sessions.withLock { all in
            if let key = all.first(where: { $0.value === self })?.key { all[key] = nil }
        }
        for t in running { t.cancel() }
        wake()
        let resumers = status.withLock { s -> [CheckedContinuation<Void, Never>] in
            defer { s.resumers = [] }
            return s.resumers
        }
        for r in resumers { r.resume() }
        for t in running { await t.value }
    }

    /// Waits until every change set committed here before the call is on the server (`.upload`), or until
    /// everything on the server when the call began is applied here (`.download`). A suspended session waits
    /// for `resume()` first. Throws when the session becomes invalid or the task is cancelled.
    public func wait(for direction: ProgressDirection) async throws {
        switch direction {
        case .upload:
            let target = try onQueue { realm in realm.syncStatus?.lastSequence ?? 0 }
            var attempt = 0
            while status.withLock({ $0.uploaded }) < target {
                try await whileSuspended()
                do {
                    try await uploadOnce()
                    attempt = 0
                } catch {
                    try await backoff(after: error, attempt: &attempt)
                }
            }
        case .download:
            var target: UInt64?
            var attempt = 0
            while true {
                try await whileSuspended()
                do {
                    let (applied, server) = try await downloadOnce(wait: 0)
                    if target == nil { target = server }
                    attempt = 0
                    if applied >= target! { return }
                } catch {
                    try await backoff(after: error, attempt: &attempt)
                }
            }
        }
    }

    // MARK: - The loops

    private func start() {
        let feed = Task { [weak self] in
            guard let self else { return }
            var attempt = 0
            while !Task.isCancelled, self.state != .invalid {
                do {
                    let feed = try self.onQueue { realm in realm.changes(since: realm.syncStatus?.lastSequence ?? 0) }
                    self.wake()
                    for try await _ in feed { self.wake() }
                } catch {
                    self.report(error)
                }
                attempt += 1
                try? await Task.sleep(for: .milliseconds(min(5000, 100 * attempt)))
            }
        }
        let upload = Task { [weak self] in
            var attempt = 0
            while !Task.isCancelled, let self {
                do {
                    try await self.whileSuspended()
                    if try await self.uploadOnce() == 0 { await self.sleepUntilWoken(timeout: .seconds(5)) }
                    attempt = 0
                } catch {
                    if (try? await self.backoff(after: error, attempt: &attempt)) == nil { return }
                }
            }
        }
        let download = Task { [weak self] in
            var attempt = 0
            while !Task.isCancelled, let self {
                do {
                    try await self.whileSuspended()
                    _ = try await self.downloadOnce(wait: 25_000)
                    attempt = 0
                } catch {
                    if (try? await self.backoff(after: error, attempt: &attempt)) == nil { return }
                }
            }
        }
        status.withLock { $0.tasks = [feed, upload, download] }
    }

    /// Pushes the change sets the server lacks (at most 100 at a time); returns how many were sent.
    @discardableResult
    private func uploadOnce() async throws -> Int {
        let (clientID, pending) = try onQueue { realm -> (UInt64, [ChangeSet]) in
            guard let s = realm.syncStatus else { return (0, []) }
            // Acknowledged change sets came back from the server: it holds them whatever its push answer said.
            let after = status.withLock { st in
                st.uploaded = max(st.uploaded, s.acknowledgedSequence)
                return st.uploaded
            }
            return (s.clientID, Array(try realm.pendingChanges(after: after).prefix(100)))
        }
        guard !pending.isEmpty else { return 0 }
        let response: PushResponse = try await transport.send("push", PushRequest(clientID: clientID, changeSets: pending))
        connected()
        status.withLock { $0.uploaded = max($0.uploaded, response.lastSequence) }
        return pending.count
    }

    /// Pulls what the server has after this file's version (waiting up to `wait` ms for a push when it has nothing)
    /// and applies it; returns the version applied here and the server's newest.
    private func downloadOnce(wait: Int) async throws -> (applied: UInt64, server: UInt64) {
        let (clientID, after) = try onQueue { realm in (realm.syncStatus?.clientID ?? 0, realm.syncStatus?.serverVersion ?? 0) }
        let response: PullResponse = try await transport.send(
            "pull", PullRequest(clientID: clientID, after: after, waitMilliseconds: wait), wait: .milliseconds(wait))
        connected()
        if clientID != 0 { status.withLock { $0.uploaded = max($0.uploaded, response.lastSequence) } }
        let changes = try response.changes.map { try $0.decoded() }
        let snapshot = try response.snapshot?.decoded(clientSequence: response.lastSequence)
        let applied = try onQueue { realm -> UInt64 in
            // A snapshot counts this client's change sets in it by the id the request named: one asked for before
            // this file had an id (a first pull that another one overtook) would count none of them.
            if snapshot != nil, let now = realm.syncStatus?.clientID, now != clientID {
                return realm.syncStatus?.serverVersion ?? 0
            }
            if let snapshot {
                try realm.applyServerSnapshot(snapshot, then: changes)
            } else if !changes.isEmpty {
                try realm.applyServerChanges(changes)
            }
            return realm.syncStatus?.serverVersion ?? 0
        }
        return (applied, response.serverVersion)
    }

    // MARK: - Waiting

    private func wake() {
        let waiters = status.withLock { s -> [CheckedContinuation<Void, Never>] in
            if s.wakeUps.isEmpty { s.pendingWake = true }
            defer { s.wakeUps = [] }
            return s.wakeUps
        }
        for w in waiters { w.resume() }
    }

    private func sleepUntilWoken(timeout: Duration) async {
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            self?.wake()
        }
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = status.withLock { s -> Bool in
                if s.pendingWake {
                    s.pendingWake = false
                    return true
                }
                s.wakeUps.append(c)
                return false
            }
            if now { c.resume() }
        }
        timer.cancel()
    }

    private func whileSuspended() async throws {
        try checkUsable()
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let suspended = status.withLock { s -> Bool in
                guard s.state == .inactive else { return false }
                s.resumers.append(c)
                return true
            }
            if !suspended { c.resume() }
        }
        try checkUsable()
    }

    private func checkUsable() throws {
        try Task.checkCancellation()
        if state == .invalid { throw WireError(.forbidden, "the sync session of partition \(sync.partition) was stopped by the server's refusal") }
    }

    private func connected() {
        status.withLock { $0.connection = .connected }
    }

    /// Waits before the next attempt: 100 ms doubling to 30 s, with jitter. A refusal the session cannot get past
    /// (`forbidden`, `malformed`, `unsupportedProtocol`, `wrongClient`) makes it invalid and throws.
    private func backoff(after error: any Error, attempt: inout Int) async throws {
        report(error)
        if let refusal = error as? WireError, [.forbidden, .malformed, .unsupportedProtocol, .wrongClient].contains(refusal.code) {
            status.withLock { $0.state = .invalid }
            throw refusal
        }
        status.withLock { $0.connection = .disconnected }
        attempt += 1
        let ceiling = min(30_000, 100 << min(attempt, 9))
        try await Task.sleep(for: .milliseconds(Int.random(in: ceiling / 2...ceiling)))
    }

    private func report(_ error: any Error) {
        if error is CancellationError { return }
        sync.errorHandler?(error)
    }

    private func onQueue<T>(_ body: (Realm) throws -> T) throws -> T {
        try queue.sync {
            let realm = try Realm(configuration: configuration, queue: queue)
            realm.refresh()
            return try body(realm)
        }
    }
}
