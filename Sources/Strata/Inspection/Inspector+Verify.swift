import Engine
import Foundation

extension DatabaseInspector {
    /// Reads every block of every segment (checking each checksum), then every record of every type against
    /// the stored schema: its format, its schema version, each field's kind, required values, links to objects
    /// that exist, and the primary-key index. One line per problem, naming the file and offset (damaged blocks)
    /// or the type, object key and property (records). Empty when all is well.
    package func verify(progress: (String) -> Void = { _ in }) -> [String] {
        var problems = database.checkConsistency().map { "\(path)/\($0)" }
        if let schemaError { problems.append(schemaError.message) }
        guard let schema else { return problems }
        let snapshot: Snapshot
        do {
            snapshot = try database.snapshot()
        } catch {
            return problems + ["\(path): \(error)"]
        }
        for t in schema.types {
            progress(t.name)
            let pending = schema.pending(for: t.name)
            let layouts = RecordLayouts(partition: t.partition, in: schema)
            var keys: [Int64] = []
            do {
                try snapshot.scan(t.partition) { k, v in
                    guard let key = ObjectKey.decode(k) else {
                        problems.append("\(path): type \(t.name): a record key of \(k.count) bytes is not an object key")
                        return true
                    }
                    keys.append(key)
                    let record: (schemaVersion: UInt64, fields: FieldValues)
                    do {
                        record = try ObjectRecord.decodeAll(v, layouts: layouts)
                    } catch {
                        problems.append("\(path): \(t.name) object \(key): the record cannot be read: \(error)")
                        return true
                    }
                    if record.schemaVersion > schema.schemaVersion {
                        problems.append(
                            "\(path): \(t.name) object \(key) was written under schema version \(record.schemaVersion), after the file's \(schema.schemaVersion)")
                    }
                    // Records an online migration has not reached yet are read under the type as it was.
                    let shape = pending.first { record.schemaVersion <= $0.fromVersion }?.oldType ?? t
                    for p in shape.properties {
                        guard let value = record.fields[p.fieldId] else { continue }
                        if let problem = Self.problem(value, p) { problems.append("\(path): \(t.name) object \(key): \(p.name) \(problem)") }
                        for target in Self.linkKeys(value, p) {
                            guard let targetType = schema.type(named: p.objectClassName ?? "") else { continue }
                            do {
                                if try snapshot.get(ObjectKey.bytes(target), in: targetType.partition) == nil {
                                    problems.append("\(path): \(t.name) object \(key): \(p.name) links to \(targetType.name) \(target), which does not exist")
                                }
                            } catch {
                                problems.append("\(path): \(t.name) object \(key): \(p.name) links to \(targetType.name) \(target), which cannot be read: \(error)")
                            }
                        }
                    }
                    if let pkPartition = t.primaryKeyPartition, let pk = t.properties.first(where: \.isPrimaryKey) {
                        let value = record.fields[pk.fieldId] ?? .null
                        let entry = try snapshot.get(PrimaryKeyIndex.entry(value), in: pkPartition)
                        if entry.flatMap({ $0.withUnsafeBytes(ObjectKey.decode) }) != key {
                            problems.append("\(path): \(t.name) object \(key): the primary-key index does not map \(Object.describe(value)) to it")
                        }
                    }
                    return true
                }
                if let pkPartition = t.primaryKeyPartition {
                    var entries = 0
                    try snapshot.scan(pkPartition) { _, _ in
                        entries += 1
                        return true
                    }
                    if entries != keys.count {
                        problems.append("\(path): \(t.name): the primary-key index has \(entries) entries for \(keys.count) objects")
                    }
                }
            } catch {
                problems.append("\(path): \(t.name): \(error)")
            }
        }
        // A file written with change capture on: every change set of the sync outbox and its undo images decode.
        if snapshot.partitions.contains(SyncStorage.partition) {
            progress("sync outbox")
            problems += Self.outboxProblems(snapshot, path: path)
        }
        return problems
    }

    /// What is wrong with the sync outbox at `snapshot`: its change sets and undo images are decoded as a sync
    /// session reads them. The first damaged entry ends the check (what follows it cannot be told apart).
    static func outboxProblems(_ snapshot: Snapshot, path: String) -> [String] {
        struct Damage: Error, CustomStringConvertible { let description: String }
        func damaged(_ what: String, _ key: [UInt8]) -> any Error {
            Damage(description: "\(path): the sync outbox is damaged at key \(SyncStorage.hex(key)): \(what)")
        }
        func line(_ error: any Error) -> String {
            error is Damage ? "\(error)" : "\(path): the sync outbox cannot be read: \(error)"
        }
        do {
            for entry in try SyncStorage.outboxEntries(after: 0, at: snapshot, damaged: damaged) {
                _ = try SyncStorage.undoImages(entry.changeSet.sequence, at: snapshot, damaged: damaged)
            }
        } catch {
            return [line(error)]
        }
        return []
    }

