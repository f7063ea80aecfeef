// Guards: every system call the engine makes. This is the only file that calls open, pwrite, fsync,
// fcntl, ftruncate, mmap, munmap, flock, pread, rename, unlink, mkdir, realpath, readdir, getpid and kill(pid, 0). Each wrapper makes one
// call, retries on EINTR, and turns -1 into a StorageError naming the call, the path and the errno. EBADF and
// EFAULT trap: they can only mean a bug in this file's callers.
//
// One source for Glibc, Musl and Darwin: the C functions are called unqualified from file-scope shims (inside
// `enum Syscalls` the names `open`, `close`, `rename`... are its own members), and the only branches are the
// imports and `syncFile`, where Darwin needs `fcntl` to reach the drive.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// MARK: - The C library, by its own names

private func cOpen(_ path: UnsafePointer<CChar>, _ flags: Int32, _ mode: mode_t) -> Int32 { open(path, flags, mode) }
private func cClose(_ fd: Int32) -> Int32 { close(fd) }
private func cWrite(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int { write(fd, bytes, count) }
private func cFsync(_ fd: Int32) -> Int32 { fsync(fd) }
private func cTruncate(_ path: UnsafePointer<CChar>, _ size: off_t) -> Int32 { truncate(path, size) }
private func cRename(_ from: UnsafePointer<CChar>, _ to: UnsafePointer<CChar>) -> Int32 { rename(from, to) }
private func cUnlink(_ path: UnsafePointer<CChar>) -> Int32 { unlink(path) }
private func cMkdir(_ path: UnsafePointer<CChar>, _ mode: mode_t) -> Int32 { mkdir(path, mode) }

/// How much a sync must achieve: every sync point of the engine is one of these (`Engine.docc/Recovery.md`
/// lists them).
package enum SyncKind: Sendable, Equatable, CustomStringConvertible {
    /// The bytes are on stable storage when the call returns: a power cut after it loses none of them.
    /// Linux: `fdatasync` (files), `fsync` (directories). Darwin: `fcntl(F_FULLFSYNC)`, which flushes the
    /// drive's cache (plain `fsync` there does not), falling back to `fsync` where the file system refuses it.
    case durable
    /// Everything written before the call reaches stable storage before anything written after it; it may
    /// not be there yet when the call returns. Linux: as `.durable` (it has nothing cheaper that orders).
    /// Darwin: `fcntl(F_BARRIERFSYNC)`, falling back to `F_FULLFSYNC`, then `fsync`.
    case ordered

    package var description: String { self == .durable ? "durable" : "ordered" }
}

/// An errno value with its system description.
public struct SystemErrno: Error, Sendable, CustomStringConvertible, Equatable {
    public let code: Int32
    public init(_ code: Int32) { self.code = code }
    public var description: String { String(cString: strerror(code)) + " (errno \(code))" }
    public static let noSpace = SystemErrno(ENOSPC)
    public static let ioError = SystemErrno(EIO)
    public static let wouldBlock = SystemErrno(EWOULDBLOCK)
    public static let noEntry = SystemErrno(ENOENT)
    public static let exists = SystemErrno(EEXIST)
}

enum Syscalls {
    static func fail(_ call: String, _ path: String, _ err: Int32 = errno) -> StorageError {
        require(err != EBADF && err != EFAULT, "\(call) on \(path): \(SystemErrno(err)) is a bug in Strata")
        return StorageError(.io, "\(call) failed: \(SystemErrno(err))", file: path, underlying: SystemErrno(err))
    }

    static func open(_ path: String, flags: Int32, mode: mode_t = 0o644) throws -> Int32 {
        while true {
            let fd = path.withCString { cOpen($0, flags | O_CLOEXEC, mode) }
            if fd >= 0 { return fd }
            if errno == EINTR { continue }
            throw fail("open", path)
        }
    }

    static func close(_ fd: Int32) {
        _ = cClose(fd)
    }

    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws {
        var done = 0
        while done < bytes.count {
            let n = cWrite(fd, bytes.baseAddress! + done, bytes.count - done)
            if n < 0 {
                if errno == EINTR { continue }
                throw fail("write", path)
            }
            done += n
        }
    }

    /// Syncs the file (or directory) open as `fd` as `kind` asks: the one place where a sync becomes a call.
    static func sync(_ fd: Int32, _ kind: SyncKind, isDirectory: Bool, path: String) throws {
        #if canImport(Darwin)
        // Apple's fsync(2): "fsync() does not flush the drive's cache"; F_FULLFSYNC does, and F_BARRIERFSYNC
        // orders the writes before it ahead of those after it. File systems that support neither (some
        // network and FAT volumes) answer ENOTSUP or EINVAL: fsync is then the most there is.
        var commands: [Int32] = kind == .durable ? [F_FULLFSYNC] : [F_BARRIERFSYNC, F_FULLFSYNC]
        while let command = commands.first {
            if fcntl(fd, command) != -1 { return }
            switch errno {
            case EINTR: continue
            case ENOTSUP, EINVAL, ENOTTY: commands.removeFirst()
            default: throw fail(command == F_FULLFSYNC ? "fcntl(F_FULLFSYNC)" : "fcntl(F_BARRIERFSYNC)", path)
            }
        }
        try retrying("fsync", path) { cFsync(fd) }
        #else
        if isDirectory {
            try retrying("fsync", path) { cFsync(fd) }
        } else {
            try retrying("fdatasync", path) { fdatasync(fd) }
        }
        #endif
    }

    /// Calls `call` until it does not fail with EINTR; -1 otherwise becomes the error of `name`.
    private static func retrying(_ name: String, _ path: String, _ call: () -> Int32) throws {
        while true {
            if call() == 0 { return }
            if errno == EINTR { continue }
            throw fail(name, path)
        }
    }

    /// The number of names the open file has: 0 once it was removed, or replaced by a rename.
    static func linkCount(_ fd: Int32, path: String) throws -> Int {
        var st = stat()
        while true {
            if fstat(fd, &st) == 0 { return Int(st.st_nlink) }
            if errno == EINTR { continue }
            throw fail("fstat", path)
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
            if path.withCString({ cTruncate($0, off_t(size)) }) == 0 { return }
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
        let r = from.withCString { f in to.withCString { t in cRename(f, t) } }
        if r != 0 { throw fail("rename to \(to)", from) }
    }

    static func unlink(_ path: String) throws {
        if path.withCString({ cUnlink($0) }) != 0 { throw fail("unlink", path) }
    }

    static func mkdir(_ path: String) throws {
        if path.withCString({ cMkdir($0, 0o755) }) != 0 && errno != EEXIST { throw fail("mkdir", path) }
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

    static func syncDirectory(_ path: String, _ kind: SyncKind) throws {
        let fd = try open(path, flags: O_RDONLY | O_DIRECTORY)
        defer { close(fd) }
        try sync(fd, kind, isDirectory: true, path: path)
    }

    /// `path` with every symbolic link, `.` and `..` resolved (`realpath`), as far as it exists: the missing
    /// rest is appended as written. One file reached under two spellings gets one answer. `complete`: the whole
    /// path existed.
    static func resolvedPath(_ path: String) -> (path: String, complete: Bool) {
        var existing = path
        var missing: [Substring] = []
        while !existing.isEmpty {
            if let resolved = existing.withCString({ realpath($0, nil) }) {
                defer { free(resolved) }
                let base = String(cString: resolved)
                if missing.isEmpty { return (base, true) }
                return ((base == "/" ? "" : base) + "/" + missing.reversed().joined(separator: "/"), false)
            }
            guard let slash = existing.lastIndex(of: "/") else { break }
            let component = existing[existing.index(after: slash)...]
            if !component.isEmpty { missing.append(component) }
            existing = slash == existing.startIndex ? "/" : String(existing[..<slash])
        }
        return (path, false)
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

    /// Takes an exclusive `flock` on `fd`, waiting while another open file holds it.
    static func lockWaiting(_ fd: Int32, path: String) throws {
        try retrying("flock", path) { flock(fd, LOCK_EX) }
    }

    /// Releases a `flock` taken on `fd` (the file stays open).
    static func unlock(_ fd: Int32, path: String) {
        _ = flock(fd, LOCK_UN)
    }

    /// Reads `path` from byte `offset` to its end with `pread`: a file another process may shorten meanwhile
    /// (a mapping of it would fault on the lost pages; a read just returns fewer bytes).
    static func readFile(_ path: String, from offset: Int) throws -> [UInt8] {
        let fd = try open(path, flags: O_RDONLY)
        defer { close(fd) }
        return try read(fd, from: offset, path: path)
    }

    /// Reads `fd` from `offset` to its end with `pread` (a small file, such as CURRENT, in one call).
    static func read(_ fd: Int32, from offset: Int, path: String) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 256)
        var done = 0
        while true {
            if done == out.count { out += [UInt8](repeating: 0, count: max(out.count, 64 * 1024)) }
            let n = try out.withUnsafeMutableBytes { buffer -> Int in
                while true {
                    let n = pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset + done))
                    if n >= 0 { return n }
                    if errno != EINTR { throw fail("pread", path) }
                }
            }
            if n == 0 { break }
            done += n
            if done < out.count && out.count == 256 { break }  // a short first read: the whole file was there
        }
        out.removeLast(out.count - done)
        return out
    }

    /// This process's identity (`getpid`).
    static var processID: Int32 { getpid() }

    /// Whether process `pid` exists (`kill(pid, 0)`): EPERM means it does, but belongs to someone else.
    static func processExists(_ pid: Int32) -> Bool {
        if kill(pid, 0) == 0 { return true }
        return errno == EPERM
    }

    static func sleep(microseconds: UInt32) {
        _ = usleep(microseconds)
    }

    static let createTruncate = O_WRONLY | O_CREAT | O_TRUNC
    static let createExclusive = O_WRONLY | O_CREAT | O_EXCL
    static let appendOnly = O_WRONLY | O_APPEND
    static let readOnly = O_RDONLY
    static let readWriteCreate = O_RDWR | O_CREAT
}
