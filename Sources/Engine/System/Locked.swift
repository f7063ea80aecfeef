import Foundation
import Atomics

/// A value guarded by a lock, with `Synchronization.Mutex`'s `withLock` shape.
///
/// Built on `NSLock` (a pthread mutex) rather than `Mutex`: `Mutex` needs iOS 18 and macOS 15, and on Linux the thread sanitizer does not see
/// `Mutex`'s lock as synchronization (its futex code is not instrumented), so every access it guards is
/// reported as a race; pthread mutexes are intercepted, so `swift test --sanitize=thread` stays meaningful.
/// Uncontended, both cost a few tens of nanoseconds.
package final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    package init(_ value: Value) { self.value = value }

    @inline(__always)
    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

/// A reference set at most once, read without a lock: `AtomicLazyReference`'s contract.
///
/// Neither `Synchronization.AtomicLazyReference` (iOS 18) nor swift-atomics' `ManagedAtomicLazyReference` has
/// an inlinable `load()`, so every call would go through unspecialized generic code and look its metadata up
/// at run time: a twentieth of a point read, which loads a segment's block index this way. This one's
/// operations are inlinable (`ManagedAtomic`'s are transparent) and specialize where they are used.
package final class LazyReference<Instance: AnyObject>: @unchecked Sendable {
    // An owned (+1) reference once set; released with this object.
    private let storage = ManagedAtomic<Unmanaged<Instance>?>(nil)

    package init() {}

    /// The reference, or nil when none was stored yet.
    @inlinable @inline(__always)
    package func load() -> Instance? {
        storage.load(ordering: .acquiring)?.takeUnretainedValue()
    }

    /// Stores `desired` unless a reference is stored already; returns the one stored.
    @inlinable
    package func storeIfNil(_ desired: Instance) -> Instance {
        let new = Unmanaged.passRetained(desired)
        let (exchanged, current) = storage.compareExchange(expected: nil, desired: new, ordering: .acquiringAndReleasing)
        if exchanged { return desired }
        new.release()
        return current?.takeUnretainedValue() ?? desired
    }

    deinit { storage.load(ordering: .acquiring)?.release() }
}
