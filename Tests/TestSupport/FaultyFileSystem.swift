import Engine

/// Wraps a file system and fails chosen operations: the nth append or sync with an errno, or a "crash" at the
/// nth sync, after which every operation fails (the test then calls `MemoryFileSystem.simulateCrash()`).
///
/// Counting is deterministic when the database runs without background maintenance.
package final class FaultyFileSystem: FileSystem {
    package enum Fault: Sendable {
        /// The nth append (1-based) writes half its bytes, then fails with `errno`.
        case failAppend(at: Int, errno: Int32)
        /// The nth sync (file or directory, 1-based) fails with `errno`; the data stays unsynced.
        case failSync(at: Int, errno: Int32)
        /// The nth sync does not happen: the "machine" stops there.
        case crash(atSync: Int)
        /// Every mapping of a file fails with `errno` (ENOMEM: no address space left).
        case failMap(errno: Int32)
    }

    struct State {
        var faults: [Fault] = []
        var appends = 0
        var syncs = 0
        var crashed = false
        var faultsFired = 0
        var syncLog: [SyncRecord] = []
    }

    /// One sync the engine asked for: the file (its name) or "directory", and the kind.
    package struct SyncRecord: Sendable, Equatable, CustomStringConvertible {
        package var name: String
        package var kind: SyncKind
        package var description: String { "\(name): \(kind)" }
    }

    let base: any FileSystem
    private let state = Locked(State())

    package init(base: any FileSystem, faults: [Fault] = []) {
        self.base = base
        state.withLock { $0.faults = faults }
    }

    package var syncCount: Int { state.withLock { $0.syncs } }
    package var appendCount: Int { state.withLock { $0.appends } }
    package var hasCrashed: Bool { state.withLock { $0.crashed } }
    package var faultsFired: Int { state.withLock { $0.faultsFired } }
    /// Every sync asked for so far, in order.
    package var syncLog: [SyncRecord] { state.withLock { $0.syncLog } }

    /// Adds a fault; counts are since this file system was made (see `syncCount` and `appendCount`).
    package func addFault(_ fault: Fault) { state.withLock { $0.faults.append(fault) } }

    /// Removes every pending fault (the disk has space again).
    package func clearFaults() { state.withLock { $0.faults = [] } }

    static let crashError = StorageError(.io, "simulated crash: the machine stopped", underlying: SystemErrno.ioError)

    func checkAlive() throws {
        if state.withLock({ $0.crashed }) { throw Self.crashError }
    }

    /// Counts a sync and decides what happens to it.
    func onSync(_ name: String, _ kind: SyncKind) throws {
        let outcome: (any Error)? = state.withLock { s in
            if s.crashed { return Self.crashError }
            s.syncs += 1
            s.syncLog.append(SyncRecord(name: name, kind: kind))
            for f in s.faults {
                switch f {
                case .failSync(let n, let e) where n == s.syncs:
                    s.faultsFired += 1
                    return StorageError(.io, "injected fsync failure: \(SystemErrno(e))", underlying: SystemErrno(e))
                case .crash(let n) where n == s.syncs:
                    s.crashed = true
                    s.faultsFired += 1
                    return Self.crashError
                default: continue
                }
            }
            return nil
        }
        if let outcome { throw outcome }
    }

    /// Counts an append; returns the errno to fail it with after a partial write, if any.
    func onAppend() throws -> Int32? {
        try state.withLock { s in
            if s.crashed { throw Self.crashError }
            s.appends += 1
            for case .failAppend(let n, let e) in s.faults where n == s.appends {
                s.faultsFired += 1
                return e
            }
            return nil
        }
    }

    package func createDirectory(atPath path: String) throws { try checkAlive(); try base.createDirectory(atPath: path) }
    package func listDirectory(atPath path: String) throws -> [String] { try checkAlive(); return try base.listDirectory(atPath: path) }
    package func fileExists(atPath path: String) -> Bool { base.fileExists(atPath: path) }
    package func createFile(atPath path: String) throws -> any WritableFile {
        try checkAlive()
        return FaultyWritableFile(fs: self, file: try base.createFile(atPath: path), path: path)
    }
    package func createNewFile(atPath path: String) throws -> any WritableFile {
        try checkAlive()
        return FaultyWritableFile(fs: self, file: try base.createNewFile(atPath: path), path: path)
    }
    package func openForAppending(atPath path: String) throws -> any WritableFile {
        try checkAlive()
        return FaultyWritableFile(fs: self, file: try base.openForAppending(atPath: path), path: path)
    }
    package func map(atPath path: String) throws -> MappedRegion {
        try checkAlive()
        let refusal: Int32? = state.withLock { s in
            for case .failMap(let e) in s.faults {
                s.faultsFired += 1
                return e
            }
            return nil
        }
        if let refusal {
            throw StorageError(.io, "mmap failed: \(SystemErrno(refusal))", file: path, underlying: SystemErrno(refusal))
        }
        return try base.map(atPath: path)
    }
    package func rename(from: String, to: String) throws { try checkAlive(); try base.rename(from: from, to: to) }
    package func removeFile(atPath path: String) throws { try checkAlive(); try base.removeFile(atPath: path) }
    package func truncateFile(atPath path: String, toSize size: Int) throws { try checkAlive(); try base.truncateFile(atPath: path, toSize: size) }
    package func syncDirectory(atPath path: String, _ kind: SyncKind) throws {
        try onSync("directory", kind)
        try base.syncDirectory(atPath: path, kind)
    }
    package func lock(atPath path: String) throws -> any FileLock { try checkAlive(); return try base.lock(atPath: path) }
    package func read(atPath path: String, from offset: Int) throws -> [UInt8] { try checkAlive(); return try base.read(atPath: path, from: offset) }
    package func processLock(atPath path: String) throws -> any ProcessLock { try checkAlive(); return try base.processLock(atPath: path) }
    package func openForReading(atPath path: String) throws -> any ReadableFile { try checkAlive(); return try base.openForReading(atPath: path) }
}

final class FaultyWritableFile: WritableFile, @unchecked Sendable {
    let fs: FaultyFileSystem
    let file: any WritableFile
    let path: String
    init(fs: FaultyFileSystem, file: any WritableFile, path: String) {
        self.fs = fs
        self.file = file
        self.path = path
    }
    func append(_ bytes: UnsafeRawBufferPointer) throws {
        if let e = try fs.onAppend() {
            try file.append(UnsafeRawBufferPointer(rebasing: bytes[0..<(bytes.count / 2)]))
            throw StorageError(.io, "injected write failure: \(SystemErrno(e))", underlying: SystemErrno(e))
        }
        try file.append(bytes)
    }
    func sync(_ kind: SyncKind) throws {
        try fs.onSync(String(path.split(separator: "/").last ?? ""), kind)
        try file.sync(kind)
    }
    func close() { file.close() }
    var size: Int { file.size }
}
