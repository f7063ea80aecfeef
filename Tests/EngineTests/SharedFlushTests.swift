import Dispatch
import Engine
import Foundation
import Testing
import TestSupport

/// A shared database's background flush builds its segments holding nothing (`flushInBackground`): planned and
/// installed holding LOCK.writer through descriptors of its own, never the writer gate. While one is held before
/// its build (`Options.flushBuildHook`), commits of the same instance, of another instance and of another
/// process go on; another instance that catches up does not freeze the same commits again (invariant 6 of
/// `Database+Sharing.swift`); a flush some other flush overtook is discarded with its files. A commit that does
/// not finish within a minute is reported as the hang it would be.
@Suite struct SharedFlushTests {
    /// Holds the first background flush before its build until released.
    final class FlushGate: @unchecked Sendable {
        let reached = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        private let once = Locked(false)
        func hold() {
            let first = once.withLock { seen -> Bool in
                defer { seen = true }
                return !seen
            }
            guard first else { return }
            reached.signal()
            release.wait()
        }
    }

    static let flushBytes = 64 * 1024

    static func options(gate: FlushGate? = nil) -> Database.Options {
        var o = Database.Options()
        o.sharing = .shared
        o.memtableFlushBytes = flushBytes
        o.compactionSegmentTrigger = 100
        if let gate { o.flushBuildHook = { gate.hold() } }
        return o
    }

    static func key(_ i: Int) -> [UInt8] { withUnsafeBytes(of: UInt64(i).bigEndian) { Array($0) } }
    static func value(_ i: Int) -> [UInt8] { [UInt8](repeating: UInt8(truncatingIfNeeded: i), count: 100) }

    /// Commits keys `range` of partition 5, one per transaction.
    static func commit(_ db: Database, _ range: Range<Int>) throws {
        for i in range { try db.write { try $0.put(key(i), value(i), in: 5) } }
    }

