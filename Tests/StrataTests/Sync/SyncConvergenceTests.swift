import Foundation
import Testing
import TestSupport

@testable import Strata

/// The deterministic randomized convergence test of change capture and applying server changes: four clients
/// edit an object graph offline (links, lists, sets, maps, embedded objects, AnyRealmValue, deletes and
/// re-creates, increments), an in-process ordering server is the oracle, and a network between them delivers
/// messages late, out of order, twice or never. At quiescence every client equals the oracle, and the counter's
/// additions sum exactly. `TEST_SEED` runs one seed; `STRATA_TEST_SCALE` multiplies the seeds.
@Suite struct SyncConvergenceTests {
    final class Client {
        let realm: Realm
        /// The last sequence the server acknowledged (upload cursor).
        var uploaded: UInt64 = 0
        init(_ realm: Realm) { self.realm = realm }
        var clientID: UInt64 { realm.syncStatus?.clientID ?? 0 }
    }

    enum Message {
        case push(Int, [ChangeSet])
        case pushAck(Int, UInt64)
        case pull(Int, after: UInt64, limit: Int)
        case pullReply(Int, [ServerChangeSet])
    }

    struct Run {
        var rng: SplitMix64
        let server = OrderingServer()
        var clients: [Client] = []
        var inFlight: [Message] = []
        /// The sum of every addition to the counter committed on any client.
        var committedIncrements: Int64 = 0
        var appliedBatches = 0
        var refusedBatches = 0

        init(seed: UInt64, dir: TemporaryDirectory, clients count: Int) throws {
            rng = SplitMix64(seed: seed)
            for i in 0..<count { clients.append(Client(try Realm(configuration: SyncTesting.config(dir, "c\(i).realm")))) }
        }

        mutating func deliver(_ m: Message) throws {
            switch m {
            case .push(let c, let sets):
                let ack = server.push(client: clients[c].clientID, sets)
                inFlight.append(.pushAck(c, ack))
            case .pushAck(let c, let ack):
                clients[c].uploaded = max(clients[c].uploaded, ack)
            case .pull(let c, let after, let limit):
                inFlight.append(.pullReply(c, server.pull(after: after, limit: limit)))
            case .pullReply(let c, let batch):
                do {
                    try clients[c].realm.applyServerChanges(batch)
                    appliedBatches += 1
                } catch let e as Realm.Error where e.code == .invalidInput {
                    // A reply that arrived after a later one left a gap: refused whole, asked for again later.
                    refusedBatches += 1
                }
            }
        }

        mutating func push(_ c: Int, limit: Int = .max) throws {
            let sets = try clients[c].realm.pendingChanges(after: clients[c].uploaded)
            guard !sets.isEmpty else { return }
            inFlight.append(.push(c, Array(sets.prefix(limit))))
        }

        mutating func step() throws {
            let roll = Int.random(in: 0..<100, using: &rng)
            let c = Int.random(in: 0..<clients.count, using: &rng)
            if roll < 40 {
                try edit(clients[c].realm)
            } else if roll < 55 {
                try push(c, limit: Int.random(in: 1...4, using: &rng))
            } else if roll < 70 {
                let after = clients[c].realm.syncStatus?.serverVersion ?? 0
                inFlight.append(.pull(c, after: after, limit: Int.random(in: 1...6, using: &rng)))
            } else if !inFlight.isEmpty {
                // Any message in flight, not the oldest: reordering. Some are delivered twice, some lost.
                let i = Int.random(in: 0..<inFlight.count, using: &rng)
                let m = inFlight[i]
                let fate = Int.random(in: 0..<10, using: &rng)
                if fate != 0 { inFlight.remove(at: i) }  // 0: delivered, and delivered again later
                if fate != 1 { try deliver(m) }  // 1: lost
            }
        }

        /// Delivers everything in flight, then uploads and downloads until every client has applied the whole
        /// history and no client has change sets the server lacks.
        mutating func quiesce() throws {
            while !inFlight.isEmpty { try deliver(inFlight.removeFirst()) }
            for _ in 0..<4 {
                for c in clients.indices {
                    let sets = try clients[c].realm.pendingChanges()
                    if !sets.isEmpty { clients[c].uploaded = server.push(client: clients[c].clientID, sets) }
                }
                for c in clients.indices {
                    let after = clients[c].realm.syncStatus?.serverVersion ?? 0
                    try clients[c].realm.applyServerChanges(server.pull(after: after))
                }
                let settled = try clients.allSatisfy { c in
                    try c.realm.pendingChanges().isEmpty && c.realm.syncStatus?.serverVersion == server.version
                }
                if settled { return }
            }
        }

        mutating func edit(_ realm: Realm) throws {
            committedIncrements += try SyncEdits.random(realm, rng: &rng)
        }

        /// The server's operations on the object a difference names, for a failure message.
        func history(of difference: String) -> String {
            guard let id = difference.split(separator: "\"").dropFirst().first.map(String.init) else { return "" }
            let ref = SyncTesting.ref(id)
            return server.history.flatMap { c in
                c.changeSet.operations.filter { $0.object == ref || "\($0)".contains("\"\(id)\"") }.map { "v\(c.version) c\(String(c.changeSet.clientID, radix: 16).prefix(4)) base \(c.changeSet.baseVersion): \($0)" }
            }.joined(separator: "\n")
        }

        func check(seed: UInt64) throws {
            let oracle = SyncContents.normalized(server.oracle.live)
            for (i, c) in clients.enumerated() {
                let contents = try SyncContents.of(c.realm)
                let diff = SyncContents.difference(contents, oracle)
                #expect(diff == nil, "seed \(seed): client \(i) differs from the oracle: \(diff ?? "")\n\(diff.map { history(of: $0) } ?? "")")
                #expect(try c.realm.pendingChanges().isEmpty, "seed \(seed): client \(i) still has change sets in its outbox")
                let counter = c.realm.object(ofType: SyncItem.self, forPrimaryKey: "counter")?.count
                #expect(counter.map(Int64.init) == committedIncrements, "seed \(seed): client \(i)'s counter is \(String(describing: counter)), committed additions sum to \(committedIncrements)")
            }
            #expect(server.acceptedIncrements == committedIncrements, "seed \(seed): the server took additions summing to \(server.acceptedIncrements), not \(committedIncrements)")
        }
    }

    /// At quiescence every client equals every other and the oracle; every acknowledged operation is
    /// applied exactly once.
    @Test func clientsConvergeWithTheOracleUnderReorderedDuplicatedAndLostMessages() throws {
        // STRATA_TEST_SCALE multiplies the seeds, each of 250 steps (scale 500: 2,000 seeds).
        let seeds = Seeds.environmentOr((1...UInt64(4 * Seeds.scale)).map { $0 &* 0x9E37_79B9 })
        for seed in seeds {
            let dir = try TemporaryDirectory()
            var run = try Run(seed: seed, dir: dir, clients: 4)
            // The counter exists everywhere before the random edits (its creation would reset concurrent sums).
            try run.clients[0].realm.write { run.clients[0].realm.add(SyncItem("counter")) }
            try run.quiesce()
            for _ in 0..<250 { try run.step() }
            try run.quiesce()
            try run.check(seed: seed)
            #expect(run.appliedBatches > 0)
            if ProcessInfo.processInfo.environment["SYNC_TEST_VERBOSE"] != nil {
                print(
                    "seed \(seed): \(run.server.version) server versions, \(run.appliedBatches) batches applied, \(run.refusedBatches) refused, "
                        + "\(run.server.oracle.live.count) objects live, counter \(run.committedIncrements)")
            }
        }
    }
}
