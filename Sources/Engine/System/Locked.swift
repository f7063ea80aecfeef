import Foundation
import Synchronization

/// A value guarded by a lock, with `Synchronization.Mutex`'s `withLock` shape.
///
/// Built on `NSLock` (a pthread mutex) rather than `Mutex`: on Linux the thread sanitizer does not see
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

/// A reference set at most once, read without a lock: `Synchronization.AtomicLazyReference`'s contract.
///
/// That type's `load()` is not inlinable, so every call goes through its unspecialized generic code and looks
/// its metadata up at run time: a twentieth of a point read, which loads a segment's block index this way.
/// This one's operations are inlinable and specialize where they are used.
package final class LazyReference<Instance: AnyObject>: @unchecked Sendable {
    // An owned (+1) reference once set; released with this object.
    private let storage = Atomic<Unmanaged<Instance>?>(nil)

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
