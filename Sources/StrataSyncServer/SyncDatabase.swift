import Foundation
import Logging
import PostgresNIO
import Strata
import StrataSyncWire

// Invariants:
// (1) A partition's versions are 1, 2, 3... with no gap, and a version is visible only with every version below
//     it: a push assigns versions while holding its partition's row lock (`SELECT ... FOR UPDATE`) and commits
//     before the next push can read the row, so versions commit in order (a bare sequence would not: sequences
//     commit out of order, and a reader's `version > n` would skip a row committed late).
// (2) A client's change sets are taken once each, in sequence order: `strata_clients.last_sequence` moves in the
//     same transaction as the change sets it counts, and `UNIQUE (partition, client_id, sequence)` backs it.
// (3) `strata_objects` is the result of applying the partition's history in version order with sync's rules:
//     each push applies its change sets to the objects it reads in the same transaction.
// (4) Nothing here is kept in a server process between requests: any number of servers serve one database.
// (5) Each version has a random salt, never 0, kept when compaction drops its change set (and the newest one in
//     `strata_partitions.salt`): a client that saw version v with salt s finds the same pair here unless this
//     database was restored from a backup older than what it saw (`PullRequest.afterSalt`, `salts`).
// (6) Recoveries from such a restore take turns: a recovery's pull leases the partition to the recovery's new
//     client id (`recovering`) until that client's recovery change set is taken or 30 s pass, so that each one
//     is computed from a state holding the ones before it. Pushes of other clients wait for it too (answered
//     `retryAfterMilliseconds`, nothing taken): a change set a recovery carries, sent again by its own client
//     after the recovery's snapshot, would otherwise be applied twice (once itself, once inside the recovery's
//     difference, which was measured from a state without it). A change set a recovery renumbered whose
//     original identities are all held already (carried by another recovery) is taken with no operations. A
//     lease lasts at most 30 s from its first request (the same recovery asking again keeps the deadline): a
//     recovery abandoned or failing holds writers off no longer, and one slower than that is not protected.

/// The server's state, all in PostgreSQL: partitions and their versions, each client's last sequence, the
/// history of change sets, and the objects.
public final class SyncDatabase: Sendable {
    let client: PostgresClient
    let logger: Logger
    /// Schema of the server's own tables (`strata_meta.schema`).
    static let schemaVersion = 1

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Creates the server's tables when missing (several servers starting at once take turns by an advisory lock).
    public func prepare() async throws {
        try await client.withTransaction(logger: logger) { c in
            try await c.query("SELECT pg_advisory_xact_lock(7346110512)", logger: logger)
            for statement in Self.schema { try await c.query(PostgresQuery(unsafeSQL: statement), logger: logger) }
            let rows = try await c.query("SELECT value FROM strata_meta WHERE key = 'schema'", logger: logger)
            var found: String?
            for try await v in rows.decode(String.self) { found = v }
            if let found {
                guard found == String(Self.schemaVersion) else {
                    throw WireError(.unavailable, "the database's sync tables are schema \(found); this server knows \(Self.schemaVersion)")
                }
            } else {
                try await c.query("INSERT INTO strata_meta (key, value) VALUES ('schema', \(String(Self.schemaVersion)))", logger: logger)
            }
        }
    }

    static let schema = [
        "CREATE TABLE IF NOT EXISTS strata_meta (key text PRIMARY KEY, value text NOT NULL)",
        """
        CREATE TABLE IF NOT EXISTS strata_partitions (
            name text PRIMARY KEY,
            version bigint NOT NULL DEFAULT 0,
            salt bigint NOT NULL DEFAULT 0,
            compacted_through bigint NOT NULL DEFAULT 0,
            recovering bigint NOT NULL DEFAULT 0,
            recovering_until timestamptz
        )
        """,
        """
        CREATE TABLE IF NOT EXISTS strata_clients (
            partition text NOT NULL REFERENCES strata_partitions (name),
            client_id bigint NOT NULL,
            last_sequence bigint NOT NULL,
            cursor bigint NOT NULL DEFAULT 0,
            PRIMARY KEY (partition, client_id)
        )
        """,
        """
        CREATE TABLE IF NOT EXISTS strata_changes (
            partition text NOT NULL REFERENCES strata_partitions (name),
            version bigint NOT NULL,
            client_id bigint NOT NULL,
            sequence bigint NOT NULL,
            salt bigint NOT NULL,
            change_set bytea NOT NULL,
            PRIMARY KEY (partition, version),
            UNIQUE (partition, client_id, sequence)
        )
        """,
        """
        CREATE TABLE IF NOT EXISTS strata_objects (
            partition text NOT NULL REFERENCES strata_partitions (name),
            ref text NOT NULL,
            state bytea NOT NULL,
            links text[] NOT NULL,
            version bigint NOT NULL,
            PRIMARY KEY (partition, ref)
        )
        """,
        "CREATE INDEX IF NOT EXISTS strata_objects_links ON strata_objects USING gin (links)",
    ]

