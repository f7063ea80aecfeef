import Engine
import Testing
import TestSupport

/// Damaged files: a torn log tail recovers to the last whole commit; a flipped byte anywhere else is a typed
/// error naming the file and offset; random bytes in place of any file never crash the process.
@Suite struct CorruptionTests {
    static var manual: Database.Options {
        var o = Database.Options()
        o.backgroundMaintenance = false
        return o
    }

    func logName(_ fs: MemoryFileSystem) throws -> String {
        try #require(try fs.listDirectory(atPath: "/db").filter { $0.hasSuffix(".log") }.sorted().last)
    }

    @Test func walTruncatedAtEveryOffsetOfItsLastRecordsRecoversToTheLastWholeCommit() throws {
        let fs = MemoryFileSystem()
        let db = try Database.open(at: "/db", options: Self.manual, fileSystem: fs)
        let log = "/db/" + (try logName(fs))
        var models = [ReferenceStore()]
        var ends = [fs.contents(ofFile: log)!.count]
        var rng = SplitMix64(seed: 99)
        for i in 0..<12 {
            var m = models.last!
            try db.write { tx in
                for j in 0..<3 {
                    let v = rng.bytes(Int(rng.next() % 40))
                    try tx.put(key(i * 3 + j), v, in: UInt32(j % 2))
                    m.put(key(i * 3 + j), v, in: UInt32(j % 2))
                }
            }
            models.append(m)
            ends.append(fs.contents(ofFile: log)!.count)
        }
        db.simulateProcessDeath()
        let full = fs.contents(ofFile: log)!
        for cut in ends[8]...full.count {
            let copy = MemoryFileSystem()
            for name in try fs.listDirectory(atPath: "/db") {
                copy.replaceContents(ofFile: "/db/" + name, with: fs.contents(ofFile: "/db/" + name)!)
            }
            try copy.createDirectory(atPath: "/db")
            copy.replaceContents(ofFile: log, with: Array(full[0..<cut]))
            let report = UnsafeReportBox()
            let reopened = try Database.open(at: "/db", options: Self.manual, fileSystem: copy, report: report)
            let whole = ends.lastIndex(where: { $0 <= cut })!
            try expectSame(try reopened.snapshot(), models[whole], partitions: [0, 1], "cut at \(cut)")
            #expect(report.report.droppedTailBytes == cut - ends[whole], "cut at \(cut)")
            try reopened.close()
        }
    }

