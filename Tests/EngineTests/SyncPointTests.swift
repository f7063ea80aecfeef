import Engine
import Testing
import TestSupport

/// Every sync the engine asks for is of the kind `Recovery.md` ("Sync points") gives it: durable where a
/// promise to the caller or a deletion depends on it, ordered where only the order of writes matters. On
/// Linux both kinds are the same calls; on Darwin they are `F_FULLFSYNC` and `F_BARRIERFSYNC`, so a wrong
/// kind here would be a lost commit (or a slower one) there.
@Suite struct SyncPointTests {
    /// A new database, two commits, a flush, a compaction and a reopen, recorded sync by sync.
    static func workload(durability: Database.Durability) throws -> [FaultyFileSystem.SyncRecord] {
        let memory = MemoryFileSystem()
        let fs = FaultyFileSystem(base: memory)
        var options = Database.Options()
        options.backgroundMaintenance = false
        options.durability = durability
        options.compactionSegmentTrigger = nil
        var db = try Database.open(at: "/db", options: options, fileSystem: fs)
        for round in 0..<2 {
            try db.write { try $0.put([UInt8(round)], [1, 2, 3], in: 0) }
            try db.flush()
        }
        try db.compact()
        if durability == .deferred { try db.sync() }
        try db.close()
        db = try Database.open(at: "/db", options: options, fileSystem: fs)
        try db.close()
        return fs.syncLog
    }

    /// A manifest switch: sync points 7-10.
    static func manifest(_ number: String) -> [String] {
        ["MANIFEST-\(number): ordered", "directory: ordered", "CURRENT.tmp: durable", "directory: durable"]
    }

    /// The whole workload's syncs, by the numbers of `Recovery.md`'s table.
    static func expected(_ durability: Database.Durability) -> [String] {
        let full = durability == .full
        // Open of a new database: its first manifest (7-10), the log created at open (11, 12) and the manifest
        // naming it.
        var syncs = manifest("000001") + ["000003.log: ordered", "directory: durable"] + manifest("000004")
        // First commit (1, in .full), then the flush: the old log before the freeze (3, in .deferred), the new
        // log (4, 5), the manifest naming it, the segment (6) and the manifest naming that.
        syncs += [full ? "000003.log: durable" : "000003.log: ordered", "000005.log: ordered", "directory: durable"]
        syncs += manifest("000006") + ["000007.seg: ordered"] + manifest("000008")
        // The second commit and flush, the same way.
        syncs += [full ? "000005.log: durable" : "000005.log: ordered", "000009.log: ordered", "directory: durable"]
        syncs += manifest("000010") + ["000011.seg: ordered"] + manifest("000012")
        // The compaction's segment and manifest; in .deferred, Database.sync() (2). Close and reopen sync nothing.
        syncs += ["000013.seg: ordered"] + manifest("000014")
        if !full { syncs += ["000009.log: durable"] }
        return syncs
    }

    @Test(arguments: [Database.Durability.full, .deferred])
    func everySyncPointHasTheKindRecoveryMdGivesIt(durability: Database.Durability) throws {
        let log = try Self.workload(durability: durability).map(\.description)
        #expect(log == Self.expected(durability))
    }

    /// Open cuts a torn commit off the last log and syncs the cut (13) before the log it creates (11, 12).
    @Test func aCutTornTailIsSyncedBeforeTheNewLog() throws {
        let memory = MemoryFileSystem()
        var options = Database.Options()
        options.backgroundMaintenance = false
        var db = try Database.open(at: "/db", options: options, fileSystem: memory)
        try db.write { try $0.put([1], [1, 2, 3], in: 0) }
        db.simulateProcessDeath()
        let lastLog = try #require(try memory.listDirectory(atPath: "/db").filter { $0.hasSuffix(".log") }.sorted().last)
        let torn = try memory.openForAppending(atPath: "/db/" + lastLog)
        try torn.append([UInt8](repeating: 0xAB, count: 40))
        torn.close()
        let fs = FaultyFileSystem(base: memory)
        db = try Database.open(at: "/db", options: options, fileSystem: fs)
        let log = fs.syncLog.map(\.description)
        let cut = try #require(log.firstIndex(of: "\(lastLog): ordered"), "\(log)")
        let newLog = try #require(log.firstIndex { $0.hasSuffix(".log: ordered") && $0 != "\(lastLog): ordered" }, "\(log)")
        #expect(cut < newLog, "\(log)")
        #expect(try db.snapshot().get([1], in: 0) == [1, 2, 3])
    }
}
