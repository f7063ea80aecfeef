import Engine
import RealmFile
import Foundation
import Atomics

/// One open database file shared by every Realm instance of it in this process: the engine, and the
/// schema as stored in the file.
final class SharedFile: @unchecked Sendable {
    let identity: String
    let database: Database
    let displayName: String
    let fileURL: URL?
    /// Keeps an in-memory Realm's files alive while any instance uses it.
    let memory: MemoryFileSystem?
    /// The key the file was opened with (every Realm of it in this process must give the same).
    let encryptionKey: [UInt8]?
    /// The stored schema as last committed or registered in memory, guarded.
    let storedSchema: Locked<StoredSchema?>
    /// How records of types with a pending online migration are read, by type name (see TypeMigration).
    let migrations = Locked<[String: TypeMigration]>([:])
    /// Rewrites what online migrations left behind.
    let migrator = BackgroundMigrator()
    /// The poll and the directory watch of a shared file for other processes' commits (`SharedFile+Processes.swift`).
    let watcher = Locked<(timer: any DispatchSourceTimer, watch: DirectoryWatch?)?>(nil)
    /// Where the poll and the watch run (serial).
    let otherProcessesQueue = DispatchQueue(label: "Strata.otherProcesses", qos: .utility)
    /// Another process committed a schema this process has not read yet.
    let schemaIsStale = Locked(false)
    /// The task (or, outside tasks, the thread) whose Realm holds this file's write transaction now, and that
    /// Realm: another Realm that begins a write in the same task or thread would wait for it forever.
    let writeHolder = Locked<(context: WriteContext, core: ObjectIdentifier)?>(nil)

    /// Forgets `core` as the holder of the file's write (a later writer's record stays).
    func writeEnded(by core: RealmCore) {
        writeHolder.withLock { if $0?.core == ObjectIdentifier(core) { $0 = nil } }
    }

    /// Where a write runs: its task, or its thread outside tasks. A task hops threads but runs one piece of
    /// code at a time, so a write in a task can only end in that task.
    struct WriteContext: Equatable, @unchecked Sendable {  // @unchecked: compared only, never used to reach the task
        let id: AnyHashable

        static var current: WriteContext {
            WriteContext(id: withUnsafeCurrentTask { $0.map { AnyHashable($0) } } ?? AnyHashable(ObjectIdentifier(Thread.current)))
        }
    }

    private struct WeakFile { weak var file: SharedFile? }
    private static let open = Locked<[String: WeakFile]>([:])
    private static let memoryFileSystems = Locked<[String: MemoryFileSystem]>([:])

    init(
        identity: String, database: Database, displayName: String, fileURL: URL?, memory: MemoryFileSystem?, schema: StoredSchema?,
        encryptionKey: [UInt8]? = nil
    ) {
        self.identity = identity
        self.encryptionKey = encryptionKey
        self.database = database
        self.displayName = displayName
        self.fileURL = fileURL
        self.memory = memory
        self.storedSchema = Locked(schema)
        migrator.file = self
    }

    func migration(for typeName: String) -> TypeMigration? { migrations.withLock { $0[typeName] } }

    // MARK: Change notifications

    /// What recent commits touched (see Notifications.swift).
    private let commitLog = Locked(CommitLog())
    private let cores = Locked<[RealmCore.WeakCore]>([])

    /// Change observers registered on the instances of this file.
    let observers = Counter()

    /// Whether any open instance of this file has a change observer (commits build change sets only then).
    func isObserved() -> Bool { observers.current > 0 }

    /// The change sets commits have built (tests: a commit nobody observes builds none).
    let changeSetsBuilt = Counter()

    /// Objects blocking migrations wrote as their enumeration closure returned, keeping no state (tests).
    let objectsStreamed = Counter()

    /// Types blocking migrations rewrote whole into their emptied partition (`Migration.rewritingWhole`; tests).
    let typesRewrittenWhole = Counter()

    func recordCommit(sequence: UInt64, _ summary: ChangeSummary) { commitLog.withLock { $0.record(sequence, summary) } }

    func changes(after a: UInt64, through c: UInt64) -> ChangeSummary { commitLog.withLock { $0.changes(after: a, through: c) } }

    func attach(_ core: RealmCore) {
        cores.withLock { list in
            list.removeAll { $0.core == nil }
            list.append(RealmCore.WeakCore(core: core))
        }
    }

    /// The instances of this file still open.
    func coresOpen() -> [RealmCore] { cores.withLock { $0.compactMap(\.core) } }

    /// Tells every other instance of this file that `core` committed.
    func committed(by core: RealmCore) {
        let others = cores.withLock { $0.compactMap(\.core).filter { $0 !== core } }
        for other in others { other.otherInstanceCommitted() }
    }

