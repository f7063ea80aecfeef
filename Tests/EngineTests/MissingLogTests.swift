import Engine
import Testing
import TestSupport

/// Every log that may hold acknowledged commits is accounted for: the manifest names the oldest log to replay
/// and the newest one created, and an open that finds one of them missing fails naming it, instead of opening
/// without the commits it held.
@Suite struct MissingLogTests {
    static var manual: Database.Options {
        var o = Database.Options()
        o.backgroundMaintenance = false
        return o
    }

    static func logs(_ fs: MemoryFileSystem) throws -> [String] {
        try fs.listDirectory(atPath: "/db").filter { $0.hasSuffix(".log") }.sorted()
    }

    @Test func aDeletedLogIsAnErrorNamingIt() throws {
        let fs = MemoryFileSystem()
        let db = try Database.open(at: "/db", options: Self.manual, fileSystem: fs)
        for i in 0..<30 { try db.write { tx in try tx.put(key(i), [UInt8](repeating: 7, count: 10), in: 0) } }
        // The process ends without closing the database (as apps do): the commits are in the log only.
        db.simulateProcessDeath()
        let log = try #require(try Self.logs(fs).last)
        try fs.removeFile(atPath: "/db/" + log)
        do {
            _ = try Database.open(at: "/db", options: Self.manual, fileSystem: fs)
            Issue.record("opened without \(log)")
        } catch let error as StorageError {
            #expect(error.code == .corrupted)
            #expect("\(error)".contains(log))
            #expect("\(error)".contains("MANIFEST"))
        }
    }

    @Test func logsAfterAFlushAndReopensStayAccountedFor() throws {
        let fs = MemoryFileSystem()
        var db = try Database.open(at: "/db", options: Self.manual, fileSystem: fs)
        for round in 0..<3 {
            for i in 0..<10 { try db.write { tx in try tx.put(key(round * 10 + i), [UInt8(round)], in: 0) } }
            try db.flush()
            for i in 0..<5 { try db.write { tx in try tx.put(key(100 + round * 10 + i), [UInt8(round)], in: 1) } }
            db.simulateProcessDeath()
            db = try Database.open(at: "/db", options: Self.manual, fileSystem: fs)
            let snapshot = try db.snapshot()
            #expect(try snapshot.get(key(round * 10 + 9), in: 0) == [UInt8(round)])
            #expect(try snapshot.get(key(100 + round * 10 + 4), in: 1) == [UInt8(round)])
        }
        try db.close()
        // A clean close leaves every commit in segments and the manifest naming the (empty) log it reuses.
        let reopened = try Database.open(at: "/db", options: Self.manual, fileSystem: fs)
        #expect(try reopened.snapshot().get(key(29), in: 0) == [2])
        try reopened.close()
    }
}
