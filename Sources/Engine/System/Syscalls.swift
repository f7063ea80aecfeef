// Guards: every system call the engine makes. This is the only file that calls open, pwrite, fsync,
// ftruncate, mmap, munmap, flock, rename, unlink, mkdir and readdir. Each wrapper makes one call, retries on
// EINTR, and turns -1 into a StorageError naming the call, the path and the errno. EBADF and EFAULT trap:
// they can only mean a bug in this file's callers.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An errno value with its system description.
public struct SystemErrno: Error, Sendable, CustomStringConvertible, Equatable {
    public let code: Int32
    public init(_ code: Int32) { self.code = code }
    public var description: String { String(cString: strerror(code)) + " (errno \(code))" }
    public static let noSpace = SystemErrno(ENOSPC)
    public static let ioError = SystemErrno(EIO)
    public static let wouldBlock = SystemErrno(EWOULDBLOCK)
}

enum Syscalls {
    static func fail(_ call: String, _ path: String, _ err: Int32 = errno) -> StorageError {
        require(err != EBADF && err != EFAULT, "\(call) on \(path): \(SystemErrno(err)) is a bug in Strata")
        return StorageError(.io, "\(call) failed: \(SystemErrno(err))", file: path, underlying: SystemErrno(err))
    }

    static func open(_ path: String, flags: Int32, mode: mode_t = 0o644) throws -> Int32 {
        while true {
            let fd = path.withCString { Glibc.open($0, flags | O_CLOEXEC, mode) }
            if fd >= 0 { return fd }
            if errno == EINTR { continue }
            throw fail("open", path)
        }
    }

    static func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }

    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws {
        var done = 0
        while done < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + done, bytes.count - done)
            if n < 0 {
                if errno == EINTR { continue }
                throw fail("write", path)
            }
            done += n
        }
    }

    static func fdatasync(_ fd: Int32, path: String) throws {
        while true {
            #if canImport(Darwin)
            let r = Darwin.fsync(fd)
            #else
            let r = Glibc.fdatasync(fd)
            #endif
            if r == 0 { return }
            if errno == EINTR { continue }
            throw fail("fdatasync", path)
        }
    }

    static func fsync(_ fd: Int32, path: String) throws {
        while true {
            if Glibc.fsync(fd) == 0 { return }
            if errno == EINTR { continue }
            throw fail("fsync", path)
        }
    }

    static func fileSize(_ fd: Int32, path: String) throws -> Int {
        var st = stat()
        while true {
            if fstat(fd, &st) == 0 { return Int(st.st_size) }
            if errno == EINTR { continue }
            throw fail("fstat", path)
        }
    }

    static func truncate(_ path: String, size: Int) throws {
        while true {
            if path.withCString({ Glibc.truncate($0, off_t(size)) }) == 0 { return }
            if errno == EINTR { continue }
            throw fail("truncate", path)
        }
    }

    /// Maps `count` bytes of `fd` read-only and shared. `count` must be positive.
    static func mapReadOnly(_ fd: Int32, count: Int, path: String) throws -> UnsafeRawPointer {
        let p = mmap(nil, count, PROT_READ, MAP_SHARED, fd, 0)
        if p == MAP_FAILED || p == nil { throw fail("mmap", path) }
        return UnsafeRawPointer(p!)
    }

    static func unmap(_ base: UnsafeRawPointer, count: Int) {
        _ = munmap(UnsafeMutableRawPointer(mutating: base), count)
    }

    static func rename(_ from: String, _ to: String) throws {
        let r = from.withCString { f in to.withCString { t in Glibc.rename(f, t) } }
        if r != 0 { throw fail("rename to \(to)", from) }
    }

    static func unlink(_ path: String) throws {
        if path.withCString({ Glibc.unlink($0) }) != 0 { throw fail("unlink", path) }
    }

    static func mkdir(_ path: String) throws {
        if path.withCString({ Glibc.mkdir($0, 0o755) }) != 0 && errno != EEXIST { throw fail("mkdir", path) }
    }

    static func exists(_ path: String) -> Bool {
        var st = stat()
        return path.withCString { stat($0, &st) } == 0
    }

    static func listDirectory(_ path: String) throws -> [String] {
        guard let dir = path.withCString({ opendir($0) }) else { throw fail("opendir", path) }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    static func syncDirectory(_ path: String) throws {
        let fd = try open(path, flags: O_RDONLY | O_DIRECTORY)
        defer { close(fd) }
        try fsync(fd, path: path)
    }

    /// Takes an exclusive, non-blocking `flock` on `fd`; returns false when someone else holds it.
    static func tryLock(_ fd: Int32, path: String) throws -> Bool {
        while true {
            if flock(fd, LOCK_EX | LOCK_NB) == 0 { return true }
            if errno == EINTR { continue }
            if errno == EWOULDBLOCK { return false }
            throw fail("flock", path)
        }
    }

    static func sleep(microseconds: UInt32) {
        _ = usleep(microseconds)
    }

    static let createTruncate = O_WRONLY | O_CREAT | O_TRUNC
    static let appendOnly = O_WRONLY | O_APPEND
    static let readOnly = O_RDONLY
    static let readWriteCreate = O_RDWR | O_CREAT
}
