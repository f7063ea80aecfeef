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
    /// Uploads and recoveries take turns: a push of the outbox as it was before a recovery would send again,
    /// under the old client id, change sets the recovery renumbers.
    private let uploadGate = AsyncGate()
    /// Downloads walk and apply a paged snapshot one at a time (`downloadOnce`).
    private let snapshotGate = AsyncGate()
    /// Progress notifications and their figures (`SyncProgress.swift`).
    let progress = ProgressTracker()

    /// The server lost history this file saw: `recover()` before going on.
    private struct Diverged: Error {}
    /// The server took nothing: another client's recovery holds the partition. Push again after this long (the
    /// wait is outside the upload gate, which this file's own recovery needs).
    private struct PushLater: Error { let milliseconds: Int }

    private struct Status {
        var state: State = .active
        var connection: ConnectionState = .disconnected
        /// The last sequence the server said it holds from this client.
        var uploaded: UInt64 = 0
        /// The client id `uploaded` counts for (a recovery gives the file a new one).
        var uploadedClient: UInt64 = 0
        /// The id a recovery of the file's client `from` gives it, until the file has it.
        var recoveryClientID: (from: UInt64, id: UInt64)?
        /// Bumped by each local commit the change feed reports, and by `resume()`.
        var wakeUps: [CheckedContinuation<Void, Never>] = []
        var pendingWake = false
        /// Passes of the upload loop that found nothing to send (each reads the outbox).
        var idleUploadPasses = 0
        /// Requests a walk of a paged snapshot made after its first answer (for tests).
        var snapshotPages = 0
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
    /// Passes of the upload loop that found nothing to send: an idle session makes one per commit and one per
    /// 5 s (for the tests).
    package var idleUploadPasses: Int { status.withLock { $0.idleUploadPasses } }
    /// How many requests this session's walks of paged snapshots made after their first answers (a walk that
    /// starts over counts its new first answer too).
    package var snapshotPagesAsked: Int { status.withLock { $0.snapshotPages } }
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
        // What the session's queue still holds runs before stop returns: a refresh its Realm queued when another
        // instance committed would otherwise read the file after the caller let it go (or deleted it).
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in queue.async { done.resume() } }
    }

    /// Waits until every change set committed here before the call is on the server (`.upload`), or until
    /// everything on the server when the call began is applied here (`.download`). A suspended session waits
    /// for `resume()` first. Throws when the session becomes invalid or the task is cancelled.
    public func wait(for direction: ProgressDirection) async throws {
        switch direction {
        case .upload:
            let now = { try self.onQueue { realm in (realm.syncStatus?.clientID ?? 0, realm.syncStatus?.lastSequence ?? 0) } }
            var (client, target) = try now()
            var attempt = 0
            while true {
                let current = try now()
                // A recovery renumbered the outbox under a new client id: all of it is what is left to upload.
                if current.0 != client { (client, target) = current }
                guard uploaded(by: client) < target else { break }
                try await whileSuspended()
                do {
                    try await uploadOnce()
                    attempt = 0
                } catch let later as PushLater {
                    try await Task.sleep(for: .milliseconds(later.milliseconds))
                } catch is Diverged {
                    // A recovery that fails (a lost request) is retried after the usual wait.
                    try await recoverOrBackoff(attempt: &attempt)
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
                } catch is Diverged {
                    try await recoverOrBackoff(attempt: &attempt)
                    target = nil
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
                    if try await self.uploadOnce() == 0 {
                        self.status.withLock { $0.idleUploadPasses += 1 }
                        await self.sleepUntilWoken(timeout: .seconds(5))
                    }
                    attempt = 0
                } catch let later as PushLater {
                    if (try? await Task.sleep(for: .milliseconds(later.milliseconds))) == nil { return }
                } catch is Diverged {
                    if (try? await self.recoverOrBackoff(attempt: &attempt)) == nil { return }
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
                } catch is Diverged {
                    if (try? await self.recoverOrBackoff(attempt: &attempt)) == nil { return }
                } catch {
                    if (try? await self.backoff(after: error, attempt: &attempt)) == nil { return }
                }
            }
        }
        status.withLock { $0.tasks = [feed, upload, download] }
    }

    /// Pushes the change sets the server lacks (at most 100 at a time); returns how many were sent. Throws
    /// `Diverged` when the server no longer holds change sets it acknowledged by returning them.
    @discardableResult
    private func uploadOnce() async throws -> Int {
        try await uploadGate.run {
            let wantsProgress = progress.wants(.upload)
            let (clientID, acknowledged, pending, sizes) = try onQueue { realm -> (UInt64, UInt64, [ChangeSet], [(sequence: UInt64, bytes: Int)]) in
                guard let s = realm.syncStatus else { return (0, 0, [], []) }
                // Acknowledged change sets came back from the server: it holds them whatever its push answer said.
                noteUploaded(s.clientID, s.acknowledgedSequence)
                let after = uploaded(by: s.clientID)
                return (s.clientID, s.acknowledgedSequence, Array(try realm.pendingChanges(after: after).prefix(100)),
                        wantsProgress ? try realm.pendingChangeSizes(after: after) : [])
            }
            if wantsProgress { progress.record(.upload, pending: sizes.reduce(0) { $0 + $1.bytes }) }
            guard let first = pending.first else { return 0 }
            let response: PushResponse = try await transport.send("push", PushRequest(clientID: clientID, changeSets: pending))
            connected()
            // Another client's recovery holds the partition: what this push carries may be in it.
            if let wait = response.retryAfterMilliseconds { throw PushLater(milliseconds: wait) }
            if response.lastSequence + 1 < first.sequence {
                // The server lacks change sets it once held: restored from a backup. Those it acknowledged by
                // returning them are lost to it (a recovery); the others are sent again from where it stands.
                if response.lastSequence < acknowledged { throw Diverged() }
                noteUploaded(clientID, response.lastSequence, lowering: true)
            } else {
                noteUploaded(clientID, response.lastSequence)
                if wantsProgress {
                    let taken = sizes.filter { $0.sequence <= response.lastSequence }.reduce(0) { $0 + $1.bytes }
                    progress.record(.upload, transferred: taken, pending: sizes.filter { $0.sequence > response.lastSequence }.reduce(0) { $0 + $1.bytes })
                }
            }
            return pending.count
        }
    }

    /// Pulls what the server has after this file's version (waiting up to `wait` ms for a push when it has nothing)
    /// and applies it; returns the version applied here and the server's newest.
    private func downloadOnce(wait: Int) async throws -> (applied: UInt64, server: UInt64) {
        let (clientID, after, salt) = try onQueue { realm in
            let version = realm.syncStatus?.serverVersion ?? 0
            return (realm.syncStatus?.clientID ?? 0, version, version > 0 ? try realm.syncSalt(of: version) : 0)
        }
        let request = PullRequest(clientID: clientID, after: after, waitMilliseconds: wait, afterSalt: salt,
                                  snapshotPage: sync.snapshotPage ?? SyncWire.defaultSnapshotPage)
        let response: PullResponse = try await transport.send("pull", request, wait: .milliseconds(wait))
        connected()
        guard response.snapshot?.next != nil else { return try apply(response, clientID: clientID, after: after) }
        // A snapshot's further pages, walked and applied by one download at a time: the loop's and a
        // `wait(for: .download)` both ask at first, and the second finds the file started.
        return try await snapshotGate.run {
            let now = try onQueue { realm in realm.syncStatus?.serverVersion ?? 0 }
            guard now == after else { return (now, response.serverVersion) }
            let walked = try await SnapshotPages.complete(response, asking: request) { page in
                // A page lost on the way is asked for again, as any failed request is: the pages before stay good
                // (each page names what the ones before it were read from).
                var attempt = 0
                while true {
                    try await whileSuspended()
                    do {
                        status.withLock { $0.snapshotPages += 1 }
                        let answer: PullResponse = try await transport.send("pull", page)
                        connected()
                        return answer
                    } catch {
                        try await backoff(after: error, attempt: &attempt)
                    }
                }
            }
            return try apply(walked, clientID: clientID, after: after)
        }
    }

    /// Applies the answer to a pull after version `after` asked as `clientID`; returns the version applied here and
    /// the server's newest.
    private func apply(_ response: PullResponse, clientID: UInt64, after: UInt64) throws -> (applied: UInt64, server: UInt64) {
        // Suspended meanwhile (a long poll waits up to 25 s): nothing arrives after `suspend()`, as RealmSwift's
        // session applies nothing once suspended. The answer is dropped; the next pull after `resume()` asks again.
        if state != .active { return (after, response.serverVersion) }
        if response.diverged == true { throw Diverged() }
        // The server's count, down as well as up: a restored server may have lost change sets it took (and
        // answered) before this file saw them come back. Sending one again is harmless: the server skips it.
        if clientID != 0 { noteUploaded(clientID, response.lastSequence, lowering: true) }
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
            } else if (changes.last?.version ?? after) == response.serverVersion, realm.syncStatus?.clientID == clientID {
                // Everything up to the server's version is here: the server's count of this client's change sets
                // is in it (some may have come inside another client's recovery).
                try realm.applyServerChanges(changes, holdingThrough: response.lastSequence)
            } else if !changes.isEmpty {
                try realm.applyServerChanges(changes)
            }
            return realm.syncStatus?.serverVersion ?? 0
        }
        // Download progress: the bytes of what came, and what the server said is left.
        let bytes = response.changes.reduce(0) { $0 + $1.changeSet.bytes.count }
            + (response.snapshot?.objects.reduce(0) { $0 + $1.state.count } ?? 0)
        progress.record(.download, transferred: bytes, pending: Int(clamping: response.remainingBytes ?? 0))
        return (applied, response.serverVersion)
    }

    /// The last sequence of `client` the server is known to hold.
    func uploaded(by client: UInt64) -> UInt64 {
        status.withLock { $0.uploadedClient == client ? $0.uploaded : 0 }
    }

    /// Notes that the server holds `client`'s change sets through `sequence` (`lowering`: and no more, after it
    /// answered a push with a gap or a pull).
    private func noteUploaded(_ client: UInt64, _ sequence: UInt64, lowering: Bool = false) {
        status.withLock { s in
            if s.uploadedClient != client {
                s.uploadedClient = client
                s.uploaded = sequence
            } else {
                s.uploaded = lowering ? sequence : max(s.uploaded, sequence)
            }
        }
    }

    // MARK: - A server restored from a backup

    /// After a server said it lost history this file saw: waits for the recovery (a refusal is reported and
    /// backed off from as any other failure).
    private func recoverOrBackoff(attempt: inout Int) async throws {
        do {
            try await recover()
            attempt = 0
        } catch {
            try await backoff(after: error, attempt: &attempt)
        }
    }

    /// Finds the last version this file shares with the server, and recovers from there
    /// (`Realm.recoverFromRestoredServer`). Does nothing when the server still has the version this file last
    /// applied (another caller recovered already).
    private func recover() async throws {
        try await uploadGate.run {
            let (clientID, version, known) = try onQueue { realm -> (UInt64, UInt64, [KnownVersion]) in
                let s = realm.syncStatus
                return (s?.clientID ?? 0, s?.serverVersion ?? 0, try realm.knownServerVersions().filter { $0.version <= (s?.serverVersion ?? 0) })
            }
            let shared = try await sharedVersion(known, clientID: clientID)
            if shared == version && version > 0 { return }
            // The id the recovery's change sets will have, kept for a recovery tried again: the server leases the
            // partition to it (for 30 s) at the first try, whose answer may have been lost on the way.
            let newClientID = status.withLock { s -> UInt64 in
                if let kept = s.recoveryClientID, kept.from == clientID { return kept.id }
                var id: UInt64 = 0
                while id == 0 || id == clientID { id = UInt64.random(in: 1...UInt64.max) }
                s.recoveryClientID = (clientID, id)
                return id
            }
            var response: PullResponse
            while true {
                response = try await transport.send(
                    "pull", PullRequest(clientID: clientID, after: shared, recovery: true, recoveryClientID: newClientID))
                connected()
                // Another client's recovery is running: this one starts from its result.
                guard let wait = response.retryAfterMilliseconds else { break }
                try await Task.sleep(for: .milliseconds(wait))
            }
            let snapshot = try response.snapshot?.decoded(clientSequence: response.lastSequence)
                ?? SyncSnapshot(version: 0, clientSequence: response.lastSequence, states: [])
            // Where this file knows no versions between the one that matched and the next (it started from a
            // snapshot there), the server's history is taken from the one that matched: what both share in between
            // then counts as the server's newer history (the SyncServer article's limits).
            let newTimeline = try response.changes.map { try $0.decoded() }.filter { $0.version > shared && $0.version <= snapshot.version }
            let recovered = try onQueue { realm in
                try realm.recoverFromRestoredServer(SyncRecovery(
                    clientID: clientID, fromVersion: version, snapshot: snapshot, newTimeline: newTimeline, sharedVersion: shared,
                    newClientID: newClientID))
            }
            if recovered {
                sync.errorHandler?(SyncRecoveryNotice(partition: sync.partition, lostAfter: shared, serverVersion: snapshot.version))
            }
            wake()
        }
    }

    /// The newest version among `known` (this file's salts, ascending) whose salt the server has too; 0 when
    /// none. Salts match up to the last shared version and differ after it, so each request of up to 64 probes
    /// narrows the range to one 65th.
    private func sharedVersion(_ known: [KnownVersion], clientID: UInt64) async throws -> UInt64 {
        var lo = -1, hi = known.count
        while hi - lo > 1 {
            let span = hi - lo - 1
            let count = min(span, 64)
            let probes = (0..<count).map { lo + 1 + $0 * span / count }
            let answer: SaltsResponse = try await transport.send("salts", SaltsRequest(clientID: clientID, versions: probes.map { known[$0].version }))
            guard answer.salts.count == probes.count else {
                throw WireError(.malformed, "the server answered \(answer.salts.count) salts to \(probes.count) versions asked about")
            }
            for (i, index) in probes.enumerated() {
                if answer.salts[i] == known[index].salt {
                    lo = index
                } else {
                    hi = index
                    break
                }
            }
        }
        return lo >= 0 ? known[lo].version : 0
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
            // Cancelled (woken before the timeout): no wake, which would be left pending for the next sleep and
            // end it at once, and so on, a loop that never sleeps.
            guard (try? await Task.sleep(for: timeout)) != nil else { return }
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

    func onQueue<T>(_ body: (Realm) throws -> T) throws -> T {
        try queue.sync {
            let realm = try Realm(configuration: configuration, queue: queue)
            realm.refresh()
            return try body(realm)
        }
    }
}

/// Told to the error handler when a session recovered from a server restored from an older backup: the file
/// now holds the server's objects, plus what the server had lost and this file still had, sent again.
public struct SyncRecoveryNotice: Error, Sendable, CustomStringConvertible {
    public var partition: String
    /// The last server version this file shared with the server (0: none known).
    public var lostAfter: UInt64
    /// The server's version the file recovered at.
    public var serverVersion: UInt64

    public var description: String {
        "the sync server of partition \(partition) had lost the history after version \(lostAfter) (restored from a backup?): "
            + "this file took its objects at version \(serverVersion) and sends again what it lacked"
    }
}

/// Runs async bodies one at a time, in the order they asked.
final class AsyncGate: Sendable {
    private let state = Locked<(held: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func run<T>(_ body: () async throws -> T) async throws -> T {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if s.held {
                    s.waiters.append(c)
                    return false
                }
                s.held = true
                return true
            }
            if now { c.resume() }
        }
        defer {
            let next = state.withLock { s -> CheckedContinuation<Void, Never>? in
                if s.waiters.isEmpty {
                    s.held = false
                    return nil
                }
                return s.waiters.removeFirst()
            }
            next?.resume()
        }
        return try await body()
    }
}
