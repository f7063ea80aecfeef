import BenchKit
import Foundation
import Testing
import TestSupport

/// Every Bench workload at a tiny N: the engines must compute the same results. No timing assertions.
@Suite struct BenchSmokeTests {
    @Test func everyWorkloadRunsAndAllEnginesAgree() throws {
        let dir = try TemporaryDirectory()
        // The Bench built beside the tests, run as a process of its own: its sync server's rows then wait for no
        // other test's work on a shared concurrency pool (in this process they once waited ten minutes).
        let bench: String = try #require(BuildProducts.executable("Bench"), "the Bench was not built beside the tests")
        let json = dir.child("report.json")
        let run = try runProcess(bench, [
            "--smoke", "--n", "2000", "--lookups", "5000", "--runs", "1", "--dir", dir.child("databases"), "--json", json,
        ])
        try #require(run.status == 0, "the Bench failed (\(run.status)): \(run.err.suffix(2_000)) \(run.out.suffix(2_000))")
        let report = try JSONDecoder().decode(Report.self, from: Data(contentsOf: URL(fileURLWithPath: json)))
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
