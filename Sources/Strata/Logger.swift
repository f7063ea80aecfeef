import Engine
import Foundation
import Logging

/// How much a `Logger` reports, RealmSwift's levels from nothing (`.off`) to everything (`.all`).
public enum LogLevel: Int, Sendable, Comparable, CustomStringConvertible {
    case off, fatal, error, warn, info, detail, debug, trace, all

    public static func < (a: LogLevel, b: LogLevel) -> Bool { a.rawValue < b.rawValue }

    public var description: String {
        switch self {
        case .off: "Off"
        case .fatal: "Fatal"
        case .error: "Error"
        case .warn: "Warn"
        case .info: "Info"
        case .detail: "Detail"
        case .debug: "Debug"
        case .trace: "Trace"
        case .all: "All"
        }
    }
}

/// RealmSwift's logger: `Logger.shared = Logger(level: .warn) { level, message in print(message) }` receives what
/// Strata reports at that level or more severe (a migration that failed in the background, a file reset by
/// `deleteRealmIfMigrationNeeded`…). Strata also reports through swift-log, under the label "strata".
public final class Logger: Sendable {
    private let state: Locked<LogLevel>
    private let function: @Sendable (LogLevel, String) -> Void

    /// The level below which messages are dropped.
    public var level: LogLevel {
        get { state.withLock { $0 } }
        set { state.withLock { $0 = newValue } }
    }

    public init(level: LogLevel, logFunction: @escaping @Sendable (LogLevel, String) -> Void) {
        state = Locked(level)
        function = logFunction
    }

    /// Reports `message` at `level` when the logger's level lets it through.
    public func log(level: LogLevel, message: String) {
        guard level != .off, level <= self.level else { return }
        function(level, message)
    }

    private static let current = Locked<Logger?>(nil)

    /// The logger Strata reports to (none by default).
    public static var shared: Logger? {
        get { current.withLock { $0 } }
        set { current.withLock { $0 = newValue } }
    }
}

/// Strata's own reports: to swift-log and to `Logger.shared`.
enum StrataLog {
    private static let swiftLog = Logging.Logger(label: "strata")

    static func info(_ message: String) {
        swiftLog.info("\(message)")
        Logger.shared?.log(level: .info, message: message)
    }

    static func warning(_ message: String) {
        swiftLog.warning("\(message)")
        Logger.shared?.log(level: .warn, message: message)
    }

    static func error(_ message: String) {
        swiftLog.error("\(message)")
        Logger.shared?.log(level: .error, message: message)
    }
}
