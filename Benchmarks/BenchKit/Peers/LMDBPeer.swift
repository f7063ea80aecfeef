import CLMDB
import Foundation

/// LMDB through its C library with default (durable) flags; key = id as 8 bytes big-endian, value = the
/// packed record. Inserts use MDB_APPEND, LMDB's fastest path for keys in order.
public final class LMDBPeer: BenchEngine {
    public let name = "LMDB"
    var env: OpaquePointer?
    var dbi: MDB_dbi = 0
    /// The lastName index (query-indexed only).
    var indexDBI: MDB_dbi = 0
    let mapBytes: Int

    public init(mapBytes: Int = 1 << 36) { self.mapBytes = mapBytes }

    func check(_ rc: Int32, _ what: String) throws {
        guard rc == 0 else { throw BenchFailure("LMDB \(what): \(String(cString: mdb_strerror(rc)))") }
    }

    public func open(in directory: String) throws {
        try check(mdb_env_create(&env), "env_create")
        try check(mdb_env_set_mapsize(env, mapBytes), "set_mapsize")
        // Room for the lastName index of the query-indexed workload (a named database).
        try check(mdb_env_set_maxdbs(env, 2), "set_maxdbs")
        try check(mdb_env_open(env, directory + "/lmdb.mdb", UInt32(MDB_NOSUBDIR), 0o644), "env_open")
        var txn: OpaquePointer?
        try check(mdb_txn_begin(env, nil, 0, &txn), "txn_begin")
        try check(mdb_dbi_open(txn, nil, 0, &dbi), "dbi_open")
        try check(mdb_txn_commit(txn), "txn_commit")
    }

    public func create(in directory: String) throws { try open(in: directory) }

    public func close() throws {
        if let env { mdb_env_close(env) }
        env = nil
    }

    public func insertAll(_ people: [Person]) throws {
        var txn: OpaquePointer?
        try check(mdb_txn_begin(env, nil, 0, &txn), "txn_begin")
        var value: [UInt8] = []
        for p in people {
            PackedPerson.encode(p, into: &value)
            try append(txn, id: p.id, &value)
        }
        try check(mdb_txn_commit(txn), "commit")
    }

    /// Puts `value` under `id` (8 bytes big-endian) with MDB_APPEND (ids in order); aborts `txn` on failure.
    func append(_ txn: OpaquePointer?, id: Int, _ value: inout [UInt8]) throws {
        var k = UInt64(id).bigEndian
        let rc = withUnsafeMutableBytes(of: &k) { kb in
            value.withUnsafeMutableBytes { vb in
                var key = MDB_val(mv_size: kb.count, mv_data: kb.baseAddress)
                var val = MDB_val(mv_size: vb.count, mv_data: vb.baseAddress)
                return mdb_put(txn, dbi, &key, &val, UInt32(MDB_APPEND))
            }
        }
        if rc != 0 {
            mdb_txn_abort(txn)
            try check(rc, "put")
        }
    }

    func withReadTxn<R>(_ body: (OpaquePointer?) throws -> R) throws -> R {
        var txn: OpaquePointer?
        try check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn), "txn_begin")
        defer { mdb_txn_abort(txn) }
        return try body(txn)
    }

    func scan(_ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) -> Void) throws {
        try withReadTxn { txn in
            var cursor: OpaquePointer?
            try check(mdb_cursor_open(txn, dbi, &cursor), "cursor_open")
            defer { mdb_cursor_close(cursor) }
            var key = MDB_val(), val = MDB_val()
            var op = MDB_FIRST
            while mdb_cursor_get(cursor, &key, &val, op) == 0 {
                body(UnsafeRawBufferPointer(start: key.mv_data, count: key.mv_size), UnsafeRawBufferPointer(start: val.mv_data, count: val.mv_size))
                op = MDB_NEXT
            }
        }
    }

    public func sumAges() throws -> Int {
        var sum = 0
        try scan { _, v in sum &+= PackedPerson.age(v) }
        return sum
    }

    public func sumAllFields() throws -> Int {
        var sum = 0
        try scan { k, v in sum &+= PackedPerson.id(k) &+ PackedPerson.allFields(v) }
        return sum
    }

    public func lookupAges(_ ids: [Int]) throws -> Int {
        try withReadTxn { txn in
            var sum = 0
            for id in ids {
                var k = UInt64(id).bigEndian
                let age: Int = withUnsafeMutableBytes(of: &k) { kb in
                    var key = MDB_val(mv_size: kb.count, mv_data: kb.baseAddress)
                    var val = MDB_val()
                    guard mdb_get(txn, dbi, &key, &val) == 0 else { return 0 }
                    return PackedPerson.age(UnsafeRawBufferPointer(start: val.mv_data, count: val.mv_size))
                }
                sum &+= age
            }
            return sum
        }
    }

    public func countAgeOver50() throws -> Int {
        var n = 0
        try scan { _, v in if PackedPerson.age(v) > 50 { n += 1 } }
        return n
    }

    public func countFirstNameAB() throws -> Int {
        var n = 0
        try scan { _, v in if PackedPerson.firstNameStartsAB(v) { n += 1 } }
        return n
    }

    public func readOne(_ id: Int) throws -> Int { try lookupAges([id]) }

    public func sizeOnDisk(in directory: String) throws -> Int {
        DirectorySize.fileBytes(directory + "/lmdb.mdb") + DirectorySize.fileBytes(directory + "/lmdb.mdb-lock")
    }
}