    @Test func aDamagedRecordFollowedByValidOnesIsCorruptionNotATornTail() throws {
        let fs = MemoryFileSystem()
        let db = try Database.open(at: "/db", options: Self.manual, fileSystem: fs)
        let log = "/db/" + (try logName(fs))
        var ends: [Int] = []
        for i in 0..<5 {
            try db.write { try $0.put(key(i), [UInt8](repeating: 7, count: 30), in: 0) }
            ends.append(fs.contents(ofFile: log)!.count)
        }
        db.simulateProcessDeath()
        var bytes = fs.contents(ofFile: log)!
        let offset = ends[1] + 30  // inside the third record's payload
        bytes[offset] ^= 0xFF
        fs.replaceContents(ofFile: log, with: bytes)
        #expect {
            _ = try Database.open(at: "/db", options: Self.manual, fileSystem: fs)
        } throws: { error in
            guard let e = error as? StorageError else { return false }
            return e.code == .corrupted && e.file?.hasSuffix(".log") == true && e.offset == ends[1]
        }
    }

    /// A database with two flushed partitions, closed cleanly.
    func closedDatabase(_ fs: MemoryFileSystem) throws -> (segments: [String], manifest: String) {
        let db = try Database.open(at: "/db", options: Self.manual, fileSystem: fs)
        var rng = SplitMix64(seed: 3)
        try db.write { tx in
            for i in 0..<3000 { try tx.put(key(i), rng.bytes(20) + [UInt8](repeating: 1, count: 20), in: UInt32(i % 2)) }
        }
        try db.close()
        let names = try fs.listDirectory(atPath: "/db")
        return (names.filter { $0.hasSuffix(".seg") }.sorted(), try #require(names.first { $0.hasPrefix("MANIFEST-") }))
    }

    @Test func aFlippedByteInASegmentBlockIsReportedWithFileAndOffsetOnRead() throws {
        let fs = MemoryFileSystem()
        let (segments, _) = try closedDatabase(fs)
        let path = "/db/" + segments[0]
        var bytes = fs.contents(ofFile: path)!
        bytes[32 + 24 + 100] ^= 0x01  // inside the first block's stored bytes
        fs.replaceContents(ofFile: path, with: bytes)
        let db = try Database.open(at: "/db", options: Self.manual, fileSystem: fs)
        let snapshot = try db.snapshot()
        var failure: StorageError?
        for p: UInt32 in [0, 1] {
            do { _ = try snapshot.count(p) } catch let e as StorageError { failure = e }
        }
        let e = try #require(failure)
        #expect(e.code == .corrupted)
        #expect(e.file == segments[0])
        #expect(e.offset == 32)
        #expect(e.message.contains("checksum"))
        #expect(!db.checkConsistency().isEmpty)
    }

    @Test(arguments: ["footer", "header"])
    func aFlippedByteInASegmentsFrameFailsOpenNamingTheFile(part: String) throws {
        let fs = MemoryFileSystem()
        let (segments, _) = try closedDatabase(fs)
        let path = "/db/" + segments[1]
        var bytes = fs.contents(ofFile: path)!
        let offset = part == "footer" ? bytes.count - 50 : 2
        bytes[offset] ^= 0x10
        fs.replaceContents(ofFile: path, with: bytes)
        #expect {
            _ = try Database.open(at: "/db", options: Self.manual, fileSystem: fs)
        } throws: { error in
            guard let e = error as? StorageError else { return false }
            return e.code == .corrupted && e.file == segments[1] && e.offset != nil
        }
    }

    /// Open reads only headers and footers (its cost must not grow with the data); a damaged block index is
    /// found by the first read that needs it, and by `checkConsistency`, each naming the file and the offset.
    @Test func aFlippedByteInASegmentIndexIsReportedOnFirstUseNamingTheFile() throws {
        let fs = MemoryFileSystem()
        let (segments, _) = try closedDatabase(fs)
        let path = "/db/" + segments[1]
        var bytes = fs.contents(ofFile: path)!
        bytes[bytes.count - 88 - 5] ^= 0x10
        fs.replaceContents(ofFile: path, with: bytes)
        let db = try Database.open(at: "/db", options: Self.manual, fileSystem: fs)
        let snapshot = try db.snapshot()
        var failures: [StorageError] = []
        for p: UInt32 in [0, 1] {
            do { _ = try snapshot.count(p) } catch let e as StorageError { failures.append(e) }
            do { _ = try snapshot.get(key(p == 0 ? 10 : 11), in: p) } catch let e as StorageError { failures.append(e) }
        }
        #expect(failures.count == 2, "the scan and the lookup of the damaged segment's partition fail: \(failures)")
        for e in failures {
            #expect(e.code == .corrupted && e.file == segments[1] && e.offset != nil && e.message.contains("index"), "\(e)")
        }
        #expect(db.checkConsistency().contains { $0.contains(segments[1]) && $0.contains("index") })
    }

    @Test func aFlippedByteInTheManifestOrCurrentFailsOpenNamingTheFile() throws {
        for target in ["manifest", "CURRENT"] {
            let fs = MemoryFileSystem()
            let (_, manifest) = try closedDatabase(fs)
            let name = target == "manifest" ? manifest : "CURRENT"
            var bytes = fs.contents(ofFile: "/db/" + name)!
            for offset in [0, bytes.count / 2, bytes.count - 1] {
                var damaged = bytes
                damaged[offset] ^= 0x04
                fs.replaceContents(ofFile: "/db/" + name, with: damaged)
                #expect {
                    _ = try Database.open(at: "/db", options: Self.manual, fileSystem: fs)
                } throws: { error in
                    guard let e = error as? StorageError else { return false }
                    return e.code == .corrupted && e.file == name && e.offset != nil
                }
            }
            bytes = []
        }
    }

    @Test(arguments: Seeds.environmentOr([1, 2, 3]))
    func randomBytesInPlaceOfAnyFileNeverCrash(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        for round in 0..<(30 * Seeds.scale) {
            let fs = MemoryFileSystem()
            let db = try Database.open(at: "/db", options: Self.manual, fileSystem: fs)
            try db.write { tx in for i in 0..<500 { try tx.put(key(i), rng.bytes(30), in: UInt32(i % 3)) } }
            try db.flush()
            try db.write { tx in for i in 0..<50 { try tx.put(key(i), rng.bytes(30), in: 0) } }
            db.simulateProcessDeath()
            let names = try fs.listDirectory(atPath: "/db").filter { $0 != "LOCK" }.sorted()
            let victim = names[Int(rng.next() % UInt64(names.count))]
            let original = fs.contents(ofFile: "/db/" + victim)!
            let garbage: [UInt8]
            switch round % 3 {
            case 0: garbage = rng.bytes(Int(rng.next() % 400))
            case 1: garbage = Array(original.prefix(Int(rng.next() % UInt64(original.count + 1))))
            default:
                var g = original
                for _ in 0..<4 where !g.isEmpty { g[Int(rng.next() % UInt64(g.count))] = UInt8(truncatingIfNeeded: rng.next()) }
                garbage = g
            }
            fs.replaceContents(ofFile: "/db/" + victim, with: garbage)
            // Either open fails with a StorageError, or reads work or fail with one; never a trap.
            do {
                let reopened = try Database.open(at: "/db", options: Self.manual, fileSystem: fs)
                let s = try reopened.snapshot()
                for p: UInt32 in 0..<3 {
                    _ = try? s.count(p)
                    _ = try? s.get(key(7), in: p)
                }
                _ = reopened.checkConsistency()
                s.close()
                try reopened.close()
            } catch is StorageError {
                // expected for most damage
            }
        }
    }
}