    deinit {
        stopWatchingOtherProcesses()
        // try?: a close that fails leaves its commits in the write-ahead log, which the next open replays.
        try? database.close()
        // An in-memory Realm's data lives while an instance does, as in Realm.
        if let memory, identity.hasPrefix("memory:") {
            let id = String(identity.dropFirst("memory:".count))
            Self.memoryFileSystems.withLock { d in
                if d[id] === memory { d[id] = nil }
            }
        }
    }

    /// The shared file for `config`, opening the engine when no instance has it open. `identity`: the
    /// configuration's, when the caller has it already (`Realm.Configuration.identity` resolves the path).
    static func shared(for config: Realm.Configuration, identity: String? = nil) throws -> SharedFile {
        let identity = identity ?? config.identity
        return try open.withLock { files in
            if let f = files[identity]?.file {
                // Realm's rule and words: one file, one key, while it is open in this process.
                guard f.encryptionKey == config.encryptionKey.map(Array.init) else {
                    throw Realm.Error(
                        .fail, "Realm at path '\(config.fileURL?.path ?? identity)' already opened with different encryption key.",
                        fileURL: config.fileURL, suggestion: "Open every Realm of this file with the same encryptionKey, or close the others first.")
                }
                return f
            }
            let file = try openFile(config, identity: identity)
            files[identity] = WeakFile(file: file)
            return file
        }
    }

    private static func location(_ config: Realm.Configuration) throws -> (path: String, fs: any FileSystem, memory: MemoryFileSystem?, name: String) {
        if let id = config.inMemoryIdentifier {
            let fs = memoryFileSystems.withLock { d in
                if let fs = d[id] { return fs }
                let fs = MemoryFileSystem()
                d[id] = fs
                return fs
            }
            return ("/" + id, fs, fs, "in-memory Realm '\(id)'")
        }
        guard let url = config.fileURL else {
            throw Realm.Error(.fail, "Realm.Configuration has neither fileURL nor inMemoryIdentifier; set one of them")
        }
        if config.fileSystem == nil, let converted = convertedLocation(config) {
            return (converted, PosixFileSystem(), nil, url.lastPathComponent)
        }
        return (url.path, config.fileSystem ?? PosixFileSystem(), nil, url.lastPathComponent)
    }

    /// The Strata database a RealmSwift file named by `config` converts into (`RealmFileImport`), when the
    /// configuration names one: a converted database beside the path, or a Realm file at it.
    private static func convertedLocation(_ config: Realm.Configuration) -> String? {
        guard let url = config.fileURL else { return nil }
        let converted = RealmFileImport.convertedPath(for: url.path)
        if FileManager.default.fileExists(atPath: converted + "/CURRENT") { return converted }
        return RealmFileImport.isRealmFile(atPath: url.path, encrypted: config.encryptionKey != nil) ? converted : nil
    }

