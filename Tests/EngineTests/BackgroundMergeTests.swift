import Dispatch
import Engine
import Foundation
import Testing
import TestSupport

/// A background merge builds its output holding neither the writer gate nor LOCK.writer
/// (`BackgroundMerge.swift`): while one is held in the middle of its build (`Options.mergeCheckHook`), commits,
/// a large transaction's spills and install, and another process's commits go on; then the merge installs, and
/// every value is there. A commit that does not finish within a minute is reported as the hang it would be.
@Suite struct BackgroundMergeTests {
    /// Holds a merge at its first check until released.
    final class MergeGate: @unchecked Sendable {
        let reached = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        private let once = Locked(false)
        /// How many checks the merges made.
        let checks = Locked(0)
        func check() {
            checks.withLock { $0 += 1 }
            let first = once.withLock { seen -> Bool in
                defer { seen = true }
                return !seen
            }
            guard first else { return }
            reached.signal()
            release.wait()
        }
    }

    static func key(_ i: Int) -> [UInt8] { withUnsafeBytes(of: UInt64(i).bigEndian) { Array($0) } }

    static let perSegment = 20_000

    /// 64 bytes that do not compress, so that the segments are more than a close merges itself.
    static func value(_ i: Int) -> [UInt8] {
        var rng = SplitMix64(seed: UInt64(i))
        return rng.bytes(64)
    }

    /// A database whose partition 5 has four segments of 20,000 entries (about 5 MB: more than a close merges
    /// itself, and a close does no share of merging here): a merge of them passes its first check after 4,096
    /// entries.
    static func databaseWithSegments(_ path: String, sharing: Database.Sharing, gate: MergeGate) throws -> Database {
        var options = Database.Options()
        options.sharing = sharing
        options.compactionSegmentTrigger = 3
        options.closeMergeShare = false
        options.mergeCheckHook = { gate.check() }
        let db = try Database.open(at: path, options: options)
        for segment in 0..<4 {
            try db.write { tx in
                for i in 0..<perSegment { try tx.put(key(segment * perSegment + i), value(segment * perSegment + i), in: 5) }
            }
            try db.flush()
        }
        return db
    }

    /// Every key of the four segments of partition 5 is there once, with its value.
    static func expectEveryValue(_ snapshot: Snapshot) throws {
        var count = 0
        try snapshot.scan(5) { k, v in
            let i = Int(k.reduce(0) { $0 << 8 | UInt64($1) })
            if [UInt8](v) != Self.value(i) { Issue.record("key \(i): wrong value") }
            count += 1
            return true
        }
        #expect(count == 4 * perSegment)
    }

    /// A child process commits one record (key `9 << 32` of partition 0) while this process's merge is held,
    /// then the merge is let go (also when the commit hung, so that the child finishes before the test ends).
    static func commitFromAnotherProcess(_ child: String, _ path: String, releasing gate: MergeGate, _ failure: String) {
        let result = Locked<(status: Int32, out: String, err: String)?>(nil)
        let run = finishes { let r = try runProcess(child, [path, "shared", "9", "commits", "1"]); result.withLock { $0 = r } }
        gate.release.signal()
        #expect(run.finished, "\(failure)")
        let r = result.withLock { $0 }
        #expect(r?.status == 0, "child: \(r?.err ?? "") \(r?.out ?? "")")
    }

    /// A value handed to the thread `finishes` runs its body on.
    final class Held<Value>: @unchecked Sendable {  // @unchecked: the test thread waits while the other uses it
        let value: Value
        init(_ value: Value) { self.value = value }
    }

    /// Runs `body` on another thread; false when it does not finish within a minute (a hang).
    static func finishes(_ body: @escaping @Sendable () throws -> Void) -> (finished: Bool, error: (any Error)?) {
        let done = DispatchSemaphore(value: 0)
        let failure = Locked<(any Error)?>(nil)
        Thread.detachNewThread {
            do { try body() } catch { failure.withLock { $0 = error } }
            done.signal()
        }
        let finished = done.wait(timeout: .now() + 60) == .success
        return (finished, failure.withLock { $0 })
    }

