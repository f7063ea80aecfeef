import Dispatch

/// Files in memory, for in-memory databases and for crash tests.
///
/// It remembers, for every file, which bytes were made durable by `sync()` and, for every directory entry,
/// whether a `syncDirectory` made it durable. `simulateCrash()` then forgets everything that was not: what a
/// power cut does to a real disk, at its worst.
package final class MemoryFileSystem: FileSystem {
    final class Inode: @unchecked Sendable {
        var data: [UInt8] = []
        var synced: [UInt8] = []
    }

    struct State {
        var directories: Set<String> = []
        var entries: [String: Inode] = [:]
        var durableEntries: [String: Inode] = [:]
        var locked: [String: Int] = [:]
        /// The process locks per path: one semaphore that every owner of a lock on the path waits on.
        var processLocks: [String: DispatchSemaphore] = [:]
        var nextLockToken = 0
    }

    let state = Locked(State())

    package init() {}

    private static func parent(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return String(path[..<slash])
    }

    package func createDirectory(atPath path: String) throws {
        state.withLock { _ = $0.directories.insert(path) }
    }

    package func listDirectory(atPath path: String) throws -> [String] {
        try state.withLock { s in
            guard s.directories.contains(path) else {
                throw StorageError(.io, "no such directory", file: path, underlying: SystemErrno(2))
            }
            let prefix = path + "/"
            return s.entries.keys.filter { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
        }
    }

    package func fileExists(atPath path: String) -> Bool {
        state.withLock { $0.entries[path] != nil || $0.directories.contains(path) }
    }

    package func createFile(atPath path: String) throws -> any WritableFile {
        try state.withLock { s in
            guard s.directories.contains(Self.parent(path)) else {
                throw StorageError(.io, "no such directory", file: path, underlying: SystemErrno(2))
            }
            let inode = Inode()
            s.entries[path] = inode
            return MemoryWritableFile(fs: self, inode: inode)
        }
    }

    package func createNewFile(atPath path: String) throws -> any WritableFile {
        try state.withLock { s in
            guard s.directories.contains(Self.parent(path)) else {
                throw StorageError(.io, "no such directory", file: path, underlying: SystemErrno(2))
            }
            if s.entries[path] != nil { throw StorageError(.io, "file exists", file: path, underlying: SystemErrno.exists) }
            let inode = Inode()
            s.entries[path] = inode
            return MemoryWritableFile(fs: self, inode: inode)
        }
    }

    package func openForAppending(atPath path: String) throws -> any WritableFile {
        try state.withLock { s in
            guard let inode = s.entries[path] else {
                throw StorageError(.io, "no such file", file: path, underlying: SystemErrno(2))
            }
            return MemoryWritableFile(fs: self, inode: inode)
        }
    }

    package func map(atPath path: String) throws -> MappedRegion {
        try state.withLock { s in
            guard let inode = s.entries[path] else {
                throw StorageError(.io, "no such file", file: path, underlying: SystemErrno(2))
            }
            return MappedRegion(copying: inode.data)
        }
    }

    package func rename(from: String, to: String) throws {
        try state.withLock { s in
            guard let inode = s.entries.removeValue(forKey: from) else {
                throw StorageError(.io, "no such file", file: from, underlying: SystemErrno(2))
            }
            s.entries[to] = inode
        }
    }

    package func removeFile(atPath path: String) throws {
        try state.withLock { s in
            guard s.entries.removeValue(forKey: path) != nil else {
                throw StorageError(.io, "no such file", file: path, underlying: SystemErrno(2))
            }
        }
    }

    package func truncateFile(atPath path: String, toSize size: Int) throws {
        try state.withLock { s in
            guard let inode = s.entries[path] else {
                throw StorageError(.io, "no such file", file: path, underlying: SystemErrno(2))
            }
            if size < inode.data.count { inode.data.removeLast(inode.data.count - size) }
            if size < inode.synced.count { inode.synced.removeLast(inode.synced.count - size) }
        }
    }

    /// Both kinds make the entries durable here: the model has no power cut between an ordered sync and
    /// the writes after it.
    package func syncDirectory(atPath path: String, _ kind: SyncKind) throws {
        state.withLock { s in
            let prefix = path + "/"
            s.durableEntries = s.durableEntries.filter { !$0.key.hasPrefix(prefix) }
            for (name, inode) in s.entries where name.hasPrefix(prefix) { s.durableEntries[name] = inode }
        }
    }

    package func lock(atPath path: String) throws -> any FileLock {
        try state.withLock { s in
            if s.locked[path] != nil {
                throw StorageError(
                    .locked, "the database is already open (lock held on LOCK); share a single Database.",
                    file: path)
            }
            s.nextLockToken += 1
            s.locked[path] = s.nextLockToken
            if s.entries[path] == nil { s.entries[path] = Inode() }
            return MemoryFileLock(fs: self, path: path, token: s.nextLockToken)
        }
    }

    package func read(atPath path: String, from offset: Int) throws -> [UInt8] {
        try state.withLock { s in
            guard let inode = s.entries[path] else {
                throw StorageError(.io, "no such file", file: path, underlying: SystemErrno(2))
            }
            return offset < inode.data.count ? Array(inode.data[offset...]) : []
        }
    }

    package func openForReading(atPath path: String) throws -> any ReadableFile {
        try state.withLock { s in
            guard let inode = s.entries[path] else {
                throw StorageError(.io, "no such file", file: path, underlying: SystemErrno(2))
            }
            return MemoryReadableFile(fs: self, inode: inode)
        }
    }

    package func processLock(atPath path: String) throws -> any ProcessLock {
        state.withLock { s in
            if s.entries[path] == nil { s.entries[path] = Inode() }
            let semaphore = s.processLocks[path] ?? DispatchSemaphore(value: 1)
            s.processLocks[path] = semaphore
            return MemoryProcessLock(semaphore: semaphore)
        }
    }

    func append(_ bytes: UnsafeRawBufferPointer, to inode: Inode) {
        state.withLock { _ in inode.data.append(contentsOf: bytes) }
    }

    func sync(_ inode: Inode) {
        state.withLock { _ in inode.synced = inode.data }
    }

    func size(of inode: Inode) -> Int { state.withLock { _ in inode.data.count } }
    func isNamed(_ inode: Inode) -> Bool { state.withLock { s in s.entries.values.contains { $0 === inode } } }

    func bytes(of inode: Inode, from offset: Int) -> [UInt8] {
        state.withLock { _ in offset < inode.data.count ? Array(inode.data[offset...]) : [] }
    }

    func unlock(_ path: String, token: Int) {
        state.withLock { s in
            if s.locked[path] == token { s.locked[path] = nil }
        }
    }

    /// Forgets everything not yet durable, as a power cut would, and releases every lock.
    ///
    /// - Parameter keepUnsyncedBytes: For each file, how many of its unsynced appended bytes survive anyway
    ///   (a torn write); by default none.
    package func simulateCrash(keepUnsyncedBytes: (_ path: String, _ unsyncedCount: Int) -> Int = { _, _ in 0 }) {
        state.withLock { s in
            var survivors: [String: Inode] = [:]
            for (name, inode) in s.durableEntries {
                let fresh = Inode()
                var data = inode.synced
                if inode.data.count > inode.synced.count, inode.data.starts(with: inode.synced) {
                    let extra = inode.data.count - inode.synced.count
                    let keep = min(max(keepUnsyncedBytes(name, extra), 0), extra)
                    data.append(contentsOf: inode.data[inode.synced.count..<(inode.synced.count + keep)])
                }
                fresh.data = data
                fresh.synced = data
                survivors[name] = fresh
            }
            s.entries = survivors
            s.durableEntries = survivors
            s.locked = [:]
        }
    }

    /// A copy of one file's current bytes (tests use it to damage files).
    package func contents(ofFile path: String) -> [UInt8]? {
        state.withLock { $0.entries[path]?.data }
    }

    /// Replaces one file's bytes, durably (tests use it to damage files).
    package func replaceContents(ofFile path: String, with bytes: [UInt8]) {
        state.withLock { s in
            let inode = s.entries[path] ?? Inode()
            inode.data = bytes
            inode.synced = bytes
            s.entries[path] = inode
            s.durableEntries[path] = inode
        }
    }
}

final class MemoryWritableFile: WritableFile, @unchecked Sendable {
    let fs: MemoryFileSystem
    let inode: MemoryFileSystem.Inode
    init(fs: MemoryFileSystem, inode: MemoryFileSystem.Inode) {
        self.fs = fs
        self.inode = inode
    }
    func append(_ bytes: UnsafeRawBufferPointer) throws { fs.append(bytes, to: inode) }
    func sync(_ kind: SyncKind) throws { fs.sync(inode) }
    func close() {}
    var size: Int { fs.size(of: inode) }
}

final class MemoryReadableFile: ReadableFile, @unchecked Sendable {
    let fs: MemoryFileSystem
    let inode: MemoryFileSystem.Inode
    init(fs: MemoryFileSystem, inode: MemoryFileSystem.Inode) {
        self.fs = fs
        self.inode = inode
    }
    func size() throws -> Int { fs.size(of: inode) }
    func read(from offset: Int) throws -> [UInt8] { fs.bytes(of: inode, from: offset) }
    func isReplaced() throws -> Bool { !fs.isNamed(inode) }
}

final class MemoryProcessLock: ProcessLock, @unchecked Sendable {
    let semaphore: DispatchSemaphore
    init(semaphore: DispatchSemaphore) { self.semaphore = semaphore }
    func lock() throws { semaphore.wait() }
    func unlock() { semaphore.signal() }
}

final class MemoryFileLock: FileLock, @unchecked Sendable {
    let fs: MemoryFileSystem
    let path: String
    let token: Int
    init(fs: MemoryFileSystem, path: String, token: Int) {
        self.fs = fs
        self.path = path
        self.token = token
    }
    deinit { unlock() }
    func unlock() { fs.unlock(path, token: token) }
}
