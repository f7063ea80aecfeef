import Engine
import Foundation
import Testing
import TestSupport

/// A background merge that a close stops is suspended and resumed by the next open (issue 37): sessions
/// shorter than a merge still finish it, a little each, instead of starting it again every time. The merges
/// here stop after a set number of entries (`mergeEntriesBeforeSuspending`), as a close would stop them.
@Suite struct SuspendedMergeTests {
    static func key(_ i: Int) -> [UInt8] { withUnsafeBytes(of: UInt64(i).bigEndian) { Array($0) } }

    /// Six segments of 5,000 keys with 200-byte random values (6 MB, above what a close merges itself),
    /// overwriting and deleting each other's keys; returns what the database must hold.
    static func build(_ path: String, key: [UInt8]?) throws -> [Int: [UInt8]] {
        var options = Database.Options()
        options.backgroundMaintenance = false
        options.encryptionKey = key
        let db = try Database.open(at: path, options: options)
        var rng = SplitMix64(seed: 3737)
        var model: [Int: [UInt8]] = [:]
        for round in 0..<6 {
            try db.write { tx in
                for j in 0..<5_000 {
                    let k = round * 3_000 + j
                    if j % 11 == 0, model[k] != nil {
                        try tx.delete(Self.key(k), in: 1)
                        model[k] = nil
                    } else {
                        let v = rng.bytes(200)
                        try tx.put(Self.key(k), v, in: 1)
                        model[k] = v
                    }
                }
            }
            try db.flush()
        }
        #expect(db.statistics().segmentCount == 6)
        try db.close()
        return model
    }

    static func check(_ db: Database, _ model: [Int: [UInt8]]) throws {
        let snapshot = try db.snapshot()
        var seen = 0
        try snapshot.scan(1) { k, v in
            let i = Int(UInt64(bigEndian: k.loadUnaligned(as: UInt64.self)))
            #expect(model[i] == [UInt8](v), "key \(i)")
            seen += 1
            return true
        }
        #expect(seen == model.count)
        snapshot.close()
    }

