import Foundation
import Testing
import TestSupport

/// Trap messages survive release builds: `StrataTrapChild`, built here with `swift build -c release` (its own
/// scratch directory, so as not to wait on the test run's), makes a programmer error and must print Realm's
/// message, where `precondition` would print only "Swift runtime failure".
@Suite struct ReleaseTrapTests {
    /// The package root, from this file's place in it.
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func run(_ executable: String, _ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
        try runProcess(executable, arguments)
    }

    /// Run once, in the system-codec build: the portable run (STRATA_PORTABLE=1) changes only which LZ4 and
    /// XXH3 the engine links, not what a trap prints, and a second release build of the child was the longest
    /// step of CI's portable run (about five minutes on two cores).
    @Test(.enabled(if: ProcessInfo.processInfo.environment["STRATA_PORTABLE"] != "1", "the codec does not change what a trap prints"))
    func programmerErrorsPrintRealmsMessageInAReleaseBuild() throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("strata-release-trap-build").path
        let build = try Self.run("/usr/bin/env", [
            "swift", "build", "-c", "release", "--product", "StrataTrapChild", "--package-path", Self.packageRoot.path,
            "--scratch-path", scratch,
        ])
        try #require(build.status == 0, "the release build failed: \(build.err.suffix(2000))")
        let child = scratch + "/release/StrataTrapChild"
        let dir = try TemporaryDirectory()
        let query = try Self.run(child, ["query", dir.child("q.realm")])
        #expect(query.status != 0)
        #expect(query.err.contains("Invalid predicate: 'TrapItem' has no property 'nope'"), "\(query.err.prefix(600))")
        let key = try Self.run(child, ["primaryKey", dir.child("k.realm")])
        #expect(key.status != 0)
        #expect(key.err.contains("Invalid value 'x' of type 'String' for 'int' property 'TrapItem.id'."), "\(key.err.prefix(600))")
        // A model with an initializer of its own and no `init()`: Swift's own trap, as under RealmSwift.
        let initializer = try Self.run(child, ["initializer", dir.child("i.realm")])
        #expect(initializer.status != 0)
        #expect(initializer.err.contains("Use of unimplemented initializer 'init()'"), "\(initializer.err.prefix(600))")
    }
}
