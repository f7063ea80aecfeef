import CRocksDB
import Foundation

/// RocksDB 7 through its C API, the reference LSM engine of the sustained workload: leveled compaction
/// (its default), LZ4, a 64 MiB memtable, every write batch synced. Key = id as 8 bytes big-endian, value =
/// a, b, c (u64 little-endian) and the text.
public final class RocksDBPeer: SustainedBenchEngine {
    public let name = "RocksDB"
    var db: OpaquePointer?
    var options: OpaquePointer?
    let writeOptions: OpaquePointer? = rocksdb_writeoptions_create()
    let readOptions: OpaquePointer? = rocksdb_readoptions_create()

    public init() { rocksdb_writeoptions_set_sync(writeOptions, 1) }

    deinit {
        if let db { rocksdb_close(db) }
        if let options { rocksdb_options_destroy(options) }
        rocksdb_writeoptions_destroy(writeOptions)
        rocksdb_readoptions_destroy(readOptions)
    }

    func check(_ error: UnsafeMutablePointer<CChar>?, _ what: String) throws {
        guard let error else { return }
        let message = String(cString: error)
        rocksdb_free(error)
        throw BenchFailure("RocksDB \(what): \(message)")
    }

    public func sustainedOpen(in directory: String) throws {
        if options == nil {
            options = rocksdb_options_create()
            rocksdb_options_set_create_if_missing(options, 1)
            rocksdb_options_set_compression(options, Int32(rocksdb_lz4_compression))
            rocksdb_options_set_write_buffer_size(options, 64 << 20)
        }
        var error: UnsafeMutablePointer<CChar>?
        db = rocksdb_open(options, directory + "/rocksdb", &error)
        try check(error, "open")
    }

    public func sustainedInsert(_ records: [SustainedRecord]) throws {
        let batch = rocksdb_writebatch_create()
        defer { rocksdb_writebatch_destroy(batch) }
        var value: [UInt8] = []
        for r in records {
            value.removeAll(keepingCapacity: true)
            for v in [r.a, r.b, r.c] { withUnsafeBytes(of: UInt64(v).littleEndian) { value.append(contentsOf: $0) } }
            value.append(contentsOf: r.text)
            withUnsafeBytes(of: UInt64(r.id).bigEndian) { k in
                value.withUnsafeBytes { v in
                    rocksdb_writebatch_put(
                        batch, k.baseAddress!.assumingMemoryBound(to: CChar.self), k.count, v.baseAddress!.assumingMemoryBound(to: CChar.self), v.count)
                }
            }
        }
        var error: UnsafeMutablePointer<CChar>?
        rocksdb_write(db, writeOptions, batch, &error)
        try check(error, "write")
    }

    public func sustainedClose() throws {
        if let db { rocksdb_close(db) }
        db = nil
    }

    public func sustainedLookup(_ ids: [Int]) throws -> Int {
        var sum = 0
        for id in ids {
            var error: UnsafeMutablePointer<CChar>?
            var length = 0
            let value = withUnsafeBytes(of: UInt64(id).bigEndian) { k in
                rocksdb_get(db, readOptions, k.baseAddress!.assumingMemoryBound(to: CChar.self), k.count, &length, &error)
            }
            try check(error, "get")
            if let value {
                if length >= 8 { sum &+= Int(UInt64(littleEndian: UnsafeRawPointer(value).loadUnaligned(as: UInt64.self))) }
                rocksdb_free(value)
            }
        }
        return sum
    }
}
