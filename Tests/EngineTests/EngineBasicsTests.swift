import Engine
import Testing
import TestSupport

@Suite struct EngineBasicsTests {
    func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

    @Test func putGetDeleteAndScanInOrder() throws {
        let dir = try TemporaryDirectory()
        let db = try Database.open(at: dir.child("db"))
        try db.write { tx in
            try tx.put(bytes("b"), bytes("2"), in: 1)
            try tx.put(bytes("a"), bytes("1"), in: 1)
            try tx.put(bytes("c"), bytes("3"), in: 1)
            try tx.put(bytes("a"), bytes("other partition"), in: 2)
        }
        try db.write { tx in try tx.delete(bytes("b"), in: 1) }
        let s = try db.snapshot()
        #expect(try s.get(bytes("a"), in: 1) == bytes("1"))
        #expect(try s.get(bytes("b"), in: 1) == nil)
        #expect(try s.get(bytes("a"), in: 2) == bytes("other partition"))
        var keys: [String] = []
        try s.scan(1) { k, _ in keys.append(String(decoding: k, as: UTF8.self)); return true }
        #expect(keys == ["a", "c"])
        var fromB: [String] = []
        try s.scan(1, from: bytes("b")) { k, _ in fromB.append(String(decoding: k, as: UTF8.self)); return true }
        #expect(fromB == ["c"])
        try db.close()
    }

    /// `largestKey` is the largest key of any source (memtable or segment), a deletion's included.
    @Test func largestKeyCoversMemtableSegmentsAndDeletions() throws {
        let fs = MemoryFileSystem()
        var options = Database.Options()
        options.backgroundMaintenance = false
        let db = try Database.open(at: "/db", options: options, fileSystem: fs)
        #expect(try db.snapshot().largestKey(in: 1) == nil)
        try db.write { tx in for i in [5, 3, 9] { try tx.put(key(i), bytes("v"), in: 1) } }
        #expect(try db.snapshot().largestKey(in: 1) == key(9))
        try db.flush()
        #expect(try db.snapshot().largestKey(in: 1) == key(9), "from the segment")
        try db.write { tx in try tx.put(key(7), bytes("v"), in: 1) }
        #expect(try db.snapshot().largestKey(in: 1) == key(9), "a segment's key above the memtable's")
        try db.write { tx in try tx.delete(key(12), in: 1) }
        #expect(try db.snapshot().largestKey(in: 1) == key(12), "a deletion counts")
        try db.flush()
        try db.compact()
        let last = try #require(try db.snapshot().largestKey(in: 1))
        #expect(!last.lexicographicallyPrecedes(key(9)), "a compaction may drop the deletion, never a larger live key")
        #expect(try db.snapshot().largestKey(in: 2) == nil)
    }

    @Test func dataSurvivesCloseFlushAndReopen() throws {
        let dir = try TemporaryDirectory()
        do {
            let db = try Database.open(at: dir.child("db"))
            try db.write { tx in
                for i in 0..<1000 { try tx.put(key(i), bytes("value \(i)"), in: 7) }
            }
            try db.close()
        }
        let db = try Database.open(at: dir.child("db"))
        let s = try db.snapshot()
        #expect(try s.count(7) == 1000)
        #expect(try s.get(key(500), in: 7) == bytes("value 500"))
        #expect(db.checkConsistency().isEmpty)
    }

