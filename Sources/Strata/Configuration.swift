import Engine
import Foundation

extension Realm {
    /// How a Realm is opened: where, with which types, and which schema version.
    public struct Configuration: @unchecked Sendable {
        /// The file (a directory, for Strata) of the Realm. Setting it clears `inMemoryIdentifier`.
        public var fileURL: URL? {
            didSet { if fileURL != nil { _inMemoryIdentifier = nil } }
        }
        private var _inMemoryIdentifier: String?
        /// The name of an in-memory Realm, shared by every Realm opened with it in this process while one is
        /// open. Setting it clears `fileURL`.
        public var inMemoryIdentifier: String? {
            get { _inMemoryIdentifier }
            set {
                _inMemoryIdentifier = newValue
                if newValue != nil { fileURL = nil }
            }
        }
        /// A 64-byte key: the file is created encrypted (AES-256-GCM per block and log record) and opens only with
        /// it. Another length is a programmer error, as in RealmSwift. See the README, "Encryption at rest".
        public var encryptionKey: Data?
        public var readOnly: Bool
        public var schemaVersion: UInt64
        public var migrationBlock: MigrationBlock?
        public var deleteRealmIfMigrationNeeded: Bool
        public var shouldCompactOnLaunch: (@Sendable (Int, Int) -> Bool)?
        /// The model classes of this Realm. When nil, every model class of the program (found at open in the
        /// Swift runtime's type metadata, as RealmSwift finds them): classes whose model is invalid or whose
        /// class name another model class shares are left out, and join the schema when first used.
        public var objectTypes: [Object.Type]?
        public var maximumNumberOfActiveVersions: UInt?
        public var seedFilePath: URL?
        /// When migration work runs (Strata's addition). `.online`, the default: open returns at once;
        /// objects pass through `transformObjects` closures when read and are rewritten in the background.
        /// `.blocking`: every transform runs inside open, as in Realm.
        public var migrationMode: MigrationMode = .online
        /// Whether objects left by an online migration are rewritten by a background thread (the default).
        /// When false, they stay pending (and are read through their transforms) until
        /// `Realm.finishMigrations()` or `waitForMigrations()` is called, for apps that want no background
        /// I/O during launch. Strata's addition.
        public var backgroundMigration = true
        /// How much memory the engine keeps for this file (Strata's addition). The defaults are smaller on
        /// iOS, tvOS, watchOS and visionOS, where heap counts against the process's memory limit; an app
        /// extension may want smaller still. The first open of a file decides for every instance of it.
        public var memoryBudget = MemoryBudget()

        /// The memory the engine keeps for an open file: neither is taken up front, both are upper bounds.
        public struct MemoryBudget: Sendable, Hashable {
            /// Decompressed blocks kept for point reads (filled as blocks are read). Default: 256 MiB, or
            /// 32 MiB on iOS, tvOS, watchOS and visionOS.
            public var blockCacheBytes: Int
            /// Committed writes kept in memory before they are flushed to segments; also bounds what an open
            /// replays into memory. Default: 64 MiB, or 16 MiB on iOS, tvOS, watchOS and visionOS.
            public var memtableBytes: Int

            /// This platform's defaults.
            public init() {
                self.init(blockCacheBytes: MemoryDefaults.blockCacheBytes, memtableBytes: MemoryDefaults.memtableFlushBytes)
            }

            public init(blockCacheBytes: Int, memtableBytes: Int) {
                require(blockCacheBytes >= 0 && memtableBytes > 0, "MemoryBudget: blockCacheBytes must be at least 0 and memtableBytes positive")
                self.blockCacheBytes = blockCacheBytes
                self.memtableBytes = memtableBytes
            }
        }
        /// Whether other processes may open the file at the same time (Strata's addition; the `Multiprocess`
        /// article). `.shared`, the default: an app and its widgets and extensions, or a service and its tools,
        /// open it together, see each other's commits and get each other's notifications, and nothing is locked
        /// while a process is idle. `.exclusive`: this process alone, with no coordination cost; another process
        /// gets `Realm.Error.alreadyOpen`. The first open of a file in a process decides for every instance of it.
        /// In-memory Realms are always exclusive.
        public var processSharing: ProcessSharing = Configuration.initialProcessSharing.withLock { $0 }
        /// Whether the managed objects, `Results` and collections of this Realm take part in Swift's Observation
        /// (Strata's addition): a read inside `withObservationTracking` (a SwiftUI view's body on iOS 17 and later)
        /// records what it read, and a commit that changes it calls the tracking's `onChange` once. Off by default:
        /// Observation cannot say whether a tracking is listening, so every read records, and the first read of each
        /// record outside a loop's cursor makes it an observation (a registrar): a random lookup takes twice as long
        /// in the Bench (`--observation-tracking`). Unmanaged objects are always observable, as `@Observable`
        /// classes are.
        public var observationTracking = false