    @Test(arguments: [Database.Sharing.exclusive, .shared])
    func commitsAndLargeWritesGoOnWhileAMergeIsBuilt(sharing: Database.Sharing) throws {
        let temp = try TemporaryDirectory()
        let gate = MergeGate()
        let db = try Self.databaseWithSegments(temp.child("db"), sharing: sharing, gate: gate)
        #expect(gate.reached.wait(timeout: .now() + 60) == .success, "no background merge started")
        let compactionsBefore = db.statistics().compactions
        // A one-record commit, then a transaction that spills and installs its segments, with the merge held.
        let small = Self.finishes { try db.write { try $0.put(Self.key(1_000_000), [1], in: 6) } }
        #expect(small.finished && small.error == nil, "a commit waited for the merge: \(String(describing: small.error))")
        let large = Self.finishes {
            try db.write { tx in
                for i in 0..<2_000 { try tx.put(Self.key(2_000_000 + i), [2], in: 6) }
                try tx.spill()
                for i in 2_000..<4_000 { try tx.put(Self.key(2_000_000 + i), [2], in: 6) }
            }
        }
        #expect(large.finished && large.error == nil, "a spilled write waited for the merge: \(String(describing: large.error))")
        #expect(db.statistics().compactions == compactionsBefore, "the merge installed while held")
        gate.release.signal()
        db.waitForMaintenance()
        #expect(db.statistics().compactions > compactionsBefore)
        // The held merge started on the first segments (the policy merges when the newer ones reach half the
        // oldest); those that came while it was held are merged after it, or wait for the next trigger.
        #expect((db.partitionStatistics()[5]?.segments ?? 0) <= 2)
        let snapshot = try db.snapshot()
        try Self.expectEveryValue(snapshot)
        #expect(try snapshot.get(Self.key(1_000_000), in: 6) == [1] && snapshot.get(Self.key(2_003_999), in: 6) == [2])
        snapshot.close()
        #expect(db.checkConsistency() == [])
        try db.close()
    }

    /// A merge steps aside while a large write is under way (`pauseWhileLargeWriteUnderWay`): let go from its first
    /// check while a write transaction has spilled, it writes nothing more until the write ends (it checks every
    /// 4,096 entries of the 80,000, and the hook counts the checks), then finishes. Without the pause it reaches
    /// its next check within milliseconds.
    @Test(arguments: [Database.Sharing.exclusive, .shared])
    func aMergeStepsAsideWhileALargeWriteIsUnderWay(sharing: Database.Sharing) throws {
        let temp = try TemporaryDirectory()
        let gate = MergeGate()
        let db = try Self.databaseWithSegments(temp.child("db"), sharing: sharing, gate: gate)
        #expect(gate.reached.wait(timeout: .now() + 60) == .success, "no background merge started")
        let compactionsBefore = db.statistics().compactions
        let tx = try db.beginWrite()
        for i in 0..<2_000 { try tx.put(Self.key(2_000_000 + i), [2], in: 6) }
        try tx.spill()
        let checksBefore = gate.checks.withLock { $0 }
        gate.release.signal()
        Thread.sleep(forTimeInterval: 0.5)
        #expect(gate.checks.withLock { $0 } == checksBefore, "the merge went on while a large write was under way")
        #expect(db.statistics().compactions == compactionsBefore)
        for i in 2_000..<4_000 { try tx.put(Self.key(2_000_000 + i), [2], in: 6) }
        // The commit does not wait for the paused merge (a hang is reported, not waited out).
        let held = Held(tx)
        let commit = Self.finishes { try held.value.commit() }
        #expect(commit.finished && commit.error == nil, "the commit waited for the paused merge: \(String(describing: commit.error))")
        db.waitForMaintenance()
        #expect(gate.checks.withLock { $0 } > checksBefore)
        #expect(db.statistics().compactions > compactionsBefore)
        let snapshot = try db.snapshot()
        try Self.expectEveryValue(snapshot)
        #expect(try snapshot.get(Self.key(2_003_999), in: 6) == [2])
        snapshot.close()
        #expect(db.checkConsistency() == [])
        try db.close()
    }

    /// Another process commits while this one's merge is held in its build: LOCK.writer is free.
    @Test func anotherProcessCommitsWhileAMergeIsBuilt() throws {
        guard let child = SharedProcessTests.childPath else {
            Issue.record("EngineCrashChild was not built beside the tests")
            return
        }
        let temp = try TemporaryDirectory()
        let path = temp.child("db")
        let gate = MergeGate()
        let db = try Self.databaseWithSegments(path, sharing: .shared, gate: gate)
        #expect(gate.reached.wait(timeout: .now() + 60) == .success, "no background merge started")
        Self.commitFromAnotherProcess(child, path, releasing: gate, "the other process's commit waited for this process's merge")
        db.waitForMaintenance()
        try db.refresh()
        #expect(try db.snapshot().get(SharedProcessTests.key(9 << 32), in: 0) == crashChildValue(0))
        #expect((db.partitionStatistics()[5]?.segments ?? 0) <= 2)
        #expect(db.checkConsistency() == [])
        try db.close()
    }

    /// Where a resumed merge is held: in its build (at its first check), or before it reads the saved state.
    enum ResumeHold: String, CaseIterable, Sendable { case build, stateRead }

