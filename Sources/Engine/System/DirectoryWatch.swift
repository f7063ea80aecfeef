// A watch of a database directory: calls a handler soon after a file in it is created, written, renamed or
// removed. Shared databases use it to learn of another process's commit without polling for it
// (`SharedFile+Processes.swift` in the object layer keeps a slow poll beside it as the fallback).
//
// Linux: inotify on the directory (`IN_MODIFY` covers appends to the log, `IN_MOVED_TO` the atomic rename of
// CURRENT), read through a dispatch read source. Apple platforms: a dispatch source on the directory sees
// entries added, removed and renamed (a new log, a manifest switch) but not appends to a file, so there the
// watch returns nil and the caller keeps polling at its usual rate.
//
// Invariants:
// (1) The handler runs on the caller's queue (a serial one runs it never twice at once); events that arrive
//     together are read in one go and give one call.
// (2) `cancel()` closes the descriptor through the source's cancel handler, after the last event handler ran:
//     the descriptor is never reused while the source may still read it.

#if canImport(Glibc)
import Glibc
#endif
import Dispatch

/// A running watch of one directory.
package final class DirectoryWatch: @unchecked Sendable {
    private let source: any DispatchSourceRead

    private init(source: any DispatchSourceRead) { self.source = source }

    /// Watches `path`, calling `handler` on `queue`; nil where the platform has no watch that sees file contents change, or the watch could
    /// not be set up (the caller polls instead).
    package static func start(path: String, queue: DispatchQueue, _ handler: @escaping @Sendable () -> Void) -> DirectoryWatch? {
        #if os(Linux)
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { return nil }
        let mask = UInt32(IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_CLOSE_WRITE)
        guard path.withCString({ inotify_add_watch(fd, $0, mask) }) >= 0 else {
            close(fd)
            return nil
        }
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler {
            // Drain every queued event (their contents do not matter: any change is a reason to look).
            var buffer = [UInt8](repeating: 0, count: 4096)
            while buffer.withUnsafeMutableBytes({ read(fd, $0.baseAddress, $0.count) }) > 0 {}
            handler()
        }
        source.setCancelHandler { close(fd) }
        source.resume()
        return DirectoryWatch(source: source)
        #else
        return nil
        #endif
    }

    /// Stops the watch; the handler is not called after the call that is running, if any.
    package func cancel() { source.cancel() }

    deinit { source.cancel() }
}
