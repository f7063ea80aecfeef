import Dispatch

/// Frees a large structure on another thread: taking apart a million pending records or migrated objects is a
/// fifth of a bulk write, and nothing needs to wait for it.
///
/// Only for values that hold no Realm instance and no user object (their deinit would then run on the other
/// thread): bytes, stored values, bindings and schema information.
final class DeferredRelease: @unchecked Sendable {
    private var value: Any?

    private init(_ value: Any) { self.value = value }

    /// Releases `value` on a background queue.
    static func drop(_ value: Any) {
        let box = DeferredRelease(value)
        DispatchQueue.global(qos: .utility).async { box.value = nil }
    }
}
