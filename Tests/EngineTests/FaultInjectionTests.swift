import Engine
import Testing
import TestSupport

/// ENOSPC and EIO on write and sync: the database fails with a clear error or stays usable, and once the
/// fault clears nothing acknowledged is lost.
@Suite struct FaultInjectionTests {
    static var manual: Database.Options {
        var o = Database.Options()
        o.backgroundMaintenance = false
        return o
    }

    enum Kind: String, CaseIterable, Sendable { case appendENOSPC, appendEIO, syncEIO, syncENOSPC }

    @Test(arguments: Kind.allCases)
    func aFailedCommitIsReportedAndEverythingAcknowledgedSurvives(kind: Kind) throws {
        let memory = MemoryFileSystem()
        let probe = FaultyFileSystem(base: memory)
        var db = try Database.open(at: "/db", options: Self.manual, fileSystem: probe)
        var model = ReferenceStore()
        for i in 0..<10 {
            try db.write { try $0.put(key(i), [UInt8(i)], in: 0) }
            model.put(key(i), [UInt8(i)], in: 0)
        }
        db.simulateProcessDeath()

        let fault: FaultyFileSystem.Fault = switch kind {
        case .appendENOSPC: .failAppend(at: 6, errno: SystemErrno.noSpace.code)
        case .appendEIO: .failAppend(at: 6, errno: SystemErrno.ioError.code)
        case .syncEIO: .failSync(at: 8, errno: SystemErrno.ioError.code)
        case .syncENOSPC: .failSync(at: 8, errno: SystemErrno.noSpace.code)
        }
        let faulty = FaultyFileSystem(base: memory, faults: [fault])
        db = try Database.open(at: "/db", options: Self.manual, fileSystem: faulty)
        var acknowledged = model
        var failedAt: Int?
        for i in 10..<30 {
            do {
                try db.write { try $0.put(key(i), [UInt8(i)], in: 0) }
                acknowledged.put(key(i), [UInt8(i)], in: 0)
            } catch let e as StorageError {
                if failedAt == nil {
                    failedAt = i
                    #expect(e.message.contains("failed"), "\(e)")
                } else {
                    // Once a log write failed, every later commit is refused with a message saying why.
                    #expect(e.code == .closed)
                    #expect(e.message.contains("refuses further writes"))
                }
            }
        }
        #expect(failedAt != nil, "the fault never fired")
        #expect(faulty.faultsFired == 1)
        // Reads still work and show exactly the acknowledged commits.
        try expectSame(try db.snapshot(), acknowledged, partitions: [0], "after the fault")
        faulty.clearFaults()
        db.simulateProcessDeath()
        memory.simulateCrash()
        let reopened = try Database.open(at: "/db", options: Self.manual, fileSystem: memory)
        let seen = try contents(of: try reopened.snapshot(), partitions: [0])
        // The failed commit itself may or may not have reached the disk; nothing after it was attempted.
        var withFailed = acknowledged
        if let failedAt { withFailed.put(key(failedAt), [UInt8(failedAt)], in: 0) }
        #expect(seen == acknowledged || seen == withFailed)
        try reopened.write { try $0.put(key(99), [99], in: 0) }
        #expect(try reopened.snapshot().get(key(99), in: 0) == [99])
    }

    @Test func aDiskFullDuringFlushOrCompactionKeepsTheDatabaseUsable() throws {
        for failingSync in 1...12 {
            let memory = MemoryFileSystem()
            let faulty = FaultyFileSystem(base: memory)
            var options = Self.manual
            options.durability = .deferred  // so that syncs come from flush and compaction only
            let db = try Database.open(at: "/db", options: options, fileSystem: faulty)
            var model = ReferenceStore()
            for round in 0..<3 {
                try db.write { tx in for i in 0..<200 { try tx.put(key(i), [UInt8(round)], in: 0) } }
                for i in 0..<200 { model.put(key(i), [UInt8(round)], in: 0) }
                try db.flush()
            }
            let faulty2 = FaultyFileSystem(base: memory)
            db.simulateProcessDeath()
            let db2 = try Database.open(at: "/db", options: options, fileSystem: faulty2)
            faulty2.addFault(.failSync(at: faulty2.syncCount + failingSync, errno: SystemErrno.noSpace.code))
            try db2.write { tx in for i in 0..<100 { try tx.put(key(i), [9], in: 0) } }
            for i in 0..<100 { model.put(key(i), [9], in: 0) }
            do {
                try db2.flush()
                try db2.compact()
            } catch let e as StorageError {
                #expect(e.code == .io, "sync \(failingSync): \(e)")
            }
            // Still readable and writable, with everything acknowledged.
            try expectSame(try db2.snapshot(), model, partitions: [0], "sync \(failingSync), after the failure")
            faulty2.clearFaults()
            try db2.write { try $0.put(key(500), [5], in: 0) }
            model.put(key(500), [5], in: 0)
            try db2.flush()
            try db2.compact()
            try expectSame(try db2.snapshot(), model, partitions: [0], "sync \(failingSync), after retrying")
            #expect(db2.checkConsistency() == [], "sync \(failingSync)")
            try db2.close()
            let db3 = try Database.open(at: "/db", options: options, fileSystem: memory)
            try expectSame(try db3.snapshot(), model, partitions: [0], "sync \(failingSync), after reopening")
            try db3.close()
        }
    }
}
