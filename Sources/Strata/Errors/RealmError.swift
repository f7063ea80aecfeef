import Engine
import Foundation

extension Realm {
    /// Errors thrown by the object layer, shaped like RealmSwift's `Realm.Error` so that ported `catch`
    /// clauses keep working (`catch Realm.Error.schemaMismatch`).
    public struct Error: Swift.Error, Sendable, CustomStringConvertible, LocalizedError, Equatable {
        public enum Code: Int, Sendable, Equatable {
            case fail = 1
            case fileAccess = 2
            case filePermissionDenied = 3
            case fileExists = 4
            case fileNotFound = 5
            case incompatibleLockFile = 8
            case fileFormatUpgradeRequired = 6
            case schemaMismatch = 10
            case alreadyOpen = 11
            case invalidDatabase = 12
        }

        public let code: Code
        /// What went wrong and what to do next.
        public let message: String
        public var fileURL: URL?
        /// The storage error behind this one, when the cause is in the engine.
        public var underlying: (any Swift.Error & Sendable)?

        public init(_ code: Code, _ message: String, fileURL: URL? = nil, underlying: (any Swift.Error & Sendable)? = nil) {
            self.code = code
            self.message = message
            self.fileURL = fileURL
            self.underlying = underlying
        }

        public var localizedDescription: String { message }
        public var errorDescription: String? { message }
        public var description: String { "Realm.Error.\(code): \(message)" }
        public var userInfo: [String: Any] { [NSLocalizedDescriptionKey: message] }

        public static func == (a: Error, b: Error) -> Bool { a.code == b.code && a.message == b.message }

        public static let fail = Code.fail
        public static let fileAccess = Code.fileAccess
        public static let schemaMismatch = Code.schemaMismatch
        public static let alreadyOpen = Code.alreadyOpen
        public static let invalidDatabase = Code.invalidDatabase
        public static let fileNotFound = Code.fileNotFound

    }
}

extension Realm.Error.Code {
    /// Lets `catch Realm.Error.schemaMismatch` match by code.
    public static func ~= (code: Realm.Error.Code, error: any Swift.Error) -> Bool {
        (error as? Realm.Error)?.code == code
    }
}

/// Converts an engine error into the object layer's, keeping it as `underlying`.
func realmError(_ error: any Swift.Error, fileURL: URL?) -> Realm.Error {
    if let e = error as? Realm.Error { return e }
    if let s = error as? StorageError {
        let code: Realm.Error.Code = switch s.code {
        case .corrupted: .invalidDatabase
        case .locked: .alreadyOpen
        case .io: .fileAccess
        default: .fail
        }
        return Realm.Error(code, s.description, fileURL: fileURL, underlying: s)
    }
    return Realm.Error(.fail, "\(error)", fileURL: fileURL, underlying: nil)
}
