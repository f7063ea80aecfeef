// `subscribe(on:)` and `receive(on:)` for Realm publishers, as RealmSwift's: `subscribe(on: queue)` makes the
// observer deliver on that queue; `receive(on: queue)` (directly on a Realm publisher, or after
// `.threadSafeReference()`) hands each value over through a `ThreadSafeReference` and resolves it in a Realm of
// that queue. Only dispatch queues (and, with Combine, the main run loop) can be handed to: a Realm belongs to
// a thread or a serial queue. With OpenCombine, a queue is a scheduler as `queue.ocombine`.

#if canImport(Combine)
import Combine
#else
import OpenCombine
import OpenCombineDispatch
#endif
import Foundation

/// The serial dispatch queue a scheduler runs on, if it is one.
func handoverQueue<S: Scheduler>(_ scheduler: S) -> DispatchQueue? {
    #if canImport(Combine)
    if let queue = scheduler as? DispatchQueue { return queue }
    if let loop = scheduler as? RunLoop, loop === RunLoop.main { return .main }
    #else
    if let queue = scheduler as? DispatchQueue.OCombine { return queue.queue }
    #endif
    return nil
}

/// A value on its way to another queue: itself when it may cross threads (frozen or unmanaged), else a
/// reference resolved there in a Realm of its file.
struct HandedOver<Value>: @unchecked Sendable {  // @unchecked: the value crosses only when frozen or unmanaged
    private let value: Value?
    private let resolve: ((Realm) -> Value?)?
    private let configuration: Realm.Configuration?

    init(_ value: Value) {
        self.value = value
        resolve = nil
        configuration = nil
    }

    init(configuration: Realm.Configuration, resolve: @escaping (Realm) -> Value?) {
        value = nil
        self.resolve = resolve
        self.configuration = configuration
    }

    /// The value on `queue` (the code running now): nil when its object was deleted meanwhile, or when the
    /// Realm could not be opened there (logged, as the stream has no way to fail).
    func value(on queue: DispatchQueue) -> Value? {
        guard let resolve, let configuration else { return value }
        do {
            let realm = queue === DispatchQueue.main ? try Realm(configuration: configuration) : try Realm(configuration: configuration, queue: queue)
            return resolve(realm)
        } catch {
            StrataLog.error("A Realm publisher could not open \(configuration.fileURL?.path ?? "its Realm") to deliver a value: \(error)")
            return nil
        }
    }
}

extension HandedOver where Value: ThreadConfined {
    /// `confined` handed over: itself if frozen or unmanaged, else a reference to it.
    static func of(_ confined: Value) -> HandedOver<Value> {
        guard let realm = confined.realm, !confined.isFrozen else { return HandedOver(confined) }
        let reference = ThreadSafeReference(to: confined)
        return HandedOver(configuration: realm.configuration) { $0.resolve(reference) }
    }
}

/// A change of an object handed over: its object resolved on the other side (a deleted one ends the change).
func handOver<T: Object>(_ change: ObjectChange<T>) -> HandedOver<ObjectChange<T>> {
    guard case .change(let object, let properties) = change, let realm = object.realm, !object.isFrozen else { return HandedOver(change) }
    let reference = ThreadSafeReference(to: object)
    return HandedOver(configuration: realm.configuration) { r in r.resolve(reference).map { .change($0, properties) } }
}

/// A change of a collection handed over, its collection resolved on the other side.
func handOver<C: ThreadConfined>(_ change: RealmCollectionChange<C>) -> HandedOver<RealmCollectionChange<C>> {
    switch change {
    case .initial(let c):
        guard let realm = c.realm, !c.isFrozen else { return HandedOver(change) }
        let reference = ThreadSafeReference(to: c)
        return HandedOver(configuration: realm.configuration) { r in r.resolve(reference).map { .initial($0) } }
    case .update(let c, let deletions, let insertions, let modifications):
        guard let realm = c.realm, !c.isFrozen else { return HandedOver(change) }
        let reference = ThreadSafeReference(to: c)
        return HandedOver(configuration: realm.configuration) { r in
            r.resolve(reference).map { .update($0, deletions: deletions, insertions: insertions, modifications: modifications) }
        }
    case .error: return HandedOver(change)
    }
}

