// A child process for the SIGKILL tests: commits in a loop and reports each commit on stdout once
// `commit()` has returned. The parent kills it at a random moment and checks that every reported commit is
// in the database after reopening.
//
// Usage: EngineCrashChild PATH [maintenance [encrypted]] | EngineCrashChild PATH session N
// With `session N` (ShortSessionTests), the child opens the database, commits keys N*100 ..< N*100+100 in one
// transaction and exits at once, without closing: a widget or extension's short life.
// With `encrypted`, the database is encrypted with `crashChildKey`.
// With `maintenance`, the child also flushes every 10 commits and compacts every 25, so that kills land
// inside flushes and compactions too; it prints "flushing N" and "compacting N" as each starts.
// Each commit i puts key i (8 bytes, big-endian) with value(i) in partition 0 and sets key "last" in
// partition 1 to i, in one transaction.

import Engine
import TestSupport

func key(_ i: UInt64) -> [UInt8] { withUnsafeBytes(of: i.bigEndian) { Array($0) } }

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    FileHandleWriter.error("usage: EngineCrashChild PATH [maintenance]\n")
    SystemProcess.exit(2)
}

/// Unbuffered: a line is the parent's the moment it is written, however soon the kill comes.
enum FileHandleWriter {
    static func out(_ s: String) { SystemProcess.writeStandardOutput(s) }
    static func error(_ s: String) { SystemProcess.writeStandardError(s) }
}

if arguments.count == 4, arguments[2] == "session", let n = Int(arguments[3]) {
    do {
        let db = try Database.open(at: arguments[1])
        try db.write { tx in
            for i in 0..<100 { try tx.put(key(UInt64(n * 100 + i)), crashChildValue(UInt64(n * 100 + i)), in: 1) }
        }
        FileHandleWriter.out("committed \(n)\n")
        SystemProcess.exit(0)
    } catch {
        FileHandleWriter.error("EngineCrashChild: \(error)\n")
        SystemProcess.exit(1)
    }
}

