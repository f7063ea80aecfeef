// swift-tools-version:6.0
import Foundation
import PackageDescription

let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

// LZ4 and XXH3: on Linux the engine links the system liblz4 and libxxhash; on Apple platforms, which have
// neither, and on Linux with STRATA_PORTABLE=1, it uses its own Swift implementations (byte-compatible: the
// same files either way). In portable mode the system-library targets are not part of the package at all.
// On a Mac (building for macOS, iOS or any Apple platform) the system-library targets are left out altogether,
// so that SwiftPM never looks for liblz4 or libxxhash with pkg-config there.
#if os(Linux)
let linuxHost = true
#else
let linuxHost = false
#endif
let portableCodecs = ProcessInfo.processInfo.environment["STRATA_PORTABLE"] == "1" || !linuxHost
let systemCodecPlatforms: [Platform] = [.linux, .android]
let codecTargets: [Target] = portableCodecs ? [] : [
    .systemLibrary(
        name: "CLZ4",
        pkgConfig: "liblz4",
        providers: [.apt(["liblz4-dev"])]
    ),
    .systemLibrary(
        name: "CXXHash",
        pkgConfig: "libxxhash",
        providers: [.apt(["libxxhash-dev"])]
    ),
]
let codecDependencies: [Target.Dependency] = portableCodecs ? [] : [
    .target(name: "CLZ4", condition: .when(platforms: systemCodecPlatforms)),
    .target(name: "CXXHash", condition: .when(platforms: systemCodecPlatforms)),
]
let codecSettings: [SwiftSetting] = portableCodecs ? [] : [
    .define("STRATA_SYSTEM_CODECS", .when(platforms: systemCodecPlatforms)),
]

