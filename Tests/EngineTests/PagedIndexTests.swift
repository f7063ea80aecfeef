import Engine
import FuzzTargets
import Testing
import TestSupport

/// Segment format 3's paged index: the footer's checksum covers a small directory, and each index page (64
/// blocks) and key-filter chunk (512 words) is checked the first time it is used. A point read after open
/// touches the directory, a few filter chunks and one page, whatever the segment's size; damage in the parts a
/// read does not use does not fail it, and damage in the parts it uses is a typed error naming the file and
/// offset. Segments of formats 1 and 2 still read (`DatabaseFixtureTests` opens fixtures written in format 2).
@Suite struct PagedIndexTests {
    static var manual: Database.Options {
        var o = Database.Options()
        o.backgroundMaintenance = false
        return o
    }

    static let count = 6000
    static func value(_ i: Int) -> [UInt8] { [UInt8](repeating: UInt8(truncatingIfNeeded: i), count: 150) + key(i) }

    /// One segment of `count` entries of about 170 bytes (about 250 blocks of 4 KiB: four index pages; a key
    /// filter of two chunks).
    func segment(_ fs: MemoryFileSystem) throws -> String {
        let db = try Database.open(at: "/db", options: Self.manual, fileSystem: fs)
        try db.write { tx in
            for i in 0..<Self.count { try tx.put(key(i * 2), Self.value(i * 2), in: 1) }
        }
        try db.close()
        let segments = try fs.listDirectory(atPath: "/db").filter { $0.hasSuffix(".seg") }
        #expect(segments.count == 1)
        return try #require(segments.first)
    }

    /// The index area's layout, read as `SegmentFormat` documents it (`EngineFuzzing.pagedIndexLayout`).
    struct Layout {
        var pageStarts: [Int]  // in the file, then the filter's start
        var filterStart: Int
        var filterWords: Int
        var directory: Int

        init(_ bytes: [UInt8]) throws {
            #expect(bytes[8] == 3, "the header's format version")
            let layout = try #require(EngineFuzzing.pagedIndexLayout(bytes))
            pageStarts = layout.pages.map(\.start) + [layout.filterStart]
            filterStart = layout.filterStart
            filterWords = layout.filterWords
            directory = layout.directory
        }
    }