    @Test func snapshotSeesExactlyItsSequenceAcrossFlushAndCompaction() throws {
        let fs = MemoryFileSystem()
        var options = Database.Options()
        options.backgroundMaintenance = false
        let db = try Database.open(at: "/db", options: options, fileSystem: fs)
        try db.write { tx in for i in 0..<100 { try tx.put(key(i), bytes("v1"), in: 1) } }
        let old = try db.snapshot()
        try db.flush()
        let middle = try db.snapshot()
        try db.write { tx in
            for i in 0..<50 { try tx.put(key(i), bytes("v2"), in: 1) }
            for i in 50..<60 { try tx.delete(key(i), in: 1) }
        }
        try db.flush()
        try db.compact()
        let new = try db.snapshot()
        #expect(try old.count(1) == 100)
        #expect(try old.get(key(10), in: 1) == bytes("v1"))
        #expect(try old.get(key(55), in: 1) == bytes("v1"))
        #expect(try new.count(1) == 90)
        #expect(try new.get(key(10), in: 1) == bytes("v2"))
        #expect(try new.get(key(55), in: 1) == nil)
        #expect(try middle.get(key(55), in: 1) == bytes("v1"))
        #expect(db.liveSnapshotCount == 3)
        #expect(db.statistics().pinnedMemtableBytes > 0)
        #expect(db.statistics().pinnedSegmentBytes > 0)
        old.close()
        middle.close()
        #expect(db.liveSnapshotCount == 1)
        #expect(db.statistics().pinnedSegmentBytes == 0)
        #expect(db.statistics().pinnedMemtableBytes == 0)
    }

    @Test func droppingAPartitionRemovesEverythingAndLaterWritesStartFresh() throws {
        let fs = MemoryFileSystem()
        var options = Database.Options()
        options.backgroundMaintenance = false
        do {
            let db = try Database.open(at: "/db", options: options, fileSystem: fs)
            try db.write { tx in for i in 0..<100 { try tx.put(key(i), bytes("x"), in: 3) } }
            try db.flush()
            try db.write { tx in
                try tx.put(key(1000), bytes("gone"), in: 3)
                try tx.dropPartition(3)
                try tx.put(key(5), bytes("new life"), in: 3)
            }
            #expect(try db.snapshot().count(3) == 1)
            try db.close()
        }
        let db = try Database.open(at: "/db", options: options, fileSystem: fs)
        let s = try db.snapshot()
        #expect(try s.count(3) == 1)
        #expect(try s.get(key(5), in: 3) == bytes("new life"))
        let segments = try fs.listDirectory(atPath: "/db").filter { $0.hasSuffix(".seg") }
        #expect(segments.count == 1)
    }

