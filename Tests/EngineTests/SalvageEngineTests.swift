import Engine
import Testing
import TestSupport

/// `Database.salvage` at the engine level: the newest readable value of every key, from segments and from
/// the log, and an account of what could not be read.
@Suite struct SalvageEngineTests {
    static var options: Database.Options {
        var o = Database.Options()
        o.backgroundMaintenance = false
        return o
    }

    static func model(of result: SalvageResult) -> ReferenceStore {
        var m = ReferenceStore()
        for (p, entries) in result.partitions { for (k, v) in entries { m.put(k, v, in: p) } }
        return m
    }

    /// Commits in segments and in the log (the database still open), with deletions and a dropped partition:
    /// salvage gives exactly what a snapshot gives, and reports nothing lost.
    @Test(arguments: Seeds.environmentOr([31, 32]))
    func anUndamagedDatabaseSalvagesToItsContents(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let fs = MemoryFileSystem()
        let db = try Database.open(at: "/db", options: Self.options, fileSystem: fs)
        var model = ReferenceStore()
        for round in 0..<20 {
            let ops = (0..<Int(rng.next() % 20 + 1)).map { _ in
                (UInt32(rng.next() % 3), key(Int(rng.next() % 300)), rng.next() % 5 == 0 ? nil : rng.bytes(Int(rng.next() % 30)))
            }
            try db.write { tx in for (p, k, v) in ops { if let v { try tx.put(k, v, in: p) } else { try tx.delete(k, in: p) } } }
            for (p, k, v) in ops { if let v { model.put(k, v, in: p) } else { model.delete(k, in: p) } }
            if round == 9 {
                try db.write { try $0.dropPartition(1) }
                model.drop(1)
            }
            if round % 6 == 5 { try db.flush() }
        }
        let result = try Database.salvage(at: "/db", fileSystem: fs)
        #expect(result.losses.isEmpty, "\(result.losses)")
        #expect(Self.model(of: result) == model)
        try db.close()
    }

    /// A log cut in the middle of a record: the commits before the cut are salvaged, the loss names the log.
    @Test func aCutLogKeepsTheCommitsBeforeTheCut() throws {
        let fs = MemoryFileSystem()
        let db = try Database.open(at: "/db", options: Self.options, fileSystem: fs)
        for i in 0..<10 { try db.write { try $0.put(key(i), [UInt8(i)], in: 1) } }
        let logName = try #require(try fs.listDirectory(atPath: "/db").filter { $0.hasSuffix(".log") }.sorted().last)
        let bytes = try #require(fs.contents(ofFile: "/db/" + logName))
        fs.replaceContents(ofFile: "/db/" + logName, with: Array(bytes.prefix(bytes.count - 10)))
        let result = try Database.salvage(at: "/db", fileSystem: fs)
        #expect(result.partitions[1]?.count == 9)
        #expect(result.losses.count == 1)
        #expect(result.losses.first?.file == logName)
        db.simulateProcessDeath()
    }
}
