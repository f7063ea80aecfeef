import Engine
import Foundation
import Testing
import TestSupport

/// Several instances on one database (`Options.sharing = .shared`), in this process: each has its own writer
/// lock descriptor, session and memtable, exactly as separate processes do (`SharedProcessTests` runs real ones).
@Suite struct SharedDatabaseTests {
    static func options(flushBytes: Int = 1 << 20, background: Bool = false) -> Database.Options {
        var o = Database.Options()
        o.sharing = .shared
        o.memtableFlushBytes = flushBytes
        o.compactionSegmentTrigger = 3
        o.backgroundMaintenance = background
        return o
    }

    static func key(_ i: UInt64) -> [UInt8] { withUnsafeBytes(of: i.bigEndian) { Array($0) } }
    static func number(_ bytes: [UInt8]?) -> UInt64? { bytes.map { $0.reduce(0) { $0 << 8 | UInt64($1) } } }

    @Test func eachInstanceSeesTheOthersCommitsOnceItRefreshes() throws {
        let temp = try TemporaryDirectory()
        let path = temp.child("db")
        let a = try Database.open(at: path, options: Self.options())
        let b = try Database.open(at: path, options: Self.options())
        try a.write { try $0.put(Self.key(1), Array("from a".utf8), in: 0) }
        #expect(try b.snapshot().get(Self.key(1), in: 0) == nil, "a snapshot is the state when the instance last refreshed")
        #expect(try b.refresh())
        #expect(try b.snapshot().get(Self.key(1), in: 0) == Array("from a".utf8))
        #expect(try !b.refresh(), "nothing new")
        // A write transaction starts from the latest commit of every instance.
        try b.write { tx in
            #expect(try tx.snapshot.get(Self.key(1), in: 0) != nil)
            try tx.put(Self.key(2), Array("from b".utf8), in: 0)
        }
        try a.write { tx in
            #expect(try tx.snapshot.get(Self.key(2), in: 0) == Array("from b".utf8))
            try tx.delete(Self.key(1), in: 0)
        }
        try b.refresh()
        #expect(try b.snapshot().get(Self.key(1), in: 0) == nil)
        #expect(a.lastSequence == 3 && b.lastSequence == 3)
        try a.close()
        try b.close()
        // What the last one to close left is what an exclusive open finds.
        let c = try Database.open(at: path)
        #expect(try c.snapshot().get(Self.key(2), in: 0) == Array("from b".utf8))
        #expect(c.lastSequence == 3)
        try c.close()
    }

    /// Flushes, log switches and compactions by one instance are what another's refresh follows: it rebuilds
    /// from the new manifest, and every commit stays visible throughout.
    @Test(arguments: Seeds.environmentOr([11]))
    func refreshFollowsFlushesAndCompactionsOfTheOther(seed: UInt64) throws {
        let temp = try TemporaryDirectory()
        let path = temp.child("db")
        let a = try Database.open(at: path, options: Self.options(flushBytes: 4096))
        let b = try Database.open(at: path, options: Self.options(flushBytes: 4096))
        var rng = SplitMix64(seed: seed)
        var expected: [UInt64: UInt64] = [:]
        for i in 0..<(400 * Seeds.scale) {
            let writer = rng.next() % 2 == 0 ? a : b
            let reader = writer === a ? b : a
            let k = rng.next() % 150
            let v = UInt64(i)
            try writer.write { tx in
                try tx.put(Self.key(k), Self.key(v), in: UInt32(k % 3))
                // A counter every commit reads and increments: lost updates would show.
                let total = Self.number(try tx.snapshot.get(Array("total".utf8), in: 9)) ?? 0
                try tx.put(Array("total".utf8), Self.key(total + 1), in: 9)
            }
            expected[k] = v
            switch rng.next() % 20 {
            case 0: try writer.flush()
            case 1: try reader.compact()
            case 2: try writer.compact(UInt32(k % 3))
            default: break
            }
            if rng.next() % 3 == 0 {
                try reader.refresh()
                let snapshot = try reader.snapshot()
                #expect(Self.number(try snapshot.get(Array("total".utf8), in: 9)) == UInt64(i + 1), "step \(i)")
                #expect(Self.number(try snapshot.get(Self.key(k), in: UInt32(k % 3))) == v, "step \(i)")
                snapshot.close()
            }
        }
        for db in [a, b] {
            try db.refresh()
            let snapshot = try db.snapshot()
            for (k, v) in expected {
                #expect(Self.number(try snapshot.get(Self.key(k), in: UInt32(k % 3))) == v)
            }
            #expect(db.checkConsistency() == [])
            snapshot.close()
        }
        try a.close()
        try b.close()
    }