    @Test func limitsAreCheckedWithErrorsNamingThem() throws {
        let db = try Database.open(at: "/db", fileSystem: MemoryFileSystem())
        let tx = try db.beginWrite()
        let bigKey = [UInt8](repeating: 1, count: Limits.maxKeyBytes + 1)
        #expect {
            try tx.put(bigKey, [1], in: 1)
        } throws: { error in
            guard let e = error as? StorageError else { return false }
            return e.code == .invalidArgument && e.message.contains("\(Limits.maxKeyBytes)")
        }
        tx.abort()
    }

    @Test func aSecondExclusiveOpenOfTheSameDirectoryIsRefusedNamingTheLock() throws {
        let dir = try TemporaryDirectory()
        var exclusive = Database.Options()
        exclusive.sharing = .exclusive
        let db = try Database.open(at: dir.child("db"), options: exclusive)
        #expect {
            _ = try Database.open(at: dir.child("db"), options: exclusive)
        } throws: { error in
            guard let e = error as? StorageError else { return false }
            return e.code == .locked && (e.file ?? "").hasSuffix("LOCK")
        }
        try db.close()
        _ = try Database.open(at: dir.child("db"))
    }

    @Test func fileNamesRoundTrip() {
        let names: [FileName] = [.current, .currentTemporary, .lock, .manifest(7), .log(42), .segment(43), .segment(12_345_678)]
        for n in names { #expect(FileName(parsing: n.name) == n) }
        #expect(FileName.segment(42).name == "000042.seg")
        #expect(FileName.manifest(7).name == "MANIFEST-000007")
        #expect(FileName(parsing: "42.seg") == nil)
        #expect(FileName(parsing: "0000042.seg") == nil)
        #expect(FileName(parsing: "junk") == nil)
        #expect(FileName(parsing: "1234567.seg") == .segment(1_234_567))
        #expect(FileName(parsing: "4611686018427387904.log") == .log(1 << 62))
        for name in ["4611686018427387905.log", "18446744073709551616.seg", "+00042.seg", "00004２.seg", "00 042.seg", "000042.seg.tmp"] {
            #expect(FileName(parsing: name) == nil, "\(name)")
        }
    }

    @Test func manifestRoundTripsAndRejectsEveryFlippedByte() throws {
        let m = Manifest(
            nextFileNumber: 9, lastFlushedSequence: 77, logNumber: 8,
            partitions: [1: [SegmentInfo(fileNumber: 5, fileBytes: 100, entryCount: 3, minSequence: 1, maxSequence: 4, userMetadata: 2)]])
        let encoded = m.encoded()
        let decoded = try encoded.withUnsafeBytes { try Manifest.decode($0, file: "MANIFEST-000001") }
        #expect(decoded == m)
        for i in encoded.indices {
            var damaged = encoded
            damaged[i] ^= 0x40
            #expect(throws: StorageError.self) { try damaged.withUnsafeBytes { try Manifest.decode($0, file: "MANIFEST-000001") } }
        }
    }

    @Test func emptyValuesAndLargeValuesRoundTrip() throws {
        let db = try Database.open(at: "/db", fileSystem: MemoryFileSystem())
        var rng = SplitMix64(seed: 5)
        let big = rng.bytes(200_000)
        try db.write { tx in
            try tx.put(bytes("empty"), [], in: 1)
            try tx.put(bytes("big"), big, in: 1)
        }
        try db.flush()
        let s = try db.snapshot()
        #expect(try s.get(bytes("empty"), in: 1) == [])
        #expect(try s.get(bytes("big"), in: 1) == big)
    }

    @Test func compressibleDataIsStoredCompressed() throws {
        let fs = MemoryFileSystem()
        let db = try Database.open(at: "/db", fileSystem: fs)
        try db.write { tx in
            for i in 0..<20_000 { try tx.put(key(i), Array(repeating: UInt8(i % 7), count: 64), in: 1) }
        }
        try db.flush()
        let stats = db.statistics()
        #expect(stats.segmentBytes < 20_000 * 72 / 2)
        #expect(try db.snapshot().get(key(12_345), in: 1) == Array(repeating: UInt8(12_345 % 7), count: 64))
        #expect(db.checkConsistency().isEmpty)
    }

    @Test func snapshotLimitIsEnforcedWithAClearError() throws {
        var options = Database.Options()
        options.maximumLiveSnapshots = 2
        let db = try Database.open(at: "/db", options: options, fileSystem: MemoryFileSystem())
        let a = try db.snapshot()
        let b = try db.snapshot()
        #expect(throws: StorageError.self) { _ = try db.snapshot() }
        a.close()
        _ = try db.snapshot()
        _ = b
    }

    @Test func userMetadataIsStampedOnSegments() throws {
        var options = Database.Options()
        options.backgroundMaintenance = false
        let db = try Database.open(at: "/db", options: options, fileSystem: MemoryFileSystem())
        try db.write { tx in
            try tx.setUserMetadata(3, for: 1)
            try tx.put(bytes("a"), bytes("1"), in: 1)
        }
        try db.flush()
        try db.write { tx in
            try tx.setUserMetadata(5, for: 1)
            try tx.put(bytes("b"), bytes("1"), in: 1)
        }
        try db.flush()
        #expect(try db.snapshot().segmentMetadata(1) == [5, 3])
        try db.compact(1)
        #expect(try db.snapshot().segmentMetadata(1) == [3])
    }
}

/// An 8-byte big-endian key, so numeric order is key order.
func key(_ i: Int) -> [UInt8] {
    withUnsafeBytes(of: UInt64(i).bigEndian) { Array($0) }
}
