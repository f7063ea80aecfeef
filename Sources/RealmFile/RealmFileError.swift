/// The one error type of the Realm file reader.
///
/// Every error names the file and, where the problem is in its bytes, the offset (in the decrypted image for an
/// encrypted file) and what was expected there. Reading a file never traps, however damaged it is: every
/// reference, size and width is checked before it is used.
public struct RealmFileError: Error, Sendable, CustomStringConvertible {
    /// A small, extensible classification.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        /// The bytes break a rule of the format: a reference past the end, a size that does not fit, a cycle.
        public static let corrupted = Code(name: "corrupted")
        /// The file is not a Realm file at all (no `T-DB` mnemonic), or is empty.
        public static let notRealmFile = Code(name: "notRealmFile")
        /// A Realm file of a format this reader does not read (before 10, or after 24).
        public static let unsupportedFormat = Code(name: "unsupportedFormat")
        /// The file is encrypted and no key, or the wrong key, was given; or a key was given for a plain file.
        public static let encryptionKey = Code(name: "encryptionKey")
        /// The operating system refused to open or map the file.
        public static let io = Code(name: "io")
        /// Another process has the file open (a RealmSwift app or extension still using it).
        public static let inUse = Code(name: "inUse")
        public var description: String { name }
    }

    public var code: Code
    /// What was wrong, and what to do.
    public var message: String
    /// The Realm file.
    public var file: String
    /// Where in the file (the decrypted image, for an encrypted file) the problem was found.
    public var offset: Int?
    /// The system error behind an `.io` error.
    public var underlying: (any Error & Sendable)?

    public init(_ code: Code, _ message: String, file: String, offset: Int? = nil, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.file = file
        self.offset = offset
        self.underlying = underlying
    }

    public var description: String {
        var location = file
        if let offset { location += " at offset \(offset)" }
        return "\(code.name): \(location): \(message)"
    }
}
