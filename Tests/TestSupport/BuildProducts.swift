import Foundation

/// Where `swift build` put the package's executables, so that tests can run them as child processes.
public enum BuildProducts {
    /// The directory of the running test binary: on Linux the `.xctest` executable itself sits beside the
    /// package's products; on macOS the `.xctest` is a bundle in that directory, loaded by Xcode's runner.
    public static var testBinaryDirectory: URL {
        #if os(macOS)
        if let bundle = Bundle.allBundles.first(where: { $0.bundlePath.hasSuffix(".xctest") }) {
            return bundle.bundleURL.deletingLastPathComponent()
        }
        #endif
        let binary = Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])
        return binary.resolvingSymlinksInPath().deletingLastPathComponent()
    }

    /// The path of the built executable `name`, or nil when it was not built beside the tests (looking a few
    /// directories up, in case of bundles).
    public static func executable(_ name: String) -> String? {
        var dir = testBinaryDirectory
        for _ in 0..<4 {
            let candidate = dir.appendingPathComponent(name).path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            dir = dir.deletingLastPathComponent()
        }
        return nil
    }
}
