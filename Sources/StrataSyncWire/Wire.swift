import Foundation
import Strata

// Sync's protocol, version 1: JSON messages over HTTP, each change set inside them in the outbox's binary form
// (`SyncCoding`: deterministic, checked when read, and exact for every value, NaN and -0.0 among them, which
// JSON numbers are not).
//
//   POST /v1/partitions/{partition}/push   PushRequest  -> PushResponse
//   POST /v1/partitions/{partition}/pull   PullRequest  -> PullResponse
//   POST /v1/partitions/{partition}/salts  SaltsRequest -> SaltsResponse
//   GET  /v1/health                                      -> "ok"
//
// Every request but health carries `Authorization: Bearer <token>`. A refusal is a WireError with an HTTP
// status: 400 malformed, 401 no valid token, 403 partition not granted, 413 too large,
// 503 the database failed. A push after a gap takes nothing past it and answers with the last sequence held.
//
// Each version has a random salt. A client names the salt of the version it pulls after: a server whose version
// there has another salt (or that has no such version) was restored from an older backup, and says `diverged`.
// The client then finds the last version both share (`salts`), and recovers (`PullRequest.recovery`).

/// Sync's wire protocol: its version and limits.
public enum SyncWire {
    /// The protocol version this build speaks; a request with another is refused with `unsupportedProtocol`.
    public static let protocolVersion = 1
    /// The largest request body a server takes by default (bytes).
    public static let defaultMaxRequestBytes = 16 << 20
    /// The most change sets one pull returns by default.
    public static let defaultPullLimit = 1000
    /// The most versions one `SaltsRequest` asks about.
    public static let maxSaltProbes = 4096
    /// How many versions before a snapshot's it names (`WireSnapshot.recent`).
    public static let snapshotRecentVersions = 1024
    /// The most objects one page of a snapshot holds, by default (`PullRequest.snapshotPage`; a server may give
    /// fewer).
    public static let defaultSnapshotPage = 10_000
    /// The longest reference a snapshot page continues after (`PullRequest.snapshotAfter`), in bytes.
    public static let maxSnapshotCursor = 4096
    /// Partition names: 1-128 letters, digits, `-`, `_` and `.` (they appear in paths and tokens).
    public static func isValidPartition(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 128 && name.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2D || b == 0x5F || b == 0x2E
        }
    }

    public static let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        return e
    }()

    public static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        do {
            return try JSONDecoder().decode(type, from: data)
        } catch let error as WireError {
            throw error
        } catch {
            throw WireError(.malformed, "the \(T.self) is not valid: \(error)")
        }
    }
}

/// A change set in its binary form (`SyncCoding`), as messages carry it.
public struct EncodedChangeSet: Sendable, Hashable, Codable {
    public var bytes: Data

    public init(_ changeSet: ChangeSet) {
        bytes = Data(SyncCoding.encode(changeSet))
    }

    public init(bytes: Data) {
        self.bytes = bytes
    }

    /// The change set, its bytes checked; a damaged one throws `WireError.malformed` saying where.
    public func decoded() throws -> ChangeSet {
        do {
            return try bytes.withUnsafeBytes { try SyncCoding.decodeChangeSet($0) }
        } catch {
            throw WireError(.malformed, "a change set (\(bytes.count) bytes) is not valid: \(error)")
        }
    }

    public init(from decoder: any Decoder) throws {
        bytes = try decoder.singleValueContainer().decode(Data.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(bytes)
    }
}

/// A client's change sets, oldest first, for the server to order. The server takes each once, in sequence order:
/// sequences it already has are skipped, and nothing after a gap is taken.
public struct PushRequest: Sendable, Codable {
    public var protocolVersion: Int
    public var clientID: UInt64
    public var changeSets: [EncodedChangeSet]

    public init(clientID: UInt64, changeSets: [ChangeSet]) {
        protocolVersion = SyncWire.protocolVersion
        self.clientID = clientID
        self.changeSets = changeSets.map(EncodedChangeSet.init)
    }
}

/// What the server holds after a push: the client's last sequence it has (its acknowledgement of receipt) and
/// the partition's newest version.
public struct PushResponse: Sendable, Codable {
    public var lastSequence: UInt64
    public var serverVersion: UInt64
    /// Another client's recovery holds the partition: nothing was taken; push again after this long.
    public var retryAfterMilliseconds: Int?