// EngineCrashChild PATH shared ID MODE [COUNT] (SharedProcessTests): one of several processes writing one
// shared database. Each commit i of process ID puts key (ID << 32 | i) with crashChildValue(i) in partition 0,
// increments the counter "total" in partition 1 and sets "last-ID" in partition 2 to i, in one transaction;
// every 16 commits the process refreshes and checks that "total" equals the number of keys in partition 0 and
// that each of its own keys is there (printing "INVARIANT" and exiting 3 otherwise). MODE: `commits`; `flush`
// and `compaction` (a flush every 10 commits, a compaction every 25, each announced first); `reopen` (closes
// and opens again every 20 commits, announcing "opening"); `encrypted` (`flush`, encrypted); `spill` (every 15th
// transaction spills its batch to segments before it commits, announced "spilling"); `background` (`commits`,
// announcing each background flush once planned, before it builds, "background-flushing"). With COUNT, the
// process stops after that many commits in this life, closes and exits 0.
if arguments.count >= 5, arguments[2] == "shared", let id = UInt64(arguments[3]) {
    let mode = arguments[4]
    let count = arguments.count >= 6 ? Int(arguments[5]) : nil
    var options = Database.Options()
    options.sharing = .shared
    options.memtableFlushBytes = 32 * 1024
    options.compactionSegmentTrigger = 3
    if mode == "encrypted" { options.encryptionKey = crashChildKey }
    if mode == "background" { options.flushBuildHook = { FileHandleWriter.out("background-flushing\n") } }
    let lastKey = Array("last-\(id)".utf8)
    let totalKey = Array("total".utf8)
    func number(_ bytes: [UInt8]?) -> UInt64? { bytes.map { $0.reduce(0) { $0 << 8 | UInt64($1) } } }
    func check(_ db: Database, next: UInt64) throws {
        try db.refresh()
        let snapshot = try db.snapshot()
        defer { snapshot.close() }
        var keys: UInt64 = 0
        var own: UInt64 = 0
        try snapshot.scan(0) { k, v in
            keys += 1
            let value = k.reduce(0) { $0 << 8 | UInt64($1) }
            if value >> 32 == id {
                if [UInt8](v) != crashChildValue(value & 0xFFFF_FFFF) { own = .max }
                own += own == .max ? 0 : 1
            }
            return true
        }
        let total = number(try snapshot.get(totalKey, in: 1)) ?? 0
        if total != keys || own != next {
            FileHandleWriter.out("INVARIANT total \(total) keys \(keys) own \(own) expected \(next)\n")
            SystemProcess.exit(3)
        }
    }
    do {
        FileHandleWriter.out("opening\n")
        var db = try Database.open(at: arguments[1], options: options)
        var next = (number(try db.snapshot().get(lastKey, in: 2)) ?? UInt64.max) &+ 1
        FileHandleWriter.out("start \(next)\n")
        var done = 0
        while count.map({ done < $0 }) ?? true {
            let spills = mode == "spill" && next % 15 == 14
            if spills { FileHandleWriter.out("spilling \(next)\n") }
            try db.write { tx in
                let total = number(try tx.snapshot.get(totalKey, in: 1)) ?? 0
                try tx.put(key(id << 32 | next), crashChildValue(next), in: 0)
                if spills { try tx.spill() }
                try tx.put(totalKey, key(total + 1), in: 1)
                try tx.put(lastKey, key(next), in: 2)
            }
            FileHandleWriter.out("committed \(next)\n")
            next += 1
            done += 1
            if next % 16 == 0 { try check(db, next: next) }
            if mode != "commits" && mode != "reopen" && mode != "background" && next % 10 == 9 {
                FileHandleWriter.out("flushing \(next)\n")
                try db.flush()
            }
            if (mode == "compaction" || mode == "encrypted") && next % 25 == 24 {
                FileHandleWriter.out("compacting \(next)\n")
                try db.compact()
            }
            if mode == "reopen" && next % 20 == 19 {
                FileHandleWriter.out("closing \(next)\n")
                try db.close()
                FileHandleWriter.out("opening\n")
                db = try Database.open(at: arguments[1], options: options)
            }
        }
        try check(db, next: next)
        try db.close()
        FileHandleWriter.out("closed\n")
        SystemProcess.exit(0)
    } catch {
        FileHandleWriter.out("ERROR \(error)\n")
        FileHandleWriter.error("EngineCrashChild: \(error)\n")
        SystemProcess.exit(1)
    }
}

do {
    var options = Database.Options()
    options.memtableFlushBytes = 64 * 1024
    options.compactionSegmentTrigger = 3
    let maintenance = arguments.count >= 3 && arguments[2] == "maintenance"
    if arguments.count >= 4 && arguments[3] == "encrypted" { options.encryptionKey = crashChildKey }
    let db = try Database.open(at: arguments[1], options: options)
    let lastKey = Array("last".utf8)
    var next: UInt64 = 0
    if let last = try db.snapshot().get(lastKey, in: 1) {
        next = last.reduce(0) { $0 << 8 | UInt64($1) } + 1
    }
    FileHandleWriter.out("start \(next)\n")
    while true {
        try db.write { tx in
            try tx.put(key(next), crashChildValue(next), in: 0)
            try tx.put(lastKey, key(next), in: 1)
        }
        FileHandleWriter.out("committed \(next)\n")
        // Announced before they start, so that the parent can aim its kill inside them.
        if maintenance && next % 10 == 9 {
            FileHandleWriter.out("flushing \(next)\n")
            try db.flush()
        }
        if maintenance && next % 25 == 24 {
            FileHandleWriter.out("compacting \(next)\n")
            try db.compact()
        }
        next += 1
    }
} catch {
    FileHandleWriter.error("EngineCrashChild: \(error)\n")
    SystemProcess.exit(1)
}