    static func files(_ path: String, _ suffix: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: path).filter { $0.hasSuffix(suffix) }.sorted()
    }

    static func options(key: [UInt8]?, stopAfter: Int?) -> Database.Options {
        var options = Database.Options()
        options.encryptionKey = key
        options.mergeEntriesBeforeSuspending = stopAfter
        // The background merges alone, stopped where the test says.
        options.closeMergeShare = false
        return options
    }

    /// One session whose background merge stops after 7,000 entries and is suspended.
    static func suspendOneMerge(_ path: String) throws {
        let db = try Database.open(at: path, options: Self.options(key: nil, stopAfter: 7_000))
        db.waitForMaintenance()
        try #require(db.pendingMerges.count == 1)
        try db.close()
    }

    @Test(arguments: [false, true])
    func aMergeStoppedPartWayIsResumedByTheNextSessionsUntilItFinishes(encrypted: Bool) throws {
        let dir = try TemporaryDirectory()
        let path = dir.child("db")
        let key: [UInt8]? = encrypted ? Array(repeating: 7, count: 64) : nil
        let model = try Self.build(path, key: key)
        var outputs: Set<UInt64> = []
        var sessions = 0
        while true {
            let db = try Database.open(at: path, options: Self.options(key: key, stopAfter: 7_000))
            db.waitForMaintenance()
            sessions += 1
            // Reads never see a pending merge's output.
            try Self.check(db, model)
            let pending = db.pendingMerges
            try db.close()
            guard let merge = pending.first else { break }
            #expect(pending.count == 1)
            #expect(merge.inputs.count == 6)
            outputs.insert(merge.output)
            #expect(try Self.files(path, ".merge").count == 1)
            try #require(sessions < 10, "the merge never finished")
        }
        // One output file, written a part per session: 7,000 keys a session (deleted keys included).
        #expect(outputs.count == 1)
        let least = (model.count + 6_999) / 7_000
        #expect(sessions >= max(least, 3) && sessions <= least + 1, "\(sessions) sessions for \(model.count) keys")
        let db = try Database.open(at: path, options: Self.options(key: key, stopAfter: nil))
        defer { try? db.close() }
        #expect(db.statistics().segmentCount == 1)
        #expect(db.pendingMerges.isEmpty)
        try Self.check(db, model)
        #expect(db.checkConsistency().isEmpty)
        #expect(try Self.files(path, ".merge").isEmpty)
        #expect(try Self.files(path, ".seg").count == 1)
    }

    /// A merge an earlier build suspended began its output in segment format 2 (the header is written first):
    /// this build finishes it in format 2, header, index and footer agreeing, and it reads like any format-2
    /// segment. Before, the index was written in format 3 under a format-2 header, and the merged segment was
    /// unreadable.
    @Test func aMergeAnEarlierBuildBeganInFormatTwoIsFinishedInFormatTwo() throws {
        let dir = try TemporaryDirectory()
        let path = dir.child("db")
        let model = try Self.build(path, key: nil)
        try Self.suspendOneMerge(path)
        let output = try #require(try Self.files(path, ".seg").last)  // the newest file: the partial output
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path + "/" + output)))
        #expect(bytes[8] == 3)
        bytes[8] = 2
        try Data(bytes).write(to: URL(fileURLWithPath: path + "/" + output))
        let db = try Database.open(at: path, options: Self.options(key: nil, stopAfter: nil))
        db.waitForMaintenance()
        #expect(db.pendingMerges.isEmpty)
        try Self.check(db, model)
        #expect(db.checkConsistency().isEmpty)
        try db.close()
        let merged = try Self.files(path, ".seg")
        #expect(merged == [output])
        let segment = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path + "/" + output)))
        #expect(segment[8] == 2 && segment[segment.count - 88 + 8] == 2, "header and footer declare format 2")
        let reopened = try Database.open(at: path, options: Self.options(key: nil, stopAfter: nil))
        defer { try? reopened.close() }
        try Self.check(reopened, model)
        let snapshot = try reopened.snapshot()
        defer { snapshot.close() }
        #expect(try snapshot.get(Self.key(5), in: 1) == model[5])
    }

    @Test func aPendingMergeWhoseInputsAnotherMergeTookIsDroppedWithItsFiles() throws {
        let dir = try TemporaryDirectory()
        let path = dir.child("db")
        let model = try Self.build(path, key: nil)
        try Self.suspendOneMerge(path)
        #expect(try Self.files(path, ".seg").count == 7)
        var options = Self.options(key: nil, stopAfter: nil)
        options.backgroundMaintenance = false
        let db = try Database.open(at: path, options: options)
        defer { try? db.close() }
        #expect(db.pendingMerges.count == 1)
        try db.compact()
        #expect(db.pendingMerges.isEmpty)
        #expect(try Self.files(path, ".merge").isEmpty)
        #expect(try Self.files(path, ".seg").count == 1)
        try Self.check(db, model)
    }

    @Test(arguments: ["damaged state", "missing state", "bytes past the committed end"])
    func aPendingMergeWhoseFilesAreNotWholeCostsItsProgressNeverData(damage: String) throws {
        let dir = try TemporaryDirectory()
        let path = dir.child("db")
        let model = try Self.build(path, key: nil)
        try Self.suspendOneMerge(path)
        let state = path + "/" + (try #require(try Self.files(path, ".merge").first))
        switch damage {
        case "damaged state":
            var bytes = try Data(contentsOf: URL(fileURLWithPath: state))
            bytes[bytes.count / 2] ^= 0x40
            try bytes.write(to: URL(fileURLWithPath: state))
        case "missing state":
            try FileManager.default.removeItem(atPath: state)
        default:
            // What a process killed after its last sync leaves: more output than the state says was written.
            let output = path + "/" + (try Self.files(path, ".seg").max()!)
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
            try handle.seekToEnd()
            try handle.write(contentsOf: Data(repeating: 0xAB, count: 10_000))
            try handle.close()
        }
        let db = try Database.open(at: path, options: Self.options(key: nil, stopAfter: nil))
        db.waitForMaintenance()
        defer { try? db.close() }
        #expect(db.pendingMerges.isEmpty)
        #expect(db.statistics().segmentCount == 1)
        try Self.check(db, model)
        #expect(db.checkConsistency().isEmpty)
        #expect(try Self.files(path, ".merge").isEmpty)
    }
}