    public init(lastSequence: UInt64, serverVersion: UInt64, retryAfterMilliseconds: Int? = nil) {
        self.lastSequence = lastSequence
        self.serverVersion = serverVersion
        self.retryAfterMilliseconds = retryAfterMilliseconds
    }
}

/// Asks for the change sets after version `after`. With `waitMilliseconds`, a server with nothing newer waits
/// up to that long for a push before answering (a long poll).
public struct PullRequest: Sendable, Codable {
    public var protocolVersion: Int
    public var clientID: UInt64
    public var after: UInt64
    public var limit: Int
    public var waitMilliseconds: Int
    /// The salt the client holds for version `after` (nil or 0: none known); another salt there makes the server
    /// answer `diverged`.
    public var afterSalt: UInt64?
    /// A diverged client's recovery: the snapshot of the objects now, and every change set after `after` that
    /// the server still keeps (no limit, no wait), in one answer.
    public var recovery: Bool?
    /// With `recovery`: the client id the recovery's change sets will have. The partition is this recovery's
    /// until its first change set arrives (or 30 s pass): recoveries take turns, each one seeing the last.
    public var recoveryClientID: UInt64?
    /// A snapshot in pages of at most this many objects, each page read at the version it was asked at
    /// (`WireSnapshot.next`); nil: the whole snapshot in one answer. A recovery's snapshot is always whole.
    public var snapshotPage: Int?
    /// The page after this reference (the `next` of the page before); nil: the first page.
    public var snapshotAfter: Data?
    /// Only the objects changed after this version (a page of a catch-up round: `SnapshotPages`); nil: all.
    public var snapshotSince: UInt64?
    /// The newest version an earlier page of the same snapshot was read at, and its salt: a server that no
    /// longer has that version with that salt (restored from a backup meanwhile) answers `diverged`, and the
    /// client starts the snapshot over.
    public var snapshotSeen: UInt64?
    public var snapshotSeenSalt: UInt64?

    public init(clientID: UInt64, after: UInt64, limit: Int = SyncWire.defaultPullLimit, waitMilliseconds: Int = 0,
                afterSalt: UInt64? = nil, recovery: Bool? = nil, recoveryClientID: UInt64? = nil, snapshotPage: Int? = nil) {
        protocolVersion = SyncWire.protocolVersion
        self.clientID = clientID
        self.after = after
        self.limit = limit
        self.waitMilliseconds = waitMilliseconds
        self.afterSalt = afterSalt
        self.recovery = recovery
        self.recoveryClientID = recoveryClientID
        self.snapshotPage = snapshotPage
    }
}

/// A change set as the server ordered it, with its version's salt.
public struct WireServerChangeSet: Sendable, Codable {
    public var version: UInt64
    public var salt: UInt64
    public var changeSet: EncodedChangeSet

    public init(version: UInt64, salt: UInt64, changeSet: EncodedChangeSet) {
        self.version = version
        self.salt = salt
        self.changeSet = changeSet
    }

    public func decoded() throws -> ServerChangeSet {
        ServerChangeSet(version: version, changeSet: try changeSet.decoded(), salt: salt)
    }
}

/// The change sets after the request's version, in order with no gap (at most its limit); `serverVersion` is the
/// partition's newest version (more remain when it is above the last one given), and `lastSequence` the
/// requesting client's last sequence the server has. A new client (`after` 0), and one behind the history the
/// server still keeps, gets a `snapshot` of the objects at `serverVersion` instead of change sets. `diverged`:
/// the server's version `after` is not the one the client saw (it has another salt, or none): nothing else is
/// given, and the client recovers.
public struct PullResponse: Sendable, Codable {
    public var changes: [WireServerChangeSet]
    public var serverVersion: UInt64
    public var lastSequence: UInt64
    public var snapshot: WireSnapshot?
    public var diverged: Bool?
    /// A recovery asked for while another client's runs: nothing is given; ask again after this long.
    public var retryAfterMilliseconds: Int?
    /// The bytes of the change sets after the last one given (a pull answered with its limit of them): what is
    /// left to download, for progress notifications. Nil from servers before it was added, and 0 when nothing is.
    public var remainingBytes: UInt64?

    public init(changes: [WireServerChangeSet], serverVersion: UInt64, lastSequence: UInt64, snapshot: WireSnapshot? = nil, diverged: Bool? = nil,
                retryAfterMilliseconds: Int? = nil) {
        self.changes = changes
        self.serverVersion = serverVersion
        self.lastSequence = lastSequence
        self.snapshot = snapshot
        self.diverged = diverged
        self.retryAfterMilliseconds = retryAfterMilliseconds
    }
}

/// Asks for the salts of some versions (at most `SyncWire.maxSaltProbes`): how a diverged client finds the last
/// version it shares with the server.
public struct SaltsRequest: Sendable, Codable {
    public var protocolVersion: Int
    public var clientID: UInt64
    public var versions: [UInt64]