    @Test func aSegmentsIndexIsWrittenInPagesOfSixtyFourBlocks() throws {
        let fs = MemoryFileSystem()
        let name = try segment(fs)
        let layout = try Layout(try #require(fs.contents(ofFile: "/db/" + name)))
        #expect(layout.pageStarts.count - 1 >= 4, "a segment of about 250 blocks has several pages")
        #expect(layout.filterWords > 512, "and a filter of several chunks")
        let db = try Database.open(at: "/db", options: Self.manual, fileSystem: fs)
        let snapshot = try db.snapshot()
        // Every key, the gaps between them, and scans from keys in every page, agree with what was written.
        var rng = SplitMix64(seed: 7)
        for _ in 0..<400 {
            let i = Int(rng.next() % UInt64(Self.count * 2 + 2))
            #expect(try snapshot.get(key(i), in: 1) == (i % 2 == 0 && i < Self.count * 2 ? Self.value(i) : nil), "key \(i)")
        }
        for start in stride(from: 1, to: Self.count * 2, by: 611) {
            var expected = (start + 1) / 2 * 2
            try snapshot.scan(1, from: key(start)) { k, v in
                #expect([UInt8](k) == key(expected) && [UInt8](v) == Self.value(expected))
                expected += 2
                return true
            }
            #expect(expected == Self.count * 2, "the scan from \(start) reached the end")
        }
        #expect(try snapshot.count(1) == Self.count)
        #expect(db.checkConsistency().isEmpty)
        snapshot.close()
        try db.close()
    }

    /// A flipped byte in one index page fails the reads that need that page, naming the file and the page's
    /// offset, and no other read; `checkConsistency` finds it.
    @Test func aDamagedIndexPageFailsOnlyTheReadsThatUseIt() throws {
        let fs = MemoryFileSystem()
        let name = try segment(fs)
        var bytes = try #require(fs.contents(ofFile: "/db/" + name))
        let layout = try Layout(bytes)
        let damaged = 2
        bytes[layout.pageStarts[damaged] + 4 * 64 + 3] ^= 0x40  // inside the page's first block offset
        fs.replaceContents(ofFile: "/db/" + name, with: bytes)
        let db = try Database.open(at: "/db", options: Self.manual, fileSystem: fs)
        let snapshot = try db.snapshot()
        var failed: [Int] = [], failures: [StorageError] = []
        for i in stride(from: 0, to: Self.count * 2, by: 2) {
            do {
                #expect(try snapshot.get(key(i), in: 1) == Self.value(i))
            } catch let e as StorageError {
                failed.append(i)
                failures.append(e)
            }
        }
        #expect(!failed.isEmpty && failed.count < Self.count / 2, "the damaged page's keys fail, the others read: \(failed.count) failed")
        #expect(failed == Array(stride(from: failed.first ?? 0, through: failed.last ?? 0, by: 2)), "the failures are one run of keys")
        for e in failures {
            #expect(e.code == .corrupted && e.file == name && e.offset == layout.pageStarts[damaged] && e.message.contains("index page \(damaged)"), "\(e)")
        }
        #expect(db.checkConsistency().contains { $0.contains(name) && $0.contains("index page \(damaged)") })
        snapshot.close()
        db.simulateProcessDeath()

        // Salvage loses the damaged page's blocks, reported once with the keys the directory bounds, and keeps the rest.
        let result = try Database.salvage(at: "/db", fileSystem: fs)
        #expect(result.losses.count == 1, "\(result.losses)")
        let loss = try #require(result.losses.first)
        #expect(loss.file == name && loss.offset == layout.pageStarts[damaged])
        let kept = Set((result.partitions[1] ?? []).map(\.key))
        #expect(kept.count == Self.count - failed.count)
        #expect(loss.firstKey == key(failed.first ?? -1) && loss.endKey == key((failed.last ?? -1) + 2))
    }

    /// A flipped byte in one key-filter chunk fails the lookups whose probes read that chunk, naming the file
    /// and the chunk's offset; lookups that do not read it go on.
    @Test func aDamagedFilterChunkFailsOnlyTheLookupsThatProbeIt() throws {
        let fs = MemoryFileSystem()
        let name = try segment(fs)
        var bytes = try #require(fs.contents(ofFile: "/db/" + name))
        let layout = try Layout(bytes)
        let chunk = 1
        bytes[layout.filterStart + chunk * 512 * 8 + 100] ^= 0x01
        fs.replaceContents(ofFile: "/db/" + name, with: bytes)
        let db = try Database.open(at: "/db", options: Self.manual, fileSystem: fs)
        let snapshot = try db.snapshot()
        var read = 0, failures: [StorageError] = []
        for i in 0..<Self.count {
            do {
                _ = try snapshot.get(key(i), in: 1)
                read += 1
            } catch let e as StorageError {
                failures.append(e)
            }
        }
        #expect(read > 0 && !failures.isEmpty, "\(read) read, \(failures.count) failed")
        for e in failures {
            #expect(e.code == .corrupted && e.file == name && e.offset == layout.filterStart + chunk * 512 * 8 && e.message.contains("key filter chunk \(chunk)"), "\(e)")
        }
        // A scan does not use the filter.
        #expect(try snapshot.count(1) == Self.count)
        #expect(db.checkConsistency().contains { $0.contains(name) && $0.contains("key filter chunk \(chunk)") })
        snapshot.close()
        db.simulateProcessDeath()
    }

    /// The directory is what the footer's checksum covers: a flipped byte in it fails the first use of the
    /// index, naming the file.
    @Test func aDamagedDirectoryFailsTheFirstUseOfTheIndex() throws {
        let fs = MemoryFileSystem()
        let name = try segment(fs)
        var bytes = try #require(fs.contents(ofFile: "/db/" + name))
        let layout = try Layout(bytes)
        let directory = layout.directory
        bytes[directory + 5] ^= 0x01  // the first page's checksum
        fs.replaceContents(ofFile: "/db/" + name, with: bytes)
        let db = try Database.open(at: "/db", options: Self.manual, fileSystem: fs)
        let snapshot = try db.snapshot()
        #expect {
            _ = try snapshot.get(key(0), in: 1)
        } throws: { error in
            guard let e = error as? StorageError else { return false }
            return e.code == .corrupted && e.file == name && e.offset == directory && e.message.contains("index checksum")
        }
        snapshot.close()
        db.simulateProcessDeath()
    }
}
