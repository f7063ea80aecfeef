import Engine
import Foundation

extension Realm {
    /// Errors thrown by the object layer, shaped like RealmSwift's `Realm.Error` so that ported `catch`
    /// clauses keep working (`catch Realm.Error.schemaMismatch`).
    public struct Error: Swift.Error, Sendable, CustomStringConvertible, LocalizedError, Equatable {
        /// RealmSwift's codes (`RLMError`), with their numbers.
        public enum Code: Int, Sendable, Equatable {
            case fail = 1
            case fileAccess = 2
            case filePermissionDenied = 3
            case fileExists = 4
            case fileNotFound = 5
            case fileFormatUpgradeRequired = 6
            case incompatibleLockFile = 8
            case addressSpaceExhausted = 9
            case schemaMismatch = 10
            case alreadyOpen = 12
            case invalidInput = 13
            case outOfDiskSpace = 14
            case incompatibleSession = 15
            case unsupportedFileFormatVersion = 16
            case fileOperationFailed = 19
            case invalidDatabase = 20
        }

        public let code: Code
        /// What went wrong and what to do next.
        public let message: String
        public var fileURL: URL?
        /// The storage error behind this one, when the cause is in the engine.
        public var underlying: (any Swift.Error & Sendable)?

        /// What to do next, and which file, where `message` is RealmSwift's exact text and says neither.
        public var recoverySuggestion: String?

        public init(
            _ code: Code, _ message: String, fileURL: URL? = nil, underlying: (any Swift.Error & Sendable)? = nil,
            suggestion: String? = nil
        ) {
            self.code = code
            self.message = message
            self.fileURL = fileURL
            self.underlying = underlying
            self.recoverySuggestion = suggestion
        }

        public var localizedDescription: String { message }
        public var errorDescription: String? { message }
        public var description: String { "Realm.Error.\(code): \(message)" + (recoverySuggestion.map { "\n" + $0 } ?? "") }
        public var userInfo: [String: Any] { [NSLocalizedDescriptionKey: message] }

        public static func == (a: Error, b: Error) -> Bool { a.code == b.code && a.message == b.message }

        public static let fail = Code.fail
        public static let fileAccess = Code.fileAccess
        public static let filePermissionDenied = Code.filePermissionDenied
        public static let fileExists = Code.fileExists
        public static let fileNotFound = Code.fileNotFound
        public static let fileFormatUpgradeRequired = Code.fileFormatUpgradeRequired
        public static let incompatibleLockFile = Code.incompatibleLockFile
        public static let addressSpaceExhausted = Code.addressSpaceExhausted
        public static let schemaMismatch = Code.schemaMismatch
        public static let alreadyOpen = Code.alreadyOpen
        public static let invalidInput = Code.invalidInput
        public static let outOfDiskSpace = Code.outOfDiskSpace
        public static let incompatibleSession = Code.incompatibleSession
        public static let unsupportedFileFormatVersion = Code.unsupportedFileFormatVersion
        public static let fileOperationFailed = Code.fileOperationFailed
        public static let invalidDatabase = Code.invalidDatabase
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
        // Bytes of an encrypted file that do not authenticate: RealmSwift's code for a file it cannot decrypt.
        case .decryptionFailed: .fileAccess
        default: .fail
        }
        return Realm.Error(code, s.description, fileURL: fileURL, underlying: s)
    }
    return Realm.Error(.fail, "\(error)", fileURL: fileURL, underlying: nil)
}