@Suite struct PendingMergeManifestTests {
    @Test func aManifestListsPendingMergesInFormatFiveAndWithoutThemStaysInItsFormer() throws {
        var manifest = Manifest(nextFileNumber: 50, lastFlushedSequence: 9, logNumber: 40, partitions: [1: []], databaseID: 77)
        let plain = manifest.encoded()
        #expect(plain[8] == 3)
        manifest.pendingMerges = [PendingMerge(partition: 1, inputs: [12, 11, 10], reachesOldest: true, output: 44, state: 45)]
        let bytes = manifest.encoded()
        #expect(bytes[8] == 5)
        let again = try bytes.withUnsafeBytes { try Manifest.decode($0, file: "MANIFEST-000046") }
        #expect(again == manifest)
        #expect(again.pendingMerges.first?.reachesOldest == true)
        // A pending merge naming a file number at or past the next one is damage.
        manifest.pendingMerges[0].output = 50
        let bad = manifest.encoded()
        #expect(throws: StorageError.self) { try bad.withUnsafeBytes { try Manifest.decode($0, file: "MANIFEST-000046") } }
    }
}

/// Crashes at every sync point of merges that are suspended and resumed: after reopening, every key holds its
/// value, and the merges then finish.
@Suite struct SuspendedMergeCrashTests {
    static func options() -> Database.Options {
        var options = Database.Options()
        options.backgroundMaintenance = false
        options.mergeEntriesBeforeSuspending = 500
        return options
    }

    /// Six segments of 600 keys, then merges suspended after 500 entries each until they finish.
    static func run(_ fs: any FileSystem, model: inout [Int: [UInt8]]) throws {
        let db = try Database.open(at: "/db", options: options(), fileSystem: fs)
        var rng = SplitMix64(seed: 99)
        for round in 0..<6 {
            var written: [Int: [UInt8]] = [:]
            try db.write { tx in
                for j in 0..<600 {
                    let k = round * 400 + j
                    let v = rng.bytes(30)
                    try tx.put(SuspendedMergeTests.key(k), v, in: 1)
                    written[k] = v
                }
            }
            // Acknowledged: the commit returned.
            model.merge(written) { _, new in new }
            try db.flush()
        }
        for _ in 0..<8 { try db.mergeWhereNeededNow() }
        #expect(db.pendingMerges.isEmpty)
        try db.close()
    }

    @Test func aCrashAtAnySyncOfASuspendedMergeLosesNothing() throws {
        // The syncs of the whole run, counted once.
        let counting = FaultyFileSystem(base: MemoryFileSystem())
        var model: [Int: [UInt8]] = [:]
        try Self.run(counting, model: &model)
        let total = counting.syncLog.count
        // The merge is suspended (a state file synced) and resumed several times.
        #expect(counting.syncLog.filter { $0.name.hasSuffix(".merge") }.count >= 3)
        for n in 1...total {
            let memory = MemoryFileSystem()
            var acknowledged: [Int: [UInt8]] = [:]
            do {
                try Self.run(FaultyFileSystem(base: memory, faults: [.crash(atSync: n)]), model: &acknowledged)
            } catch {
                // The crash.
            }
            memory.simulateCrash()
            let db = try Database.open(at: "/db", options: Self.options(), fileSystem: memory)
            // Every acknowledged commit is there: each key holds what it acknowledged, or what a later commit
            // that reached the disk before the crash wrote (the whole run's final value).
            let snapshot = try db.snapshot()
            var kept = 0
            for (k, v) in acknowledged {
                let found = try snapshot.get(SuspendedMergeTests.key(k), in: 1)
                if found == v || found == model[k] { kept += 1 }
            }
            snapshot.close()
            #expect(kept == acknowledged.count, "crash at sync \(n) of \(total): \(kept) of \(acknowledged.count) keys")
            let written = acknowledged.count == model.count
            for _ in 0..<10 { try db.mergeWhereNeededNow() }
            #expect(db.pendingMerges.isEmpty, "crash at sync \(n)")
            #expect(db.checkConsistency().isEmpty, "crash at sync \(n)")
            if written {
                let after = try db.snapshot()
                for (k, v) in model { #expect(try after.get(SuspendedMergeTests.key(k), in: 1) == v) }
                after.close()
            }
            try db.close()
        }
    }
}