    /// What is wrong with a stored value for a property, nil when nothing is.
    static func problem(_ v: StoredValue, _ p: StoredSchema.StoredProperty) -> String? {
        if p.isList ?? false {
            guard case .list(let items) = v else { return "holds \(kind(v)), not a collection" }
            if p.isMap ?? false {
                guard items.count % 2 == 0 else { return "holds a map with \(items.count) keys and values (an odd count)" }
                for i in stride(from: 0, to: items.count, by: 2) {
                    guard case .string = items[i] else { return "holds a map key that is \(kind(items[i])), not a string" }
                    if let e = elementProblem(items[i + 1], p, optional: p.elementsMayBeNull || p.type == .object) { return "holds a map value that \(e)" }
                }
                return nil
            }
            for e in items {
                if let problem = elementProblem(e, p, optional: p.elementsMayBeNull) { return "holds an element that \(problem)" }
            }
            return nil
        }
        return elementProblem(v, p, optional: p.isOptional || p.type == .object)
    }

    private static func elementProblem(_ v: StoredValue, _ p: StoredSchema.StoredProperty, optional: Bool) -> String? {
        if case .null = v { return optional || p.type == .any ? nil : "is null, but \(p.name) is required" }
        let fits: Bool
        switch (p.type, v) {
        case (.int, .int), (.bool, .bool), (.float, .float), (.double, .double), (.string, .string), (.data, .data), (.date, .date),
            (.objectId, .objectId), (.decimal128, .decimal), (.UUID, .uuid), (.object, .link), (.any, _):
            fits = true
        default: fits = false
        }
        return fits ? nil : "is \(kind(v)), but the schema says \(p.type)"
    }

    static func kind(_ v: StoredValue) -> String {
        switch v {
        case .null: "null"
        case .bool: "a Bool"
        case .int: "an Int"
        case .float: "a Float"
        case .double: "a Double"
        case .string: "a String"
        case .data: "Data"
        case .date: "a Date"
        case .uuid: "a UUID"
        case .objectId: "an ObjectId"
        case .link: "a link"
        case .list: "a list"
        case .decimal: "a Decimal128"
        }
    }

    /// The object keys a link property's value names.
    static func linkKeys(_ v: StoredValue, _ p: StoredSchema.StoredProperty) -> [Int64] {
        guard p.type == .object else { return [] }
        switch v {
        case .link(let k): return [k]
        case .list(let items): return items.compactMap { if case .link(let k) = $0 { k } else { nil } }
        default: return []
        }
    }

    // MARK: Compaction

    /// The bytes of the database's segments and log on disk.
    package var bytesOnDisk: Int { database.statistics().segmentBytes + database.logBytes() }

    /// Compacts every partition, calling `progress(done, total, typeName)` before each; returns the bytes
    /// on disk before and after.
    package func compact(progress: (Int, Int, String) -> Void) throws -> (before: Int, after: Int) {
        let before = bytesOnDisk
        let partitions = database.partitionStatistics().keys.sorted()
        var names: [UInt32: String] = [StoredSchema.metadataPartition: "metadata"]
        for t in schema?.types ?? [] {
            names[t.partition] = t.name
            if let p = t.primaryKeyPartition { names[p] = t.name + " (primary keys)" }
            for index in t.indexes ?? [] { names[index.partition] = t.name + " (index)" }
        }
        for (i, p) in partitions.enumerated() {
            progress(i, partitions.count, names[p] ?? "partition \(p)")
            try database.compact(p)
        }
        progress(partitions.count, partitions.count, "")
        try database.close()
        return (before, try Self.filesBytes(atPath: path))
    }

    /// The bytes of a closed database's segment and log files.
    package static func filesBytes(atPath path: String) throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: path).filter { $0.hasSuffix(".seg") || $0.hasSuffix(".log") }.reduce(0) {
            $0 + ((try FileManager.default.attributesOfItem(atPath: path + "/" + $1)[.size] as? Int) ?? 0)
        }
    }
}
