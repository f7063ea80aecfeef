import Engine
import Testing
import TestSupport

@Suite struct ReadOnlyTests {
    @Test func aReadOnlyOpenReplaysTheLogInMemoryAndWritesNothing() throws {
        let fs = MemoryFileSystem()
        var options = Database.Options()
        options.backgroundMaintenance = false
        let db = try Database.open(at: "/db", options: options, fileSystem: fs)
        try db.write { tx in for i in 0..<50 { try tx.put(key(i), [UInt8(i)], in: 1) } }
        try db.flush()
        try db.write { tx in for i in 50..<60 { try tx.put(key(i), [UInt8(i)], in: 1) } }
        db.simulateProcessDeath()
        let before = try fs.listDirectory(atPath: "/db").sorted().map { ($0, fs.contents(ofFile: "/db/" + $0) ?? []) }
        var readOnly = options
        readOnly.readOnly = true
        let ro = try Database.open(at: "/db", options: readOnly, fileSystem: fs)
        #expect(try ro.snapshot().count(1) == 60)
        #expect(throws: StorageError.self) { _ = try ro.beginWrite() }
        #expect(throws: StorageError.self) { try ro.compact() }
        try ro.close()
        let after = try fs.listDirectory(atPath: "/db").sorted().map { ($0, fs.contents(ofFile: "/db/" + $0) ?? []) }
        #expect(after.map(\.0) == before.map(\.0))
        #expect(zip(after, before).allSatisfy { $0.1 == $1.1 || $0.0 == "LOCK" })
        #expect(throws: StorageError.self) { _ = try Database.open(at: "/nothing", options: readOnly, fileSystem: fs) }
    }
}
