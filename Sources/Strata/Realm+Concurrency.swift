import Dispatch
import Foundation

/// Runs closures on an actor, one at a time, in the order they were sent: notifications and autorefresh of a
/// Realm that belongs to an actor.
final class ActorPump: @unchecked Sendable {
    /// A closure for the actor. Only the pump's task runs it, on the actor the Realm belongs to, which is where
    /// the Realm and what the closure captures live.
    struct Job: @unchecked Sendable {
        let run: () -> Void
    }

    private let continuation: AsyncStream<Job>.Continuation

    init(actor: any Actor) {
        let (stream, continuation) = AsyncStream.makeStream(of: Job.self)
        self.continuation = continuation
        Task {
            for await job in stream { await Self.run(job, on: actor) }
        }
    }

    private static func run(_ job: Job, on actor: isolated any Actor) { job.run() }

    func send(_ body: @escaping () -> Void) { continuation.yield(Job(run: body)) }

    deinit { continuation.finish() }
}

extension Realm {
    /// What an async open waits for (RealmSwift's, for source compatibility: there is no sync, so no download).
    public enum OpenBehavior: Sendable {
        case never, always, once
    }

    /// Opens a Realm that belongs to `actor` (run this on it): notifications, and the refreshes that other
    /// instances' commits cause (autorefresh), are delivered on the actor.
    ///
    /// ```swift
    /// actor Library {
    ///     var realm: Realm?
    ///     func open() async throws {
    ///         realm = try await Realm(configuration: .init(objectTypes: [Book.self]), actor: self)
    ///     }
    /// }
    /// ```
    public init<A: Actor>(configuration: Configuration = .defaultConfiguration, actor: isolated A) async throws {
        core = try RealmCache.core(for: configuration, actor: actor)
    }

    /// Opens a Realm from async code: it belongs to the calling actor when there is one (as with
    /// `Realm(configuration:actor:)`), else it is a plain Realm of the calling thread.
    ///
    /// Unlike RealmSwift's, `downloadBeforeOpen` has no default: in async code `try Realm(configuration:)`
    /// stays the synchronous open (a Realm of the calling thread), so existing code keeps compiling; write
    /// `try await Realm.open(configuration:)` or `Realm(configuration:actor:)` for a Realm of the actor.
    public init(
        configuration: Configuration = .defaultConfiguration, downloadBeforeOpen: OpenBehavior,
        isolation: isolated (any Actor)? = #isolation
    ) async throws {
        core = try RealmCache.core(for: configuration, actor: isolation)
    }

    /// `Realm(configuration:downloadBeforeOpen:)` as a static function.
    public static func open(
        configuration: Configuration = .defaultConfiguration, isolation: isolated (any Actor)? = #isolation
    ) async throws -> Realm {
        Realm(core: try RealmCache.core(for: configuration, actor: isolation))
    }

    /// Runs `block` in a write transaction and commits it, from async code on the Realm's actor. The commit is
    /// durable when this returns; Strata's commits are short, so the actor is not released meanwhile.
    @discardableResult
    public func asyncWrite<Result>(
        _ block: () throws -> Result, isolation: isolated (any Actor)? = #isolation
    ) async throws -> Result {
        // RealmSwift's rule: a Realm confined to a dispatch queue has no actor to await on.
        if core.queue != nil { fatalError("asyncWrite() can only be called on main thread or actor-isolated Realms") }
        // A cancelled task writes nothing.
        try Task.checkCancellation()
        return try write(block)
    }

    /// Opens a Realm on `callbackQueue` (which it then belongs to) and hands it, or the error, to `callback`
    /// there.
    @discardableResult
    public static func asyncOpen(
        configuration: Configuration = .defaultConfiguration, callbackQueue: DispatchQueue = .main,
        callback: @escaping @Sendable (Result<Realm, any Swift.Error>) -> Void
    ) -> AsyncOpenTask {
        let task = AsyncOpenTask()
        callbackQueue.async {
            guard !task.isCancelled else { return }
            callback(Result { try Realm(configuration: configuration, queue: callbackQueue) })
        }
        return task
    }
}

/// The handle of `Realm.asyncOpen`: cancelling before the open runs means the callback is never called.
public final class AsyncOpenTask: @unchecked Sendable {
    private let lock = NSLock()
    private var cancelled = false

    var isCancelled: Bool {
        lock.lock()
        defer { lock.unlock() }
        return cancelled
    }

    public func cancel() {
        lock.lock()
        cancelled = true
        lock.unlock()
    }
}
