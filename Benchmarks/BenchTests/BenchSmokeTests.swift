import BenchKit
import Foundation
import Testing
import TestSupport

/// Every Bench workload at a tiny N: the engines must compute the same results. No timing assertions.
@Suite struct BenchSmokeTests {
    @Test func everyWorkloadRunsAndAllEnginesAgree() async throws {
        let dir = NSTemporaryDirectory() + "strata-bench-smoke-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var config = Runner.Configuration(directory: dir)
        config.n = 2_000
        config.lookups = 5_000
        config.runs = 1
        config.progress = false
        // The sharing rows' second process: the Bench built beside the tests.
        let bench: String = try #require(BuildProducts.executable("Bench"), "the Bench was not built beside the tests")
        config.secondProcess = bench
        // On a thread of its own: the sync server's rows wait for work on the concurrency pool, which a test's
        // own thread belongs to.
        let runConfig = config
        let report = try await withCheckedThrowingContinuation { (c: CheckedContinuation<Report, any Error>) in
            Thread { c.resume(with: Result { try Runner(runConfig).run() }) }.start()
        }
        #expect(Runner.disagreements(report) == [])
        let data = Dataset(count: 2_000, lookups: 5_000)
        for engine in [Runner.strata, Runner.strataEngine, "SQLite", "LMDB"] {
            let checks = try #require(report.checks[engine], "\(engine) reported nothing")
            #expect(checks["sum of ages"] == data.ageSum, "\(engine)")
            #expect(checks["sum of all fields"] == data.allSum, "\(engine)")
            #expect(checks["sum of looked-up ages"] == data.lookupAgeSum, "\(engine)")
            #expect(checks["count age > 50"] == data.ageOver50, "\(engine)")
            #expect(checks["count firstName BEGINSWITH ab"] == data.firstNameAB, "\(engine)")
            #expect(checks["age of the middle person"] == data.people[1_000].age, "\(engine)")
        }
        #expect(report.rows.count >= 21)
        // The migrations computed the same data everywhere, and the right data.
        for engine in [Runner.strata, "SQLite", "LMDB"] {
            let checks = try #require(report.checks[engine])
            #expect(checks["sum of fullName lengths"] == 2_000 * 19, "\(engine)")
            #expect(checks["sum of yearsSinceBirth"] == data.ageSum, "\(engine)")
            #expect(checks["sum of retyped lengths"] == data.people.reduce(0) { $0 + String($1.age).count }, "\(engine)")
        }
        // The lastName index finds every person with each name (names repeat rarely; each is looked up once).
        let names = data.lookupIDs.prefix(10_000).map { data.people[$0].lastName }
        let byName = Dictionary(grouping: data.people, by: \.lastName)
        let indexedSum = names.reduce(0) { sum, name in sum + (byName[name] ?? []).reduce(0) { $0 + $1.age } }
        for engine in [Runner.strata, "SQLite", "LMDB"] {
            #expect(report.checks[engine]?["sum of ages queried by lastName"] == indexedSum, "\(engine)")
        }
        let table = Runner.table(report, peers: ["sqlite", "lmdb"])
        #expect(table.contains("| lookup (/s) |"))
    }
}
