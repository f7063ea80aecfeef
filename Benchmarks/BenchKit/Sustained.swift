import CLMDB
import CSQLite
import Foundation
import Strata
import TestSupport

// The sustained workload (issue 26): objects of about 250 bytes (a string of 150-250 random characters and
// three integers) inserted in durable transactions of 10,000, the database closed and opened again every 100
// transactions, then random lookups by primary key. It measures what an app writing for a long time sees:
// the insert rate as the data grows, the bytes written per byte of values (write amplification, from
// /proc/self/io), and lookups over the result.

/// One record of the sustained workload.
public struct SustainedRecord: Sendable {
    public var id: Int
    public var text: [UInt8]
    public var a: Int
    public var b: Int
    public var c: Int

    /// Bytes of values: the text and three 8-byte integers.
    public var valueBytes: Int { text.count + 24 }

    /// Record `id` of the deterministic sequence (generated, never held all at once).
    public static func make(_ id: Int) -> SustainedRecord {
        var rng = SplitMix64(seed: UInt64(id) &* 0x9E37_79B9_7F4A_7C15 &+ 17)
        let length = 150 + Int(rng.next() % 101)
        var text = [UInt8](repeating: 0, count: length)
        for i in 0..<length { text[i] = 97 + UInt8(rng.next() % 26) }
        return SustainedRecord(id: id, text: text, a: Int(rng.next() % 1_000_000), b: Int(rng.next() % 1000), c: id)
    }
}

/// An engine that runs the sustained workload.
public protocol SustainedBenchEngine: AnyObject {
    var name: String { get }
    func sustainedOpen(in directory: String) throws
    /// One durable transaction of `records`.
    func sustainedInsert(_ records: [SustainedRecord]) throws
    func sustainedClose() throws
    /// The sum of `a` of the records with these ids.
    func sustainedLookup(_ ids: [Int]) throws -> Int
}

/// Bytes this process has caused to be written to storage so far (`write_bytes` of /proc/self/io).
func processWriteBytes() -> Int? {
    guard let text = try? String(contentsOfFile: "/proc/self/io", encoding: .utf8) else { return nil }  // try?: no /proc: the row is left out
    for line in text.split(separator: "\n") where line.hasPrefix("write_bytes:") {
        return Int(line.dropFirst("write_bytes:".count).trimmingCharacters(in: .whitespaces))
    }
    return nil
}

/// Strata: a model with an Int primary key.
public final class SustainedItem: Object {
    @Persisted(primaryKey: true) public var id: Int
    @Persisted public var text = ""
    @Persisted public var a = 0
    @Persisted public var b = 0
    @Persisted public var c = 0
}

extension StrataObjectPeer: SustainedBenchEngine {
    public func sustainedOpen(in directory: String) throws {
        let config = Realm.Configuration(fileURL: URL(fileURLWithPath: directory + "/sustained.realm"), objectTypes: [SustainedItem.self])
        realm = try Realm(configuration: config)
    }

    public func sustainedInsert(_ records: [SustainedRecord]) throws {
        let realm = try open()
        try realm.write {
            for r in records {
                let o = SustainedItem()
                o.id = r.id
                o.text = String(decoding: r.text, as: UTF8.self)
                o.a = r.a
                o.b = r.b
                o.c = r.c
                realm.add(o)
            }
        }
    }

    public func sustainedClose() throws { realm = nil }

    public func sustainedLookup(_ ids: [Int]) throws -> Int {
        let realm = try open()
        var sum = 0
        for id in ids { sum &+= realm.object(ofType: SustainedItem.self, forPrimaryKey: id)?.a ?? 0 }
        return sum
    }
}

extension SQLitePeer: SustainedBenchEngine {
    public func sustainedOpen(in directory: String) throws {
        try check(sqlite3_open_v2(directory + "/sustained.db", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil), "open")
        try exec("PRAGMA journal_mode=WAL")
        try exec("PRAGMA synchronous=NORMAL")
        try exec("CREATE TABLE IF NOT EXISTS item(id INTEGER PRIMARY KEY, text TEXT NOT NULL, a INTEGER NOT NULL, b INTEGER NOT NULL, c INTEGER NOT NULL)")
    }

    public func sustainedInsert(_ records: [SustainedRecord]) throws {
        try exec("BEGIN")
        let stmt = try prepare("INSERT INTO item(id, text, a, b, c) VALUES (?, ?, ?, ?, ?)")
        defer { sqlite3_finalize(stmt) }
        for r in records {
            sqlite3_bind_int64(stmt, 1, Int64(r.id))
            r.text.withUnsafeBytes { _ = sqlite3_bind_text(stmt, 2, $0.baseAddress, Int32($0.count), nil) }
            sqlite3_bind_int64(stmt, 3, Int64(r.a))
            sqlite3_bind_int64(stmt, 4, Int64(r.b))
            sqlite3_bind_int64(stmt, 5, Int64(r.c))
            try check(sqlite3_step(stmt), "insert")
            sqlite3_reset(stmt)
        }
        try exec("COMMIT")
    }

