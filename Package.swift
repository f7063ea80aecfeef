// swift-tools-version:6.0
import PackageDescription

let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "Strata",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .library(name: "Strata", targets: ["Strata"]),
        .library(name: "Engine", targets: ["Engine"]),
        .executable(name: "Bench", targets: ["Bench"]),
        .executable(name: "strata", targets: ["strata"]),
        .library(name: "StrataTool", targets: ["StrataTool"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.5.0"),
        // AES-GCM and HKDF for encryption at rest (`Database.Options.encryptionKey`).
        .package(url: "https://github.com/apple/swift-crypto", from: "3.0.0"),
        // `swift package generate-documentation` (the DocC catalogs of Strata and Engine).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.4.0"),
        // Counts allocations in tests and the Bench (linked into those executables only, never the library).
        .package(url: "https://github.com/ordo-one/malloc-interposer", from: "1.6.1"),
        // A peer of the Bench (GRDB 7 on SQLite): never linked into the library.
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.0.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CLZ4",
            pkgConfig: "liblz4",
            providers: [.apt(["liblz4-dev"]), .brew(["lz4"])]
        ),
        .systemLibrary(
            name: "CXXHash",
            pkgConfig: "libxxhash",
            providers: [.apt(["libxxhash-dev"]), .brew(["xxhash"])]
        ),
        .target(
            name: "Engine",
            dependencies: ["CLZ4", "CXXHash", .product(name: "Crypto", package: "swift-crypto")],
            // The guide to the engine's source, for readers of the tree.
            exclude: ["README.md"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "Strata",
            dependencies: ["Engine", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSettings
        ),
        .target(
            name: "StrataTool",
            dependencies: ["Strata", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "strata",
            dependencies: ["StrataTool"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "TestSupport",
            dependencies: ["Engine", .product(name: "MallocInterposerSwift", package: "malloc-interposer")],
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
        .executableTarget(
            name: "StrataCrashChild",
            dependencies: ["Strata"],
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
            dependencies: ["Strata", "TestSupport", "StrataCrashChild", "StrataToolHost", "strata", "TodoList", "MigrationWalkthrough"],
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
            dependencies: ["Engine", "TestSupport", "EngineCrashChild"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "FuzzTargets",
            dependencies: ["Engine", "Strata"],
            path: "Fuzz/Targets",
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "Fuzz",
            dependencies: ["FuzzTargets"],
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
            dependencies: ["Strata", "Engine", "TestSupport", "CSQLite", "CLMDB", "CRocksDB", .product(name: "GRDB", package: "GRDB.swift")],
            path: "Benchmarks/BenchKit",
            swiftSettings: strictSettings
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
            dependencies: ["BenchKit"],
            path: "Benchmarks/BenchTests",
            swiftSettings: strictSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
