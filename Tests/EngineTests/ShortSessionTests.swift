import Engine
import Foundation
import Testing
import TestSupport

/// Apps live in short sessions (issue 37): open, write one transaction, close, again and again with no pause.
/// Every close flushes a segment and a background merge never gets to finish before the next close, so
/// closes merge small segments themselves (`mergeSmallSegmentsNow`), and so does an open after a session that
/// ended without a close: the segments stay few and every commit stays.
@Suite struct ShortSessionTests {
    static func key(_ i: Int) -> [UInt8] { withUnsafeBytes(of: UInt64(i).bigEndian) { Array($0) } }

    @Test func fourHundredSessionsWithoutPauseKeepAHandfulOfSegments() throws {
        let dir = try TemporaryDirectory()
        let path = dir.child("db")
        var rng = SplitMix64(seed: 37)
        let sessions = 400
        var mostSegments = 0
        var slowestClose: UInt64 = 0
        for session in 0..<sessions {
            let db = try Database.open(at: path)
            try db.write { tx in
                for i in 0..<100 { try tx.put(Self.key(session * 100 + i), rng.bytes(40), in: 1) }
            }
            mostSegments = max(mostSegments, db.statistics().segmentCount)
            let start = DispatchTime.now().uptimeNanoseconds
            try db.close()
            slowestClose = max(slowestClose, DispatchTime.now().uptimeNanoseconds - start)
        }
        // A figure, not a check (no wall-clock thresholds in tests): what the merges cost a close at most.
        print("ShortSessionTests: the slowest of \(sessions) closes took \(slowestClose / 1_000_000) ms")
        let db = try Database.open(at: path)
        defer { try? db.close() }
        let segments = db.statistics().segmentCount
        #expect(segments <= 12, "\(segments) segments after \(sessions) sessions")
        #expect(mostSegments <= 12, "at most \(mostSegments) segments seen at an open")
        // Every commit is there.
        let snapshot = try db.snapshot()
        var count = 0
        for session in stride(from: 0, to: sessions, by: 37) {
            for i in [0, 99] where try snapshot.get(Self.key(session * 100 + i), in: 1) != nil { count += 1 }
        }
        #expect(count == 2 * ((sessions + 36) / 37))
        // And the directory holds few files: CURRENT, LOCK, LOCK.writer, LOCK.queue, one manifest, one log, the
        // segments (and a session file while open).
        let files = try FileManager.default.contentsOfDirectory(atPath: path)
        #expect(files.count <= segments + 7, "\(files.sorted())")
    }

    /// The same pattern in child processes that exit right after their commit, without a close (a widget or
    /// an extension): each next open flushes the commit it replays and merges as the close would have.
    @Test func sessionsOfChildProcessesThatExitWithoutClosingKeepAHandfulOfSegments() throws {
        let child = try #require(BuildProducts.executable("EngineCrashChild"), "EngineCrashChild was not built beside the tests")
        let dir = try TemporaryDirectory()
        let path = dir.child("db")
        let sessions = 120
        for session in 0..<sessions {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: child)
            process.arguments = [path, "session", "\(session)"]
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            process.waitUntilExit()
            try #require(process.terminationStatus == 0, "session \(session) failed")
        }
        let db = try Database.open(at: path)
        defer { try? db.close() }
        let most = db.partitionStatistics().values.map(\.segments).max() ?? 0
        #expect(most <= 12, "\(most) segments in a partition after \(sessions) sessions")
        let snapshot = try db.snapshot()
        for session in 0..<sessions {
            let k = UInt64(session * 100 + 99)
            #expect(try snapshot.get(withUnsafeBytes(of: k.bigEndian) { Array($0) }, in: 1) == crashChildValue(k))
        }
    }
}

/// Sessions that each write more than a close merges itself (2,500 keys of 500 bytes, 1.2 MB, where four
/// segments exceed a close's 4 MiB): the background merges they start are stopped by the next close part way, and suspended;
/// each next session resumes them, so they finish over several sessions and the segments stay few. Before
/// merges were suspended, this pattern added a segment per session for good.
@Suite struct LargeShortSessionTests {
    @Test func sessionsLargerThanACloseMergesKeepAFewSegments() throws {
        let dir = try TemporaryDirectory()
        let path = dir.child("db")
        var rng = SplitMix64(seed: 3738)
        let sessions = Int(ProcessInfo.processInfo.environment["STRATA_LARGE_SESSIONS"] ?? "") ?? 30
        var counts: [Int] = []
        for session in 0..<sessions {
            let db = try Database.open(at: path)
            try db.write { tx in
                for i in 0..<2_500 { try tx.put(ShortSessionTests.key(session * 10_000 + i), rng.bytes(500), in: 1) }
            }
            counts.append(db.statistics().segmentCount)
            try db.close()
        }
        print("LargeShortSessionTests: segments at each open: \(counts)")
        let db = try Database.open(at: path)
        defer { try? db.close() }
        let segments = db.statistics().segmentCount
        #expect(segments <= 12 && counts.max()! <= 16, "\(segments) segments after \(sessions) sessions: \(counts)")
        let snapshot = try db.snapshot()
        for session in stride(from: 0, to: sessions, by: 7) {
            #expect(try snapshot.get(ShortSessionTests.key(session * 10_000 + 2_499), in: 1) != nil)
        }
    }

    /// The same sessions when the background merges get no time at all (each stops after one entry): a close's
    /// own share of merging (`advanceMergesAtClose`, which goes on with the suspended merges) keeps the
    /// segments few by itself.
    @Test func sessionsWhoseBackgroundMergesGetNoTimeStillKeepAFewSegments() throws {
        let dir = try TemporaryDirectory()
        let path = dir.child("db")
        var rng = SplitMix64(seed: 3739)
        var options = Database.Options()
        options.mergeEntriesBeforeSuspending = 1
        var counts: [Int] = []
        for session in 0..<30 {
            let db = try Database.open(at: path, options: options)
            try db.write { tx in
                for i in 0..<2_500 { try tx.put(ShortSessionTests.key(session * 10_000 + i), rng.bytes(500), in: 1) }
            }
            counts.append(db.statistics().segmentCount)
            try db.close()
        }
        print("LargeShortSessionTests: with no background merging, segments at each open: \(counts)")
        let db = try Database.open(at: path, options: options)
        defer { try? db.close() }
        #expect(db.statistics().segmentCount <= 12 && counts.max()! <= 16, "\(counts)")
        #expect(db.checkConsistency().isEmpty)
        let snapshot = try db.snapshot()
        for session in stride(from: 0, to: 30, by: 7) {
            #expect(try snapshot.get(ShortSessionTests.key(session * 10_000 + 2_499), in: 1) != nil)
        }
    }
}
