import Engine
import Foundation

/// Where `Realm.Configuration.defaultFileURL` puts `default.realm`: RealmSwift's choice on each platform
/// (`RLMDefaultDirectoryForBundleIdentifier` in realm-swift), so that a ported app finds its files where
/// RealmSwift would have put them.
///
/// - iOS, watchOS, visionOS: the app's Documents directory (not shown to the user on iOS).
/// - tvOS: Library/Caches, since tvOS apps may not write to Documents.
/// - macOS and Mac Catalyst: Application Support, plus a folder named after the bundle identifier (or the
///   executable's name) when the app is not sandboxed, so that two apps never share a file by accident; the
///   folder is created.
/// - Linux and other systems: the working directory, as before (a server or tool chooses its own path).
///
/// The decision is a pure function of its inputs (`directory(for:)`), tested on Linux for every platform;
/// only `Inputs.current` asks the system.
enum DefaultLocation {
    enum Platform: Sendable, CaseIterable {
        case iOS, tvOS, macOS, other
    }

    /// What the decision depends on.
    struct Inputs: Sendable {
        var platform: Platform
        /// `FileManager`'s user-domain directories (nil where the system has none).
        var documents: String?
        var caches: String?
        var applicationSupport: String?
        /// Whether the process runs in the App Sandbox (`APP_SANDBOX_CONTAINER_ID` is set).
        var isSandboxed: Bool
        var bundleIdentifier: String?
        var executableName: String?
        var currentDirectory: String

        static var current: Inputs {
            let fm = FileManager.default
            func path(_ d: FileManager.SearchPathDirectory) -> String? { fm.urls(for: d, in: .userDomainMask).first?.path }
            return Inputs(
                platform: currentPlatform,
                documents: path(.documentDirectory), caches: path(.cachesDirectory),
                applicationSupport: path(.applicationSupportDirectory),
                isSandboxed: ProcessInfo.processInfo.environment["APP_SANDBOX_CONTAINER_ID"] != nil,
                bundleIdentifier: Bundle.main.bundleIdentifier,
                executableName: Bundle.main.executableURL?.lastPathComponent,
                currentDirectory: fm.currentDirectoryPath)
        }

        static var currentPlatform: Platform {
            #if os(tvOS)
            return .tvOS
            #elseif os(macOS) || targetEnvironment(macCatalyst)
            return .macOS
            #elseif os(iOS) || os(watchOS) || os(visionOS)
            return .iOS
            #else
            return .other
            #endif
        }
    }

    /// The directory `default.realm` goes in, and whether it must be created first.
    static func directory(for inputs: Inputs) -> (path: String, create: Bool) {
        switch inputs.platform {
        case .iOS:
            return (inputs.documents ?? inputs.currentDirectory, false)
        case .tvOS:
            return (inputs.caches ?? inputs.currentDirectory, false)
        case .macOS:
            guard let support = inputs.applicationSupport else { return (inputs.currentDirectory, false) }
            if inputs.isSandboxed { return (support, false) }
            guard let name = inputs.bundleIdentifier ?? inputs.executableName else { return (support, false) }
            return (support + "/" + name, true)
        case .other:
            return (inputs.currentDirectory, false)
        }
    }

    /// The default file's URL on this platform: on Apple platforms decided once per process (it asks
    /// FileManager, the bundle and the environment, and may create a folder), elsewhere the working directory
    /// of the moment.
    static func defaultFileURL() -> URL {
        guard Inputs.currentPlatform == .other else { return appDefaultFileURL }
        return URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent("default.realm")
    }

    private static let appDefaultFileURL = defaultFileURL(.current)

    /// The default file's URL for `inputs`, creating its directory where RealmSwift does.
    static func defaultFileURL(_ inputs: Inputs) -> URL {
        let (directory, create) = directory(for: inputs)
        // try?: as RealmSwift, a directory that cannot be made is left for the open to report, naming the path.
        if create { try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) }
        return URL(fileURLWithPath: directory).appendingPathComponent("default.realm")
    }
}
