
/// The file operations the engine needs, as a protocol so that tests can inject faults and crashes.
///
/// Paths are absolute or relative to the process's working directory; the engine only ever builds them as
/// `directory + "/" + FileName`.
package protocol FileSystem: Sendable {
    func createDirectory(atPath path: String) throws
    func listDirectory(atPath path: String) throws -> [String]
    func fileExists(atPath path: String) -> Bool
    /// Creates `path`, or truncates it when it exists, for appending.
    func createFile(atPath path: String) throws -> any WritableFile
    /// Creates `path` for appending; throws an error whose `isExistingFile` is true when it exists already
    /// (`O_EXCL`): how a shared database's processes never take the same segment number.
    func createNewFile(atPath path: String) throws -> any WritableFile
    /// Opens an existing file for appending after its last byte.
    func openForAppending(atPath path: String) throws -> any WritableFile
    /// The whole file, read-only. Small files and mapped segments alike.
    func map(atPath path: String) throws -> MappedRegion
    func rename(from: String, to: String) throws
    func removeFile(atPath path: String) throws
    func truncateFile(atPath path: String, toSize size: Int) throws
    /// Makes the directory's entries (creations, renames, removals) durable, or ordered before later writes.
    func syncDirectory(atPath path: String, _ kind: SyncKind) throws
    /// Takes an exclusive lock on `path`, creating it; throws `.locked` when another holder has it.
    func lock(atPath path: String) throws -> any FileLock
    /// The bytes of `path` from `offset` to its end, read rather than mapped: a file another process may
    /// shorten meanwhile (shared databases' logs).
    func read(atPath path: String, from offset: Int) throws -> [UInt8]
    /// `path` open for reading as it grows (a shared database's current log).
    func openForReading(atPath path: String) throws -> any ReadableFile
    /// A lock on `path` (created if missing) that its owner takes and releases many times, excluding every
    /// other owner of a lock on the same path, in this process or another (`Database.Options.Sharing`).
    func processLock(atPath path: String) throws -> any ProcessLock
}

/// A file open for reading, which another process may be appending to or shortening.
package protocol ReadableFile: AnyObject, Sendable {
    /// Its size now.
    func size() throws -> Int
    /// Its bytes from `offset` to its end now, read rather than mapped.
    func read(from offset: Int) throws -> [UInt8]
    /// Whether no path names it any more: it was removed, or another file was renamed over it. While it is
    /// open its identity cannot be reused, so a file replaced by an atomic rename is told apart from its
    /// successor for certain.
    func isReplaced() throws -> Bool
}

/// An exclusive lock taken and released around each piece of work: nothing is held between them.
package protocol ProcessLock: AnyObject, Sendable {
    /// Waits until this owner holds the lock.
    func lock() throws
    /// Releases it (the lock's file stays open).
    func unlock()
}

extension StorageError {
    /// Whether the error is a missing file (ENOENT): another process may have removed it since this one read
    /// the manifest that named it.
    package var isMissingFile: Bool { (underlying as? SystemErrno) == .noEntry }
    /// Whether the error is a file that exists already (EEXIST, from `createNewFile`).
    package var isExistingFile: Bool { (underlying as? SystemErrno) == .exists }
}

/// A file open for appending.
package protocol WritableFile: AnyObject, Sendable {
    func append(_ bytes: UnsafeRawBufferPointer) throws
    /// Makes every appended byte durable, or ordered before later writes (``SyncKind``).
    func sync(_ kind: SyncKind) throws
    func close()
    var size: Int { get }
}

/// A held lock; released by `unlock()` or when the holder goes away.
package protocol FileLock: AnyObject, Sendable {
    func unlock()
}

extension WritableFile {
    package func append(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try append($0) }
    }
}

/// Paths as the system resolves them.
package enum FileSystemPaths {
    /// `path` with symbolic links, `.` and `..` resolved as far as it exists (`realpath`), the rest as written:
    /// the identity of a database directory, whichever spelling reached it.
    /// Every `Realm()` asks (its configuration's identity), so paths that exist whole are remembered: a few
    /// system calls per component each time would cost more than the rest of finding the cached Realm.
    package static func resolved(_ path: String) -> String {
        if let known = cache.withLock({ $0[path] }) { return known }
        let (resolved, complete) = Syscalls.resolvedPath(path)
        if complete {
            cache.withLock { cache in
                if cache.count >= 256 { cache.removeAll() }
                cache[path] = resolved
            }
        }
        return resolved
    }

    private static let cache = Locked<[String: String]>([:])
}

// MARK: - The real file system

