import Engine
import Foundation

/// Change capture, the outbox and applying a server's changes (Strata's additions; see the Sync article).
extension Realm {
    /// Where this file stands with sync: nil when it does not capture changes.
    public struct SyncStatus: Sendable, Hashable {
        /// This file's client id, given when it first captured changes.
        public var clientID: UInt64
        /// The last server version applied (0: none).
        public var serverVersion: UInt64
        /// The sequence of the newest change set committed here (0: none).
        public var lastSequence: UInt64
        /// Change sets up to this one left the outbox (acknowledged).
        public var acknowledgedSequence: UInt64
    }

    /// This file's sync status at this Realm's version; nil before its first captured commit.
    public var syncStatus: SyncStatus? {
        let state = core.mustRead("the sync state") { try core.syncClientState(at: core.readSnapshot) }
        return state.map {
            SyncStatus(clientID: $0.clientID, serverVersion: $0.serverVersion, lastSequence: $0.nextSequence - 1, acknowledgedSequence: $0.acknowledged)
        }
    }

    /// The change sets committed here after `sequence` that no acknowledgement has taken from the outbox,
    /// oldest first, at this Realm's version.
    public func pendingChanges(after sequence: UInt64 = 0) throws -> [ChangeSet] {
        do {
            return try core.outboxEntries(after: sequence, at: core.readSnapshot).map(\.changeSet)
        } catch {
            throw realmError(error, fileURL: configuration.fileURL)
        }
    }

    /// The bytes each change set after `sequence` in the outbox takes as stored, oldest first: what a sync
    /// session's upload progress counts.
    package func pendingChangeSizes(after sequence: UInt64 = 0) throws -> [(sequence: UInt64, bytes: Int)] {
        do {
            return try core.outboxSizes(after: sequence, at: core.readSnapshot)
        } catch {
            throw realmError(error, fileURL: configuration.fileURL)
        }
    }

    /// Removes the change sets through `sequence` from the outbox: an integration that keeps them elsewhere
    /// now (a server that stored them, a CloudKit upload that succeeded) says so. A sync session's server
    /// acknowledges by returning them in its change sets (`applyServerChanges(_:)`), which does this itself.
    /// Begins and commits a write transaction of its own.
    public func acknowledgeChanges(through sequence: UInt64) throws {
        try core.beginWrite()
        guard let w = core.write else { return }
        do {
            w.captures = false
            if var state = try core.syncClientState(at: w.tx.view), sequence > state.acknowledged {
                let through = min(sequence, state.nextSequence - 1)
                try core.removeOutbox(through: through, at: w.tx.view, in: w.tx)
                state.acknowledged = through
                try w.tx.put(SyncStorage.stateKey, state.encoded(), in: SyncStorage.partition)
            }
        } catch {
            core.cancelWrite()
            throw realmError(error, fileURL: configuration.fileURL)
        }
        try commitWrite()
    }

    /// Applies change sets in a server's order, with Realm's conflict rules, in one write transaction of its
    /// own that is not captured again. Local change sets still in the outbox are applied again on top, so an
    /// edit made offline is never lost or reverted here; those the server returns leave the outbox. Versions
    /// already applied are skipped; a gap after the last applied version throws and changes nothing.
    /// Observers get the usual notifications.
    public func applyServerChanges(_ changes: [ServerChangeSet]) throws {
        do {
            try core.applyServerChanges(changes)
        } catch {
            throw realmError(error, fileURL: configuration.fileURL)
        }
    }

    /// Applies a server's snapshot (its objects at one version), then change sets after it, as
    /// `applyServerChanges(_:)` does: for the sync session's bootstrap of a new client and its catch-up past a
    /// compacted history.
    package func applyServerSnapshot(_ snapshot: SyncSnapshot, then changes: [ServerChangeSet]) throws {
        do {
            try core.applyServerChanges(changes, snapshot: snapshot)
        } catch {
            throw realmError(error, fileURL: configuration.fileURL)
        }
    }

    /// `applyServerChanges(_:)` given every change set through the server's newest version, which held this
    /// file's change sets through `sequence`: they leave the outbox even when another client's recovery carried
    /// them instead of themselves.
    package func applyServerChanges(_ changes: [ServerChangeSet], holdingThrough sequence: UInt64) throws {
        do {
            try core.applyServerChanges(changes, clientSequence: sequence)
        } catch {
            throw realmError(error, fileURL: configuration.fileURL)
        }
    }

    /// The server's salt this file keeps for `version` (0: none), at this Realm's version.
    package func syncSalt(of version: UInt64) throws -> UInt64 {
        do {
            return try core.knownSalt(version, at: core.readSnapshot)
        } catch {
            throw realmError(error, fileURL: configuration.fileURL)
        }
    }