    /// A merge a close suspended is resumed by the next open the way a new merge is built, holding nothing: while
    /// the resumed merge is held, commits go on in this process and from another; then it finishes in the output it
    /// had begun. Held in its build, it is out of the manifest's pending merges (no other instance can take it too).
    /// Held before it reads its saved state: that read takes no lock either (it was read under the writer lock, a
    /// few milliseconds for a large merge, and `migrate-rename` in the Bench waited that long for its schema's
    /// commit; with the read under the lock, this case failed, both commits waiting 60 s).
    @Test(arguments: ResumeHold.allCases)
    func aResumedMergeIsBuiltWithoutTheLock(heldAt hold: ResumeHold) throws {
        guard let child = SharedProcessTests.childPath else {
            Issue.record("EngineCrashChild was not built beside the tests")
            return
        }
        let temp = try TemporaryDirectory()
        let path = temp.child("db")
        var options = Database.Options()
        options.sharing = .shared
        options.compactionSegmentTrigger = 3
        options.closeMergeShare = false
        // The first session writes four segments and suspends a merge of them after 6,000 entries.
        options.backgroundMaintenance = false
        options.mergeEntriesBeforeSuspending = 6_000
        let first = try Database.open(at: path, options: options)
        for segment in 0..<4 {
            try first.write { tx in
                for i in 0..<Self.perSegment { try tx.put(Self.key(segment * Self.perSegment + i), Self.value(segment * Self.perSegment + i), in: 5) }
            }
            try first.flush()
        }
        try first.mergeWhereNeededNow()
        let suspended = try #require(first.pendingMerges.first)
        try first.close()
        // The next session resumes it in the background, held where the argument says.
        let gate = MergeGate()
        options.backgroundMaintenance = true
        options.mergeEntriesBeforeSuspending = nil
        switch hold {
        case .build: options.mergeCheckHook = { gate.check() }
        case .stateRead: options.suspendedStateHook = { gate.check() }
        }
        let db = try Database.open(at: path, options: options)
        #expect(gate.reached.wait(timeout: .now() + 60) == .success, "the suspended merge was not resumed")
        if hold == .build {
            #expect(db.pendingMerges.isEmpty, "a merge being resumed is still listed for another instance to take")
        }
        let small = Self.finishes { try db.write { try $0.put(Self.key(1_000_000), [1], in: 6) } }
        #expect(small.finished && small.error == nil, "a commit waited for the resumed merge: \(String(describing: small.error))")
        Self.commitFromAnotherProcess(child, path, releasing: gate, "another process's commit waited for the resumed merge")
        db.waitForMaintenance()
        try db.refresh()
        #expect(db.pendingMerges.isEmpty)
        #expect(db.partitionStatistics()[5]?.segments == 1)
        #expect(
            FileManager.default.fileExists(atPath: path + "/" + FileName.segment(suspended.output).name),
            "the resumed merge did not finish in the output it had begun")
        let snapshot = try db.snapshot()
        try Self.expectEveryValue(snapshot)
        #expect(try snapshot.get(Self.key(1_000_000), in: 6) == [1])
        #expect(try snapshot.get(SharedProcessTests.key(9 << 32), in: 0) == crashChildValue(0))
        snapshot.close()
        #expect(db.checkConsistency() == [])
        try db.close()
        #expect(try FileManager.default.contentsOfDirectory(atPath: path).filter { $0.hasSuffix(".merge") }.isEmpty)
    }

    /// A close while a merge is held stops it (suspended for the next open, as before) and closes; the next open
    /// finishes the merge and loses nothing.
    @Test(arguments: [Database.Sharing.exclusive, .shared])
    func aCloseStopsAHeldMergeAndTheNextOpenFinishesIt(sharing: Database.Sharing) throws {
        let temp = try TemporaryDirectory()
        let gate = MergeGate()
        let db = try Self.databaseWithSegments(temp.child("db"), sharing: sharing, gate: gate)
        #expect(gate.reached.wait(timeout: .now() + 60) == .success, "no background merge started")
        // The close starts while the merge is held, and the merge is let go once the close has begun.
        let closed = DispatchSemaphore(value: 0)
        let failure = Locked<(any Error)?>(nil)
        Thread.detachNewThread {
            do { try db.close() } catch { failure.withLock { $0 = error } }
            closed.signal()
        }
        if sharing == .exclusive {
            // An exclusive close marks the database closed before it waits for the merge: once reads refuse,
            // the merge will see the close at its next check.
            while (try? db.snapshot().close()) != nil { Thread.sleep(forTimeInterval: 0.001) }
        } else {
            Thread.sleep(forTimeInterval: 0.05)
        }
        gate.release.signal()
        #expect(closed.wait(timeout: .now() + 60) == .success, "the close hung")
        #expect(failure.withLock { $0 } == nil)
        var options = Database.Options()
        options.sharing = sharing
        options.compactionSegmentTrigger = 3
        options.closeMergeShare = false
        if sharing == .exclusive {
            // The close suspended the merge: the next open finds it pending (and, here without background work,
            // leaves it so until asked).
            options.backgroundMaintenance = false
            let paused = try Database.open(at: temp.child("db"), options: options)
            #expect(paused.pendingMerges.count == 1, "the close did not suspend the merge")
            try paused.close()
            options.backgroundMaintenance = true
        }
        let again = try Database.open(at: temp.child("db"), options: options)
        again.waitForMaintenance()
        var count = 0
        try again.snapshot().scan(5) { _, _ in
            count += 1
            return true
        }
        #expect(count == 4 * Self.perSegment)
        #expect((again.partitionStatistics()[5]?.segments ?? 0) <= 2)
        #expect(again.checkConsistency() == [])
        try again.close()
    }
}
