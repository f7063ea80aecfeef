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