        /// Whether every write transaction records what it did as field operations in the file's outbox, in the
        /// same commit as its objects (Strata's addition, for sync and for `Realm.changes(since:)`). Once a file
        /// has captured changes, every write to it does, whatever this says, so that no process's edit is left
        /// out. Every type that is not embedded needs a primary key: open says which do not.
        public var capturesChanges = false

        /// Sync with a server (Strata's addition): the `StrataSync` library's `syncSession` uploads this file's
        /// changes and applies the server's. Setting it turns `capturesChanges` on.
        public var syncConfiguration: SyncConfiguration? {
            didSet { if syncConfiguration != nil { capturesChanges = true } }
        }

        /// The `processSharing` new configurations start with: `.shared`, unless the Bench's `--process-sharing`
        /// measures the object API in the other mode.
        package static let initialProcessSharing = Locked<ProcessSharing>(.shared)

        /// How a Realm file is shared between processes.
        public enum ProcessSharing: Sendable, Hashable {
            /// Any number of processes open the file together.
            case shared
            /// One process holds the file while it is open.
            case exclusive
        }
        /// The file system under a file-backed Realm (tests inject faults through it); nil means the real one.
        var fileSystem: (any FileSystem)?
        /// Whether the engine flushes and merges in the background (tests turn it off to see a commit's segments
        /// as it installed them).
        var backgroundMaintenance = true
        /// Batch bytes at which a migration inside open spills its transaction to segments, so that its memory
        /// stays bounded whatever the file's size (tests make it small).
        var migrationSpillBytes = 8 << 20

        /// When a migration's per-object transforms run.
        public enum MigrationMode: Sendable, Hashable {
            /// Open never waits: transforms run on read and in the background, one object type at a time.
            case online
            /// Realm's timing: every transform runs inside open.
            case blocking
        }

        public init(
            fileURL: URL? = Configuration.defaultFileURL, inMemoryIdentifier: String? = nil, encryptionKey: Data? = nil,
            readOnly: Bool = false, schemaVersion: UInt64 = 0, migrationBlock: MigrationBlock? = nil,
            deleteRealmIfMigrationNeeded: Bool = false, shouldCompactOnLaunch: (@Sendable (Int, Int) -> Bool)? = nil,
            objectTypes: [Object.Type]? = nil, seedFilePath: URL? = nil
        ) {
            self.fileURL = inMemoryIdentifier == nil ? fileURL : nil
            self._inMemoryIdentifier = inMemoryIdentifier
            self.encryptionKey = encryptionKey
            self.readOnly = readOnly
            self.schemaVersion = schemaVersion
            self.migrationBlock = migrationBlock
            self.deleteRealmIfMigrationNeeded = deleteRealmIfMigrationNeeded
            self.shouldCompactOnLaunch = shouldCompactOnLaunch
            self.objectTypes = objectTypes
            self.seedFilePath = seedFilePath
        }

        /// Where RealmSwift would put `default.realm`: the Documents directory on iOS, Application Support
        /// (in a folder named after the bundle identifier, outside the sandbox) on macOS, Library/Caches on
        /// tvOS; on Linux, the working directory.
        public static var defaultFileURL: URL { DefaultLocation.defaultFileURL() }

        private static let defaultStorage = Locked(Configuration())

        /// The configuration `Realm()` uses.
        public static var defaultConfiguration: Configuration {
            get { defaultStorage.withLock { $0 } }
            set { defaultStorage.withLock { $0 = newValue } }
        }

        /// The key that identifies the underlying file among open ones.
        var identity: String {
            if let id = inMemoryIdentifier { return "memory:" + id }
            // A read-only engine cannot serve writable Realms: it is a separate opener (and gets .alreadyOpen).
            // Resolved (`realpath`): one directory reached through a symbolic link or another spelling is one
            // open database, not a second opener that finds it locked.
            return (readOnly ? "file-read-only:" : "file:") + (fileURL.map { FileSystemPaths.resolved($0.standardizedFileURL.path) } ?? "")
        }
    }

    public typealias MigrationBlock = @Sendable (_ migration: Migration, _ oldSchemaVersion: UInt64) -> Void
}

/// The closure that migrates a file to the configuration's schema version (RealmSwift's global name).
public typealias MigrationBlock = Realm.MigrationBlock
