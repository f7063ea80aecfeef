import Engine
import Foundation
import Testing
import TestSupport

/// Real processes on one shared database (`EngineCrashChild PATH shared ...`): several write at once and keep
/// the sum invariant (a counter every commit increments equals the number of keys), and a process killed with
/// SIGKILL at any instant costs the others nothing: they go on without a restart, and every commit any process
/// acknowledged is there.
@Suite struct SharedProcessTests {
    /// A running child and everything it printed so far.
    final class Child: @unchecked Sendable {
        let process = Process()
        let id: UInt64
        private let pipe = Pipe()
        private var collector: OutputCollector!

        init(path: String, database: String, id: UInt64, mode: String, count: Int? = nil) throws {
            self.id = id
            process.executableURL = URL(fileURLWithPath: path)
            process.arguments = [database, "shared", String(id), mode] + (count.map { [String($0)] } ?? [])
            process.standardOutput = pipe
            try process.run()
            collector = OutputCollector(pipe)
        }

        var output: String { collector.output }

        /// Waits until the output holds `marker` `times` times (at most 10 s).
        func wait(for marker: String, times: Int) {
            let deadline = Date().addingTimeInterval(10)
            while output.components(separatedBy: marker).count - 1 < times && Date() < deadline && process.isRunning {
                SystemProcess.sleep(microseconds: 500)
            }
        }

        func kill() {
            SystemProcess.killHard(process.processIdentifier)
            finish()
        }

        /// Waits for the end and collects the last of the output.
        func finish() {
            process.waitUntilExit()
            collector.waitForEnd()
        }

        /// The highest commit it acknowledged, -1 for none.
        var lastAcknowledged: Int64 {
            var last: Int64 = -1
            for line in output.split(separator: "\n") where line.hasPrefix("committed ") {
                last = Int64(line.dropFirst("committed ".count)) ?? last
            }
            return last
        }

        /// What it printed that a surviving process must never print.
        var failure: String? {
            output.split(separator: "\n").first { $0.hasPrefix("ERROR") || $0.hasPrefix("INVARIANT") }.map(String.init)
        }
    }

    static var childPath: String? { BuildProducts.executable("EngineCrashChild") }

    static func key(_ i: UInt64) -> [UInt8] { withUnsafeBytes(of: i.bigEndian) { Array($0) } }
    static func number(_ bytes: [UInt8]?) -> UInt64? { bytes.map { $0.reduce(0) { $0 << 8 | UInt64($1) } } }

    /// Checks the database as a shared read-only instance beside the running children: the counter equals the
    /// keys, every key's value is right, and each process's keys run from 0 to at least what it acknowledged.
    static func verify(_ path: String, acknowledged: [UInt64: Int64], encrypted: Bool, _ context: String) throws {
        if !FileManager.default.fileExists(atPath: path + "/CURRENT") {
            // Killed while creating the database: nothing was acknowledged.
            #expect(acknowledged.values.allSatisfy { $0 < 0 }, "\(context): commits were acknowledged and there is no database")
            return
        }
        var options = Database.Options()
        options.sharing = .shared
        options.readOnly = true
        if encrypted { options.encryptionKey = crashChildKey }
        let db = try Database.open(at: path, options: options)
        defer { try? db.close() }
        let snapshot = try db.snapshot()
        defer { snapshot.close() }
        var keys: UInt64 = 0
        var perProcess: [UInt64: Int64] = [:]
        var wrong = 0
        try snapshot.scan(0) { k, v in
            keys += 1
            let value = k.reduce(0) { $0 << 8 | UInt64($1) }
            let (id, i) = (value >> 32, Int64(value & 0xFFFF_FFFF))
            if [UInt8](v) != crashChildValue(UInt64(i)) { wrong += 1 }
            if i != (perProcess[id] ?? -1) + 1 { wrong += 1 }
            perProcess[id] = i
            return true
        }
        #expect(wrong == 0, "\(context): keys missing or wrong values")
        #expect(number(try snapshot.get(Array("total".utf8), in: 1)) ?? 0 == keys, "\(context): the counter is not the number of keys")
        for (id, last) in acknowledged {
            #expect((perProcess[id] ?? -1) >= last, "\(context): process \(id) acknowledged commit \(last), the database ends at \(perProcess[id] ?? -1)")
        }
        #expect(db.checkConsistency() == [], "\(context)")
    }

