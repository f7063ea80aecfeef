import Engine
import Foundation

// Invariants:
// (1) The inspector reads a database through its stored schema alone, never through model classes, and never
//     writes except in `compact` (opened for writing, holding the lock).
// (2) A read-only inspection may run beside the process that holds the database: it reads what the files hold
//     when it opens, and says so (`isBesideWriter`).

/// Reads a database without its models, for the `strata` tool: its summary, schema history, objects and a
/// check of every byte.
package final class DatabaseInspector {
    package let path: String
    let database: Database
    let schema: StoredSchema?
    package var isBesideWriter: Bool { database.isBesideWriter }

    /// Opens the database in `path` (a Realm's `fileURL`, a directory). Read-only unless `forWriting`; read-only,
    /// it opens beside a process that has the database open. `encryptionKey`: an encrypted database's 64-byte key.
    package init(path: String, forWriting: Bool = false, encryptionKey: [UInt8]? = nil) throws {
        self.path = path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw Realm.Error(.fileNotFound, "\(path): no such file or directory")
        }
        guard isDirectory.boolValue, FileManager.default.fileExists(atPath: path + "/CURRENT") else {
            throw Realm.Error(.invalidDatabase, "\(path): not a Strata database (a database is a directory with a CURRENT file)")
        }
        var options = Database.Options()
        options.createIfMissing = false
        options.readOnly = !forWriting
        options.readBesideWriter = !forWriting
        options.backgroundMaintenance = false
        options.encryptionKey = encryptionKey
        // A writing command joins the processes that share the file (an app, its extensions): its work is write
        // transactions and compactions under the writer lock, as theirs is.
        // A reading command takes LOCK when it can and reads lock-free beside a process that holds it or shares
        // the file (`readBesideWriter`), and so knows whether anything else has the file open.
        options.sharing = forWriting ? .shared : .exclusive
        var attempt = 0
        while true {
            do {
                database = try Database.open(at: path, options: options)
                break
            } catch let e as StorageError where e.code == .locked {
                throw Realm.Error(
                    .alreadyOpen, "\(path) is open exclusively in another process (Realm.Configuration.processSharing = .exclusive); this command changes the database: close that process, or open the file there with processSharing .shared, and run it again")
            } catch let e as StorageError {
                // Beside a writer, a file can go between listing and reading it: try again a few times.
                attempt += 1
                if !forWriting && attempt < 3 && e.code != .corrupted && e.code != .decryptionFailed { continue }
                throw Realm.Error(e.code == .corrupted ? .invalidDatabase : .fileAccess, "\(e)", underlying: e)
            }
        }
        do {
            schema = try database.snapshot().get(StoredSchema.schemaKey, in: StoredSchema.metadataPartition)
                .map { try StoredSchema.decode($0, file: path) }
            schemaError = nil
        } catch {
            // `verify` still checks every block and reports this; the other commands need the schema.
            schema = nil
            schemaError = Realm.Error(.invalidDatabase, "the schema of \(path) cannot be read: \(error)")
        }
    }

    /// Why the stored schema could not be read, when it could not.
    let schemaError: Realm.Error?

    /// Throws when the schema could not be read.
    func requireSchema() throws {
        if let schemaError { throw schemaError }
    }

    package func close() throws { try database.close() }

    // MARK: Summary

    package struct TypeSummary {
        package var name: String
        package var isEmbedded: Bool
        package var properties: [String]
        package var objects: Int
        package var segments: Int
        /// Bytes of the type's segments on disk (compressed).
        package var segmentBytes: Int
        /// Bytes of its keys and values uncompressed.
        package var rawBytes: Int
        /// Bytes still in the memtable (in the log, not yet in a segment).
        package var memtableBytes: Int
        /// Online migrations under way: the version objects come from, and how many are left.
        package var pending: [(fromVersion: UInt64, objectsLeft: Int)]
    }

    package struct Summary {
        package var formatVersion: Int
        package var schemaVersion: UInt64?
        package var types: [TypeSummary]
        package var logBytes: Int
        package var sequence: UInt64
        package var liveSnapshots: Int
    }

    package func summary() throws -> Summary {
        try requireSchema()
        let stats = database.statistics()
        let partitions = database.partitionStatistics()
        let snapshot = try database.snapshot()
        var types: [TypeSummary] = []
        for t in schema?.types ?? [] {
            let pending = schema?.pending(for: t.name) ?? []
            var left = Array(repeating: 0, count: pending.count)
            var objects = 0, raw = 0
            try snapshot.scan(t.partition) { k, v in
                objects += 1
                raw += k.count + v.count
                if !pending.isEmpty, case let version = try ObjectRecord.schemaVersion(v),
                    let i = pending.firstIndex(where: { version <= $0.fromVersion })
                {
                    left[i] += 1
                }
                return true
            }
            let p = partitions[t.partition]
            types.append(
                TypeSummary(
                    name: t.name, isEmbedded: t.isEmbedded ?? false, properties: t.properties.map(Self.describe), objects: objects,
                    segments: p?.segments ?? 0, segmentBytes: p?.segmentBytes ?? 0, rawBytes: raw, memtableBytes: p?.memtableBytes ?? 0,
                    pending: zip(pending, left).map { ($0.fromVersion, $1) }))
        }
        return Summary(
            formatVersion: schema?.formatVersion ?? 1, schemaVersion: schema?.schemaVersion, types: types, logBytes: database.logBytes(),
            sequence: stats.sequence, liveSnapshots: stats.liveSnapshots)
    }

    /// A property as a line: `name: Type`, with its collection, optionality and role.
    static func describe(_ p: StoredSchema.StoredProperty) -> String {
        var type = p.type == .object ? (p.objectClassName ?? "Object") : p.type.description
        let elementMark = (p.hasOptionalElements ?? false) && p.type != .any ? "?" : ""
        if p.isMap ?? false {
            type = "Map<String, \(type)\(elementMark)>"
        } else if p.isSet ?? false {
            type = "MutableSet<\(type)\(elementMark)>"
        } else if p.isList ?? false {
            type = "List<\(type)\(elementMark)>"
        } else if p.isOptional || p.type == .object {
            type += "?"
        }
        var line = "\(p.name): \(type)"
        if p.isPrimaryKey { line += " (primary key)" }
        if p.isIndexed { line += " (indexed)" }
        return line
    }

    // MARK: Schema history

    package struct SchemaVersion {
        package var version: UInt64
        package var types: [(name: String, isEmbedded: Bool, properties: [String])]
        /// What changed from the version before (empty for the first one recorded).
        package var changes: [String]
    }

    /// Every schema version the file recorded, oldest first, each with what changed from the one before.
    /// Files written before the history was kept start at their current version.
    package func schemaHistory() throws -> [SchemaVersion] {
        try requireSchema()
        guard let schema else { return [] }
        let versions = schema.historyIncludingSelf
        var out: [SchemaVersion] = []
        for (i, v) in versions.enumerated() {
            out.append(
                SchemaVersion(
                    version: v.schemaVersion,
                    types: v.types.map { ($0.name, $0.isEmbedded ?? false, $0.properties.map(Self.describe)) },
                    changes: i == 0 ? [] : Self.changes(from: versions[i - 1].types, to: v.types)))
        }
        return out
    }

    /// What changed between two versions' types, by the properties' stable field ids.
    static func changes(from old: [StoredSchema.StoredType], to new: [StoredSchema.StoredType]) -> [String] {
        var out: [String] = []
        for t in new where !old.contains(where: { $0.name == t.name }) { out.append("type \(t.name) added") }
        for t in old where !new.contains(where: { $0.name == t.name }) { out.append("type \(t.name) removed from the schema (its objects are kept)") }
        for t in new {
            guard let o = old.first(where: { $0.name == t.name }) else { continue }
            if (o.isEmbedded ?? false) != (t.isEmbedded ?? false) {
                out.append("\(t.name) made \((t.isEmbedded ?? false) ? "embedded" : "top-level")")
            }
            for p in t.properties {
                guard var q = o.properties.first(where: { $0.fieldId == p.fieldId }) else {
                    out.append("\(t.name).\(p.name) added (\(describe(p)))")
                    continue
                }
                // A version recorded before element optionality was is not a change of it.
                if q.hasOptionalElements == nil { q.hasOptionalElements = p.hasOptionalElements }
                if q.name != p.name { out.append("\(t.name).\(q.name) renamed to \(p.name)") }
                if describe(q).replacingOccurrences(of: q.name + ":", with: "") != describe(p).replacingOccurrences(of: p.name + ":", with: "") {
                    out.append("\(t.name).\(p.name) changed from \(describe(q)) to \(describe(p))")
                }
            }
            for q in o.properties where !t.properties.contains(where: { $0.fieldId == q.fieldId }) {
                out.append("\(t.name).\(q.name) removed")
            }
        }
        return out
    }

    // MARK: Objects

    package var typeNames: [String] { schema?.types.map(\.name) ?? [] }

    /// Up to `limit` objects of `typeName` in key order: the property names, then per object its key and the
    /// values (nil where the record has no such field: the model's default).
    package func objects(ofType typeName: String, limit: Int?) throws -> (properties: [String], rows: [(key: Int64, values: [DumpValue?])]) {
        try requireSchema()
        guard let t = schema?.type(named: typeName) else {
            throw Realm.Error(
                .fail, "\(path) has no type '\(typeName)'; its types are: \(typeNames.isEmpty ? "none" : typeNames.joined(separator: ", "))")
        }
        let snapshot = try database.snapshot()
        var rows: [(key: Int64, values: [DumpValue?])] = []
        let layouts = RecordLayouts(partition: t.partition, in: schema)
        try snapshot.scan(t.partition) { k, v in
            if let limit, rows.count >= limit { return false }
            guard let key = ObjectKey.decode(k) else { return true }
            let record = try ObjectRecord.decodeAll(v, layouts: layouts)
            rows.append((key, t.properties.map { p in record.fields[p.fieldId].map { render($0, p, snapshot) } }))
            return true
        }
        return (t.properties.map(\.name), rows)
    }

    /// A value as the tool shows it.
    package indirect enum DumpValue {
        case null
        case bool(Bool)
        case int(Int64)
        case double(Double)
        case string(String)
        /// Another object: its type and primary key or object key (`Dog("rex")`, `Dog#3`).
        case link(String)
        case list([DumpValue])
        case map([(String, DumpValue)])
    }

    private func render(_ v: StoredValue, _ p: StoredSchema.StoredProperty, _ snapshot: Snapshot) -> DumpValue {
        if p.isMap ?? false, case .list(let items) = v { return renderMap(items, p, snapshot) }
        return render(v, p, snapshot, element: false)
    }

    /// Keys and values alternating (a Map property, or a dictionary nested in an AnyRealmValue).
    private func renderMap(_ items: [StoredValue], _ p: StoredSchema.StoredProperty, _ snapshot: Snapshot) -> DumpValue {
        var pairs: [(String, DumpValue)] = []
        var i = 0
        while i + 1 < items.count {
            if case .string(let k) = items[i] { pairs.append((k, render(items[i + 1], p, snapshot, element: true))) }
            i += 2
        }
        return .map(pairs)
    }

    private func render(_ v: StoredValue, _ p: StoredSchema.StoredProperty, _ snapshot: Snapshot, element: Bool) -> DumpValue {
        switch v {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .int(let i): return .int(i)
        case .float(let f): return .double(Double(f))
        case .double(let d): return .double(d)
        case .string(let s): return .string(s)
        case .data(let d): return .string("base64:" + d.base64EncodedString())
        case .date(let d): return .string(Self.dateText(d))
        case .uuid(let u): return .string(u.uuidString)
        case .objectId(let o): return .string(o.hex)
        case .decimal(let d): return .string(d.description)
        case .link(let k): return .link(linkName(p.objectClassName ?? "?", k, snapshot))
        case .list(let items):
            if p.type == .any {
                if let (className, key) = AnyRealmValue.objectReference(v) { return .link(linkName(className, key, snapshot)) }
                if let elements = NestedForm.items(v, list: true) { return .list(elements.map { render($0, p, snapshot, element: true) }) }
                if let kv = NestedForm.items(v, list: false) { return renderMap(kv, p, snapshot) }
            }
            return .list(items.map { render($0, p, snapshot, element: true) })
        }
    }

    /// A date in ISO 8601 for the years 1 to 9999, which ISO 8601 writes; outside them (realm-core's extreme
    /// timestamps, Java's `Long.MIN_VALUE` milliseconds) as seconds since 1970, not as a year the format cannot hold.
    static func dateText(_ d: Date) -> String {
        let seconds = d.timeIntervalSince1970
        guard seconds >= -62_135_596_800, seconds < 253_402_300_800 else { return "\(seconds) s since 1970" }
        return ISO8601DateFormatter().string(from: d)
    }

    /// `Type("pk")` for an object with a primary key, `Type#key` otherwise; `(deleted)` when it is gone.
    private func linkName(_ className: String, _ key: Int64, _ snapshot: Snapshot) -> String {
        guard let t = schema?.type(named: className) else { return "\(className)#\(key)" }
        let record: [UInt8]?
        do {
            record = try snapshot.get(ObjectKey.bytes(key), in: t.partition)
        } catch {
            return "\(className)#\(key) (unreadable: \(error))"
        }
        guard let record else { return "\(className)#\(key) (deleted)" }
        guard let pk = t.properties.first(where: \.isPrimaryKey) else { return "\(className)#\(key)" }
        let layouts = RecordLayouts(partition: t.partition, in: schema)
        let value: StoredValue?
        do {
            value = try record.withUnsafeBytes { try ObjectRecord.value(of: pk.fieldId, in: $0, layouts: layouts) }
        } catch {
            return "\(className)#\(key) (unreadable: \(error))"
        }
        guard let value else { return "\(className)#\(key)" }
        switch value {
        case .string(let s): return "\(className)(\"\(s)\")"
        case .int(let i): return "\(className)(\(i))"
        case .uuid(let u): return "\(className)(\(u.uuidString))"
        case .objectId(let o): return "\(className)(\(o.hex))"
        default: return "\(className)#\(key)"
        }
    }
}