    /// For the kill tests: `STRATA_SYNC_TEST_HOLD_PUSH_MS` makes each push wait that long, all its writes done,
    /// before it commits, and say so on standard error, so that a test can kill the server inside the transaction.
    static let testHoldBeforeCommit: Duration? = ProcessInfo.processInfo.environment["STRATA_SYNC_TEST_HOLD_PUSH_MS"]
        .flatMap(Int.init).map { .milliseconds($0) }

    /// The channel a push notifies, with its partition as the payload.
    static let channel = "strata_sync"

    // MARK: - Push

    /// Takes `changeSets` of `clientID` into `partition`'s history: those already held are skipped, nothing after
    /// a gap is taken, and each one taken gets the next version and is applied to the objects, all in one
    /// transaction that notifies the partition's listeners when it commits.
    public func push(partition: String, clientID: UInt64, changeSets: [ChangeSet]) async throws -> PushResponse {
        let client64 = Int64(bitPattern: clientID)
        return try await client.withTransaction(logger: logger) { c in
            try await c.query("INSERT INTO strata_partitions (name) VALUES (\(partition)) ON CONFLICT DO NOTHING", logger: logger)
            var version: Int64 = 0
            var leased = false
            for try await (v, holder, live) in try await c.query("""
                SELECT version, recovering, coalesce(recovering_until > now(), false) FROM strata_partitions WHERE name = \(partition) FOR UPDATE
                """, logger: logger).decode((Int64, Int64, Bool).self) {
                version = v
                leased = holder != 0 && holder != client64 && live
            }
            var last = try await Self.single(Int64.self, c.query(
                "SELECT last_sequence FROM strata_clients WHERE partition = \(partition) AND client_id = \(client64)",
                logger: logger)).map { UInt64(bitPattern: $0) } ?? 0
            // Another client's recovery holds the partition (Invariant 6): what this push brings may be what that
            // recovery carries, computed from a state without it, so it waits for the recovery's change set.
            if leased {
                return PushResponse(lastSequence: last, serverVersion: UInt64(version), retryAfterMilliseconds: 200)
            }
            var taken: [(version: UInt64, set: ChangeSet)] = []
            for set in changeSets.sorted(by: { $0.sequence < $1.sequence }) {
                if set.sequence <= last { continue }
                guard set.sequence == last + 1 else { break }
                last += 1
                version += 1
                taken.append((UInt64(version), set))
            }
            guard !taken.isEmpty else { return PushResponse(lastSequence: last, serverVersion: UInt64(version)) }
            let salts = taken.map { _ in Int64.random(in: .min ... .max) | 1 }

            // What recoveries carry, counted from where each client stands (Invariant 6).
            var held: [UInt64: UInt64] = [:]
            let carriedClients = Set(taken.flatMap { $0.set.recovery?.carried.map(\.clientID) ?? [] }).subtracting([clientID])
            if !carriedClients.isEmpty {
                for try await (other, sequence) in try await c.query("""
                    SELECT client_id, last_sequence FROM strata_clients
                    WHERE partition = \(partition) AND client_id = ANY(\(carriedClients.sorted().map { Int64(bitPattern: $0) })) FOR UPDATE
                    """, logger: logger).decode((Int64, Int64).self) {
                    held[UInt64(bitPattern: other)] = UInt64(bitPattern: sequence)
                }
            }
            let heldBefore = held
            for i in taken.indices {
                guard let recovery = taken[i].set.recovery else { continue }
                let carried = recovery.carried.filter { $0.clientID != clientID }
                if recovery.through == 0 && !carried.isEmpty && carried.allSatisfy({ $0.sequence <= held[$0.clientID] ?? 0 }) {
                    taken[i].set.operations = []
                }
                for id in carried.sorted() where id.sequence == (held[id.clientID] ?? 0) + 1 { held[id.clientID] = id.sequence }
            }

            let store = PostgresSyncStore()
            var refs = Set<ObjectReference>()
            var linkers = Set<ObjectReference>()
            for (_, set) in taken {
                for op in set.operations { PostgresSyncStore.references(of: op, into: &refs, linkers: &linkers) }
            }
            try await store.load(refs, partition: partition, connection: c, logger: logger)
            try await store.load(linkersOf: linkers, partition: partition, connection: c, logger: logger)
            while true {
                for (v, set) in taken {
                    for op in set.operations {
                        SyncRules.apply(op, author: set.clientID, base: set.baseVersion, version: v, to: store)
                    }
                }
                if store.missing.isEmpty && store.missingLinkers.isEmpty { break }
                let (more, moreLinkers) = (store.missing, store.missingLinkers)
                store.restart()
                try await store.load(more, partition: partition, connection: c, logger: logger)
                try await store.load(linkersOf: moreLinkers, partition: partition, connection: c, logger: logger)
            }

            // One statement for the history and one for the objects, whatever their number: rows go in as arrays
            // (hex text for bytes; links comma-joined, as hex keys hold no comma), unnested by PostgreSQL.
            try await c.query("""
                INSERT INTO strata_changes (partition, version, client_id, sequence, salt, change_set)
                SELECT \(partition), v, \(client64), s, salt, decode(bytes, 'hex')
                FROM unnest(\(taken.map { Int64($0.version) }), \(taken.map { Int64($0.set.sequence) }),
                            \(salts), \(taken.map { Hex.encode(SyncCoding.encode($0.set)) }))
                    AS t(v, s, salt, bytes)
                """, logger: logger)
            let rows = store.changed.filter { $0.value != store.loaded[$0.key] }.sorted { $0.key < $1.key }
            if !rows.isEmpty {
                try await c.query("""
                    INSERT INTO strata_objects (partition, ref, state, links, version)
                    SELECT \(partition), ref, decode(state, 'hex'), string_to_array(links, ','), \(version)
                    FROM unnest(\(rows.map { ObjectKey.text($0.key) }), \(rows.map { Hex.encode(ObjectKey.bytes($0.value)) }),
                                \(rows.map { ObjectKey.links($0.value).joined(separator: ",") })) AS t(ref, state, links)
                    ON CONFLICT (partition, ref) DO UPDATE SET state = EXCLUDED.state, links = EXCLUDED.links,
                        version = EXCLUDED.version
                    """, logger: logger)
            }
            try await c.query("""
                INSERT INTO strata_clients (partition, client_id, last_sequence) VALUES (\(partition), \(client64), \(Int64(last)))
                ON CONFLICT (partition, client_id) DO UPDATE SET last_sequence = EXCLUDED.last_sequence
                """, logger: logger)
            // A recovery carries the effects of change sets this database lost (restored from a backup): they count
            // as received from their clients, so that a client still holding one does not send it again.
            for (other, through) in held.sorted(by: { $0.key < $1.key }) where through > heldBefore[other] ?? 0 {
                try await c.query("""
                    INSERT INTO strata_clients (partition, client_id, last_sequence) VALUES (\(partition), \(Int64(bitPattern: other)), \(Int64(through)))
                    ON CONFLICT (partition, client_id) DO UPDATE SET last_sequence = EXCLUDED.last_sequence
                    """, logger: logger)
            }
            if taken.contains(where: { ($0.set.recovery?.through ?? 0) > 0 }) {
                try await c.query("UPDATE strata_partitions SET recovering = 0 WHERE name = \(partition) AND recovering = \(client64)", logger: logger)
            }
            try await c.query("UPDATE strata_partitions SET version = \(version), salt = \(salts.last!) WHERE name = \(partition)", logger: logger)
            try await c.query("SELECT pg_notify(\(Self.channel), \(partition))", logger: logger)
            if let hold = Self.testHoldBeforeCommit {
                FileHandle.standardError.write(Data("strata-sync-server: holding push \(last) of \(clientID) before commit (test hook)\n".utf8))
                try await Task.sleep(for: hold)
            }
            return PushResponse(lastSequence: last, serverVersion: UInt64(version))
        }
    }