    @Test(arguments: [2, 3])
    func processesWritingAtOnceKeepTheSumInvariant(processes: Int) throws {
        guard let child = Self.childPath else {
            Issue.record("EngineCrashChild was not built beside the tests")
            return
        }
        let temp = try TemporaryDirectory()
        let path = temp.child("db")
        let commits = 300 * Seeds.scale
        let children = try (0..<processes).map {
            try Child(path: child, database: path, id: UInt64($0), mode: $0 == 0 ? "compaction" : $0 == 1 ? "reopen" : "commits", count: commits)
        }
        for c in children {
            c.finish()
            #expect(c.process.terminationStatus == 0, "process \(c.id): \(c.failure ?? c.output.suffix(300).description)")
        }
        try Self.verify(path, acknowledged: Dictionary(uniqueKeysWithValues: children.map { ($0.id, Int64(commits - 1)) }), encrypted: false, "end")
        let db = try Database.open(at: path)
        #expect(Self.number(try db.snapshot().get(Array("total".utf8), in: 1)) == UInt64(processes * commits))
        try db.close()
    }

    /// Two processes write; one of them, picked at random, is killed at a random instant of `mode` (see the
    /// child's modes: plain commits, flushes, compactions, open and close, encrypted, spilled transactions,
    /// background flushes, killed between their plan and their install) and
    /// started again, 20 times (`STRATA_TEST_SCALE` for more); in `both`, both are killed at once each round.
    /// After each kill a read-only instance checks every commit the killed ones acknowledged; a survivor must
    /// never fail or see a broken invariant.
    @Test(arguments: Seeds.environmentOr([5]), ["commits", "flush", "compaction", "reopen", "encrypted", "spill", "background", "both"])
    func aKilledProcessCostsTheOthersNothing(seed: UInt64, mode: String) throws {
        guard let child = Self.childPath else {
            Issue.record("EngineCrashChild was not built beside the tests")
            return
        }
        let temp = try TemporaryDirectory()
        let path = temp.child("db")
        var rng = SplitMix64(seed: seed)
        var acknowledged: [UInt64: Int64] = [:]
        let childMode = mode == "both" ? "compaction" : mode
        var running = try (0..<2).map { try Child(path: child, database: path, id: UInt64($0), mode: childMode) }
        let marker = [
            "flush": "flushing ", "compaction": "compacting ", "reopen": rng.next() % 2 == 0 ? "opening" : "closing ", "encrypted": "flushing ",
            "spill": "spilling ", "background": "background-flushing",
        ][mode]
        for round in 0..<(20 * Seeds.scale) {
            if mode == "both" {
                // Both at once, at a random moment after each has made some progress (on a loaded machine a
                // restarted child may take the whole random wait to open): whatever each was doing.
                for c in running { c.wait(for: "committed ", times: 2) }
                SystemProcess.sleep(microseconds: UInt32(rng.next() % 60_000) + 5_000)
                for c in running { SystemProcess.killHard(c.process.processIdentifier) }
                for c in running {
                    c.finish()
                    if let failure = c.failure { Issue.record("round \(round): process \(c.id) had failed: \(failure)") }
                    acknowledged[c.id] = max(acknowledged[c.id] ?? -1, c.lastAcknowledged)
                }
                try Self.verify(path, acknowledged: acknowledged, encrypted: false, "round \(round), after killing both")
                running = try (0..<2).map { try Child(path: child, database: path, id: UInt64($0), mode: childMode) }
                continue
            }
            let victim = Int(rng.next() % 2)
            let target = running[victim]
            if let marker {
                // Aim at the instant: wait for its next announcement, then kill within the next 2 ms.
                let seen = target.output.components(separatedBy: marker).count - 1
                target.wait(for: marker, times: seen + 1)
                SystemProcess.sleep(microseconds: UInt32(rng.next() % 2_000))
            } else {
                SystemProcess.sleep(microseconds: UInt32(rng.next() % 60_000) + 5_000)
            }
            target.kill()
            if let failure = target.failure { Issue.record("round \(round): the killed process \(target.id) had failed: \(failure)") }
            acknowledged[target.id] = max(acknowledged[target.id] ?? -1, target.lastAcknowledged)
            try Self.verify(path, acknowledged: acknowledged, encrypted: mode == "encrypted", "round \(round), after killing \(target.id)")
            let survivor = running[1 - victim]
            #expect(survivor.process.isRunning, "round \(round): the survivor stopped: \(survivor.failure ?? survivor.output.suffix(300).description)")
            running[victim] = try Child(path: child, database: path, id: target.id, mode: childMode)
        }
        for c in running {
            c.kill()
            if let failure = c.failure { Issue.record("process \(c.id) failed: \(failure)") }
            acknowledged[c.id] = max(acknowledged[c.id] ?? -1, c.lastAcknowledged)
        }
        try Self.verify(path, acknowledged: acknowledged, encrypted: mode == "encrypted", "end")
        #expect(acknowledged.values.allSatisfy { $0 > 20 }, "the processes made too little progress to test anything: \(acknowledged)")
        // The last one to open, alone, recovers what the killed ones left.
        var options = Database.Options()
        options.sharing = .shared
        if mode == "encrypted" { options.encryptionKey = crashChildKey }
        let db = try Database.open(at: path, options: options)
        #expect(db.checkConsistency() == [])
        try db.close()
    }
}
