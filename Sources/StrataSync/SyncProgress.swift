import Dispatch
import Engine
import Foundation

// Progress notifications, RealmSwift's shapes: `addProgressNotification(for:mode:block:)` with a direction, a mode
// and a token to invalidate. What is counted:
// - upload: the bytes of this file's change sets as the outbox stores them. Transferred: those the server took
//   since the session started; transferrable: those plus the ones it has not taken yet.
// - download: the bytes of the server's change sets (and snapshots) as they come over the wire. Transferred:
//   those applied here since the session started; transferrable: those plus what the server said is left after
//   the last page it gave (`PullResponse.remainingBytes`). A change committed on the server after that answer is
//   unknown until the next pull returns it, as in RealmSwift, where download figures are the server's estimate.

extension SyncSession {
    /// How a progress notification behaves (RealmSwift's `ProgressMode`).
    public enum ProgressMode: Sendable, Hashable {
        /// Called whenever the figures change, until the token is invalidated: the latest transferred bytes and
        /// the latest transferrable bytes.
        case reportIndefinitely
        /// Keeps the transferrable bytes of when it was added, is called as they are transferred, and stops once
        /// they all are (it is called once with a complete transfer when there was nothing to transfer).
        case forCurrentlyOutstandingWork
    }

    /// Bytes transferred and to transfer in one direction (RealmSwift's `SyncSession.Progress`).
    public struct Progress: Sendable, Hashable {
        /// The bytes transferred.
        public let transferredBytes: Int
        /// The bytes transferred plus those waiting to be.
        public let transferrableBytes: Int

        public init(transferredBytes: Int, transferrableBytes: Int) {
            self.transferredBytes = transferredBytes
            self.transferrableBytes = transferrableBytes
        }

        /// From 0 to 1: the part transferred (1 when nothing waits).
        public var progressEstimate: Double {
            transferrableBytes <= 0 || transferredBytes >= transferrableBytes ? 1 : Double(transferredBytes) / Double(transferrableBytes)
        }

        /// RealmSwift's older name for `progressEstimate`.
        public var fractionTransferred: Double { progressEstimate }

        /// Whether nothing waits to be transferred.
        public var isTransferComplete: Bool { progressEstimate == 1 }
    }

    /// Registers `block` for progress in `direction`; it is called on a queue of its own for progress
    /// notifications, first with the figures known now. Keep the token, and `invalidate()` it when done. Nil when
    /// the session is invalid (the server refused it), as in RealmSwift.
    @preconcurrency
    public func addProgressNotification(for direction: ProgressDirection, mode: ProgressMode,
                                        block: @Sendable @escaping (Progress) -> Void) -> ProgressNotificationToken? {
        guard state != .invalid else { return nil }
        let token = ProgressNotificationToken(progress)
        // The current figures first: the upload's pending bytes are read from the file.
        if direction == .upload { refreshUploadProgress(always: true) }
        progress.add(token.id, direction: direction, mode: mode, block: block)
        return token
    }

    /// Reads the outbox's pending bytes again and tells the upload notifications, when there are any (`always`:
    /// in any case).
    func refreshUploadProgress(always: Bool = false) {
        guard always || progress.wants(.upload) else { return }
        // try?: progress is advisory; a read that fails here fails the upload that follows, which reports it.
        guard let sizes = try? onQueue({ realm -> [(sequence: UInt64, bytes: Int)] in
            guard let s = realm.syncStatus else { return [] }
            return try realm.pendingChangeSizes(after: uploaded(by: s.clientID))
        }) else { return }
        progress.record(.upload, pending: sizes.reduce(0) { $0 + $1.bytes })
    }
}

/// Stops a progress notification (RealmSwift's `ProgressNotificationToken`).
public final class ProgressNotificationToken: @unchecked Sendable {
    fileprivate let id: UInt64
    private weak var tracker: ProgressTracker?

    fileprivate init(_ tracker: ProgressTracker) {
        self.tracker = tracker
        id = tracker.nextID()
    }

    /// Stops the notifications; the block is not called after this returns. Calling it again does nothing.
    public func invalidate() { tracker?.remove(id) }
}

