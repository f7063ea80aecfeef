import Foundation

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
