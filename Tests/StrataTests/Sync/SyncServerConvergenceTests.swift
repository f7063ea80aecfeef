import Foundation
import StrataSync
import Testing
import TestSupport

@testable import Strata

/// Part 1's convergence test run end to end: four clients with sync sessions edit the object graph at random,
/// go offline and come back (suspend, resume), through a proxy that loses, duplicates, delays and reorders
/// requests and answers, to two server processes on one PostgreSQL. At quiescence every client equals the
/// server's objects and an oracle that replays the server's history with sync's rules, and the counter's
/// additions sum exactly (every operation applied once). `TEST_SEED` runs one seed (the edits are seeded; the
/// timing of sessions is not); `STRATA_TEST_SCALE` multiplies the seeds.
@Suite(.serialized) struct SyncServerConvergenceTests {
    typealias Setup = SyncServerTests.Setup

    @Test func clientsOfTwoServersConvergeThroughAFaultyNetwork() async throws {
        let seeds = Seeds.environmentOr((1...UInt64(2 * Seeds.scale)).map { $0 &* 0x9E37_79B9 })
        try await Setup.with(servers: 2) { setup in
            for seed in seeds { try await Self.run(seed: seed, setup: setup) }
        }
    }

    /// The same run while servers are killed (SIGKILL) and restarted and PostgreSQL crashes (`pg_ctl stop -m
    /// immediate`) and comes back: no committed edit is lost, every operation is applied once.
    @Test func clientsConvergeThroughServerKillsAndAPostgresCrash() async throws {
        let seeds = Seeds.environmentOr((1...UInt64(Seeds.scale)).map { $0 &* 0x2545_F491 })
        try await Setup.with(servers: 2) { setup in
            for seed in seeds { try await Self.run(seed: seed, setup: setup, chaos: true) }
        }
    }

    /// The same run while the database is restored from a backup taken part way (`pg_dump`, then `pg_restore` over
    /// it, its servers killed and started again): the clients that saw what it lost bring it back, and the
    /// counter's additions still sum exactly.
    @Test func clientsConvergeAfterTheServersDatabaseIsRestoredFromAnOlderBackup() async throws {
        let seeds = Seeds.environmentOr((1...UInt64(Seeds.scale)).map { $0 &* 0x6A09_E667 })
        try await Setup.with(servers: 2) { setup in
            for seed in seeds { try await Self.run(seed: seed, setup: setup, restore: true) }
        }
    }