    public func sustainedClose() throws { try close() }

    public func sustainedLookup(_ ids: [Int]) throws -> Int {
        let stmt = try prepare("SELECT a FROM item WHERE id = ?")
        defer { sqlite3_finalize(stmt) }
        var sum = 0
        for id in ids {
            sqlite3_bind_int64(stmt, 1, Int64(id))
            if sqlite3_step(stmt) == SQLITE_ROW { sum &+= Int(sqlite3_column_int64(stmt, 0)) }
            sqlite3_reset(stmt)
        }
        return sum
    }
}

extension LMDBPeer: SustainedBenchEngine {
    public func sustainedOpen(in directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory + "/sustained-lmdb", withIntermediateDirectories: true)
        try open(in: directory + "/sustained-lmdb")
    }

    public func sustainedInsert(_ records: [SustainedRecord]) throws {
        var txn: OpaquePointer?
        try check(mdb_txn_begin(env, nil, 0, &txn), "txn_begin")
        var value: [UInt8] = []
        for r in records {
            value.removeAll(keepingCapacity: true)
            for v in [r.a, r.b, r.c] { withUnsafeBytes(of: UInt64(v).littleEndian) { value.append(contentsOf: $0) } }
            value.append(contentsOf: r.text)
            try append(txn, id: r.id, &value)
        }
        try check(mdb_txn_commit(txn), "commit")
    }

    public func sustainedClose() throws { try close() }

    public func sustainedLookup(_ ids: [Int]) throws -> Int {
        try withReadTxn { txn in
            var sum = 0
            for id in ids {
                var k = UInt64(id).bigEndian
                sum &+= withUnsafeMutableBytes(of: &k) { kb -> Int in
                    var key = MDB_val(mv_size: kb.count, mv_data: kb.baseAddress)
                    var val = MDB_val()
                    guard mdb_get(txn, dbi, &key, &val) == 0, val.mv_size >= 8 else { return 0 }
                    return Int(UInt64(littleEndian: UnsafeRawBufferPointer(start: val.mv_data, count: 8).loadUnaligned(as: UInt64.self)))
                }
            }
            return sum
        }
    }
}

/// What one engine's sustained run measured.
struct SustainedFigures {
    var insertRate: Double
    var lastOverFirst: Double
    var writeAmplification: Double?
    var lookupRate: Double
    var lookupSum: Int
}

extension Runner {
    /// Runs the sustained workload on `engine` in `directory`: `total` records in transactions of 10,000,
    /// reopened every 100 transactions, then `lookups` random lookups.
    func sustained(_ engine: any SustainedBenchEngine, in directory: String, total: Int, lookups: Int) throws -> SustainedFigures {
        let batch = 10_000
        let batches = max(1, total / batch)
        var seconds: [Double] = []
        var valueBytes = 0
        let writtenBefore = processWriteBytes()
        try engine.sustainedOpen(in: directory)
        for i in 0..<batches {
            let records = (i * batch..<(i + 1) * batch).map(SustainedRecord.make)
            valueBytes += records.reduce(0) { $0 + $1.valueBytes }
            let t = now()
            try engine.sustainedInsert(records)
            if (i + 1) % 100 == 0 {
                try engine.sustainedClose()
                try engine.sustainedOpen(in: directory)
            }
            seconds.append(now() - t)
            if i % 10 == 0 { progress("\(engine.name): sustained \(i * batch / 1000)k of \(batches * batch / 1000)k") }
        }
        try engine.sustainedClose()
        let writtenAfter = processWriteBytes()
        let written: Int? = if let writtenAfter, let writtenBefore { writtenAfter - writtenBefore } else { nil }
        let tenth = max(1, batches / 10)
        let first = Double(tenth * batch) / seconds.prefix(tenth).reduce(0, +)
        let last = Double(tenth * batch) / seconds.suffix(tenth).reduce(0, +)
        try engine.sustainedOpen(in: directory)
        var rng = SplitMix64(seed: 99)
        let ids = (0..<lookups).map { _ in Int(rng.next() % UInt64(batches * batch)) }
        let t = now()
        let sum = try engine.sustainedLookup(ids)
        let lookupSeconds = now() - t
        try engine.sustainedClose()
        return SustainedFigures(
            insertRate: Double(batches * batch) / seconds.reduce(0, +), lastOverFirst: last / first,
            writeAmplification: written.map { Double($0) / Double(valueBytes) }, lookupRate: Double(lookups) / lookupSeconds, lookupSum: sum)
    }
}
