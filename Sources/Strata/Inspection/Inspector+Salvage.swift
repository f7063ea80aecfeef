import Engine
import Foundation

/// What `salvage` copied and what it could not.
package struct SalvageSummary {
    package struct TypeReport {
        package var name: String
        package var copied: Int
        /// Object keys that could not be read, as closed ranges; `nil` bounds are open ends.
        package var lostKeys: [(from: Int64?, through: Int64?)]
        /// Objects left out: a duplicate primary key (an older version of an object came back beside it).
        package var duplicates: Int
    }
    package var types: [TypeReport]
    package var schemaVersion: UInt64
    /// Every loss the engine reported, with its file and offset (indexes included: they are built again).
    package var losses: [String]
    package var notes: [String]
}

extension DatabaseInspector {
    /// Copies every object of the database in `source` that can still be read into a new database in
    /// `destination`, with the same schema and schema version, and reports per type what it copied and
    /// which keys it could not read. The source is only read (it need not open: that is the point).
    /// Indexes are not copied but built again by the first open of the copy that declares them; primary-key
    /// indexes are rebuilt here from the records.
    /// An encrypted source needs its `encryptionKey`; the copy is encrypted with the same key (nothing decrypted
    /// is written to disk).
    package static func salvage(source: String, destination: String, encryptionKey: [UInt8]? = nil) throws -> SalvageSummary {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: source, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw Realm.Error(.fileNotFound, "\(source): no such database directory")
        }
        guard !FileManager.default.fileExists(atPath: destination) else {
            throw Realm.Error(.fileExists, "\(destination) already exists; salvage writes a new database: give a path that does not exist")
        }
        let salvaged: SalvageResult
        do {
            salvaged = try Database.salvage(at: source, encryptionKey: encryptionKey)
        } catch {
            throw Realm.Error(.fileAccess, "\(source) cannot be read: \(error)")
        }
        let metadata = salvaged.partitions[StoredSchema.metadataPartition] ?? []
        guard let schemaBytes = metadata.first(where: { $0.key == StoredSchema.schemaKey })?.value else {
            throw Realm.Error(
                .invalidDatabase,
                "the schema of \(source) could not be read (\(salvaged.losses.map(\.description).joined(separator: "; "))); "
                    + "without it no record can be interpreted, so nothing was copied")
        }
        var schema = try StoredSchema.decode(schemaBytes, file: source)
        // Secondary indexes are built again from the copied records by the next open that declares them.
        for i in schema.types.indices { schema.types[i].indexes = nil }

        var options = Database.Options()
        options.backgroundMaintenance = false
        options.encryptionKey = encryptionKey
        // A new database only this command writes.
        options.sharing = .exclusive
        let db: Database
        do {
            db = try Database.open(at: destination, options: options)
        } catch {
            throw Realm.Error(.fileAccess, "\(destination) cannot be created: \(error)")
        }
        var reports: [TypeReport] = []
        do {
            var tx = try db.beginWrite()
            func flushIfLarge() throws {
                if tx.batchBytes >= 8 << 20 {
                    try tx.commit()
                    tx = try db.beginWrite()
                }
            }
            for (key, value) in metadata where key != StoredSchema.schemaKey {
                try tx.put(key, value, in: StoredSchema.metadataPartition)
            }
            try tx.put(StoredSchema.schemaKey, schema.encoded(), in: StoredSchema.metadataPartition)
            for t in schema.types.sorted(by: { $0.name < $1.name }) {
                var report = TypeReport(name: t.name, copied: 0, lostKeys: [], duplicates: 0)
                let layouts = RecordLayouts(partition: t.partition, in: schema)
                let pk = t.properties.first(where: \.isPrimaryKey)
                var seenKeys = Set<[UInt8]>()
                for (key, value) in salvaged.partitions[t.partition] ?? [] {
                    if let pkPartition = t.primaryKeyPartition, let pk {
                        // The index entry from the record itself; a record that does not decode is lost too.
                        guard let fields = try? value.withUnsafeBytes({ try ObjectRecord.decodeAll($0, layouts: layouts).fields }) else {  // try?: counted as lost below
                            let k = key.withUnsafeBytes { ObjectKey.decode($0) }
                            report.lostKeys.append((k, k))
                            continue
                        }
                        let entry = PrimaryKeyIndex.entry(fields[pk.fieldId] ?? .null)
                        guard seenKeys.insert(entry).inserted else {
                            report.duplicates += 1
                            continue
                        }
                        try tx.put(entry, key, in: pkPartition)
                    }
                    try tx.put(key, value, in: t.partition)
                    report.copied += 1
                    try flushIfLarge()
                }
                for loss in salvaged.losses where loss.partition == t.partition || (loss.partition == nil && loss.firstKey == nil) {
                    let from = loss.firstKey.flatMap { $0.withUnsafeBytes { ObjectKey.decode($0) } }
                    // The range ends just before the next block's first key.
                    let through = loss.endKey.flatMap { $0.withUnsafeBytes { ObjectKey.decode($0) } }.map { $0 - 1 }
                    report.lostKeys.append((from, through))
                }
                reports.append(report)
            }
            try tx.commit()
            try db.close()
        } catch {
            try? db.close()  // try?: the copy failed already; that error is the one to report
            throw Realm.Error(.fileAccess, "writing the salvaged copy to \(destination) failed: \(error)")
        }
        return SalvageSummary(
            types: reports, schemaVersion: schema.schemaVersion, losses: salvaged.losses.map(\.description), notes: salvaged.notes)
    }
}

package typealias TypeReport = SalvageSummary.TypeReport