/// The figures of both directions and the notifications registered for them. Blocks are called in order on one
/// serial queue; a removed registration is never called again.
final class ProgressTracker: @unchecked Sendable {
    typealias Direction = SyncSession.ProgressDirection

    private struct Registration {
        var direction: Direction
        var mode: SyncSession.ProgressMode
        var block: @Sendable (SyncSession.Progress) -> Void
        /// For `forCurrentlyOutstandingWork`: the bytes transferred when it was added, and those plus the ones
        /// waiting then (it counts from the first to the second).
        var start = 0
        var target: Int?
        var last: SyncSession.Progress?
    }

    private struct Figures {
        var transferred = 0
        var pending = 0
    }

    private struct State {
        var ids: UInt64 = 0
        var registrations: [UInt64: Registration] = [:]
        var upload = Figures()
        var download = Figures()
    }

    private let state = Locked(State())
    private let queue = DispatchQueue(label: "strata.sync-progress")
    private static let onProgressQueue = DispatchSpecificKey<Bool>()

    init() { queue.setSpecific(key: Self.onProgressQueue, value: true) }

    fileprivate func nextID() -> UInt64 {
        state.withLock { s in
            s.ids += 1
            return s.ids
        }
    }

    /// Whether a notification of `direction` is registered (figures that cost a read are read only then).
    func wants(_ direction: Direction) -> Bool {
        state.withLock { s in s.registrations.values.contains { $0.direction == direction } }
    }

    fileprivate func add(_ id: UInt64, direction: Direction, mode: SyncSession.ProgressMode,
                         block: @Sendable @escaping (SyncSession.Progress) -> Void) {
        state.withLock { s in
            let f = direction == .upload ? s.upload : s.download
            s.registrations[id] = Registration(
                direction: direction, mode: mode, block: block, start: f.transferred,
                target: mode == .forCurrentlyOutstandingWork ? f.transferred + f.pending : nil)
        }
        notify(direction)
    }

    func remove(_ id: UInt64) {
        // Removed on the queue the calls are made on: once this returns, the block is not called again (from a
        // block itself, directly: the call under way is the last).
        if DispatchQueue.getSpecific(key: Self.onProgressQueue) != nil {
            _ = state.withLock { $0.registrations.removeValue(forKey: id) }
        } else {
            queue.sync { _ = state.withLock { $0.registrations.removeValue(forKey: id) } }
        }
    }

    /// `bytes` more were transferred in `direction`, and `pending` bytes wait now (nil: those waiting before,
    /// less `bytes`).
    func record(_ direction: Direction, transferred bytes: Int = 0, pending: Int? = nil) {
        state.withLock { s in
            var f = direction == .upload ? s.upload : s.download
            f.transferred += bytes
            f.pending = pending ?? max(0, f.pending - bytes)
            if direction == .upload { s.upload = f } else { s.download = f }
        }
        notify(direction)
    }

    /// Calls the registrations of `direction` whose figures changed, on the progress queue.
    private func notify(_ direction: Direction) {
        queue.async { [self] in
            let calls = state.withLock { s -> [(@Sendable (SyncSession.Progress) -> Void, SyncSession.Progress)] in
                let f = direction == .upload ? s.upload : s.download
                var calls: [(@Sendable (SyncSession.Progress) -> Void, SyncSession.Progress)] = []
                for (id, var r) in s.registrations where r.direction == direction {
                    let progress: SyncSession.Progress
                    if let target = r.target {
                        progress = SyncSession.Progress(transferredBytes: min(target, f.transferred) - r.start, transferrableBytes: target - r.start)
                    } else {
                        progress = SyncSession.Progress(transferredBytes: f.transferred, transferrableBytes: f.transferred + f.pending)
                    }
                    guard progress != r.last else { continue }
                    r.last = progress
                    if r.target != nil && progress.isTransferComplete {
                        s.registrations[id] = nil
                    } else {
                        s.registrations[id] = r
                    }
                    calls.append((r.block, progress))
                }
                return calls
            }
            for (block, progress) in calls { block(progress) }
        }
    }
}
