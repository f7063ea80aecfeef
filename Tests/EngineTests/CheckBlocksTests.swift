import Engine
import Testing
import TestSupport

/// `Snapshot.checkBlocks`: the check a results observer runs before its query runs again, so that damage
/// reaches it as an error rather than a stop.
@Suite struct CheckBlocksTests {
    @Test func aDamagedBlockIsAnErrorNamingTheFile() throws {
        let fs = MemoryFileSystem()
        var options = Database.Options()
        options.backgroundMaintenance = false
        do {
            let db = try Database.open(at: "/db", options: options, fileSystem: fs)
            try db.write { tx in for i in 0..<3000 { try tx.put(key(i), [UInt8](repeating: UInt8(i % 251), count: 40), in: 1) } }
            try db.close()
        }
        let name = try #require(try fs.listDirectory(atPath: "/db").filter { $0.hasSuffix(".seg") }.sorted().last)
        var bytes = try #require(fs.contents(ofFile: "/db/" + name))
        let db = try Database.open(at: "/db", options: options, fileSystem: fs)
        try db.snapshot().checkBlocks(in: 1)
        try db.close()
        bytes[bytes.count / 3] ^= 0x08
        fs.replaceContents(ofFile: "/db/" + name, with: bytes)
        let damaged = try Database.open(at: "/db", options: options, fileSystem: fs)
        do {
            try damaged.snapshot().checkBlocks(in: 1)
            Issue.record("a damaged block passed checkBlocks")
        } catch let e as StorageError {
            #expect(e.file == name, "\(e)")
            #expect(e.offset != nil)
        }
        try damaged.close()
    }
}