    /// Every server version this file keeps (its salt, and its change set's identity), ascending.
    package func knownServerVersions() throws -> [KnownVersion] {
        do {
            return try core.knownVersions(at: core.readSnapshot)
        } catch {
            throw realmError(error, fileURL: configuration.fileURL)
        }
    }

    /// Recovers from a server that lost history this file saw (restored from an older backup): the file takes
    /// the server's objects, plus one change set of a new client id carrying what the server lost, then the
    /// outbox renumbered after it. False when the file was recovered already (by another process sharing it).
    package func recoverFromRestoredServer(_ recovery: SyncRecovery) throws -> Bool {
        do {
            return try core.recoverFromRestoredServer(recovery)
        } catch {
            throw realmError(error, fileURL: configuration.fileURL)
        }
    }

    /// The change sets committed to this file after `sequence`, as they are committed: first those in the
    /// outbox, then each new one (from any instance or process) as it commits. Resume from the last sequence
    /// an integration stored. The outbox keeps change sets until they are acknowledged
    /// (`acknowledgeChanges(through:)`); one acknowledged before this sequence reads it is not given.
    public func changes(since sequence: UInt64 = 0) -> ChangeFeed {
        ChangeFeed(configuration: configuration, after: sequence)
    }
}

/// The change sets committed to a file, as an `AsyncSequence` (`Realm.changes(since:)`). Iterating it throws
/// when the Realm cannot be opened or the outbox cannot be read (a damaged file).
public struct ChangeFeed: AsyncSequence, Sendable {
    public typealias Element = ChangeSet
    let configuration: Realm.Configuration
    let after: UInt64

    public func makeAsyncIterator() -> AsyncThrowingStream<ChangeSet, any Error>.Iterator {
        let (stream, continuation) = AsyncThrowingStream<ChangeSet, any Error>.makeStream(bufferingPolicy: .unbounded)
        let pump = FeedPump(configuration: configuration, after: after, continuation: continuation)
        pump.start()
        continuation.onTermination = { _ in pump.stop() }
        return stream.makeAsyncIterator()
    }
}

/// Reads new outbox entries on a queue of its own whenever the file changes (a Realm observer there).
final class FeedPump: @unchecked Sendable {
    private let configuration: Realm.Configuration
    private let queue = DispatchQueue(label: "Strata.ChangeFeed")
    private var cursor: UInt64
    private let continuation: AsyncThrowingStream<ChangeSet, any Error>.Continuation
    // Used on `queue` only.
    private var realm: Realm?
    private var token: NotificationToken?

    init(configuration: Realm.Configuration, after: UInt64, continuation: AsyncThrowingStream<ChangeSet, any Error>.Continuation) {
        self.configuration = configuration
        self.cursor = after
        self.continuation = continuation
    }

    func start() {
        queue.async {
            do {
                let realm = try Realm(configuration: self.configuration, queue: self.queue)
                self.realm = realm
                self.token = realm.observe { [weak self] _, _ in self?.pump() }
                self.pump()
            } catch {
                self.continuation.finish(throwing: error)
            }
        }
    }

    func stop() {
        queue.async {
            self.token?.invalidate()
            self.token = nil
            self.realm = nil
        }
    }

    private func pump() {
        guard let realm else { return }
        do {
            for c in try realm.pendingChanges(after: cursor) {
                cursor = c.sequence
                continuation.yield(c)
            }
        } catch {
            continuation.finish(throwing: error)
        }
    }
}

extension Object {
    /// Adds `amount` to the integer property `property` (by name) in a write transaction. Change capture records
    /// it as an addition, so that additions from several devices sum (a counter), where a plain set would let
    /// the last writer win.
    public func increment(_ property: String, by amount: Int = 1) {
        let info = _accessor?.info ?? TypeRegistry.info(for: type(of: self))
        guard let index = info.propertyIndex[property], info.schema.properties[index].type == .int, !info.schema.properties[index].isCollection else {
            fatalError("increment(_:by:): '\(property)' is not an integer property of \(info.schema.className)")
        }
        guard let accessor = _accessor else {
            let current = info.storedValue(of: self, at: index)
            guard case .int(let x) = current else { return }
            setValue(info.typedValue(.int(x &+ Int64(amount)), at: index), forKey: property)
            return
        }
        let w = accessor.core.requireWrite("\(info.schema.className).\(property)")
        guard case .int(let x) = accessor.get(index) else { return }
        accessor.set(index, .int(x &+ Int64(amount)))
        if w.captures, let pkIndex = info.primaryKeyIndex {
            let reader = RealmCore.SyncReader(core: accessor.core, snapshot: nil)
            let ref = ObjectReference(type: info.schema.className, primaryKey: reader.plain(accessor.get(pkIndex)))
            w.increments[ref, default: [:]][info.schema.properties[index].columnName, default: 0] &+= Int64(amount)
        }
    }
}