    public init(clientID: UInt64, versions: [UInt64]) {
        protocolVersion = SyncWire.protocolVersion
        self.clientID = clientID
        self.versions = versions
    }
}

/// The salt of each version asked about, in the request's order: 0 for a version the server does not have, or
/// whose change set it no longer keeps (compacted). `compactedThrough`: the history begins after this version.
public struct SaltsResponse: Sendable, Codable {
    public var salts: [UInt64]
    public var compactedThrough: UInt64

    public init(salts: [UInt64], compactedThrough: UInt64) {
        self.salts = salts
        self.compactedThrough = compactedThrough
    }
}

/// A partition's objects at one version, live ones and tombstones, each in its binary form (`SyncCoding`: the
/// reference, and the state).
public struct WireSnapshot: Sendable, Codable {
    public struct Object: Sendable, Codable {
        public var reference: Data
        public var state: Data

        public init(reference: Data, state: Data) {
            self.reference = reference
            self.state = state
        }
    }

    /// One version of the history before the snapshot: its salt and its change set's client and sequence.
    public struct Version: Sendable, Codable {
        public var version: UInt64
        public var salt: UInt64
        public var clientID: UInt64
        public var sequence: UInt64

        public init(version: UInt64, salt: UInt64, clientID: UInt64, sequence: UInt64) {
            self.version = version
            self.salt = salt
            self.clientID = clientID
            self.sequence = sequence
        }
    }

    public var version: UInt64
    /// The salt of `version`.
    public var salt: UInt64
    /// In reference order (of the server's database).
    public var objects: [Object]
    /// The last versions through `version` (at most `SyncWire.snapshotRecentVersions`), so that a client that
    /// starts here can find where a server restored from a backup parted from what it saw. Given with a
    /// snapshot's last page only.
    public var recent: [Version]?
    /// A page of a paged snapshot with more pages after it: the reference to ask for the next page after
    /// (`PullRequest.snapshotAfter`). Nil: the last page (or a whole snapshot).
    public var next: Data?

    public init(version: UInt64, salt: UInt64, objects: [Object], recent: [Version]? = nil, next: Data? = nil) {
        self.version = version
        self.salt = salt
        self.objects = objects
        self.recent = recent
        self.next = next
    }

    /// The snapshot for `applyServerSnapshot`, every object's bytes checked.
    package func decoded(clientSequence: UInt64) throws -> SyncSnapshot {
        var states: [(ObjectReference, SyncObjectState)] = []
        states.reserveCapacity(objects.count)
        for (i, o) in objects.enumerated() {
            do {
                let ref = try o.reference.withUnsafeBytes { try SyncCoding.decodeReference($0) }
                let state = try o.state.withUnsafeBytes { try SyncCoding.decodeState($0) }
                states.append((ref, state))
            } catch {
                throw WireError(.malformed, "object \(i) of the snapshot of version \(version) is not valid: \(error)")
            }
        }
        var snapshot = SyncSnapshot(version: version, salt: salt, clientSequence: clientSequence, states: states)
        snapshot.recent = (recent ?? []).filter { $0.version <= version && $0.salt != 0 }.map {
            KnownVersion(version: $0.version, salt: $0.salt, identity: ChangeSet.Identity(clientID: $0.clientID, sequence: $0.sequence))
        }
        return snapshot
    }
}

/// A refusal, as the server sends it and a client reads it.
public struct WireError: Error, Sendable, Codable, CustomStringConvertible {
    public enum Code: String, Sendable, Codable {
        /// The request could not be read (not JSON, a field missing, a damaged change set, a bad partition name).
        case malformed
        /// The request's protocol version is not this server's.
        case unsupportedProtocol
        /// No token, or a token that is forged, expired or unreadable.
        case unauthorized
        /// The token does not grant this partition (reading, or writing).
        case forbidden
        /// The body is larger than the server takes.
        case tooLarge
        /// A change set's client is not the request's.
        case wrongClient
        /// The server failed (its database); retry later.
        case unavailable
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The HTTP status a server answers this refusal with.
    public var httpStatus: Int {
        switch code {
        case .malformed, .unsupportedProtocol, .wrongClient: 400
        case .unauthorized: 401
        case .forbidden: 403
        case .tooLarge: 413
        case .unavailable: 503
        }
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