    // MARK: - Pull

    /// The change sets of `partition` after version `after` (at most `limit`), its newest version, and the last
    /// sequence it holds from `clientID`; for a new client (`after` 0) or one behind the compacted history, a
    /// snapshot of the objects at the newest version instead. Notes the client's cursor (`compact`).
    ///
    /// `afterSalt` (non-zero): the salt the client saw at `after`. Another salt there, or no version `after` at
    /// all, means this database lost what the client saw (restored from a backup): the answer says `diverged`
    /// and gives nothing. `recovery`: the snapshot and every change set after `after` still kept, together.
    ///
    /// `again`: the same pull repeated after it waited for a push (a long poll woken): its cursor was noted the
    /// first time, and is not again. (Its salt is checked again: a restore may have come during the wait, and the
    /// check must read the same snapshot as the changes it lets through.)
    ///
    /// `page`: a snapshot is given one page at a time (not a recovery's): the objects after `page.after` in
    /// reference order changed after version `page.since`, at most `page.limit` of them, read at the newest
    /// version (`WireSnapshot.next` says whether more follow).
    public func pull(partition: String, clientID: UInt64, after: UInt64, afterSalt: UInt64 = 0, limit: Int,
                     recovery: Bool = false, recoveryClientID: UInt64 = 0, again: Bool = false,
                     page: SnapshotPage? = nil) async throws -> PullResponse {
        let client64 = Int64(bitPattern: clientID)
        if recovery {
            // Recoveries take turns (Invariant 6).
            let recovering = Int64(bitPattern: recoveryClientID)
            let free = try await client.withTransaction(logger: logger) { c -> Bool in
                try await c.query("INSERT INTO strata_partitions (name) VALUES (\(partition)) ON CONFLICT DO NOTHING", logger: logger)
                var busy = false
                for try await (holder, live) in try await c.query("""
                    SELECT recovering, coalesce(recovering_until > now(), false) FROM strata_partitions WHERE name = \(partition) FOR UPDATE
                    """, logger: logger).decode((Int64, Bool).self) {
                    busy = holder != 0 && holder != recovering && live
                }
                guard !busy else { return false }
                // The same recovery asking again keeps its deadline: a lease lasts 30 s from its first request, so
                // a recovery that keeps failing cannot hold every writer off for longer.
                try await c.query("""
                    UPDATE strata_partitions SET recovering = \(recovering),
                        recovering_until = CASE WHEN recovering = \(recovering) AND recovering_until > now() THEN recovering_until
                                                ELSE now() + interval '30 seconds' END
                    WHERE name = \(partition)
                    """, logger: logger)
                return true
            }
            guard free else { return PullResponse(changes: [], serverVersion: 0, lastSequence: 0, retryAfterMilliseconds: 200) }
        }
        let response = try await client.withConnection { c in
            // One snapshot for every read, so that `serverVersion` is never below the last change given and a
            // snapshot of objects is the state at that version.
            try await c.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", logger: logger)
            do {
                // The partition's row and the client's last sequence, in one statement (each is a round trip).
                var version: Int64 = 0
                var compacted: Int64 = 0
                var salt: Int64 = 0
                var last: Int64 = 0
                for try await (v, through, s, sequence) in try await c.query("""
                    SELECT coalesce(p.version, 0), coalesce(p.compacted_through, 0), coalesce(p.salt, 0),
                           coalesce((SELECT last_sequence FROM strata_clients WHERE partition = \(partition) AND client_id = \(client64)), 0)
                    FROM (SELECT 1) AS one LEFT JOIN strata_partitions p ON p.name = \(partition)
                    """, logger: logger
                ).decode((Int64, Int64, Int64, Int64).self) {
                    (version, compacted, salt, last) = (v, through, s, sequence)
                }
                var response = PullResponse(changes: [], serverVersion: UInt64(version), lastSequence: UInt64(bitPattern: last))
                if after > 0 && afterSalt != 0 && !recovery {
                    let held = after > UInt64(version) ? nil : try await Self.single(Int64.self, c.query(
                        "SELECT salt FROM strata_changes WHERE partition = \(partition) AND version = \(Int64(after))", logger: logger))
                    if held.map({ UInt64(bitPattern: $0) }) != afterSalt {
                        response.diverged = true
                        try await c.query("COMMIT", logger: logger)
                        return response
                    }
                }
                if version > 0 && (recovery || after == 0 || after < UInt64(compacted)) {
                    let page = recovery ? nil : page
                    // The pages before this one were read from a history this database still has: a restore from
                    // a backup since then would leave them holding states it lost (Invariant 5).
                    if let seen = page?.seen {
                        let held = seen.version > UInt64(version) ? nil : try await Self.single(Int64.self, c.query(
                            "SELECT salt FROM strata_changes WHERE partition = \(partition) AND version = \(Int64(clamping: seen.version))",
                            logger: logger))
                        if held.map({ UInt64(bitPattern: $0) }) != seen.salt {
                            response.diverged = true
                            try await c.query("COMMIT", logger: logger)
                            return response
                        }
                    }
                    // A page reads one row more than it holds: that row says another page follows. Rows are never
                    // deleted (a deletion leaves a tombstone), so no object leaves the order pages walk.
                    let query: PostgresQuery = if let page {
                        """
                        SELECT ref, state FROM strata_objects
                        WHERE partition = \(partition) AND ref > \(Hex.encode(page.after ?? [])) AND version > \(Int64(clamping: page.since))
                        ORDER BY ref LIMIT \(Int64(page.limit) + 1)
                        """
                    } else {
                        "SELECT ref, state FROM strata_objects WHERE partition = \(partition) ORDER BY ref"
                    }
                    var objects: [WireSnapshot.Object] = []
                    for try await (key, state) in try await c.query(query, logger: logger).decode((String, ByteBuffer).self) {
                        guard let ref = Hex.decode(key) else { throw WireServerError.corrupt("object key \(key.prefix(40)) is not hex") }
                        objects.append(WireSnapshot.Object(reference: Data(ref), state: Data(state.readableBytesView)))
                    }
                    var next: Data?
                    if let page, objects.count > page.limit {
                        objects.removeLast(objects.count - page.limit)
                        next = objects.last?.reference
                    }
                    // The versions before the snapshot's, with its last page.
                    var recent: [WireSnapshot.Version]?
                    if next == nil {
                        var versions: [WireSnapshot.Version] = []
                        for try await (v, s, client, sequence) in try await c.query("""
                            SELECT version, salt, client_id, sequence FROM strata_changes
                            WHERE partition = \(partition) AND version > \(version - Int64(SyncWire.snapshotRecentVersions)) AND version <= \(version)
                            ORDER BY version
                            """, logger: logger).decode((Int64, Int64, Int64, Int64).self) {
                            versions.append(WireSnapshot.Version(version: UInt64(v), salt: UInt64(bitPattern: s),
                                                                 clientID: UInt64(bitPattern: client), sequence: UInt64(sequence)))
                        }
                        recent = versions
                    }
                    response.snapshot = WireSnapshot(
                        version: UInt64(version), salt: UInt64(bitPattern: salt), objects: objects, recent: recent, next: next)
                }
                if response.snapshot == nil || recovery {
                    let from = max(Int64(clamping: after), recovery ? compacted : 0)
                    let rows = try await c.query("""
                        SELECT version, salt, change_set FROM strata_changes WHERE partition = \(partition) AND version > \(from)
                        ORDER BY version LIMIT \(recovery ? Int64.max : Int64(limit))
                        """, logger: logger)
                    for try await (v, s, bytes) in rows.decode((Int64, Int64, ByteBuffer).self) {
                        response.changes.append(WireServerChangeSet(
                            version: UInt64(v), salt: UInt64(bitPattern: s), changeSet: EncodedChangeSet(bytes: Data(bytes.readableBytesView))))
                    }
                    // What is left after a page that filled its limit, for the client's download progress.
                    response.remainingBytes = 0
                    if let last = response.changes.last, !recovery, response.changes.count >= limit, last.version < UInt64(version) {
                        response.remainingBytes = try await Self.single(Int64.self, c.query("""
                            SELECT coalesce(sum(octet_length(change_set)), 0)::bigint FROM strata_changes
                            WHERE partition = \(partition) AND version > \(Int64(last.version))
                            """, logger: logger)).map { UInt64($0) } ?? 0
                    }
                } else {
                    response.remainingBytes = 0
                }
                try await c.query("COMMIT", logger: logger)
                return response
            } catch {
                _ = try? await c.query("ROLLBACK", logger: logger)
                throw error
            }
        }
        if clientID != 0 && after > 0 && response.diverged != true && !recovery && !again {
            try await client.query("""
                UPDATE strata_clients SET cursor = \(Int64(clamping: after))
                WHERE partition = \(partition) AND client_id = \(client64) AND cursor < \(Int64(clamping: after))
                """, logger: logger)
        }
        return response
    }

