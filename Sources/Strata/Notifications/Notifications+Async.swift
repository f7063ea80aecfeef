import Dispatch
import Engine
import Foundation

/// Hands a change to a stream's consumer. What the streams carry is frozen (immutable, readable from any
/// thread), which the compiler cannot know of `Results` and objects in general.
func hand<V>(_ continuation: AsyncStream<V>.Continuation, _ value: V) {
    nonisolated(unsafe) let frozen = value
    continuation.yield(frozen)
}

extension Results {
    /// The changes of these results as an `AsyncSequence`: `.initial`, then each `.update`, each carrying a
    /// frozen copy of the results (immutable, readable on whatever thread or actor iterates). The observation
    /// ends when the iteration does.
    public func changes(keyPaths: [String]? = nil) -> AsyncStream<RealmCollectionChange<Results<Element>>> {
        collectionChanges({ observe(keyPaths: keyPaths, $0) }, freeze: { $0.freeze() })
    }
}

/// The change notifications of a collection as an `AsyncStream` of frozen copies: `observe` registers the
/// callback, `freeze` copies the collection; the observation ends when the iteration does.
func collectionChanges<C>(
    _ observe: (@escaping (RealmCollectionChange<C>) -> Void) -> NotificationToken, freeze: @escaping (C) -> C
) -> AsyncStream<RealmCollectionChange<C>> {
    let (stream, continuation) = AsyncStream.makeStream(of: RealmCollectionChange<C>.self)
    let token = observe { change in
        switch change {
        case .initial(let c): hand(continuation, .initial(freeze(c)))
        case .update(let c, let d, let i, let m): hand(continuation, .update(freeze(c), deletions: d, insertions: i, modifications: m))
        case .error(let e): hand(continuation, .error(e))
        }
    }
    continuation.onTermination = { _ in token.invalidate() }
    return stream
}

extension Object {
    /// The changes of this managed object as an `AsyncSequence`, each `.change` carrying a frozen copy of the
    /// object; it finishes after `.deleted`.
    public func changes<T: Object>(keyPaths: [String]? = nil) -> AsyncStream<ObjectChange<T>> {
        let (stream, continuation) = AsyncStream.makeStream(of: ObjectChange<T>.self)
        let yield = continuation
        let token = observe(keyPaths: keyPaths) { (change: ObjectChange<T>) in
            switch change {
            case .change(let o, let properties): hand(yield, .change(o.freeze(), properties))
            case .deleted:
                yield.yield(.deleted)
                yield.finish()
            case .error(let e): hand(yield, .error(e))
            }
        }
        continuation.onTermination = { _ in token.invalidate() }
        return stream
    }
}