let package = Package(
    name: "Strata",
    // iOS 17 and macOS 14: the Observation framework's floor (nothing here needs iOS 18's Synchronization).
    platforms: [.macOS(.v14), .iOS(.v17), .tvOS(.v17), .watchOS(.v10), .visionOS(.v1)],
    products: [
        .library(name: "Strata", targets: ["Strata"]),
        .library(name: "Engine", targets: ["Engine"]),
        .executable(name: "Bench", targets: ["Bench"]),
        .executable(name: "strata", targets: ["strata"]),
        .library(name: "StrataTool", targets: ["StrataTool"]),
        // The client's sync session (Foundation's URLSession): no server code reaches an app through it.
        .library(name: "StrataSync", targets: ["StrataSync"]),
        // The sync server: state all in PostgreSQL (`Sources/StrataSyncServer`).
        .executable(name: "strata-sync-server", targets: ["strata-sync-server"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.5.0"),
        // Atomic words and references where iOS 17 has no `Synchronization`.
        .package(url: "https://github.com/apple/swift-atomics", from: "1.2.0"),
        // AES-GCM and HKDF for encryption at rest (`Database.Options.encryptionKey`).
        .package(url: "https://github.com/apple/swift-crypto", "3.0.0"..<"5.0.0"),
        // `swift package generate-documentation` (the DocC catalogs of Strata and Engine).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.4.0"),
        // Counts allocations in tests and the Bench (linked into those executables only, never the library).
        .package(url: "https://github.com/ordo-one/malloc-interposer", from: "1.6.1"),
        // Combine's API where the platform has no Combine (Linux): RealmSwift's publishers (`Combine/`).
        .package(url: "https://github.com/OpenCombine/OpenCombine", from: "0.14.0"),
        // A peer of the Bench (GRDB 7 on SQLite): never linked into the library.
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.0.0"),
        // The sync server only (never linked into `Strata` or `StrataSync`): HTTP, PostgreSQL, signed tokens.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.0.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.21.0"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.0.0"),
    ],
    targets: codecTargets + [
        // One C function: a call Swift source cannot make (an allocating initializer through a class's
        // vtable), for making model instances of classes whose `init()` is not `required`.
        .target(name: "CSwiftRuntime"),
        .target(
            name: "Engine",
            dependencies: codecDependencies + ["CSwiftRuntime",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Atomics", package: "swift-atomics"),
            ],
            // The guide to the engine's source, for readers of the tree.
            exclude: ["README.md"],
            // The privacy manifest an App Store upload needs (the file-timestamp API: stat, fstat).
            resources: [.copy("PrivacyInfo.xcprivacy")],
            swiftSettings: strictSettings + codecSettings
        ),
        // A reader of RealmSwift's `.realm` files (formats 10, 11, 20-24, encrypted too): knows nothing of Strata's
        // object layer, which uses it to convert a Realm file at first open.
        .target(
            name: "RealmFile",
            dependencies: [
                "Engine",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            // What the reader checks, each check against realm-core's code.
            exclude: ["README.md"],
            swiftSettings: strictSettings
        ),
        // Files in Realm's format made here (a writer of every shape the reader meets, a generator of random
        // files) and the reader's fuzz hooks: for tests, the fuzz targets and the Bench, never shipped.
        .target(
            name: "RealmFileTesting",
            dependencies: [
                "RealmFile",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            path: "Tests/RealmFileTesting",
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "RealmFileTests",
            dependencies: ["RealmFile", "RealmFileTesting", "TestSupport"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "Strata",
            dependencies: [
                "Engine", "RealmFile", .product(name: "Logging", package: "swift-log"), .product(name: "Atomics", package: "swift-atomics"),
                .product(name: "OpenCombine", package: "OpenCombine", condition: .when(platforms: [.linux])),
                .product(name: "OpenCombineDispatch", package: "OpenCombine", condition: .when(platforms: [.linux])),
            ],
            swiftSettings: strictSettings
        ),
        // Sync's wire protocol: the messages a client and the server exchange (versioned JSON).
        .target(
            name: "StrataSyncWire",
            dependencies: ["Strata"],
            swiftSettings: strictSettings
        ),
        // The client's sync session over URLSession.
        .target(
            name: "StrataSync",
            dependencies: ["Engine", "Strata", "StrataSyncWire"],
            swiftSettings: strictSettings
        ),
        // The sync server as a library (run by `strata-sync-server` and by the tests' server processes).
        .target(
            name: "StrataSyncServer",
            dependencies: [
                "Engine", "Strata", "StrataSyncWire",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "strata-sync-server",
            dependencies: ["StrataSyncServer", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: strictSettings
        ),
        .target(
            name: "StrataTool",
            dependencies: ["Strata", "RealmFile", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "strata",
            dependencies: ["StrataTool"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "TestSupport",
            dependencies: ["Engine", .product(name: "MallocInterposerSwift", package: "malloc-interposer"), .product(name: "Atomics", package: "swift-atomics")],
            path: "Tests/TestSupport",
            swiftSettings: strictSettings
        ),
        // Built in release mode by a test (its own scratch path), to show that trap messages survive `-O`.
        .executableTarget(
            name: "StrataTrapChild",
            dependencies: ["Strata"],
            path: "Tests/StrataTrapChild",
            swiftSettings: strictSettings
        ),
        // Run by MainThreadAutorefreshTests: a main-thread Realm hears of another thread's commits.
        .executableTarget(
            name: "MainQueueChild",
            dependencies: ["Strata"],
            path: "Tests/MainQueueChild",
            swiftSettings: strictSettings
        ),
        // Run by ModelDiscoveryCostTests: a program with a few thousand types, for the cost of discovery.
        .executableTarget(
            name: "DiscoveryCostChild",
            dependencies: ["Strata"],
            path: "Tests/DiscoveryCostChild",
            exclude: ["generate.py"],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "StrataCrashChild",
            dependencies: ["Strata", "StrataSync"],
            path: "Tests/StrataCrashChild",
            swiftSettings: strictSettings
        ),
        // Examples/: small programs, built and run by the tests so that they never rot.
        .executableTarget(
            name: "TodoList",
            dependencies: ["Strata"],
            path: "Examples/TodoList",
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "MigrationWalkthrough",
            dependencies: ["Strata"],
            path: "Examples/MigrationWalkthrough",
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "StrataToolHost",
            dependencies: ["Strata", "StrataTool"],
            path: "Tests/StrataToolHost",
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "StrataTests",
            dependencies: ["Strata", "RealmFile", "RealmFileTesting", "TestSupport", "StrataCrashChild", "StrataToolHost", "strata", "TodoList", "MigrationWalkthrough", "MainQueueChild", "DiscoveryCostChild",
                // Sync end to end: the client's session, and the server run as processes on a throwaway PostgreSQL.
                "StrataSync", "StrataSyncWire", "strata-sync-server", .product(name: "Atomics", package: "swift-atomics"),
                .product(name: "OpenCombine", package: "OpenCombine", condition: .when(platforms: [.linux])),
                .product(name: "OpenCombineDispatch", package: "OpenCombine", condition: .when(platforms: [.linux]))],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "EngineCrashChild",
            dependencies: ["Engine", "TestSupport"],
            path: "Tests/EngineCrashChild",
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "EngineTests",
            // FuzzTargets: the fuzzers' checksum repair, which the encryption tests use to forge edits, and its reading
            // of a segment's paged index, which the paged-index tests use to find what to damage.
            dependencies: ["Engine", "TestSupport", "EngineCrashChild", "FuzzTargets", .product(name: "Atomics", package: "swift-atomics")],
            swiftSettings: strictSettings + codecSettings
        ),
        .target(
            name: "FuzzTargets",
            dependencies: ["Engine", "Strata", "RealmFile", "RealmFileTesting", "StrataSyncWire"],
            path: "Fuzz/Targets",
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "Fuzz",
            dependencies: ["FuzzTargets", "Engine"],
            path: "Fuzz/Entry",
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "FuzzReplayTests",
            dependencies: ["FuzzTargets"],
            swiftSettings: strictSettings
        ),
        // Peers for the Bench only: never linked into the library.
        .systemLibrary(
            name: "CSQLite",
            path: "Benchmarks/CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
        ),
        .systemLibrary(
            name: "CLMDB",
            path: "Benchmarks/CLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"]), .brew(["lmdb"])]
        ),
        // The reference LSM engine of the sustained workload (Debian's librocksdb-dev, through its C API).
        .systemLibrary(
            name: "CRocksDB",
            path: "Benchmarks/CRocksDB",
            pkgConfig: "rocksdb",
            providers: [.apt(["librocksdb-dev"]), .brew(["rocksdb"])]
        ),
        .target(
            name: "BenchKit",
            dependencies: ["Strata", "RealmFile", "RealmFileTesting", "Engine", "TestSupport", "CSQLite", "CLMDB", "CRocksDB", .product(name: "GRDB", package: "GRDB.swift"),
                // The sync server's rows: the server and a client session in the Bench's process.
                "StrataSync", "StrataSyncServer", .product(name: "PostgresNIO", package: "postgres-nio"), .product(name: "Logging", package: "swift-log")],
            path: "Benchmarks/BenchKit",
            swiftSettings: strictSettings + codecSettings
        ),
        .executableTarget(
            name: "Bench",
            dependencies: [
                "BenchKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Benchmarks/Bench",
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "BenchTests",
            dependencies: ["BenchKit", "TestSupport"],
            path: "Benchmarks/BenchTests",
            swiftSettings: strictSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