    /// The salts of `versions` of `partition`, in their order (0 where it has no such version), and the version its
    /// kept change sets begin after.
    public func salts(partition: String, versions: [UInt64]) async throws -> SaltsResponse {
        var found: [Int64: Int64] = [:]
        let asked = versions.map { Int64(clamping: $0) }
        for try await (v, s) in try await client.query(
            "SELECT version, salt FROM strata_changes WHERE partition = \(partition) AND version = ANY(\(asked))", logger: logger
        ).decode((Int64, Int64).self) {
            found[v] = s
        }
        let compacted = try await Self.single(Int64.self, client.query(
            "SELECT compacted_through FROM strata_partitions WHERE name = \(partition)", logger: logger)) ?? 0
        return SaltsResponse(salts: asked.map { UInt64(bitPattern: found[$0] ?? 0) }, compactedThrough: UInt64(compacted))
    }

    /// Drops `partition`'s change sets through version `through` (by default, through the oldest cursor of its
    /// clients, so that none of them needs a snapshot), keeping their salts: a client behind them gets a snapshot
    /// of the objects.
    /// Returns the version the history now begins after.
    @discardableResult
    public func compact(partition: String, through: UInt64? = nil) async throws -> UInt64 {
        try await client.withTransaction(logger: logger) { c in
            let version = try await Self.single(Int64.self, c.query(
                "SELECT version FROM strata_partitions WHERE name = \(partition) FOR UPDATE", logger: logger)) ?? 0
            let oldest = try await Self.single(Int64.self, c.query(
                "SELECT coalesce(min(cursor), 0) FROM strata_clients WHERE partition = \(partition)", logger: logger)) ?? 0
            let target = min(Int64(clamping: through ?? UInt64(oldest)), version)
            // The rows stay, without their change sets: their salts are what a client checks the history against.
            try await c.query("""
                UPDATE strata_changes SET change_set = '\\x'::bytea
                WHERE partition = \(partition) AND version > (SELECT compacted_through FROM strata_partitions WHERE name = \(partition))
                    AND version <= \(target)
                """, logger: logger)
            try await c.query("""
                UPDATE strata_partitions SET compacted_through = greatest(compacted_through, \(target)) WHERE name = \(partition)
                """, logger: logger)
            return UInt64(max(target, 0))
        }
    }

