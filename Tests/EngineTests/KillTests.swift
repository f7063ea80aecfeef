import Engine
import Foundation
import Testing
import TestSupport

/// A real crash: a child process committing in a loop is killed with SIGKILL at random moments; every commit
/// it reported is in the database after reopening, and each transaction is whole.
@Suite struct KillTests {
    static var childPath: String? { BuildProducts.executable("EngineCrashChild") }

    /// Plain commits (flushes and compactions happen in the background), commits with explicit flushes and
    /// compactions at random moments, and kills aimed at them: `flush` and `compaction` wait until the child
    /// announces one, then kill it within the next two milliseconds; `encrypted` is `maintenance` on an encrypted
    /// database.
    @Test(arguments: Seeds.environmentOr([7]), ["commits", "maintenance", "flush", "compaction", "encrypted"])
    func everyReportedCommitSurvivesSIGKILL(seed: UInt64, mode: String) throws {
        guard let child = Self.childPath else {
            Issue.record("EngineCrashChild was not built beside the tests")
            return
        }
        let temp = try TemporaryDirectory()
        let path = temp.child("db")
        var rng = SplitMix64(seed: seed)
        let kills = 20 * Seeds.scale
        var totalReported: Int64 = -1
        for round in 0..<kills {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: child)
            process.arguments = mode == "commits" ? [path] : mode == "encrypted" ? [path, "maintenance", "encrypted"] : [path, "maintenance"]
            let pipe = Pipe()
            process.standardOutput = pipe
            try process.run()
            var output = ""
            if mode == "flush" || mode == "compaction" {
                // Wait for the announcement of the n-th flush or compaction, then kill within 2 ms.
                let marker = mode == "flush" ? "flushing " : "compacting "
                let wanted = 1 + Int(rng.next() % 3)
                let deadline = Date().addingTimeInterval(10)
                while output.components(separatedBy: marker).count - 1 < wanted && Date() < deadline {
                    let chunk = pipe.fileHandleForReading.availableData
                    if chunk.isEmpty { break }
                    output += String(decoding: chunk, as: UTF8.self)
                }
                SystemProcess.sleep(microseconds: UInt32(rng.next() % 2_000))
            } else {
                // Let it run a random while: sometimes during open, usually during commits, flushes and compactions.
                SystemProcess.sleep(microseconds: UInt32(rng.next() % 120_000) + (round % 4 == 0 ? 0 : 30_000))
            }
            SystemProcess.killHard(process.processIdentifier)
            process.waitUntilExit()
            output += String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            var reported: Int64 = -1
            for line in output.split(separator: "\n") where line.hasPrefix("committed ") {
                reported = Int64(line.dropFirst("committed ".count)) ?? reported
            }
            totalReported = max(totalReported, reported)

            var options = Database.Options()
            options.backgroundMaintenance = false
            if mode == "encrypted" { options.encryptionKey = crashChildKey }
            let db = try Database.open(at: path, options: options)
            let snapshot = try db.snapshot()
            let last = try snapshot.get(Array("last".utf8), in: 1).map { bytes in
                Int64(bitPattern: bytes.reduce(0) { $0 << 8 | UInt64($1) })
            } ?? -1
            #expect(last >= totalReported, "round \(round): reported commit \(totalReported) but the database ends at \(last)")
            var count: Int64 = 0
            var ok = true
            try snapshot.scan(0) { k, v in
                let i = k.reduce(0) { $0 << 8 | UInt64($1) }
                if Int64(i) != count || [UInt8](v) != crashChildValue(i) { ok = false; return false }
                count += 1
                return true
            }
            #expect(ok, "round \(round): partition 0 is not exactly keys 0..<\(count) with their values")
            #expect(count == last + 1, "round \(round): partition 0 holds \(count) keys but 'last' is \(last): a transaction was split")
            #expect(db.checkConsistency() == [])
            snapshot.close()
            try db.close()
            totalReported = max(totalReported, last)
        }
        #expect(totalReported > 100, "the child made too little progress to test anything")
    }
}