    private static func openFile(_ config: Realm.Configuration, identity: String) throws -> SharedFile {
        let (path, fs, memory, name) = try location(config)
        let key = Self.checkedKey(config.encryptionKey)
        if memory == nil, let url = config.fileURL, path == RealmFileImport.convertedPath(for: url.path) {
            // A RealmSwift file: converted once, at its first open here (a no-op once it has been).
            try RealmFileImport.convertIfNeeded(source: url.path, encryptionKey: key)
        }
        if let seed = config.seedFilePath, memory == nil, !fs.fileExists(atPath: path) {
            // A new file starts as a copy of the seed Realm, as in Realm.
            do {
                try FileManager.default.copyItem(atPath: seed.path, toPath: path)
                // try?: the seed's lock file, when it has one, is not needed (no storage read).
                try? FileManager.default.removeItem(atPath: path + "/LOCK")
            } catch {
                throw Realm.Error(.fileAccess, "copying the seed file \(seed.path) to \(name) failed: \(error)", fileURL: config.fileURL)
            }
        }
        if config.readOnly && !fs.fileExists(atPath: path) {
            // RealmSwift's code and text.
            throw Realm.Error(
                .fileNotFound, "Failed to open Realm file at path '\(path)': No such file or directory", fileURL: config.fileURL,
                suggestion: "The configuration is read-only, so \(name) is not created: open it once without readOnly, or bundle it with the app.")
        }
        var options = Database.Options()
        options.createIfMissing = !config.readOnly
        options.readOnly = config.readOnly
        options.encryptionKey = key
        options.blockCacheBytes = config.memoryBudget.blockCacheBytes
        options.memtableFlushBytes = config.memoryBudget.memtableBytes
        options.sharing = memory == nil && config.processSharing == .shared ? .shared : .exclusive
        options.backgroundMaintenance = config.backgroundMaintenance
        // `maximumNumberOfActiveVersions` is enforced when a write begins (`RealmCore.beginWrite`), not by the
        // engine: a Realm that could not take the snapshot of its own commit would silently stay behind it.
        let database: Database
        do {
            database = try Database.open(at: path, options: options, fileSystem: fs)
        } catch let e as StorageError {
            if e.code == .io, let errno = e.underlying as? SystemErrno, errno.code == EACCES || errno.code == EPERM || errno.code == EROFS {
                // RealmSwift's code and text for a file the process may not open.
                throw Realm.Error(
                    .filePermissionDenied,
                    "Failed to open Realm file at path '\(path)': \(SystemProcess.errorDescription(errno.code)). "
                        + "Please use a path where your app has \(config.readOnly ? "read" : "read-write") permissions.",
                    fileURL: config.fileURL, underlying: e,
                    suggestion: "\(e.file.map { "The file refused was \($0). " } ?? "")Give this process access to \(name), or open a copy it can read.")
            }
            if e.code == .io, let errno = e.underlying as? SystemErrno, errno.code == ENOMEM {
                // A mapping refused for lack of address space (iOS gives apps little): RealmSwift's code 9.
                throw Realm.Error(
                    .addressSpaceExhausted,
                    "Failed to open Realm file at path '\(path)': mmap() failed: \(SystemProcess.errorDescription(errno.code)) (\(e))",
                    fileURL: config.fileURL, underlying: e,
                    suggestion: "Close other Realms and release frozen objects and long-lived snapshots, which keep old "
                        + "segments mapped; compacting the file (shouldCompactOnLaunch) makes it smaller to map. On iOS the "
                        + "com.apple.developer.kernel.extended-virtual-addressing entitlement gives an app more address space.")
            }
            if e.code == .decryptionFailed {
                // RealmSwift's code (fileAccess) and words for a file its key does not open.
                throw Realm.Error(
                    .fileAccess, "Unable to open a realm at path '\(path)': Realm file decryption failed (\(e))", fileURL: config.fileURL,
                    underlying: e,
                    suggestion: key == nil
                        ? "Give Realm.Configuration.encryptionKey the 64-byte key this file was written with."
                        : e.file?.hasPrefix("MANIFEST") ?? true
                            ? "Check that encryptionKey is the key this file was written with, and that the file was written encrypted."
                            : "The key opened the file's manifest, so \(e.file ?? "a file") was damaged or replaced: run strata verify "
                                + "and strata salvage with --key-file.")
            }
            let code: Realm.Error.Code = e.code == .locked ? .alreadyOpen : (e.code == .corrupted ? .invalidDatabase : .fileAccess)
            throw Realm.Error(code, "cannot open \(name): \(e)", fileURL: config.fileURL, underlying: e)
        }
        if let shouldCompact = config.shouldCompactOnLaunch, !config.readOnly {
            try compactIfAsked(database, shouldCompact, name: name, fileURL: config.fileURL)
        }
        let schema: StoredSchema?
        do {
            schema = try database.snapshot().get(StoredSchema.schemaKey, in: StoredSchema.metadataPartition)
                .map { try StoredSchema.decode($0, file: name) }
        } catch let e as StorageError {
            throw Realm.Error(.invalidDatabase, "cannot read the schema of \(name): \(e)", fileURL: config.fileURL, underlying: e)
        }
        return SharedFile(
            identity: identity, database: database, displayName: name, fileURL: config.fileURL, memory: memory, schema: schema,
            encryptionKey: key)
    }

    /// The key's bytes, after RealmSwift's check: a key that is not 64 bytes long is a programmer error (a trap
    /// with Realm's message), as `RLMRealmConfiguration.encryptionKey` raises.
    static func checkedKey(_ key: Data?) -> [UInt8]? {
        guard let key else { return nil }
        guard key.count == Cipher.keyBytes else {
            fatalError("Encryption key must be exactly 64 bytes long (this one is \(key.count) bytes).")
        }
        return [UInt8](key)
    }

    /// `shouldCompactOnLaunch(totalBytes, usedBytes)`: total is what the segments and memtable take, used the
    /// bytes of the live keys and values (a scan, paid only by callers who ask).
    private static func compactIfAsked(
        _ database: Database, _ shouldCompact: @Sendable (Int, Int) -> Bool, name: String, fileURL: URL?
    ) throws {
        if database.isShared, !database.otherLiveSessions().isEmpty {
            // As in Realm: compaction on launch is skipped while another process (an extension, a widget) has the
            // file open, so that a launch never makes it wait for a rewrite.
            StrataLog.info("shouldCompactOnLaunch: \(name) is open in another process; not compacted at this launch")
            return
        }
        let stats = database.statistics()
        var used = 0
        do {
            let snapshot = try database.snapshot()
            for p in snapshot.partitions {
                try snapshot.scan(p) { k, v in
                    used += k.count + v.count
                    return true
                }
            }
            if shouldCompact(stats.segmentBytes + stats.memtableBytes, used) { try database.compact() }
        } catch {
            throw realmError(error, fileURL: fileURL)
        }
    }