    static func run(seed: UInt64, setup: Setup, chaos: Bool = false, restore: Bool = false) async throws {
        let partition = "p\(seed)"
        let token = try SyncServerProcess.token(write: [partition])
        let proxies = try setup.servers.indices.map { i in try FaultyProxy(target: setup.servers[i].port, seed: seed &+ UInt64(i)) }
        defer { for p in proxies { p.stop() } }
        var clients = (0..<4).map { i in setup.config("\(seed)-c\(i).realm", partition: partition, url: proxies[i % proxies.count].url, token: token) }
        var rng = SplitMix64(seed: seed)
        var committed: Int64 = 0
        let verbose = ProcessInfo.processInfo.environment["SYNC_TEST_VERBOSE"] != nil
        let started = Date()
        func phase(_ name: String) { if verbose { print("seed \(seed): \(name) at \(Int(Date().timeIntervalSince(started) * 1000)) ms") } }

        // The counter exists everywhere before the edits (a concurrent create would reset its sum).
        try SyncServerTests.write(clients[0]) { r in r.add(SyncItem("counter")) }
        try await setup.session(clients[0]).wait(for: .upload)
        for c in clients { try await setup.session(c).wait(for: .download) }
        phase("counter everywhere")

        var restarts = 0
        func restart(_ i: Int) throws {
            restarts += 1
            setup.servers[i] = try SyncServerProcess(cluster: setup.cluster, database: setup.database, dir: setup.dir,
                                                     name: "server\(i)-\(seed)-\(restarts)")
            proxies[i].retarget(setup.servers[i].port)
        }
        let backup = setup.dir.child("backup-\(seed).dump")
        for step in 0..<150 {
            if restore {
                switch step {
                case 40: try setup.cluster.dump(setup.database, to: backup)
                case 100:
                    for server in setup.servers { server.kill() }
                    try setup.cluster.restore(setup.database, from: backup)
                    for i in setup.servers.indices { try restart(i) }
                    phase("restored")
                default: break
                }
            }
            if chaos {
                switch step {
                case 30: setup.servers[0].kill()
                case 50: try restart(0)
                case 70: try setup.cluster.stop(mode: "immediate")
                case 80: try setup.cluster.start()
                case 110:
                    setup.servers[1].kill()
                    try restart(1)
                default: break
                }
            }
            if step == 75 {
                // A fifth client joins while the others edit: its first download walks the snapshot in pages of
                // two through the faulty network, with catch-up rounds for what the others change meanwhile.
                var late = setup.config("\(seed)-late.realm", partition: partition, url: proxies[4 % proxies.count].url, token: token)
                late.syncConfiguration?.snapshotPage = 2
                clients.append(late)
                _ = try setup.session(late)
                phase("a fifth client joins")
            }
            let c = Int.random(in: 0..<clients.count, using: &rng)
            switch Int.random(in: 0..<100, using: &rng) {
            case 0..<60:
                let realm = try Realm(configuration: clients[c])
                let added = try SyncEdits.random(realm, rng: &rng)
                committed += added
                if verbose && added != 0, let status = realm.syncStatus {
                    print("seed \(seed): step \(step) client \(status.clientID % 10000) sequence \(status.lastSequence) adds \(added)")
                }
            case 60..<70: try setup.session(clients[c]).suspend()
            case 70..<80: try setup.session(clients[c]).resume()
            default: try await Task.sleep(for: .milliseconds(Int.random(in: 1...20, using: &rng)))
            }
        }

        phase("edits done")
        // Quiescence: every session back, every outbox on the server, every client at the server's version.
        for c in clients { try setup.session(c).resume() }
        var settled = false
        for _ in 0..<12 where !settled {
            for (i, c) in clients.enumerated() {
                for direction in [SyncSession.ProgressDirection.upload, .download] {
                    let began = Date()
                    try await setup.session(c).wait(for: direction)
                    if Date().timeIntervalSince(began) > 2 { phase("client \(i) waited \(Date().timeIntervalSince(began)) s for \(direction)") }
                }
            }
            let version = try setup.version(partition)
            settled = try clients.allSatisfy { c in
                let realm = try Realm(configuration: c)
                return try realm.pendingChanges().isEmpty && realm.syncStatus?.serverVersion == UInt64(version)
            }
        }
        if !settled {
            // What held them: each client's outbox and status, and what the server counts of each client.
            var said: [String] = []
            for (i, c) in clients.enumerated() {
                let realm = try Realm(configuration: c)
                let s = realm.syncStatus
                let pending = try realm.pendingChanges().map { "\($0.clientID % 10000)/\($0.sequence)" }
                said.append("client \(i): id \((s?.clientID ?? 0) % 10000) last \(s?.lastSequence ?? 0) acknowledged \(s?.acknowledgedSequence ?? 0) at version \(s?.serverVersion ?? 0), outbox \(pending)")
            }
            let rows = try setup.cluster.sql(
                "SELECT client_id % 10000, last_sequence, cursor FROM strata_clients WHERE partition = '\(partition)' ORDER BY 1", database: setup.database)
            let serverVersion = try setup.version(partition)
            said.append("server at version \(serverVersion); clients (id|last sequence|cursor) \(rows.split(separator: "\n").joined(separator: "; "))")
            let report = said.joined(separator: "\n")
            Issue.record("seed \(seed): the clients did not settle\n\(report)")
        }
        phase("settled")

        let history = try setup.history(partition)
        let oracle = MemorySyncStore()
        for (i, set) in history.enumerated() {
            #expect(set.version == UInt64(i + 1), "seed \(seed): the server's history has a gap at \(i + 1)")
            for op in set.changeSet.operations {
                SyncRules.apply(op, author: set.changeSet.clientID, base: set.changeSet.baseVersion, version: set.version, to: oracle)
            }
        }
        let expected = SyncContents.normalized(oracle.live)
        let server = SyncContents.normalized(try setup.objects(partition))
        #expect(SyncContents.difference(server, expected) == nil,
                "seed \(seed): the server's objects differ from its history's: \(SyncContents.difference(server, expected) ?? "")")
        var exact = true
        for (i, c) in clients.enumerated() {
            let realm = try Realm(configuration: c)
            let diff = SyncContents.difference(try SyncContents.of(realm), expected)
            #expect(diff == nil, "seed \(seed): client \(i) differs from the server: \(diff ?? "")")
            let counter = realm.object(ofType: SyncItem.self, forPrimaryKey: "counter")?.count
            #expect(counter.map(Int64.init) == committed, "seed \(seed): client \(i)'s counter is \(String(describing: counter)), committed additions sum to \(committed)")
            exact = exact && counter.map(Int64.init) == committed
        }
        // The history's own count (a recovery may set the counter to what the lost history had).
        let counted = oracle.live[SyncTesting.ref("counter")]?.fields["count"]
        #expect(counted == .value(.int(committed)), "seed \(seed): the server's history counts \(String(describing: counted)), the clients committed \(committed)")
        if !exact || counted != .value(.int(committed)) {
            for set in history {
                let counts = set.changeSet.operations.compactMap { op -> String? in
                    switch op {
                    case .addInteger(SyncTesting.ref("counter"), "count", let n): "+\(n)"
                    case .set(SyncTesting.ref("counter"), "count", let v): "= \(v)"
                    default: nil
                    }
                }
                guard !counts.isEmpty || set.changeSet.recovery != nil else { continue }
                print("seed \(seed): version \(set.version) client \(set.changeSet.clientID % 10000) sequence \(set.changeSet.sequence) counter \(counts)"
                      + (set.changeSet.recovery.map { " recovery through \($0.through) carrying \($0.carried.map { "\($0.clientID % 10000)/\($0.sequence)" })" } ?? ""))
            }
        }
        let counts = proxies.map { $0.counts.withLock { $0 } }
        #expect(counts.reduce(0) { $0 + $1.droppedRequests + $1.droppedResponses + $1.duplicated } > 0, "seed \(seed): the network did no harm")
        if ProcessInfo.processInfo.environment["SYNC_TEST_VERBOSE"] != nil {
            print("seed \(seed): \(history.count) versions, \(expected.count) objects, counter \(committed), network \(counts)")
        }
        await setup.stopSessions()
        phase("sessions stopped")
    }
}
