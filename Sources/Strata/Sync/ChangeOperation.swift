import Foundation

/// One field-level change of a write transaction, as change capture records it and sync sends it. Properties are
/// named by their stored names (`propertiesMapping()` renames do not change them).
public enum ChangeOperation: Sendable, Hashable, Codable, CustomStringConvertible {
    /// An object was created with these values (every property but its collections, which follow as inserts
    /// and puts). Applied to a live object, it sets the values; to an object deleted by a delete its author had
    /// not seen, nothing (the delete wins).
    case create(ObjectReference, values: [String: SyncValue])
    /// A property was set (a link, an embedded object whole, an `AnyRealmValue`, any plain value).
    case set(ObjectReference, property: String, value: SyncValue)
    /// The object was deleted.
    case delete(ObjectReference)
    /// An integer property was changed by `amount` (`increment(_:by:)`): additions from several devices sum.
    case addInteger(ObjectReference, property: String, amount: Int64)
    /// An element was inserted into a `List`.
    case listInsert(ObjectReference, property: String, element: ElementID, position: ListPosition, value: SyncValue)
    /// An element of a `List` was moved.
    case listMove(ObjectReference, property: String, element: ElementID, position: ListPosition)
    /// An element was removed from a `List`.
    case listRemove(ObjectReference, property: String, element: ElementID)
    /// An element of a `List` was replaced.
    case listSet(ObjectReference, property: String, element: ElementID, value: SyncValue)
    /// A value was added to a `MutableSet`.
    case setInsert(ObjectReference, property: String, value: SyncValue)
    /// A value was removed from a `MutableSet`.
    case setRemove(ObjectReference, property: String, value: SyncValue)
    /// A key of a `Map` was given a value.
    case mapPut(ObjectReference, property: String, key: String, value: SyncValue)
    /// A key was removed from a `Map`.
    case mapRemove(ObjectReference, property: String, key: String)

    /// The object the operation changes.
    public var object: ObjectReference {
        switch self {
        case .create(let o, _), .set(let o, _, _), .delete(let o), .addInteger(let o, _, _), .listInsert(let o, _, _, _, _),
            .listMove(let o, _, _, _), .listRemove(let o, _, _), .listSet(let o, _, _, _), .setInsert(let o, _, _),
            .setRemove(let o, _, _), .mapPut(let o, _, _, _), .mapRemove(let o, _, _):
            o
        }
    }

    public var description: String {
        switch self {
        case .create(let o, let v): "create \(o) \(SyncValue.embedded(v))"
        case .set(let o, let p, let v): "set \(o).\(p) = \(v)"
        case .delete(let o): "delete \(o)"
        case .addInteger(let o, let p, let n): "add \(n) to \(o).\(p)"
        case .listInsert(let o, let p, let e, let pos, let v): "insert \(v) into \(o).\(p) as \(e) at \(pos)"
        case .listMove(let o, let p, let e, let pos): "move \(o).\(p) \(e) to \(pos)"
        case .listRemove(let o, let p, let e): "remove \(e) from \(o).\(p)"
        case .listSet(let o, let p, let e, let v): "set \(o).\(p) \(e) = \(v)"
        case .setInsert(let o, let p, let v): "insert \(v) into set \(o).\(p)"
        case .setRemove(let o, let p, let v): "remove \(v) from set \(o).\(p)"
        case .mapPut(let o, let p, let k, let v): "put \(o).\(p)[\(k)] = \(v)"
        case .mapRemove(let o, let p, let k): "remove \(o).\(p)[\(k)]"
        }
    }
}

/// What one local write transaction did, as field operations: the unit the outbox keeps, `changes(since:)`
/// gives and a server orders.
public struct ChangeSet: Sendable, Hashable, Codable {
    /// The client (file) that committed it: a random number given when the file first captured changes.
    public var clientID: UInt64
    /// Its number among that client's change sets: 1, 2, 3… with no gaps.
    public var sequence: UInt64
    /// The last server version the client had applied when it committed: which remote changes it had seen.
    public var baseVersion: UInt64
    /// The schema version of the file when it committed.
    public var schemaVersion: UInt64
    public var operations: [ChangeOperation]
    /// Set on a sync session's recovery from a server restored from an older backup: what the server lost
    /// that this change set carries.
    public var recovery: Recovery?

    /// One change set of one client: `(clientID, sequence)`.
    public struct Identity: Sendable, Hashable, Codable, Comparable {
        public var clientID: UInt64
        public var sequence: UInt64

        public init(clientID: UInt64, sequence: UInt64) {
            self.clientID = clientID
            self.sequence = sequence
        }

        public static func < (a: Identity, b: Identity) -> Bool { (a.clientID, a.sequence) < (b.clientID, b.sequence) }
    }

    /// What a recovery's change set carries: its client's objects as of server version `through` of the history
    /// the server lost, and so the effects of the change sets it had applied there (`carried`), which the
    /// server counts as received from their clients. `through` 0: an outbox entry the recovery renumbered,
    /// carrying what it was sent as before.
    public struct Recovery: Sendable, Hashable, Codable {
        public var through: UInt64
        public var carried: [Identity]

        public init(through: UInt64, carried: [Identity]) {
            self.through = through
            self.carried = carried
        }
    }

    public init(clientID: UInt64, sequence: UInt64, baseVersion: UInt64, schemaVersion: UInt64, operations: [ChangeOperation],
                recovery: Recovery? = nil) {
        self.clientID = clientID
        self.sequence = sequence
        self.baseVersion = baseVersion
        self.schemaVersion = schemaVersion
        self.operations = operations
        self.recovery = recovery
    }

    /// `(clientID, sequence)`.
    public var identity: Identity { Identity(clientID: clientID, sequence: sequence) }

    private enum CodingKeys: String, CodingKey { case clientID, sequence, baseVersion, schemaVersion, operations, recovery }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        clientID = try c.decode(UInt64.self, forKey: .clientID)
        sequence = try c.decode(UInt64.self, forKey: .sequence)
        baseVersion = try c.decode(UInt64.self, forKey: .baseVersion)
        schemaVersion = try c.decode(UInt64.self, forKey: .schemaVersion)
        operations = try c.decode([ChangeOperation].self, forKey: .operations)
        recovery = try c.decodeIfPresent(Recovery.self, forKey: .recovery)
    }
}

/// A change set as a server ordered it: `version` is its place in the server's history (1, 2, 3… with no gaps),
/// the order every device applies change sets in.
public struct ServerChangeSet: Sendable, Hashable, Codable {
    public var version: UInt64
    public var changeSet: ChangeSet
    /// The server's salt for `version` (0: none): kept, so that a server restored from an older backup is
    /// recognised by another salt at a version this file saw.
    public var salt: UInt64

    public init(version: UInt64, changeSet: ChangeSet, salt: UInt64 = 0) {
        self.version = version
        self.changeSet = changeSet
        self.salt = salt
    }

    private enum CodingKeys: String, CodingKey { case version, changeSet, salt }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        version = try c.decode(UInt64.self, forKey: .version)
        changeSet = try c.decode(ChangeSet.self, forKey: .changeSet)
        salt = try c.decodeIfPresent(UInt64.self, forKey: .salt) ?? 0
    }
}