    static func fileExists(for config: Realm.Configuration) -> Bool {
        // try?: a configuration without a usable location has no file (no storage read).
        guard let (path, fs, _, _) = try? location(config) else { return false }
        // A RealmSwift file not converted yet is a file too.
        if let url = config.fileURL, path == RealmFileImport.convertedPath(for: url.path), !fs.fileExists(atPath: path + "/CURRENT") { return true }
        return fs.fileExists(atPath: path + "/CURRENT")
    }

    /// Whether a Realm of the file `config` names is open in this process.
    static func isOpen(_ config: Realm.Configuration) -> Bool {
        open.withLock { $0[config.identity]?.file } != nil
    }

    static func deleteFiles(for config: Realm.Configuration) throws -> Bool {
        let identity = config.identity
        if open.withLock({ $0[identity]?.file }) != nil {
            throw Realm.Error(.alreadyOpen, "cannot delete the files of \(config.fileURL?.lastPathComponent ?? identity): it is open", fileURL: config.fileURL)
        }
        if let url = config.fileURL, config.inMemoryIdentifier == nil,
            [url.path, RealmFileImport.convertedPath(for: url.path)].contains(where: isOpenInAnotherProcess)
        {
            throw Realm.Error(
                .alreadyOpen, "cannot delete the files of \(url.lastPathComponent): another process has it open", fileURL: config.fileURL,
                suggestion: "Close the Realm in the other process (an app extension or widget) first.")
        }
        if let id = config.inMemoryIdentifier {
            return memoryFileSystems.withLock { $0.removeValue(forKey: id) } != nil
        }
        guard let url = config.fileURL else { return false }
        // A configuration naming a converted RealmSwift file: its data is in the Strata database beside it.
        let paths = [url.path, RealmFileImport.convertedPath(for: url.path), RealmFileImport.stagingPath(for: url.path)]
        var deleted = false
        for path in paths where FileManager.default.fileExists(atPath: path) {
            try FileManager.default.removeItem(atPath: path)
            deleted = true
        }
        return deleted
    }

    static func storedSchemaVersion(at url: URL, encryptionKey: Data? = nil) throws -> UInt64 {
        var config = Realm.Configuration()
        config.fileURL = url
        config.encryptionKey = encryptionKey
        let notInitialized = Realm.Error(
            .invalidDatabase, "Realm at path '\(url.path)' has not been initialized.", fileURL: url,
            suggestion: "No Realm has been opened at this path yet: open it with Realm(configuration:) first.")
        if let f = open.withLock({ $0[config.identity]?.file }) {
            if f.encryptionKey != checkedKey(encryptionKey) {
                throw Realm.Error(.fileAccess, "Unable to open a realm at path '\(url.path)': Realm file decryption failed", fileURL: url)
            }
            if let s = f.storedSchema.withLock({ $0 }) { return s.schemaVersion }
            throw notInitialized
        }
        let converted = RealmFileImport.convertedPath(for: url.path)
        let isConverted = FileManager.default.fileExists(atPath: converted + "/CURRENT")
        if !isConverted, RealmFileImport.isRealmFile(atPath: url.path, encrypted: encryptionKey != nil) {
            // A RealmSwift file not converted yet: its version is in its own metadata table.
            do {
                guard let version = try RealmFile(path: url.path, encryptionKey: checkedKey(encryptionKey)).schemaVersion else { throw notInitialized }
                return version
            } catch let e as RealmFileError {
                throw RealmFileImport.realmError(e, url)
            }
        }
        // A Strata database is a directory: a plain file (or a device) there cannot be one.
        var isDirectory: ObjCBool = false
        if !isConverted, FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue {
            throw Realm.Error(
                .fileAccess, "Unable to open a Realm at path '\(url.path)': it is a file, not a Strata database directory.", fileURL: url)
        }
        guard isConverted || FileManager.default.fileExists(atPath: url.path + "/CURRENT") else { throw notInitialized }
        config.readOnly = true
        let file = try shared(for: config)
        if let s = file.storedSchema.withLock({ $0 }) { return s.schemaVersion }
        throw notInitialized
    }
}

/// A count read and advanced from any thread.
final class Counter: Sendable {
    private let value = ManagedAtomic<Int>(0)

    func add(_ n: Int) { value.wrappingIncrement(by: n, ordering: .relaxed) }

    var current: Int { value.load(ordering: .relaxed) }
}