/// POSIX files: the file system of every real database.
package struct PosixFileSystem: FileSystem {
    package init() {}

    package func createDirectory(atPath path: String) throws { try Syscalls.mkdir(path) }
    package func listDirectory(atPath path: String) throws -> [String] { try Syscalls.listDirectory(path) }
    package func fileExists(atPath path: String) -> Bool { Syscalls.exists(path) }

    package func createFile(atPath path: String) throws -> any WritableFile {
        let fd = try Syscalls.open(path, flags: Syscalls.createTruncate)
        return PosixWritableFile(fd: fd, path: path)
    }

    package func createNewFile(atPath path: String) throws -> any WritableFile {
        let fd = try Syscalls.open(path, flags: Syscalls.createExclusive)
        return PosixWritableFile(fd: fd, path: path)
    }

    package func openForAppending(atPath path: String) throws -> any WritableFile {
        let fd = try Syscalls.open(path, flags: Syscalls.appendOnly)
        let file = PosixWritableFile(fd: fd, path: path)
        file.size = try Syscalls.fileSize(fd, path: path)
        return file
    }

    package func map(atPath path: String) throws -> MappedRegion {
        let fd = try Syscalls.open(path, flags: Syscalls.readOnly)
        defer { Syscalls.close(fd) }
        let size = try Syscalls.fileSize(fd, path: path)
        return try MappedRegion(mapping: fd, count: size, path: path)
    }

    package func rename(from: String, to: String) throws { try Syscalls.rename(from, to) }
    package func removeFile(atPath path: String) throws { try Syscalls.unlink(path) }
    package func truncateFile(atPath path: String, toSize size: Int) throws { try Syscalls.truncate(path, size: size) }
    package func syncDirectory(atPath path: String, _ kind: SyncKind) throws { try Syscalls.syncDirectory(path, kind) }

    package func lock(atPath path: String) throws -> any FileLock {
        let fd = try Syscalls.open(path, flags: Syscalls.readWriteCreate)
        // A lock just released can still be held for a moment by a child process this process is spawning
        // (between fork and exec it shares our open files), so a refusal is retried briefly before it counts.
        var acquired = try Syscalls.tryLock(fd, path: path)
        var attempts = 0
        while !acquired && attempts < 50 {
            Syscalls.sleep(microseconds: 2_000)
            acquired = try Syscalls.tryLock(fd, path: path)
            attempts += 1
        }
        guard acquired else {
            Syscalls.close(fd)
            throw StorageError(
                .locked,
                "the database is open in another process or another Database instance (lock held on LOCK). "
                    + "Close the other one first; in one process, share a single Database.",
                file: path, underlying: SystemErrno.wouldBlock)
        }
        return PosixFileLock(fd: fd)
    }

    package func read(atPath path: String, from offset: Int) throws -> [UInt8] { try Syscalls.readFile(path, from: offset) }

    package func openForReading(atPath path: String) throws -> any ReadableFile {
        PosixReadableFile(fd: try Syscalls.open(path, flags: Syscalls.readOnly), path: path)
    }

    package func processLock(atPath path: String) throws -> any ProcessLock {
        PosixProcessLock(fd: try Syscalls.open(path, flags: Syscalls.readWriteCreate), path: path)
    }
}

final class PosixWritableFile: WritableFile, @unchecked Sendable {
    private var fd: Int32
    private let path: String
    var size: Int = 0

    init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }

    deinit { close() }

    func append(_ bytes: UnsafeRawBufferPointer) throws {
        require(fd >= 0, "append to a closed file \(path)")
        try Syscalls.writeAll(fd, bytes, path: path)
        size += bytes.count
    }

    func sync(_ kind: SyncKind) throws {
        require(fd >= 0, "sync of a closed file \(path)")
        try Syscalls.sync(fd, kind, isDirectory: false, path: path)
    }

    func close() {
        if fd >= 0 {
            Syscalls.close(fd)
            fd = -1
        }
    }
}

/// No lock: a read-only open beside the process that holds the real one (`Options.readBesideWriter`).
final class NoFileLock: FileLock {
    func unlock() {}
}

final class PosixReadableFile: ReadableFile, @unchecked Sendable {
    private let fd: Int32
    private let path: String
    init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }
    deinit { Syscalls.close(fd) }
    func size() throws -> Int { try Syscalls.fileSize(fd, path: path) }
    func isReplaced() throws -> Bool { try Syscalls.linkCount(fd, path: path) == 0 }
    func read(from offset: Int) throws -> [UInt8] { try Syscalls.read(fd, from: offset, path: path) }
}

/// `flock` on a file kept open: the lock comes and goes, the descriptor stays.
final class PosixProcessLock: ProcessLock, @unchecked Sendable {
    private let fd: Int32
    private let path: String
    init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }
    deinit { Syscalls.close(fd) }
    func lock() throws { try Syscalls.lockWaiting(fd, path: path) }
    func unlock() { Syscalls.unlock(fd, path: path) }
}

final class PosixFileLock: FileLock, @unchecked Sendable {
    private var fd: Int32
    init(fd: Int32) { self.fd = fd }
    deinit { unlock() }
    func unlock() {
        if fd >= 0 {
            Syscalls.close(fd)
            fd = -1
        }
    }
}
