import Engine
import Testing
import TestSupport

/// Every file carries the database's identity: a segment or log copied in from another database is an
/// error at open naming the file, never data of the other database read as this one's.
@Suite struct DatabaseIdentityTests {
    static var options: Database.Options {
        var o = Database.Options()
        o.backgroundMaintenance = false
        return o
    }

    /// Two databases written alike (same file names, same partitions).
    static func twins(closeCleanly: Bool) throws -> (MemoryFileSystem, MemoryFileSystem) {
        var out: [MemoryFileSystem] = []
        for n in 0..<2 {
            let fs = MemoryFileSystem()
            let db = try Database.open(at: "/db", options: Self.options, fileSystem: fs)
            for i in 0..<20 { try db.write { try $0.put(key(i), [UInt8(n), UInt8(i)], in: 1) } }
            try db.flush()
            for i in 20..<25 { try db.write { try $0.put(key(i), [UInt8(n), UInt8(i)], in: 1) } }
            if closeCleanly { try db.close() } else { db.simulateProcessDeath() }
            out.append(fs)
        }
        return (out[0], out[1])
    }

    @Test func aSegmentFromAnotherDatabaseIsAnErrorNamingIt() throws {
        let (a, b) = try Self.twins(closeCleanly: true)
        let name = try #require(try a.listDirectory(atPath: "/db").filter { $0.hasSuffix(".seg") }.sorted().first)
        a.replaceContents(ofFile: "/db/" + name, with: try #require(b.contents(ofFile: "/db/" + name)))
        do {
            _ = try Database.open(at: "/db", options: Self.options, fileSystem: a)
            Issue.record("a segment of another database was accepted")
        } catch let e as StorageError {
            #expect(e.code == .corrupted)
            #expect(e.file == name, "\(e)")
            #expect("\(e)".contains("another database"), "\(e)")
        }
    }

    @Test func aLogFromAnotherDatabaseIsAnErrorNamingIt() throws {
        let (a, b) = try Self.twins(closeCleanly: false)
        let name = try #require(try a.listDirectory(atPath: "/db").filter { $0.hasSuffix(".log") }.sorted().last)
        a.replaceContents(ofFile: "/db/" + name, with: try #require(b.contents(ofFile: "/db/" + name)))
        do {
            _ = try Database.open(at: "/db", options: Self.options, fileSystem: a)
            Issue.record("a log of another database was accepted")
        } catch let e as StorageError {
            #expect(e.code == .corrupted)
            #expect(e.file == name, "\(e)")
            #expect("\(e)".contains("another database"), "\(e)")
        }
        // Its own files open, with every commit.
        let (c, _) = try Self.twins(closeCleanly: false)
        let db = try Database.open(at: "/db", options: Self.options, fileSystem: c)
        #expect(try db.snapshot().get(key(24), in: 1) == [0, 24])
        try db.close()
    }
}