    /// Threads writing through two instances at once: every read-modify-write of a shared counter lands once.
    @Test func commitsOfTwoInstancesAreSerialized() throws {
        let temp = try TemporaryDirectory()
        let path = temp.child("db")
        let instances = try (0..<2).map { _ in try Database.open(at: path, options: Self.options(flushBytes: 8192, background: true)) }
        let perThread = 150 * Seeds.scale
        let failures = Locked<[String]>([])
        let done = DispatchSemaphore(value: 0)
        for (t, db) in instances.enumerated() {
            Thread {
                defer { done.signal() }
                do {
                    for i in 0..<perThread {
                        try db.write { tx in
                            let total = Self.number(try tx.snapshot.get(Array("total".utf8), in: 1)) ?? 0
                            try tx.put(Array("total".utf8), Self.key(total + 1), in: 1)
                            try tx.put(Self.key(UInt64(t * 1_000_000 + i)), Self.key(total), in: 0)
                        }
                    }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }.start()
        }
        done.wait()
        done.wait()
        #expect(failures.withLock { $0 } == [])
        for db in instances {
            try db.refresh()
            let snapshot = try db.snapshot()
            #expect(Self.number(try snapshot.get(Array("total".utf8), in: 1)) == UInt64(2 * perThread))
            var count = 0
            try snapshot.scan(0) { _, _ in
                count += 1
                return true
            }
            #expect(count == 2 * perThread)
            snapshot.close()
        }
        for db in instances { try db.close() }
    }

    @Test func exclusiveAndSharedInstancesExcludeEachOther() throws {
        let temp = try TemporaryDirectory()
        let path = temp.child("db")
        var exclusiveOptions = Database.Options()
        exclusiveOptions.sharing = .exclusive
        let exclusive = try Database.open(at: path, options: exclusiveOptions)
        #expect { try Database.open(at: path, options: Self.options()) } throws: { ($0 as? StorageError)?.code == .locked }
        try exclusive.close()
        let shared = try Database.open(at: path, options: Self.options())
        #expect { try Database.open(at: path, options: exclusiveOptions) } throws: { error in
            guard let e = error as? StorageError else { return false }
            return e.code == .locked && e.message.contains("shared mode")
        }
        try shared.close()
        try Database.open(at: path, options: exclusiveOptions).close()
    }

    /// Only the last instance to close flushes; the others leave their commits in the log for the rest.
    @Test func theLastInstanceToCloseFlushes() throws {
        let temp = try TemporaryDirectory()
        let path = temp.child("db")
        let a = try Database.open(at: path, options: Self.options())
        let b = try Database.open(at: path, options: Self.options())
        try a.write { try $0.put(Self.key(1), Self.key(1), in: 0) }
        try a.close()
        #expect(try b.refresh())
        try b.write { try $0.put(Self.key(2), Self.key(2), in: 0) }
        try b.close()
        let report = UnsafeReportBox()
        let c = try Database.open(at: path, options: Database.Options(), fileSystem: PosixFileSystem(), report: report)
        #expect(report.report.replayedCommits == 0, "the last close flushed both commits")
        #expect(try c.snapshot().get(Self.key(1), in: 0) != nil && c.snapshot().get(Self.key(2), in: 0) != nil)
        try c.close()
    }