/// LMDB has no schema: each migration rewrites every record in one transaction. Records after v1 start with
/// a version byte: v2 `2 · age u8 · fullNameLength u8 · fullName`, v3 the same with 3 (a rename rewrites
/// the version, as an application keeping versioned records must), v4 `4 · yearsLength u8 · years · fullName...`.
extension LMDBPeer: MigratingBenchEngine {
    /// LMDB compacts by copying: `mdb_env_copy2` with `MDB_CP_COMPACT` writes only the live pages.
    public func compactedSize(in directory: String) throws -> Int {
        try open(in: directory)
        defer { try? close() }
        let copy = directory + "/lmdb-compacted.mdb"
        try? FileManager.default.removeItem(atPath: copy)
        try check(mdb_env_copy2(env, copy, UInt32(MDB_CP_COMPACT)), "env_copy2")
        defer { try? FileManager.default.removeItem(atPath: copy) }
        return DirectorySize.fileBytes(copy)
    }

    /// Rewrites every record through `transform` in one write transaction (the timed part); the returned
    /// function sums `measure` over the records and closes the environment.
    func rewriteAll(_ transform: ([UInt8]) -> [UInt8], measure: @escaping ([UInt8]) -> Int) throws -> () throws -> Int {
        var txn: OpaquePointer?
        try check(mdb_txn_begin(env, nil, 0, &txn), "txn_begin")
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(txn, dbi, &cursor), "cursor_open")
        var key = MDB_val(), val = MDB_val()
        var op = MDB_FIRST
        while mdb_cursor_get(cursor, &key, &val, op) == 0 {
            let old = [UInt8](UnsafeRawBufferPointer(start: val.mv_data, count: val.mv_size))
            var new = transform(old)
            let rc = new.withUnsafeMutableBytes { nb in
                var v = MDB_val(mv_size: nb.count, mv_data: nb.baseAddress)
                return mdb_cursor_put(cursor, &key, &v, UInt32(MDB_CURRENT))
            }
            if rc != 0 {
                mdb_cursor_close(cursor)
                mdb_txn_abort(txn)
                try check(rc, "cursor_put")
            }
            op = MDB_NEXT
        }
        mdb_cursor_close(cursor)
        try check(mdb_txn_commit(txn), "commit")
        return {
            defer { try? self.close() }
            var total = 0
            try self.scan { _, v in total += measure([UInt8](v)) }
            return total
        }
    }

    public func migrateCombine(in directory: String) throws -> () throws -> Int {
        try open(in: directory)
        return try rewriteAll({ v in
            let first = Int(v[1]), last = Int(v[2 + first])
            let full = Array(v[2..<(2 + first)]) + [32] + Array(v[(3 + first)..<(3 + first + last)])
            return [2, v[0], UInt8(full.count)] + full
        }, measure: { Int($0[2]) })
    }

    public func migrateRename(in directory: String) throws -> () throws -> Int {
        try open(in: directory)
        return try rewriteAll({ v in [3] + v.dropFirst() }, measure: { Int($0[1]) })
    }

    public func migrateRetype(in directory: String) throws -> () throws -> Int {
        try open(in: directory)
        return try rewriteAll({ v in
            let years = Array(String(v[1]).utf8)
            return [4, UInt8(years.count)] + years + v[2...]
        }, measure: { Int($0[1]) })
    }
}

