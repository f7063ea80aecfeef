// RealmSwift's Combine publishers: `valuePublisher`, `changesetPublisher`, a collection's `collectionPublisher`
// and `changesetPublisher`, an object's `objectWillChange`. Apple platforms use Combine; Linux uses OpenCombine,
// the same API under another module name: code that builds on both imports `Combine` where it can and
// `OpenCombine` elsewhere (`#if canImport(Combine)`).
//
// Each publisher registers a notification observer when it is subscribed to and invalidates it when the
// subscription is cancelled. Values arrive where the observer's notifications do: on the Realm's thread (or
// queue, or actor), after the Realm moved to a version that changed what is observed.

#if canImport(Combine)
import Combine
#else
import OpenCombine
#endif
import Foundation

/// The publishers Strata's objects and collections make, as RealmSwift names them.
public enum RealmPublishers {
    /// Publishes what a notification observer reports (`register` starts one), honouring demand: a value
    /// that arrives while the subscriber asked for none is dropped (each value is the latest state).
    public struct Value<Output>: Publisher {
        public typealias Failure = any Error
        /// Where the observer's notifications go (`subscribe(on:)`); nil: where the Realm's go.
        let queue: DispatchQueue?
        let register:
            (_ queue: DispatchQueue?, _ send: @escaping (Output) -> Void, _ finish: @escaping ((any Error)?) -> Void) -> NotificationToken

        init(
            queue: DispatchQueue? = nil,
            _ register: @escaping (_ queue: DispatchQueue?, _ send: @escaping (Output) -> Void, _ finish: @escaping ((any Error)?) -> Void)
                -> NotificationToken
        ) {
            self.queue = queue
            self.register = register
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == any Error {
            let subscription = TokenSubscription(subscriber)
            subscriber.receive(subscription: subscription)
            let queue = self.queue
            let register = self.register
            subscription.start { send, finish in register(queue, send, finish) }
        }
    }

    /// An object's (or a Realm's) change signal, with no value and no failure (`objectWillChange`).
    public struct WillChange: Publisher {
        public typealias Output = Void
        public typealias Failure = Never
        let values: Value<Void>

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Void, S.Failure == Never {
            values.catch { _ in Empty<Void, Never>() }.receive(subscriber: subscriber)
        }
    }

    /// `Value` of an object's changes.
    public typealias ObjectChangeset<T: Object> = Value<ObjectChange<T>>
    /// `Value` of a collection's changes.
    public typealias CollectionChangeset<C> = Value<RealmCollectionChange<C>>
}

/// The subscription of a `RealmPublishers.Value`: holds the observer's token until cancelled or finished.
final class TokenSubscription<S: Subscriber>: Subscription, @unchecked Sendable where S.Failure == any Error {
    private let lock = NSLock()
    private var subscriber: S?
    private var token: NotificationToken?
    private var demand = Subscribers.Demand.none

    init(_ subscriber: S) { self.subscriber = subscriber }

    func start(_ register: (_ send: @escaping (S.Input) -> Void, _ finish: @escaping ((any Error)?) -> Void) -> NotificationToken) {
        let token = register({ [weak self] in self?.send($0) }, { [weak self] in self?.finish($0) })
        let keep = lock.withLock { () -> Bool in
            if subscriber == nil { return false }
            self.token = token
            return true
        }
        // Cancelled (or finished) before the observer was in place.
        if !keep { token.invalidate() }
    }

    func request(_ more: Subscribers.Demand) {
        lock.withLock { demand += more }
    }

    func cancel() {
        let token = lock.withLock { () -> NotificationToken? in
            subscriber = nil
            defer { self.token = nil }
            return self.token
        }
        token?.invalidate()
    }

    private func send(_ value: S.Input) {
        let target = lock.withLock { () -> S? in
            guard let subscriber, demand > 0 else { return nil }
            demand -= 1
            return subscriber
        }
        guard let target else { return }
        let more = target.receive(value)
        lock.withLock { demand += more }
    }

