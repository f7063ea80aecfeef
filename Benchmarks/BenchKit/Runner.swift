import Engine
import Foundation
import TestSupport

/// Runs the workloads on every engine, in one process, with the same data, and builds the report.
public final class Runner {
    public struct Configuration: Sendable {
        public var n = 1_000_000
        public var lookups = 1_000_000
        public var runs = 3
        public var workloads: Set<String> = Set(Runner.allWorkloads)
        public var peers: [String] = ["sqlite", "lmdb", "grdb", "rocksdb"]
        public var directory: String
        public var progress = true
        /// Keeps each run's main databases (`run<K>-<engine>`) for inspection afterwards, as `--dir` asks.
        public var keepsDatabases = false
        /// The executable the sharing rows start as their second process (`Bench sharing-child`); nil: the running
        /// one, which is the Bench (a test names the built Bench instead).
        public var secondProcess: String? = nil
        public init(directory: String) { self.directory = directory }
    }

    public static let allWorkloads = [
        "insert", "enumerate-int", "enumerate-all", "lookup", "query-pk", "query", "query-indexed", "snapshot-read", "notify", "open", "size",
        "update-all", "delete-half",
        "migrate-combine", "migrate-rename", "migrate-retype", "sustained", "small-txn", "short-sessions", "codecs", "import-realm",
        "sharing", "sync", "sync-server",
    ]
    /// Strata through its object API: the column every ratio is computed from.
    public static let strata = "Strata"
    /// Opens timed per run by the open workload.
    static let opens = ProcessInfo.processInfo.environment["STRATA_BENCH_OPENS"].flatMap { Int($0) }.map { max($0, 1) } ?? 11
    /// Strata's engine driven directly: its figures appear as their own rows, marked "[engine]".
    public static let strataEngine = "Strata engine"
    /// Strata's object API on an encrypted file: its figures appear as their own rows, marked "[encrypted]",
    /// for the workloads in `encryptedWorkloads`.
    public static let strataEncrypted = "Strata encrypted"
    static let encryptedWorkloads: Set<String> = ["insert", "enumerate-int", "lookup"]
    /// Strata's object API with the engine's Swift LZ4 and XXH3 (`Codecs.portable`: what Apple platforms
    /// run) where this build links liblz4 and libxxhash: rows marked "[portable codecs]", beside the system
    /// codecs' rows of the same run.
    public static let strataPortable = "Strata portable codecs"
    /// The engine driven directly with the Swift codecs, where they weigh more: rows "[engine, portable codecs]".
    public static let strataEnginePortable = "Strata engine portable codecs"
    static let portableWorkloads: Set<String> = ["insert", "enumerate-int", "lookup"]

    let config: Configuration
    public init(_ config: Configuration) { self.config = config }

    /// `STRATA_BENCH_VARIANTS=0` leaves out the encrypted and portable-codec peers (profiles of one peer).
    static let variants = ProcessInfo.processInfo.environment["STRATA_BENCH_VARIANTS"] != "0"

    func makeEngines() -> [any BenchEngine] {
        var engines: [any BenchEngine] = [StrataObjectPeer(), StrataEnginePeer()]
        if Self.variants && !config.workloads.isDisjoint(with: Self.encryptedWorkloads) { engines.append(StrataObjectPeer(encrypted: true)) }
        if Self.variants && Codecs.systemCodecsLinked && !config.workloads.isDisjoint(with: Self.portableWorkloads) {
            engines.append(StrataObjectPeer(name: Self.strataPortable))
            engines.append(StrataEnginePeer(name: Self.strataEnginePortable))
        }
        if config.peers.contains("sqlite") { engines.append(SQLitePeer()) }
        if config.peers.contains("lmdb") { engines.append(LMDBPeer()) }
        if config.peers.contains("grdb") { engines.append(GRDBPeer()) }
        return engines
    }

    func progress(_ text: String) {
        guard config.progress else { return }
        let line = isatty(2) != 0 ? "\r\u{1B}[K" + text : text + "\n"
        FileHandle.standardError.write(Data(line.utf8))
    }