extension RealmPublishers {
    /// A publisher whose values reach `scheduler` handed over (`receive(on:)` of a Realm publisher, or after
    /// `threadSafeReference()`).
    public struct Handover<Upstream: Publisher, S: Scheduler>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure
        let upstream: Upstream
        let scheduler: S
        let queue: DispatchQueue
        let handOver: (Output) -> HandedOver<Output>

        init(_ upstream: Upstream, _ scheduler: S, _ handOver: @escaping (Output) -> HandedOver<Output>) {
            guard let queue = handoverQueue(scheduler) else {
                fatalError("Cannot receive on scheduler \(scheduler): only serial dispatch queues are currently implemented.")
            }
            self.upstream = upstream
            self.scheduler = scheduler
            self.queue = queue
            self.handOver = handOver
        }

        public func receive<Sub: Subscriber>(subscriber: Sub) where Sub.Input == Output, Sub.Failure == Failure {
            let queue = self.queue
            upstream.map(handOver).receive(on: scheduler).compactMap { $0.value(on: queue) }.receive(subscriber: subscriber)
        }
    }

    /// What `threadSafeReference()` gives: the same values, and a `receive(on:)` that hands them over.
    public struct MakeThreadSafe<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure
        let upstream: Upstream
        let handOver: (Output) -> HandedOver<Output>

        public func receive<Sub: Subscriber>(subscriber: Sub) where Sub.Input == Output, Sub.Failure == Failure {
            upstream.receive(subscriber: subscriber)
        }

        /// Delivers each value on `scheduler` (a serial dispatch queue), resolved in a Realm of that queue.
        public func receive<S: Scheduler>(on scheduler: S) -> Handover<Upstream, S> { Handover(upstream, scheduler, handOver) }
    }
}

extension RealmPublishers.Value {
    /// Observes on `scheduler` (a serial dispatch queue): notifications, and the values, arrive there.
    public func subscribe<S: Scheduler>(on scheduler: S) -> RealmPublishers.Value<Output> {
        guard let queue = handoverQueue(scheduler) else {
            fatalError("Cannot subscribe on scheduler \(scheduler): only serial dispatch queues are currently implemented.")
        }
        return RealmPublishers.Value(queue: queue, register)
    }
}

extension RealmPublishers.Value where Output: ThreadConfined {
    /// Delivers each value on `scheduler` (a serial dispatch queue), resolved in a Realm of that queue.
    public func receive<S: Scheduler>(on scheduler: S) -> RealmPublishers.Handover<Self, S> { .init(self, scheduler) { HandedOver.of($0) } }
}

extension RealmPublishers.Value {
    /// Delivers each change on `scheduler` (a serial dispatch queue), its object resolved in a Realm of that queue.
    public func receive<S: Scheduler, T: Object>(on scheduler: S) -> RealmPublishers.Handover<Self, S> where Output == ObjectChange<T> {
        .init(self, scheduler, handOver)
    }

    /// Delivers each change on `scheduler` (a serial dispatch queue), its collection resolved in a Realm of that queue.
    public func receive<S: Scheduler, C: ThreadConfined>(on scheduler: S) -> RealmPublishers.Handover<Self, S>
    where Output == RealmCollectionChange<C> {
        .init(self, scheduler, handOver)
    }
}

extension Publisher where Output: ThreadConfined {
    /// Makes `receive(on:)` hand each object or collection over to the other queue (through a
    /// `ThreadSafeReference`), after operators that hide the Realm publisher's own `receive(on:)`.
    public func threadSafeReference() -> RealmPublishers.MakeThreadSafe<Self> { .init(upstream: self) { HandedOver.of($0) } }
}

extension Publisher {
    /// `threadSafeReference()` for a stream of object changes.
    public func threadSafeReference<T: Object>() -> RealmPublishers.MakeThreadSafe<Self> where Output == ObjectChange<T> {
        .init(upstream: self, handOver: handOver)
    }

    /// `threadSafeReference()` for a stream of collection changes.
    public func threadSafeReference<C: ThreadConfined>() -> RealmPublishers.MakeThreadSafe<Self> where Output == RealmCollectionChange<C> {
        .init(upstream: self, handOver: handOver)
    }
}
