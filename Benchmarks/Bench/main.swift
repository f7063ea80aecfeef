// `swift run -c release Bench`: Strata against SQLite and LMDB, same data, same process, one run.

import ArgumentParser
import BenchKit
import Foundation

// The second process of the sharing rows: the Bench started again by itself.
if CommandLine.arguments.count > 1, CommandLine.arguments[1] == SharingChild.command {
    SharingChild.main(Array(CommandLine.arguments.dropFirst(2)))
}

struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "Bench", abstract: "Measures Strata against SQLite and LMDB on the same workloads in one run.")

    @Option(help: "Number of Person records.") var n = 1_000_000
    @Option(help: "Comma-separated workloads: \(Runner.allWorkloads.joined(separator: ","))") var workloads = Runner.allWorkloads.joined(separator: ",")
    @Option(help: "Runs per workload (the table shows the median, min-max).") var runs = 3
    @Option(help: "Write the figures as JSON to this path.") var json: String?
    @Option(help: "Write an SVG bar chart of the ratios against each peer to this path.") var chart: String?
    @Option(help: "Draw the chart (--chart) of a report written by --json, without running anything.") var replot: String?
    @Option(help: "Comma-separated peers: sqlite,lmdb,grdb,rocksdb (RocksDB runs the sustained workload only)") var peers = "sqlite,lmdb,grdb,rocksdb"
    @Option(help: "Directory for the databases, each run's main databases kept there for inspection (default: a temporary directory, removed afterwards).") var dir: String?
    @Option(help: "Random primary-key lookups.") var lookups = 1_000_000
    @Option(help: "Strata's processSharing for every Realm the Bench opens: shared (the default) or exclusive.") var processSharing = "shared"
    @Flag(help: "Open Strata's Realms with observationTracking on (reads record for Swift's Observation).") var observationTracking = false
    @Flag(help: "Run in a debug build too, whose figures mean nothing: the test suite's smoke run, which checks the results alone.") var smoke = false

    func run() throws {
        #if DEBUG
        if !smoke {
            FileHandle.standardError.write(Data("Bench: this is a debug build, whose figures would mislead. Run `swift run -c release Bench`.\n".utf8))
            throw ExitCode(2)
        }
        #endif
        if let replot {
            guard let chart else { throw ValidationError("--replot needs --chart PATH to write the chart to") }
            let report = try JSONDecoder().decode(Report.self, from: Data(contentsOf: URL(fileURLWithPath: replot)))
            let peerList = peers.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces).lowercased() }.filter { !$0.isEmpty }
            try Data(Chart.svg(report, peers: peerList).utf8).write(to: URL(fileURLWithPath: chart))
            return
        }
        guard ["shared", "exclusive"].contains(processSharing) else { throw ValidationError("--process-sharing is shared or exclusive") }
        StrataObjectPeer.useExclusiveFiles(processSharing == "exclusive")
        StrataObjectPeer.trackObservation(observationTracking)
        let wanted = Set(workloads.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) })
        let unknown = wanted.subtracting(Runner.allWorkloads)
        guard unknown.isEmpty else {
            throw ValidationError("unknown workloads \(unknown.sorted().joined(separator: ", ")); known: \(Runner.allWorkloads.joined(separator: ", "))")
        }
        let peerList = peers.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces).lowercased() }.filter { !$0.isEmpty }
        for p in peerList where !["sqlite", "lmdb", "grdb", "rocksdb"].contains(p) { throw ValidationError("unknown peer \(p); known: sqlite, lmdb, grdb, rocksdb") }
        let base = dir ?? NSTemporaryDirectory() + "strata-bench-\(getpid())"
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        defer { if dir == nil { try? FileManager.default.removeItem(atPath: base) } }

        var config = Runner.Configuration(directory: base)
        config.n = n
        config.keepsDatabases = dir != nil
        config.lookups = lookups
        config.runs = max(runs, 1)
        config.workloads = wanted
        config.peers = peerList
        let report = try Runner(config).run()
        print("Strata Bench · commit \(report.commit) · \(report.toolchain) · \(report.machine), \(report.cores) cores")
        print("N = \(report.n), \(report.runs) runs (median, min–max) · \(report.durability)")
        print("Ratios: Strata's figure over the peer's, oriented so that > 1 means Strata is better.\n")
        print(Runner.table(report, peers: peerList))
        let disagreements = Runner.disagreements(report)
        if !disagreements.isEmpty {
            print("RESULTS DISAGREE:\n" + disagreements.joined(separator: "\n"))
        }
        if let json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(report).write(to: URL(fileURLWithPath: json))
        }
        if let chart {
            try Data(Chart.svg(report, peers: peerList).utf8).write(to: URL(fileURLWithPath: chart))
        }
        if !disagreements.isEmpty { throw ExitCode(1) }
    }
}

BenchCommand.main()