    /// Whether another process could take every lock file of the database at `path` now (`flock -n`).
    static func lockFilesAreFree(_ path: String) throws -> Bool {
        let flock = ["/usr/bin/flock", "/bin/flock"].first { FileManager.default.isExecutableFile(atPath: $0) }
        for name in ["LOCK", "LOCK.writer", "LOCK.queue"] {
            if let flock {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: flock)
                process.arguments = ["-n", path + "/" + name, "true"]
                try process.run()
                process.waitUntilExit()
                if process.terminationStatus != 0 { return false }
            } else {
                // Without the tool, an exclusive lock taken through another descriptor says the same.
                guard let lock = try? PosixFileSystem().lock(atPath: path + "/" + name) else { return false }
                lock.unlock()
            }
        }
        return true
    }

    /// Between operations no lock is held: another process can take both lock files at once (`flock -n`).
    @Test func noLockIsHeldWhileIdle() throws {
        let temp = try TemporaryDirectory()
        let path = temp.child("db")
        let a = try Database.open(at: path, options: Self.options(flushBytes: 4096, background: true))
        let b = try Database.open(at: path, options: Self.options(flushBytes: 4096, background: true))
        func lockFilesAreFree() throws -> Bool { try Self.lockFilesAreFree(path) }
        #expect(try lockFilesAreFree(), "after open")
        for i in 0..<200 {
            try (i % 2 == 0 ? a : b).write { try $0.put(Self.key(UInt64(i)), [UInt8](repeating: 7, count: 100), in: 0) }
        }
        try b.refresh()
        _ = try a.snapshot().get(Self.key(3), in: 0)
        try a.flush()
        try b.compact()
        // (Background flushes the commits started are waited for by a flush.)
        try a.flush()
        #expect(try lockFilesAreFree(), "after writes, a refresh, a flush and a compaction")
        try a.close()
        try b.close()
    }

    /// Paused background work (an app about to be suspended) holds no lock however much work is due; commits
    /// still land, and resuming does what was put off.
    @Test func pausedBackgroundWorkHoldsNoLock() throws {
        let temp = try TemporaryDirectory()
        let path = temp.child("db")
        let db = try Database.open(at: path, options: Self.options(flushBytes: 2048, background: true))
        for i in 0..<300 { try db.write { try $0.put(Self.key(UInt64(i)), [UInt8](repeating: 3, count: 200), in: 0) } }
        db.pauseBackgroundWork()
        #expect(try Self.lockFilesAreFree(path), "paused right after commits that asked for flushes and merges")
        for i in 300..<400 { try db.write { try $0.put(Self.key(UInt64(i)), [UInt8](repeating: 4, count: 200), in: 0) } }
        #expect(try Self.lockFilesAreFree(path), "paused, after more commits")
        db.resumeBackgroundWork()
        try db.flush()
        let snapshot = try db.snapshot()
        #expect(try snapshot.get(Self.key(399), in: 0) == [UInt8](repeating: 4, count: 200))
        #expect(db.statistics().memtableBytes == 0)
        snapshot.close()
        try db.close()
    }

    /// A read-only shared instance (the `strata` tool beside an app) follows a writer without any lock.
    @Test func aReadOnlyInstanceFollowsAWriterWithoutLocking() throws {
        let temp = try TemporaryDirectory()
        let path = temp.child("db")
        let writer = try Database.open(at: path, options: Self.options(flushBytes: 4096))
        try writer.write { try $0.put(Self.key(0), Self.key(0), in: 0) }
        var readOptions = Self.options()
        readOptions.readOnly = true
        let reader = try Database.open(at: path, options: readOptions)
        #expect(try reader.snapshot().get(Self.key(0), in: 0) != nil)
        for i in 1..<300 {
            try writer.write { try $0.put(Self.key(UInt64(i)), [UInt8](repeating: 1, count: 64), in: 0) }
            if i % 50 == 0 { try writer.flush() }
            if i % 120 == 0 { try writer.compact() }
            if i % 7 == 0 {
                try reader.refresh()
                #expect(reader.lastSequence == UInt64(i + 1))
                #expect(try reader.snapshot().get(Self.key(UInt64(i)), in: 0) != nil)
            }
        }
        #expect { try reader.write { _ in } } throws: { ($0 as? StorageError)?.code == .invalidArgument }
        try reader.close()
        try writer.close()
    }
}