    /// The partition's newest version (0 for a partition nothing was pushed to).
    public func version(of partition: String) async throws -> UInt64 {
        let v = try await Self.single(Int64.self, client.query(
            "SELECT version FROM strata_partitions WHERE name = \(partition)", logger: logger))
        return UInt64(v ?? 0)
    }

    static func single<T: PostgresDecodable & Sendable>(_ type: T.Type, _ rows: PostgresRowSequence) async throws -> T? {
        var out: T?
        for try await v in rows.decode(T.self) { out = v }
        return out
    }
}

/// Which page of a snapshot a pull asks for (`PullRequest.snapshotPage`, `snapshotAfter`, `snapshotSince`).
public struct SnapshotPage: Sendable {
    /// The most objects the page holds.
    public var limit: Int
    /// The page begins after this reference (its binary form); nil: at the first.
    public var after: [UInt8]?
    /// Only objects changed after this version (0: all).
    public var since: UInt64
    /// The newest version an earlier page was read at, and its salt: the page is given only while the partition
    /// still has them (otherwise the answer says `diverged`).
    public var seen: (version: UInt64, salt: UInt64)?

    public init(limit: Int, after: [UInt8]? = nil, since: UInt64 = 0, seen: (version: UInt64, salt: UInt64)? = nil) {
        self.limit = limit
        self.after = after
        self.since = since
        self.seen = seen
    }
}