    private func finish(_ error: (any Error)?) {
        let (target, token) = lock.withLock { () -> (S?, NotificationToken?) in
            defer {
                subscriber = nil
                self.token = nil
            }
            return (subscriber, self.token)
        }
        token?.invalidate()
        target?.receive(completion: error.map { .failure($0) } ?? .finished)
    }
}

// MARK: - Objects

/// A publisher of `object` each time it changes (of the properties in `keyPaths`, when given); it finishes when
/// the object is deleted. As RealmSwift's, it does not publish the object as it is now.
public func valuePublisher<T: Object>(_ object: T, keyPaths: [String]? = nil) -> RealmPublishers.Value<T> {
    RealmPublishers.Value { queue, send, finish in
        object.observe(keyPaths: keyPaths, on: queue) { (change: ObjectChange<T>) in
            switch change {
            case .change(let changed, _): send(changed)
            case .deleted: finish(nil)
            case .error(let error): finish(error)
            }
        }
    }
}

/// A publisher of each change to `object`, as `observe` reports it; it finishes after `.deleted`.
public func changesetPublisher<T: Object>(_ object: T, keyPaths: [String]? = nil) -> RealmPublishers.ObjectChangeset<T> {
    RealmPublishers.Value { queue, send, finish in
        object.observe(keyPaths: keyPaths, on: queue) { (change: ObjectChange<T>) in
            send(change)
            switch change {
            case .deleted: finish(nil)
            case .error(let error): finish(error)
            case .change: break
            }
        }
    }
}

extension Object {
    /// Publishes after each change to this managed object (SwiftUI's `ObservableObject` signal, as RealmSwift's
    /// objects give it); nothing for an unmanaged one.
    public var objectWillChange: RealmPublishers.WillChange {
        guard _accessor != nil else { return RealmPublishers.WillChange(values: RealmPublishers.Value { _, _, finish in
            finish(nil)
            return NotificationToken()
        }) }
        let object = self
        return RealmPublishers.WillChange(values: RealmPublishers.Value { queue, send, finish in
            object.observe(on: queue) { (change: ObjectChange<Object>) in
                switch change {
                case .change: send(())
                case .deleted: finish(nil)
                case .error(let error): finish(error)
                }
            }
        })
    }
}

// MARK: - Collections

/// The collections that publish their changes: `Results`, `List`, `MutableSet`, `LinkingObjects` and
/// `AnyRealmCollection`.
public protocol _RealmPublishingCollection: ThreadConfined {
    func _observeForPublisher(
        keyPaths: [String]?, on queue: DispatchQueue?, _ block: @escaping (RealmCollectionChange<Self>) -> Void
    ) -> NotificationToken
}

extension _RealmPublishingCollection where Self: RealmCollection {
    public func _observeForPublisher(
        keyPaths: [String]?, on queue: DispatchQueue?, _ block: @escaping (RealmCollectionChange<Self>) -> Void
    ) -> NotificationToken {
        observe(keyPaths: keyPaths, on: queue, block)
    }
}

extension Results: _RealmPublishingCollection {
    public func _observeForPublisher(
        keyPaths: [String]?, on queue: DispatchQueue?, _ block: @escaping (RealmCollectionChange<Results<Element>>) -> Void
    ) -> NotificationToken {
        observe(keyPaths: keyPaths, on: queue, block)
    }
}

extension List: _RealmPublishingCollection {
    public func _observeForPublisher(
        keyPaths: [String]?, on queue: DispatchQueue?, _ block: @escaping (RealmCollectionChange<List<Element>>) -> Void
    ) -> NotificationToken {
        observe(keyPaths: keyPaths, on: queue, block)
    }
}

extension MutableSet: _RealmPublishingCollection {
    public func _observeForPublisher(
        keyPaths: [String]?, on queue: DispatchQueue?, _ block: @escaping (RealmCollectionChange<MutableSet<Element>>) -> Void
    ) -> NotificationToken {
        observe(keyPaths: keyPaths, on: queue, block)
    }
}

extension LinkingObjects: _RealmPublishingCollection {}
extension AnyRealmCollection: _RealmPublishingCollection {}

/// A publisher of `collection` now and after each change to it; it fails when the observer reports an error.
public func valuePublisher<C: _RealmPublishingCollection>(_ collection: C, keyPaths: [String]? = nil) -> RealmPublishers.Value<C> {
    RealmPublishers.Value { queue, send, finish in
        collection._observeForPublisher(keyPaths: keyPaths, on: queue) { change in
            switch change {
            case .initial(let c), .update(let c, _, _, _): send(c)
            case .error(let error): finish(error)
            }
        }
    }
}

/// A publisher of each change to `collection`, `.initial` first, as `observe` reports them.
public func changesetPublisher<C: _RealmPublishingCollection>(_ collection: C, keyPaths: [String]? = nil) -> RealmPublishers.CollectionChangeset<C> {
    RealmPublishers.Value { queue, send, finish in
        collection._observeForPublisher(keyPaths: keyPaths, on: queue) { change in
            send(change)
            if case .error(let error) = change { finish(error) }
        }
    }
}

extension _RealmPublishingCollection {
    /// `valuePublisher(self)`: the collection now and after each change.
    public var collectionPublisher: RealmPublishers.Value<Self> { valuePublisher(self) }
    /// `changesetPublisher(self)`: each change, `.initial` first.
    public var changesetPublisher: RealmPublishers.CollectionChangeset<Self> { Strata.changesetPublisher(self) }
    /// `collectionPublisher` limited to changes of the properties in `keyPaths`.
    public func collectionPublisher(keyPaths: [String]?) -> RealmPublishers.Value<Self> { valuePublisher(self, keyPaths: keyPaths) }
}

// MARK: - Operators

extension Publisher where Output: ThreadConfined {
    /// Each value frozen: readable on any thread (`receive(on:)` another queue), as RealmSwift's `freeze()`.
    public func freeze() -> Publishers.Map<Self, Output> { map { $0.freeze() } }
}

// MARK: - Properties

/// Objects whose properties publish their values (`publisher(for:)`).
public protocol _PropertyPublishing: AnyObject {}
extension Object: _PropertyPublishing {}

extension _PropertyPublishing where Self: Object {
    /// The property's value now, then after each change to it, as Foundation's key-value observing publisher
    /// gives it for RealmSwift's objects (`item.publisher(for: \.name)`). It finishes when a managed object is
    /// deleted; an unmanaged object publishes its value now and finishes.
    public func publisher<V>(for keyPath: KeyPath<Self, V>) -> RealmPublishers.PropertyValue<V> {
        let object = self
        let now = self[keyPath: keyPath]
        guard _accessor != nil else {
            return RealmPublishers.PropertyValue(now: now, changes: RealmPublishers.Value { _, _, finish in
                finish(nil)
                return NotificationToken()
            })
        }
        let name = TypeRegistry.info(for: Self.self).name(of: keyPath)
        return RealmPublishers.PropertyValue(now: now, changes: RealmPublishers.Value { queue, send, finish in
            object.observe(keyPaths: [name], on: queue) { (change: ObjectChange<Self>) in
                switch change {
                case .change(let changed, _): send(changed[keyPath: keyPath])
                case .deleted: finish(nil)
                case .error(let error): finish(error)
                }
            }
        })
    }
}

extension RealmPublishers {
    /// A property's value now and after each change (`publisher(for:)`); it never fails.
    public struct PropertyValue<Output>: Publisher {
        public typealias Failure = Never
        let now: Output
        let changes: Value<Output>

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Never {
            changes.prepend(now).catch { _ in Empty<Output, Never>() }.receive(subscriber: subscriber)
        }
    }
}