    /// Commits to `db` until one of its commits froze the memtable and its background flush reached the gate;
    /// returns how many. A commit that waits for the held flush (the gate releases it after a minute) is an issue.
    static func commitUntilAFlushIsHeld(_ db: Database, _ gate: FlushGate) -> Int {
        let committed = Locked(0)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            defer { done.signal() }
            do {
                while gate.reached.wait(timeout: .now()) != .success {
                    let next = committed.withLock { $0 }
                    guard next < 100 * flushBytes / 100 else {
                        Issue.record("no background flush started")
                        return
                    }
                    try commit(db, next..<(next + 50))
                    committed.withLock { $0 += 50 }
                }
            } catch {
                Issue.record("\(error)")
            }
        }
        if done.wait(timeout: .now() + 60) != .success {
            Issue.record("a commit waited for its instance's flush, held before its build")
            gate.release.signal()
            done.wait()
        }
        return committed.withLock { $0 }
    }

    /// Every key of partition 5 below `count` is there with its value.
    static func expectEveryValue(_ db: Database, below count: Int, _ context: String) throws {
        try db.refresh()
        let snapshot = try db.snapshot()
        defer { snapshot.close() }
        var seen = 0
        try snapshot.scan(5) { k, v in
            let i = Int(k.reduce(0) { $0 << 8 | UInt64($1) })
            if [UInt8](v) != value(i) { Issue.record("\(context): key \(i) has a wrong value") }
            seen += 1
            return true
        }
        #expect(seen == count, "\(context)")
    }

    /// The segment files in the directory are exactly those the database names: a discarded flush left none.
    static func expectNoStraySegments(_ db: Database, _ path: String, _ context: String) throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: path).filter { $0.hasSuffix(".seg") }
        #expect(files.count == db.statistics().segmentCount, "\(context): \(files.sorted())")
    }

    @Test func commitsOfThisAndAnotherInstanceGoOnWhileAFlushIsBuilt() throws {
        let temp = try TemporaryDirectory()
        let path = temp.child("db")
        let gate = FlushGate()
        let a = try Database.open(at: path, options: Self.options(gate: gate))
        let b = try Database.open(at: path, options: Self.options())
        var next = Self.commitUntilAFlushIsHeld(a, gate)
        let flushesBefore = a.statistics().flushes
        // The same instance commits while its flush is held before its build.
        let own = next
        let mine = BackgroundMergeTests.finishes { try Self.commit(a, own..<(own + 20)) }
        #expect(mine.finished && mine.error == nil, "a commit waited for its instance's flush: \(String(describing: mine.error))")
        next += 20
        // Another instance catches up (the manifest says which logs are frozen) and commits: less than a
        // memtable's worth, so it has no reason to flush, and it does not freeze the frozen commits again.
        let other = next
        let theirs = BackgroundMergeTests.finishes { try Self.commit(b, other..<(other + 20)) }
        #expect(theirs.finished && theirs.error == nil, "another instance's commit waited for the flush: \(String(describing: theirs.error))")
        next += 20
        b.waitForMaintenance()
        #expect(b.statistics().flushes == 0, "the other instance flushed the commits this one froze")
        #expect(a.statistics().flushes == flushesBefore, "the flush installed while held")
        gate.release.signal()
        a.waitForMaintenance()
        #expect(a.statistics().flushes == flushesBefore + 1)
        #expect(a.statistics().flushesDiscarded == 0)
        try Self.expectEveryValue(a, below: next, "a")
        try Self.expectEveryValue(b, below: next, "b")
        try Self.expectNoStraySegments(a, path, "after the flush")
        #expect(a.checkConsistency() == [])
        try b.close()
        try a.close()
        let reopened = try Database.open(at: path, options: Self.options())
        try Self.expectEveryValue(reopened, below: next, "reopened")
        try reopened.close()
    }

    /// A child process commits one record (key `9 << 32` of partition 0) while this process's flush is held.
    @Test func anotherProcessCommitsWhileAFlushIsBuilt() throws {
        guard let child = SharedProcessTests.childPath else {
            Issue.record("EngineCrashChild was not built beside the tests")
            return
        }
        let temp = try TemporaryDirectory()
        let path = temp.child("db")
        let gate = FlushGate()
        let db = try Database.open(at: path, options: Self.options(gate: gate))
        _ = Self.commitUntilAFlushIsHeld(db, gate)
        let result = Locked<(status: Int32, out: String, err: String)?>(nil)
        let run = BackgroundMergeTests.finishes {
            let r = try runProcess(child, [path, "shared", "9", "commits", "1"])
            result.withLock { $0 = r }
        }
        gate.release.signal()
        #expect(run.finished, "another process's commit waited for this process's flush")
        let r = result.withLock { $0 }
        #expect(r?.status == 0, "child: \(r?.err ?? "") \(r?.out ?? "")")
        db.waitForMaintenance()
        try db.refresh()
        #expect(try db.snapshot().get(SharedProcessTests.key(9 << 32), in: 0) == crashChildValue(0))
        #expect(db.checkConsistency() == [])
        try db.close()
    }

    /// A write that spills while the flush is held flushes the frozen commits itself (its spilled segments go
    /// above them); the held flush, let go, finds its target gone and removes what it built.
    @Test func aFlushOvertakenByASpillIsDiscarded() throws {
        let temp = try TemporaryDirectory()
        let path = temp.child("db")
        let gate = FlushGate()
        let db = try Database.open(at: path, options: Self.options(gate: gate))
        var next = Self.commitUntilAFlushIsHeld(db, gate)
        let start = next
        let large = BackgroundMergeTests.finishes {
            try db.write { tx in
                for i in start..<(start + 500) { try tx.put(Self.key(i), Self.value(i), in: 5) }
                try tx.spill()
                for i in (start + 500)..<(start + 1_000) { try tx.put(Self.key(i), Self.value(i), in: 5) }
            }
        }
        #expect(large.finished && large.error == nil, "a spilled write waited for the flush: \(String(describing: large.error))")
        next += 1_000
        gate.release.signal()
        db.waitForMaintenance()
        #expect(db.statistics().flushesDiscarded == 1)
        try Self.expectNoStraySegments(db, path, "after the discarded flush")
        try Self.expectEveryValue(db, below: next, "after the discarded flush")
        #expect(db.checkConsistency() == [])
        try db.close()
        let reopened = try Database.open(at: path, options: Self.options())
        try Self.expectEveryValue(reopened, below: next, "reopened")
        try reopened.close()
    }

    /// While one instance's flush is held (as if its process were stopped), another that fills its own memtable
    /// flushes the frozen commits itself, so that its memory stays bounded; the held flush then finds them
    /// flushed and is discarded.
    @Test func anotherInstanceFlushesFrozenCommitsOnceItsOwnMemtableIsFull() throws {
        let temp = try TemporaryDirectory()
        let path = temp.child("db")
        let gate = FlushGate()
        let a = try Database.open(at: path, options: Self.options(gate: gate))
        let b = try Database.open(at: path, options: Self.options())
        var next = Self.commitUntilAFlushIsHeld(a, gate)
        let start = next
        let theirs = BackgroundMergeTests.finishes { try Self.commit(b, start..<(start + 2 * Self.flushBytes / 100)) }
        #expect(theirs.finished && theirs.error == nil, "\(String(describing: theirs.error))")
        next += 2 * Self.flushBytes / 100
        b.waitForMaintenance()
        #expect(b.statistics().flushes >= 1, "the other instance never flushed")
        gate.release.signal()
        a.waitForMaintenance()
        #expect(a.statistics().flushesDiscarded == 1)
        try Self.expectEveryValue(a, below: next, "a")
        try Self.expectEveryValue(b, below: next, "b")
        try Self.expectNoStraySegments(a, path, "after the discarded flush")
        #expect(a.checkConsistency() == [] && b.checkConsistency() == [])
        try a.close()
        try b.close()
        let reopened = try Database.open(at: path, options: Self.options())
        try Self.expectEveryValue(reopened, below: next, "reopened")
        try reopened.close()
    }
}