    /// Runs everything; the samples of each workload on each engine, plus the results they must agree on.
    public func run() throws -> Report {
        let data = Dataset(count: config.n, lookups: config.lookups)
        var samples: [String: [String: [Double]]] = [:]  // workload -> engine -> samples
        var checks: [String: [String: Int]] = [:]
        func record(_ workload: String, _ engine: String, _ value: Double) {
            if engine == Self.strataEngine {
                samples[workload + " [engine]", default: [:]][Self.strata, default: []].append(value)
            } else if engine == Self.strataEncrypted {
                samples[workload + " [encrypted]", default: [:]][Self.strata, default: []].append(value)
            } else if engine == Self.strataPortable {
                samples[workload + " [portable codecs]", default: [:]][Self.strata, default: []].append(value)
            } else if engine == Self.strataEnginePortable {
                samples[workload + " [engine, portable codecs]", default: [:]][Self.strata, default: []].append(value)
            } else {
                samples[workload, default: [:]][engine, default: []].append(value)
            }
        }
        func check(_ engine: String, _ name: String, _ value: Int) { checks[engine, default: [:]][name] = value }
        let wanted = config.workloads

        for run in 0..<config.runs {
            for engine in makeEngines() {
                let dir = config.directory + "/run\(run)-" + engine.name.replacingOccurrences(of: " ", with: "-")
                try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
                defer { if !config.keepsDatabases { try? FileManager.default.removeItem(atPath: dir) } }
                let tag = "[run \(run + 1)/\(config.runs)] \(engine.name)"
                let want = engine.name == Self.strataEncrypted ? wanted.intersection(Self.encryptedWorkloads)
                    : [Self.strataPortable, Self.strataEnginePortable].contains(engine.name) ? wanted.intersection(Self.portableWorkloads) : wanted
                // The engine reads this switch without synchronization: it changes only here, with no database open.
                Codecs.portable = [Self.strataPortable, Self.strataEnginePortable].contains(engine.name)
                defer { Codecs.portable = false }

                progress("\(tag): insert \(config.n)")
                try engine.create(in: dir)
                var t = now()
                try engine.insertAll(data.people)
                let insertSeconds = now() - t
                if want.contains("insert") { record("insert", engine.name, Double(config.n) / insertSeconds) }
                t = now()
                try engine.close()
                if want.contains("insert") { record("insert + close", engine.name, (now() - t + insertSeconds) * 1000) }
                if want.contains("size") { record("size after insert", engine.name, Double(try engine.sizeOnDisk(in: dir)) / 1e6) }

                try engine.open(in: dir)
                /// Times `body` for a per-second workload of `count` items and records what it computed.
                /// With `countAllocations`, the first run also counts the heap allocations of one more pass.
                func rate(
                    _ workload: String, _ count: Int, _ checkName: String, countAllocations: Bool = false, _ body: () throws -> Int
                ) rethrows {
                    guard want.contains(workload) else { return }
                    progress("\(tag): \(workload)")
                    let start = now()
                    let result = try body()
                    record(workload, engine.name, Double(count) / (now() - start))
                    check(engine.name, checkName, result)
                    if countAllocations && run == 0 {
                        let allocations = try Allocations.count { _ = try body() }
                        record(workload + ": allocations", engine.name, Double(allocations) / Double(count))
                    }
                }
                try rate("enumerate-int", config.n, "sum of ages", countAllocations: true) { try engine.sumAges() }
                try rate("enumerate-all", config.n, "sum of all fields", countAllocations: true) { try engine.sumAllFields() }
                try rate("lookup", data.lookupIDs.count, "sum of looked-up ages", countAllocations: true) { try engine.lookupAges(data.lookupIDs) }
                let queried = Array(data.lookupIDs.prefix(100_000))
                try rate("query-pk", queried.count, "sum of ages queried by id") { try engine.queryAgesByID(queried) }
                if want.contains("query") {
                    progress("\(tag): query")
                    let repeats = 3
                    t = now()
                    var over50 = 0, ab = 0
                    for _ in 0..<repeats {
                        over50 = try engine.countAgeOver50()
                        ab = try engine.countFirstNameAB()
                    }
                    record("query (age > 50; firstName BEGINSWITH \"ab\")", engine.name, Double(2 * repeats) / (now() - t))
                    check(engine.name, "count age > 50", over50)
                    check(engine.name, "count firstName BEGINSWITH ab", ab)
                }
                if want.contains("snapshot-read"), let reading = engine as? any SnapshotReadingBenchEngine {
                    progress("\(tag): snapshot-read")
                    let r = try reading.enumerateWhileWriting()
                    record("snapshot-read", engine.name, Double(config.n) / r.seconds)
                    record("snapshot-read: writer commits meanwhile", engine.name, Double(r.commits) / r.seconds)
                    if let ages = checks[engine.name]?["sum of ages"], ages != r.ageSum {
                        throw BenchFailure("\(engine.name): a snapshot read while writing summed ages to \(r.ageSum), not \(ages)")
                    }
                }
                if want.contains("notify"), let notifying = engine as? any NotifyingBenchEngine {
                    progress("\(tag): notify")
                    let latencies = try notifying.notifyLatencies(200).sorted()
                    record("notify", engine.name, latencies[latencies.count / 2])
                }
                try engine.close()
                if want.contains("open") {
                    progress("\(tag): open")
                    // The median of several opens (one is a fraction of a millisecond, and the first alone moved
                    // with the machine); STRATA_BENCH_OPENS sets how many, for profiling.
                    var times: [Double] = []
                    for _ in 0..<Self.opens {
                        t = now()
                        try engine.open(in: dir)
                        let age = try engine.readOne(config.n / 2)
                        times.append((now() - t) * 1000)
                        check(engine.name, "age of the middle person", age)
                        try engine.close()
                    }
                    record("open + read one", engine.name, times.sorted()[times.count / 2])
                }
                if want.contains("query-indexed"), let indexing = engine as? any IndexingBenchEngine {
                    progress("\(tag): index lastName")
                    let copy = dir + "-indexed"
                    defer { try? FileManager.default.removeItem(atPath: copy) }
                    record("index build (lastName)", engine.name, try indexing.addLastNameIndex(in: copy, from: dir) * 1000)
                    let names = data.lookupIDs.prefix(10_000).map { data.people[$0].lastName }
                    try rate("query-indexed", names.count, "sum of ages queried by lastName") { try indexing.queryAgesByLastName(names) }
                    try engine.close()
                }
                if want.contains("update-all") || want.contains("delete-half") {
                    // On a database of their own: the workloads change the data the others read.
                    let copy = dir + "-writes"
                    try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
                    defer { try? FileManager.default.removeItem(atPath: copy) }
                    progress("\(tag): insert (memory, allocations)")
                    try engine.create(in: copy)
                    if run == 0 {
                        let (allocations, rise) = try PeakMemory.rise { try Allocations.count { try engine.insertAll(data.people) } }
                        record("insert: allocations", engine.name, Double(allocations) / Double(config.n))
                        if let rise { record("memory: insert", engine.name, Double(rise) / 1e6) }
                    } else {
                        try engine.insertAll(data.people)
                    }
                    /// Where a write row's time went, for engines that say: the milliseconds it waited to begin
                    /// and for maintenance, and the segments per partition when it started.
                    func waited(_ workload: String, _ body: () throws -> Void) rethrows {
                        let before = (engine as? any WaitReportingBenchEngine)?.waits()
                        try body()
                        guard let before, let after = (engine as? any WaitReportingBenchEngine)?.waits() else { return }
                        record("\(workload): waiting to begin", engine.name, (after.writer - before.writer) * 1000)
                        record("\(workload): waiting for maintenance", engine.name, (after.maintenance - before.maintenance) * 1000)
                        record("\(workload): segments per partition at start", engine.name, Double(before.segmentsPerPartition))
                    }
                    if want.contains("update-all") {
                        progress("\(tag): update-all")
                        try waited("update-all") {
                            t = now()
                            let n = try engine.updateAllAges()
                            record("update-all", engine.name, Double(config.n) / (now() - t))
                            check(engine.name, "people updated", n)
                        }
                    }
                    if want.contains("delete-half") {
                        progress("\(tag): delete-half")
                        try waited("delete-half") {
                            t = now()
                            let n = try engine.deleteHalf()
                            record("delete-half", engine.name, Double(n) / (now() - t))
                            check(engine.name, "people deleted", n)
                        }
                        if let querying = engine as? any QueryDeletingBenchEngine {
                            // The idiomatic form: what a query matches (the upper half of the odd ids left).
                            progress("\(tag): delete-half (query)")
                            try waited("delete-half (query)") {
                                t = now()
                                let n = try querying.deleteIDsAbove(config.n / 2)
                                record("delete-half (query)", engine.name, Double(n) / (now() - t))
                                check(engine.name, "people deleted by a query", n)
                            }
                        }
                    }
                    try engine.close()
                }
                if let migrating = engine as? any MigratingBenchEngine,
                    want.contains("migrate-combine") || want.contains("migrate-rename") || want.contains("migrate-retype")
                {
                    var onlineLengths: Int? = nil
                    if let online = engine as? any OnlineMigratingBenchEngine {
                        progress("\(tag): migrate-combine online")
                        let copy = dir + "-online"
                        defer { try? FileManager.default.removeItem(atPath: copy) }
                        let (f, rise) = try PeakMemory.rise { try online.migrateCombineOnline(in: copy, from: dir) }
                        if let rise { record("memory: migrate-combine online", engine.name, Double(rise) / 1e6) }
                        record("migrate-combine online: open", engine.name, f.openMilliseconds)
                        record("migrate-combine online: first migrated read", engine.name, f.firstReadMilliseconds)
                        record("enumerate-int, migration pending", engine.name, Double(config.n) / f.pendingEnumerateSeconds)
                        record("migrate-combine online: rewrite", engine.name, f.rewriteSeconds * 1000)
                        if let ages = checks[engine.name]?["sum of ages"], ages != f.pendingAgeSum {
                            throw BenchFailure("\(engine.name): ages read through the pending migration sum to \(f.pendingAgeSum), not \(ages)")
                        }
                        onlineLengths = f.fullNameLengths
                    }
                    progress("\(tag): migrate-combine")
                    // Each migration's checksum closure holds the database open (Strata) or closes it (the
                    // peers): it is dropped before the next step, so that every step opens a closed database.
                    let combine: Double
                    let namesSum: Int
                    do {
                        t = now()
                        let (names, rise) = try PeakMemory.rise { try migrating.migrateCombine(in: dir) }
                        combine = now() - t
                        if let rise { record("memory: migrate-combine", engine.name, Double(rise) / 1e6) }
                        namesSum = try names()
                    }
                    record("migrate-combine (blocking)", engine.name, combine * 1000)
                    record("migrate-combine objects", engine.name, Double(config.n) / combine)
                    check(engine.name, "sum of fullName lengths", namesSum)
                    if let onlineLengths, onlineLengths != namesSum {
                        throw BenchFailure("\(engine.name): online and blocking migrate-combine disagree (fullName lengths \(onlineLengths) vs \(namesSum))")
                    }
                    progress("\(tag): migrate-rename")
                    do {
                        t = now()
                        let ages = try migrating.migrateRename(in: dir)
                        record("migrate-rename", engine.name, (now() - t) * 1000)
                        check(engine.name, "sum of yearsSinceBirth", try ages())
                    }
                    progress("\(tag): migrate-retype")
                    do {
                        t = now()
                        let lengths = try migrating.migrateRetype(in: dir)
                        record("migrate-retype", engine.name, Double(config.n) / (now() - t))
                        check(engine.name, "sum of retyped lengths", try lengths())
                    }
                    // Measured once every engine has closed its database (the checksum closures close them).
                    if want.contains("size") {
                        record("size after migrate-retype", engine.name, Double(try engine.sizeOnDisk(in: dir)) / 1e6)
                        progress("\(tag): compact")
                        record("size after migrate-retype, compacted", engine.name, Double(try migrating.compactedSize(in: dir)) / 1e6)
                    }
                }
            }
        }
        #if STRATA_SYSTEM_CODECS
        if wanted.contains("codecs") {
            progress("codecs")
            let blocks = CodecBench.blocks(data, count: 256)
            for _ in 0..<config.runs {
                for portable in [false, true] {
                    let f = CodecBench.measure(blocks, portable: portable, rounds: 8)
                    let engine = portable ? Self.strataEnginePortable : Self.strataEngine
                    record("LZ4 decode, 32 KiB blocks", engine, f.decode)
                    record("LZ4 encode, 32 KiB blocks", engine, f.encode)
                    record("XXH3, 32 KiB blocks", engine, f.hash)
                }
            }
        }
        #endif
        if wanted.contains("import-realm") {
            progress("import-realm")
            let file = RealmImportBench.realmFile(data.people)
            for _ in 0..<config.runs {
                let dir = config.directory + "/import-realm"
                try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(atPath: dir) }
                record("import-realm", Self.strata, try RealmImportBench.measure(file, count: config.n, in: dir))
            }
        }
        if wanted.contains("sustained") {
            // Once (it writes 10 x N objects per engine): Strata's object API, SQLite, LMDB and RocksDB.
            let sustainers: [any SustainedBenchEngine] =
                makeEngines().compactMap { $0 as? any SustainedBenchEngine } + (config.peers.contains("rocksdb") ? [RocksDBPeer()] : [])
            for engine in sustainers {
                let sustaining = engine
                let dir = config.directory + "/sustained-" + engine.name.replacingOccurrences(of: " ", with: "-")
                try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(atPath: dir) }
                let f = try sustained(sustaining, in: dir, total: 10 * config.n, lookups: config.lookups)
                record("sustained-insert", engine.name, f.insertRate)
                record("sustained insert, last 10% / first 10%", engine.name, f.lastOverFirst)
                if let wa = f.writeAmplification { record("sustained write amplification", engine.name, wa) }
                record("sustained lookup", engine.name, f.lookupRate)
                check(engine.name, "sustained lookup sum", f.lookupSum)
            }
        }
        if wanted.contains("small-txn") {
            // Once: 6 x N objects in durable transactions of 100 (N = 1M: issue 37's 60,000 transactions).
            let engines: [any SustainedBenchEngine] =
                makeEngines().compactMap { $0 as? any SustainedBenchEngine }.filter { $0.name != "LMDB" }
                + (config.peers.contains("rocksdb") ? [RocksDBPeer()] : [])
            for engine in engines {
                let dir = config.directory + "/small-txn-" + engine.name.replacingOccurrences(of: " ", with: "-")
                try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(atPath: dir) }  // try?: a scratch directory
                let f = try smallTransactions(engine, in: dir, transactions: max(100, 6 * config.n / 100), size: 100)
                record("small-txn", engine.name, f.rate)
                if let wa = f.writeAmplification { record("small-txn write amplification", engine.name, wa) }
            }
        }
        if wanted.contains("short-sessions") {
            for _ in 0..<config.runs {
                let dir = config.directory + "/short-sessions"
                try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(atPath: dir) }  // try?: a scratch directory
                let f = try shortSessions(in: dir, sessions: 400, size: 100)
                record("short sessions: segments", Self.strata, Double(f.segments))
                record("short sessions: close", Self.strata, f.closeMilliseconds)
                // Sessions that each write more than a close merges itself (about 5 MB): their merges are
                // finished over several sessions (suspended at a close, resumed at the next open).
                try? FileManager.default.removeItem(atPath: dir)  // try?: a scratch directory
                try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
                let large = try shortSessions(in: dir, sessions: 60, size: 20_000)
                record("short sessions of 20,000: segments", Self.strata, Double(large.segments))
                record("short sessions of 20,000: close", Self.strata, large.closeMilliseconds)
            }
        }
        if wanted.contains("sharing") {
            for _ in 0..<config.runs {
                let dir = config.directory + "/sharing"
                try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(atPath: dir) }  // try?: a scratch directory
                let kinds: [SharingKind] = [.strata] + (config.peers.contains("sqlite") ? [.sqlite] : []) + (config.peers.contains("lmdb") ? [.lmdb] : [])
                let figures = try sharingFigures(in: dir, commits: max(200, min(1000, config.n / 1000)), kinds: kinds)
                for (kind, f) in figures {
                    let name = kind == .strata ? Self.strata : kind == .sqlite ? "SQLite" : "LMDB"
                    record("commit 1 record: alone", name, f.alone)
                    record("commit 1 record: idle second process", name, f.idleSecond)
                    record("commit 1 record: two processes alternating", name, f.alternating)
                    record("refresh after another process's commit", name, f.refresh)
                }
                progress("strata: commits during a merge")
                let merge = try commitsDuringAMerge(in: dir, entries: config.n)
                // A merge over before the first commit (a small N) has no figures.
                if merge.commits > 0 {
                    record("commit 1 record during a merge: median", Self.strata, merge.median)
                    record("commit 1 record during a merge: p99", Self.strata, merge.p99)
                    record("commit 1 record during a merge: commits", Self.strata, Double(merge.commits))
                }
                if merge.otherCommits > 0 {
                    record("commit 1 record during a merge, another process: median", Self.strata, merge.otherMedian)
                    record("commit 1 record during a merge, another process: p99", Self.strata, merge.otherP99)
                    record("commit 1 record during a merge, another process: commits", Self.strata, Double(merge.otherCommits))
                }
                if config.peers.contains("sqlite") {
                    progress("SQLite: commits during a checkpoint")
                    let checkpoint = try sqliteCommitsDuringACheckpoint(in: dir, entries: config.n)
                    if checkpoint.commits > 0 {
                        record("commit 1 record during a merge: median", "SQLite", checkpoint.median)
                        record("commit 1 record during a merge: p99", "SQLite", checkpoint.p99)
                        record("commit 1 record during a merge: commits", "SQLite", Double(checkpoint.commits))
                    }
                    if checkpoint.otherCommits > 0 {
                        record("commit 1 record during a merge, another process: median", "SQLite", checkpoint.otherMedian)
                        record("commit 1 record during a merge, another process: p99", "SQLite", checkpoint.otherP99)
                        record("commit 1 record during a merge, another process: commits", "SQLite", Double(checkpoint.otherCommits))
                    }
                }
                progress("strata: commits during another process's large writes")
                let large = try commitsDuringLargeWrites(in: dir, entries: config.n)
                record("commit 1 record during large writes of another process: writes waited through", Self.strata, Double(large.writesWaitedThrough))
                record("commit 1 record during large writes of another process: longest", Self.strata, large.longestCommit)
                record("commit 1 record during large writes of another process: longest write", Self.strata, large.write)
                if let s = figures[.strata] {
                    record("commit 1 record: exclusive", Self.strata, s.exclusive)
                    record("commit 1 record: shared alone / exclusive", Self.strata, s.alone / s.exclusive)
                    record("commit 1 record, not synced: exclusive", Self.strata, s.deferredExclusive)
                    record("commit 1 record, not synced: shared, alone", Self.strata, s.deferredShared)
                }
            }
        }
        if wanted.contains("sync") {
            for _ in 0..<config.runs {
                let dir = config.directory + "/sync"
                try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(atPath: dir) }  // try?: a scratch directory
                let f = try syncFigures(in: dir, people: data.people)
                record("sync: insert, capture off", Self.strata, f.insertOff)
                record("sync: insert, capture on", Self.strata, f.insertOn)
                record("sync: insert, capture on / off (time)", Self.strata, f.insertOff / f.insertOn)
                record("sync: update-all, capture off", Self.strata, f.updateOff)
                record("sync: update-all, capture on", Self.strata, f.updateOn)
                record("sync: update-all, capture on / off (time)", Self.strata, f.updateOff / f.updateOn)
                record("sync: one-object commits, capture off", Self.strata, f.smallOff)
                record("sync: one-object commits, capture on", Self.strata, f.smallOn)
                record("sync: one-object commits, capture on / off (time)", Self.strata, f.smallOff / f.smallOn)
                record("sync: apply a server batch of N creates", Self.strata, f.applyCreates)
                record("sync: apply a server batch of N sets", Self.strata, f.applySets)
            }
        }
        if wanted.contains("sync-server") {
            for _ in 0..<config.runs {
                let dir = config.directory + "/sync-server"
                try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(atPath: dir) }  // try?: a scratch directory
                let f = try syncServerFigures(in: dir, people: Array(data.people.prefix(100_000)))
                record("sync server: push", Self.strata, f.push)
                record("sync server: pull", Self.strata, f.pull)
                record("sync server: bootstrap a new client", Self.strata, f.bootstrap)
                record("sync server: commit to notification on another client, median", Self.strata, f.latencyMedian)
                record("sync server: commit to notification on another client, p99", Self.strata, f.latencyP99)
                record("sync server: PostgreSQL's own insert of such rows", Self.strata, f.postgresInsert)
            }
        }
        progress("")
        if config.progress && isatty(2) == 0 { FileHandle.standardError.write(Data("\n".utf8)) }

        let base: [(String, Unit, String)] = [
            ("insert", .perSecond, "one transaction, durable commit"),
            ("insert + close", .milliseconds, "wall time including close (Strata flushes its memtable there)"),
            ("insert: allocations", .allocations, "heap allocations per object of the insert of a second database (first run); Strata's include the object the caller makes"),
            ("memory: insert", .megabytes, "peak rise of anonymous resident memory during that insert (RssAnon, sampled every 5 ms)"),
            ("update-all", .perSecond, "one durable transaction adding 1 to every age (Strata: for p in objects { p.age += 1 }; SQLite: UPDATE; LMDB and the engine: rewrite each record), on a second database"),
            ("delete-half", .perSecond, "one durable transaction deleting the even ids, objects deleted per second (Strata: realm.delete of the filtered objects; SQLite: DELETE ... WHERE id % 2 = 0)"),
            ("delete-half (query)", .perSecond, "then, in one durable transaction, deleting what a query matches: the ids above n/2 (Strata: realm.delete(realm.objects(...).where { $0.id > n / 2 }); SQLite: DELETE ... WHERE id > n/2), objects deleted per second"),
            ("update-all: waiting to begin", .milliseconds, "Strata: the time the row's write waited for the writer gate and LOCK.writer (held by a merge in shared mode)"),
            ("update-all: waiting for maintenance", .milliseconds, "Strata: the time the row's write waited inside for the maintenance queue (a large write's flushes and install, queued behind a merge)"),
            ("update-all: segments per partition at start", .factor, "Strata: the most segments any partition had when the row began"),
            ("delete-half: waiting to begin", .milliseconds, "Strata: as for update-all"),
            ("delete-half: waiting for maintenance", .milliseconds, "Strata: as for update-all"),
            ("delete-half: segments per partition at start", .factor, "Strata: as for update-all"),
            ("delete-half (query): waiting to begin", .milliseconds, "Strata: as for update-all"),
            ("delete-half (query): waiting for maintenance", .milliseconds, "Strata: as for update-all"),
            ("delete-half (query): segments per partition at start", .factor, "Strata: as for update-all"),
            ("enumerate-int", .perSecond, "iterate all objects reading age"),
            ("enumerate-all", .perSecond, "iterate all objects reading all four properties"),
            ("enumerate-int: allocations", .allocations, "heap allocations per object of one more enumerate-int pass (first run)"),
            ("enumerate-all: allocations", .allocations, "heap allocations per object of one more enumerate-all pass (first run)"),
            ("lookup", .perSecond, "\(data.lookupIDs.count) random primary-key lookups reading age"),
            ("lookup: allocations", .allocations, "heap allocations per lookup of one more lookup pass (first run)"),
            ("query-pk", .perSecond, "\(min(data.lookupIDs.count, 100_000)) queries `id == x` reading age (Strata: where { $0.id == x }.first; SQLite: the prepared SELECT of lookup; LMDB: mdb_get)"),
            ("query (age > 50; firstName BEGINSWITH \"ab\")", .perSecond, "counts over full scans, no index"),
            ("index build (lastName)", .milliseconds, "open a closed copy and index lastName (Strata: a model with @Persisted(indexed: true); SQLite: CREATE INDEX; LMDB: a second database built by hand)"),
            ("query-indexed", .perSecond, "10,000 queries `lastName == x` through that index, summing the ages of the matches (Strata: where { $0.lastName == x })"),
            ("snapshot-read", .perSecond, "Strata: enumerate-int while another thread's Realm commits 1-object writes without pause (compare with enumerate-int)"),
            ("snapshot-read: writer commits meanwhile", .perSecond, "Strata: the durable commits per second that writer made during that enumeration"),
            ("notify", .milliseconds, "Strata: from the start of a 1-object write to the delivery of its change set to an observer of all N objects (median of 200)"),
            ("open + read one", .milliseconds, "open a closed database and read one object (the median of 11 opens in each run)"),
            ("size after insert", .megabytes, "bytes on disk after insert and close"),
            ("migrate-combine (blocking)", .milliseconds, "open v1, fullName = firstName + \" \" + lastName, both removed, commit"),
            ("migrate-combine objects", .perSecond, "the same, as objects migrated per second"),
            ("migrate-combine online: open", .milliseconds, "Strata, .online: open v1 with transformObjects; returns before any object is rewritten"),
            ("migrate-combine online: first migrated read", .milliseconds, "Strata, .online: read one object right after open (through the transform)"),
            ("enumerate-int, migration pending", .perSecond, "Strata, .online: iterate all objects reading age, every one through the transform"),
            ("migrate-combine online: rewrite", .milliseconds, "Strata, .online: finishMigrations(), the background migrator's batches on the caller's thread; compare with blocking"),
            ("memory: migrate-combine", .megabytes, "peak rise of anonymous resident memory (RssAnon, sampled every 5 ms; mapped files excluded) during the blocking migration"),
            ("memory: migrate-combine online", .megabytes, "Strata, .online: the same, from open to the end of the rewrite (enumeration while pending included)"),
            ("migrate-rename", .milliseconds, "age renamed yearsSinceBirth"),
            ("migrate-retype", .perSecond, "yearsSinceBirth Int -> String, objects per second"),
            ("size after migrate-retype", .megabytes, "bytes on disk after the three migrations, database closed (no compaction)"),
            ("LZ4 decode, 32 KiB blocks", .perSecond, "bytes per second of 256 blocks of packed Bench records, 8 rounds: [engine] liblz4, [engine, portable codecs] the Swift LZ4"),
            ("LZ4 encode, 32 KiB blocks", .perSecond, "the same blocks compressed"),
            ("XXH3, 32 KiB blocks", .perSecond, "the same blocks hashed: [engine] libxxhash, [engine, portable codecs] the Swift XXH3"),
            ("sustained-insert", .perSecond, "10 x N objects of about 250 bytes (a 150-250 character string, three integers) in durable transactions of 10,000, closed and opened again every 100 transactions"),
            ("sustained insert, last 10% / first 10%", .keptFactor, "the insert rate of the last tenth of those transactions over the first tenth's"),
            ("sustained write amplification", .factor, "bytes the process wrote to storage (/proc/self/io write_bytes) per byte of values during that insert"),
            ("sustained lookup", .perSecond, "random primary-key lookups reading one integer, after the sustained insert (database reopened)"),
            ("small-txn", .perSecond, "6 x N records of the sustained workload in durable transactions of 100, the database open throughout (N = 1M: 60,000 transactions), records per second"),
            ("small-txn write amplification", .factor, "bytes the process wrote to storage (/proc/self/io write_bytes) per byte of values during that run"),
            ("short sessions: segments", .factor, "Strata: 400 sessions that open, commit 100 records and close, with no pause; the most segments any type's partition holds afterwards, as strata info reports them (the aim: at most 12)"),
            ("short sessions: close", .milliseconds, "Strata: the median time of those sessions' closes"),
            ("short sessions of 20,000: segments", .factor, "Strata: 60 sessions that open, commit 20,000 records (about 5 MB, more than a close merges itself) and close; the most segments any type's partition holds afterwards"),
            ("short sessions of 20,000: close", .milliseconds, "Strata: the median time of those sessions' closes (a close suspends the merge under way)"),
            ("import-realm", .perSecond, "Strata: a RealmSwift file of the N people (format 24, written by the project's Realm-format writer) converted into a Strata database, objects per second; compare with Strata's insert row (the aim: at least half of it)"),
            ("sync: insert, capture off", .perSecond, "Strata: the insert row's transaction on a file that does not capture changes (this workload's own run)"),
            ("sync: insert, capture on", .perSecond, "Strata: the same on a file with capturesChanges: the commit also records N create operations and their undo images in the outbox"),
            ("sync: insert, capture on / off (time)", .factor, "Strata: the insert's time with capture over its time without (the aim: at most 1.2)"),
            ("sync: update-all, capture off", .perSecond, "Strata: then every age + 1 in one transaction, without capture"),
            ("sync: update-all, capture on", .perSecond, "Strata: the same with capture (N set operations and N undo images)"),
            ("sync: update-all, capture on / off (time)", .factor, "Strata: update-all's time with capture over its time without (the aim: at most 1.2)"),
            ("sync: one-object commits, capture off", .perSecond, "Strata: write transactions that each set one object's property (up to 500, spread over the objects), without capture"),
            ("sync: one-object commits, capture on", .perSecond, "Strata: the same with capture"),
            ("sync: one-object commits, capture on / off (time)", .factor, "Strata: their time with capture over their time without"),
            ("sync: apply a server batch of N creates", .perSecond, "Strata: the captured insert's change set applied as a server's (applyServerChanges) to a third file, objects per second"),
            ("sync: apply a server batch of N sets", .perSecond, "Strata: then the captured update-all's change set, objects per second"),
            ("sync server: push", .perSecond, "Strata: operations per second uploaded to strata-sync-server (in this process, on a PostgreSQL 15 cluster of the Bench's own, over loopback HTTP): min(N, 100,000) creates committed in writes of 1,000, then the session's wait(for: .upload)"),
            ("sync server: pull", .perSecond, "Strata: a second client's download of those operations (pull and applyServerChanges), operations per second"),
            ("sync server: bootstrap a new client", .perSecond, "Strata: a third, new client's start from a snapshot of the server's objects, objects per second"),
            ("sync server: commit to notification on another client, median", .milliseconds, "Strata: a one-object commit on the first client until a notification on the second (upload, the long poll woken by NOTIFY, apply), 200 in a row"),
            ("sync server: commit to notification on another client, p99", .milliseconds, "their 99th percentile"),
            ("sync server: PostgreSQL's own insert of such rows", .perSecond, "the physical reference: PostgreSQL inserting rows of the objects table's shape as a push writes them, 1,000 a statement (arrays unnested), each its own transaction, over postgres-nio; a push writes one such row per object and one history row per change set"),
            ("commit 1 record: exclusive", .milliseconds, "Strata's engine, exclusive mode (LOCK held while open): the median of durable 1-record commits (64-byte value)"),
            ("commit 1 record: alone", .milliseconds, "one process, durable 1-record commits. Strata: the engine in shared mode (LOCK.writer taken per commit, the log's new bytes read); SQLite: WAL, synchronous=FULL; LMDB: default (durable) flags"),
            ("commit 1 record: idle second process", .milliseconds, "the same with a second process (the Bench started again) holding the database open and idle"),
            ("commit 1 record: two processes alternating", .milliseconds, "commits alternate between this process and the second one, each timed by the process that makes it (each first catches up with the other's last commit)"),
            ("refresh after another process's commit", .milliseconds, "after each 1-record commit of the second process, this one's catch-up and read of it (Strata: refresh() and a get; SQLite: the SELECT; LMDB: a read transaction and mdb_get)"),
            ("commit 1 record during a merge: median", .milliseconds, "Strata's engine, shared: durable 1-record commits made while a background merge of N records (four segments) runs, until it installs. SQLite: the same commits (WAL, synchronous=FULL) while another connection runs a PASSIVE checkpoint of a WAL holding N records, until it returns"),
            ("commit 1 record during a merge: p99", .milliseconds, "their 99th percentile (the aim: at most 5 ms)"),
            ("commit 1 record during a merge: commits", .factor, "how many commits the merge's run allowed"),
            ("commit 1 record during a merge, another process: median", .milliseconds, "the same commits made by a second process (the Bench started again) while this process merges"),
            ("commit 1 record during a merge, another process: p99", .milliseconds, "their 99th percentile (the aim: at most 5 ms)"),
            ("commit 1 record during a merge, another process: commits", .factor, "how many commits the merge's run allowed"),
            ("commit 1 record during large writes of another process: writes waited through", .factor, "Strata's engine, shared: a second process commits 1 record at a time while this one makes ten write transactions of N/10 records back to back; the most of those writes that ended while one commit waited (the aim: 1; more is starvation)"),
            ("commit 1 record during large writes of another process: longest", .milliseconds, "the longest of those commits, including its catch-up with the large write"),
            ("commit 1 record during large writes of another process: longest write", .milliseconds, "the longest of those ten write transactions"),
            ("commit 1 record: shared alone / exclusive", .factor, "Strata: the shared, alone row over the exclusive row (the aim: at most 1.2)"),
            ("commit 1 record, not synced: exclusive", .milliseconds, "Strata's engine, exclusive, deferred durability (no fdatasync): the CPU and system-call cost of a commit"),
            ("commit 1 record, not synced: shared, alone", .milliseconds, "the same in shared mode: the difference is what coordination costs a commit"),
            ("size after migrate-retype, compacted", .megabytes, "the same after each engine's compaction: Strata's compact on open, SQLite's VACUUM, LMDB's mdb_env_copy2 with MDB_CP_COMPACT"),
        ]
        var order: [(String, Unit, String)] = []
        for (name, unit, note) in base {
            order.append((name, unit, note))
            order.append((name + " [engine]", unit, note + "; Strata's engine driven directly, packed records"))
            order.append((name + " [encrypted]", unit, note + "; Strata on a file encrypted with a 64-byte encryptionKey (AES-256-GCM per block and log record)"))
            order.append((name + " [portable codecs]", unit, note + "; Strata with its Swift LZ4 and XXH3 (what Apple platforms run) instead of liblz4 and libxxhash"))
            order.append((name + " [engine, portable codecs]", unit, note + "; Strata's engine driven directly with its Swift LZ4 and XXH3"))
        }
        var rows: [Row] = []
        for (name, unit, note) in order {
            guard let byEngine = samples[name] else { continue }
            let results = byEngine.mapValues { Measurement(samples: $0) }
            var ratios: [String: Double] = [:]
            // Allocation counts are shown as they are: a ratio against zero says nothing.
            if unit != .allocations, let s = results[Self.strata]?.median {
                for (engine, m) in results where engine != Self.strata {
                    ratios[engine] = unit.higherIsBetter ? s / m.median : m.median / s
                }
            }
            rows.append(Row(workload: name, unit: unit, results: results, ratios: ratios, note: note))
        }
        return Report(
            machine: Environment.cpu, cores: Environment.cores, toolchain: Environment.toolchain, commit: Environment.commit,
            n: config.n, runs: config.runs,
            durability: "Strata: fdatasync per commit (full); SQLite: WAL, synchronous=NORMAL; LMDB: default flags (sync at commit)",
            rows: rows, checks: checks)
    }

    /// The report as a Markdown table.
    public static func table(_ report: Report, peers: [String]) -> String {
        let names = [strata] + peers.map { ["sqlite": "SQLite", "lmdb": "LMDB", "grdb": "GRDB", "rocksdb": "RocksDB"][$0] ?? $0 }
        var out = "| workload | " + names.joined(separator: " | ") + " | " + names.dropFirst().map { "Strata/\($0)" }.joined(separator: " | ") + " |\n"
        out += "|" + String(repeating: "---|", count: 1 + names.count * 2 - 1) + "\n"
        for row in report.rows {
            out += "| \(row.workload) (\(row.unit.rawValue)) | "
            out += names.map { Format.cell(row.results[$0], row.unit) }.joined(separator: " | ")
            out += " | " + names.dropFirst().map { Format.ratio(row.ratios[$0]) }.joined(separator: " | ") + " |\n"
        }
        return out
    }

    /// Engines whose checked results differ from Strata's, as messages.
    public static func disagreements(_ report: Report) -> [String] {
        guard let reference = report.checks[strata] else { return [] }
        var out: [String] = []
        for (engine, values) in report.checks where engine != strata {
            for (name, v) in values where reference[name] != v {
                out.append("\(engine) \(name) = \(v), Strata = \(reference[name].map(String.init) ?? "missing")")
            }
        }
        return out.sorted()
    }
}