extension LMDBPeer: IndexingBenchEngine {
    public func addLastNameIndex(in directory: String, from original: String) throws -> Double {
        try copyDatabase(from: original, to: directory)
        let start = now()
        try open(in: directory)
        // The main database is read first: once the named database exists, the main one holds its name.
        var entries: [[UInt8]] = []
        try scan { k, v in
            guard v.count >= 3 else { return }
            let first = Int(v[1])
            guard v.count > 2 + first else { return }
            let last = Int(v[2 + first])
            guard v.count >= 3 + first + last else { return }
            entries.append(Array(v[(3 + first)..<(3 + first + last)]) + Array(k))
        }
        entries.sort { $0.lexicographicallyPrecedes($1) }
        var txn: OpaquePointer?
        try check(mdb_txn_begin(env, nil, 0, &txn), "txn_begin")
        do {
            try check(mdb_dbi_open(txn, "lastName", UInt32(MDB_CREATE), &indexDBI), "dbi_open lastName")
            for var e in entries {
                let rc = e.withUnsafeMutableBytes { kb in
                    var key = MDB_val(mv_size: kb.count, mv_data: kb.baseAddress)
                    var val = MDB_val(mv_size: 0, mv_data: nil)
                    return mdb_put(txn, indexDBI, &key, &val, UInt32(MDB_APPEND))
                }
                try check(rc, "put index")
            }
            try check(mdb_txn_commit(txn), "commit")
        } catch {
            mdb_txn_abort(txn)
            throw error
        }
        return now() - start
    }

    public func queryAgesByLastName(_ names: [[UInt8]]) throws -> Int {
        try withReadTxn { txn in
            var cursor: OpaquePointer?
            try check(mdb_cursor_open(txn, indexDBI, &cursor), "cursor_open")
            defer { mdb_cursor_close(cursor) }
            var sum = 0
            for var name in names {
                let count = name.count
                name.withUnsafeMutableBytes { nb in
                    var key = MDB_val(mv_size: nb.count, mv_data: nb.baseAddress)
                    var val = MDB_val()
                    var op = MDB_SET_RANGE
                    while mdb_cursor_get(cursor, &key, &val, op) == 0 {
                        op = MDB_NEXT
                        let k = UnsafeRawBufferPointer(start: key.mv_data, count: key.mv_size)
                        guard k.count == count + 8, let kp = k.baseAddress, let np = nb.baseAddress, memcmp(kp, np, count) == 0 else { break }
                        var idKey = MDB_val(mv_size: 8, mv_data: UnsafeMutableRawPointer(mutating: kp + count))
                        var record = MDB_val()
                        if mdb_get(txn, dbi, &idKey, &record) == 0 {
                            sum &+= PackedPerson.age(UnsafeRawBufferPointer(start: record.mv_data, count: record.mv_size))
                        }
                    }
                }
            }
            return sum
        }
    }

    /// Calls `body` with a cursor over every record in one write transaction, committed after.
    func withWriteCursor(_ body: (OpaquePointer?) throws -> Int) throws -> Int {
        var txn: OpaquePointer?
        try check(mdb_txn_begin(env, nil, 0, &txn), "txn_begin")
        var cursor: OpaquePointer?
        do {
            try check(mdb_cursor_open(txn, dbi, &cursor), "cursor_open")
            let n = try body(cursor)
            mdb_cursor_close(cursor)
            try check(mdb_txn_commit(txn), "commit")
            return n
        } catch {
            mdb_txn_abort(txn)
            throw error
        }
    }

    public func updateAllAges() throws -> Int {
        try withWriteCursor { cursor in
            var key = MDB_val(), val = MDB_val()
            var op = MDB_FIRST
            var n = 0
            var value: [UInt8] = []
            while mdb_cursor_get(cursor, &key, &val, op) == 0 {
                value.removeAll(keepingCapacity: true)
                value.append(contentsOf: UnsafeRawBufferPointer(start: val.mv_data, count: val.mv_size))
                value[0] &+= 1
                try value.withUnsafeMutableBytes { vb in
                    var v = MDB_val(mv_size: vb.count, mv_data: vb.baseAddress)
                    try check(mdb_cursor_put(cursor, &key, &v, UInt32(MDB_CURRENT)), "cursor_put")
                }
                n += 1
                op = MDB_NEXT
            }
            return n
        }
    }

    public func deleteHalf() throws -> Int {
        try withWriteCursor { cursor in
            var key = MDB_val(), val = MDB_val()
            var op = MDB_FIRST
            var n = 0
            while mdb_cursor_get(cursor, &key, &val, op) == 0 {
                op = MDB_NEXT
                if PackedPerson.id(UnsafeRawBufferPointer(start: key.mv_data, count: key.mv_size)) % 2 == 0 {
                    try check(mdb_cursor_del(cursor, 0), "cursor_del")
                    n += 1
                    // The cursor now stands on the next record.
                    op = MDB_GET_CURRENT
                }
            }
            return n
        }
    }
}
