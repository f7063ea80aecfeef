/// The one error type of the storage engine.
///
/// Every error carries a code, a message written for a person, and the context that person asks for next:
/// the file (relative to the database directory), the offset in it, and the underlying system error.
public struct StorageError: Error, Sendable, CustomStringConvertible {
    /// A small, extensible classification of storage errors.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        /// Bytes read from disk failed a check: a checksum, a magic number, a length or a bound.
        public static let corrupted = Code(name: "corrupted")
        /// The operating system refused an operation (the errno is in `underlying`).
        public static let io = Code(name: "io")
        /// A caller passed something outside the documented limits.
        public static let invalidArgument = Code(name: "invalidArgument")
        /// The file was written by a newer format version than this build understands.
        public static let formatTooNew = Code(name: "formatTooNew")
        /// Another process (or another `Database` in this process) holds the database's lock.
        public static let locked = Code(name: "locked")
        /// The database was closed, or an earlier write failure made it refuse further writes.
        public static let closed = Code(name: "closed")
        /// Too many snapshots are alive at once (see `Database.Options.maximumLiveSnapshots`).
        public static let tooManySnapshots = Code(name: "tooManySnapshots")
        /// Encrypted bytes did not authenticate, or the database's encryption and the key given disagree (a key
        /// for a plain database, none for an encrypted one).
        public static let decryptionFailed = Code(name: "decryptionFailed")
        public var description: String { name }
    }

    public var code: Code
    /// What happened, where, the likely cause and what to do.
    public var message: String
    /// The file concerned, relative to the database directory.
    public var file: String?
    /// The byte offset in `file` where the problem was found.
    public var offset: Int?
    /// The system error behind an `.io` error.
    public var underlying: (any Error & Sendable)?

    public init(
        _ code: Code, _ message: String, file: String? = nil, offset: Int? = nil,
        underlying: (any Error & Sendable)? = nil
    ) {
        self.code = code
        self.message = message
        self.file = file
        self.offset = offset
        self.underlying = underlying
    }

    public var description: String {
        var where_ = ""
        if let file {
            where_ = file
            if let offset { where_ += " at offset \(offset)" }
            where_ += ": "
        }
        return "\(code.name): \(where_)\(message)"
    }
}

extension StorageError {
    /// A check on bytes from disk failed.
    static func corrupted(_ message: String, file: String?, offset: Int?) -> StorageError {
        StorageError(.corrupted, message, file: file, offset: offset)
    }

    static func invalidArgument(_ message: String) -> StorageError {
        StorageError(.invalidArgument, message)
    }

    /// The same error pointing at another file and a base offset, for parsers that only see a byte range.
    func located(file: String, baseOffset: Int = 0) -> StorageError {
        var copy = self
        if copy.file == nil { copy.file = file }
        if let offset = copy.offset { copy.offset = offset + baseOffset } else { copy.offset = baseOffset }
        return copy
    }
}
