import Engine
import Foundation

// Invariants:
// (1) An index listed in a type's `StoredType.indexes` holds exactly one entry per object of the type: the
//     value a read of the property gives (`TypeBinding.value`), then the object key. Every commit keeps it so.
// (2) Whatever writes a type's records without keeping (1) (a blocking migration, an online migration's
//     rewrite) first takes the type's indexes off the list, in the same transaction; the next open that
//     declares them builds them again, once no online migration of the type is pending.
// (3) An index only narrows a query: the objects it finds are checked against the whole predicate, so a
//     lookup may find too many (never too few).

/// Secondary indexes of `@Persisted(indexed: true)` properties: equality and `IN` on them look up object
/// keys instead of scanning the type.
enum SecondaryIndex {
    /// Realm indexes Int, Bool, String, Date, ObjectId and UUID properties (and enums over them).
    static func isIndexable(_ p: Property) -> Bool {
        p.isIndexed && !p.isPrimaryKey && !p.isCollection && [.int, .bool, .string, .date, .objectId, .UUID].contains(p.type)
    }

    /// Whether a stored index another process's model declares can stay beside this model, which does not
    /// index property `i`: the property has the index's type, so this process's writes keep its entries
    /// (`indexes(of:in:)` lists every stored index of a property the binding knows).
    static func fitsUnindexed(_ index: StoredSchema.StoredIndex, info: TypeInfo, property i: Int) -> Bool {
        let p = info.schema.properties[i]
        return !p.isIndexed && index.type == p.type && index.isOptional == p.isNullable
    }

    /// Whether a stored index still fits property `i` of the model.
    static func matches(_ index: StoredSchema.StoredIndex, info: TypeInfo, property i: Int) -> Bool {
        let p = info.schema.properties[i]
        return isIndexable(p) && index.type == p.type && index.isOptional == p.isNullable && index.defaultValue == "\(info.defaults[i])"
    }

    /// The leading bytes of the entries of value `v`. Values that queries find equal have equal prefixes:
    /// strings are compared as Swift compares them (canonically equivalent forms are equal), so they are
    /// normalized first.
    static func prefix(_ v: StoredValue) -> [UInt8] {
        switch v {
        case .string(let s):
            // ASCII is in normal form already (and the usual case): normalizing costs more than the lookup.
            if s.utf8.allSatisfy({ $0 < 0x80 }) { return [2] + Array(s.utf8) + [0] }
            return [2] + Array(s.precomposedStringWithCanonicalMapping.utf8) + [0]
        case .bool(let b): return [6, b ? 1 : 0]
        case .date(let d):
            let t = d.timeIntervalSinceReferenceDate
            return [7] + ObjectKey.bytes(Int64(bitPattern: (t == 0 ? 0 : t).bitPattern))
        default: return PrimaryKeyIndex.entry(v)
        }
    }

    /// Whether a query constant finds all its matches through the index of a property of `type`: a constant
    /// of another kind (5.0 against an Int) compares equal to values whose entries differ, so it scans.
    static func canLookUp(_ v: StoredValue, _ p: Property) -> Bool {
        switch (p.type, v) {
        case (.int, .int), (.string, .string), (.bool, .bool), (.date, .date), (.UUID, .uuid), (.objectId, .objectId): return true
        case (_, .null): return p.isNullable
        default: return false
        }
    }

    /// The value property `i` reads as, given what is stored (nil in a required property reads as its default).
    static func readValue(_ v: StoredValue, _ binding: TypeBinding, _ i: Int) -> StoredValue {
        v.isNull && !binding.info.schema.properties[i].isNullable ? binding.info.defaults[i] : v
    }

    /// The index of each indexed property of `binding`'s type, as `schema` lists them.
    static func indexes(of binding: TypeBinding, in schema: StoredSchema?) -> [(property: Int, partition: UInt32)] {
        guard let t = schema?.types.first(where: { $0.partition == binding.partition }), let list = t.indexes else { return [] }
        return list.compactMap { index in
            binding.fieldIds.firstIndex(of: index.fieldId).map { ($0, index.partition) }
        }
    }

    /// Keeps the indexes of one object right as a commit writes it (`after`: the values of its indexed
    /// properties as reads give them, in the order of `indexes`) or deletes it (nil), or as a write spills it.
    /// `isNew`: the key is not stored in the write's view (above its largest key), so there are no entries to
    /// replace.
    static func update(
        _ binding: TypeBinding, _ indexes: [(property: Int, partition: UInt32)], key: Int64, keyBytes: UnsafeRawBufferPointer,
        after: [StoredValue]?, isNew: Bool, in tx: WriteTransaction
    ) throws {
        var old: [StoredValue?] = Array(repeating: nil, count: indexes.count)
        if !isNew {
            try tx.view.withValue(forKey: keyBytes, in: binding.partition) { raw in
                guard let raw else { return }
                for (n, index) in indexes.enumerated() { old[n] = binding.value(index.property, in: raw) }
            }
        }
        for (n, index) in indexes.enumerated() {
            let before = old[n].map(prefix)
            let now = after.map { prefix($0[n]) }
            if before == now { continue }
            if var entry = before {
                entry.append(contentsOf: keyBytes)
                try tx.delete(entry, in: index.partition)
            }
            if var entry = now {
                entry.append(contentsOf: keyBytes)
                try tx.put(entry, [UInt8](), in: index.partition)
            }
        }
    }

    /// Writes the entries of property `i` of every object of `binding`'s type into `partition` (empty).
    static func build(_ binding: TypeBinding, property i: Int, partition: UInt32, in tx: WriteTransaction) throws {
        try tx.view.scan(binding.partition) { k, v in
            guard let key = ObjectKey.decode(k) else { return true }
            try tx.put(prefix(binding.value(i, in: v)) + ObjectKey.bytes(key), [UInt8](), in: partition)
            return true
        }
    }

    /// The object keys whose entries in `partition` are for one of `values`.
    static func lookUp(_ values: [StoredValue], in partition: UInt32, snapshot: Snapshot) throws -> Set<Int64> {
        var keys = Set<Int64>()
        for v in values {
            let p = prefix(v)
            try snapshot.scan(partition, from: p) { k, _ in
                guard k.count >= p.count, p.indices.allSatisfy({ k[$0] == p[$0] }) else { return false }
                if k.count == p.count + 8, let key = ObjectKey.decode(UnsafeRawBufferPointer(rebasing: k[p.count...])) { keys.insert(key) }
                return true
            }
        }
        return keys
    }
}

extension RealmCore {
    /// Whether the file still lists the index this binding was bound with: in a shared file, a process whose
    /// model lacks the index drops it when it opens alone (a read-only instance is not counted), and queries
    /// here then scan.
    func fileHasIndex(_ partition: UInt32, of binding: TypeBinding) -> Bool {
        guard database.isShared else { return true }
        return shared.storedSchema.withLock { schema in
            schema?.types.first(where: { $0.partition == binding.partition })?.indexes?.contains { $0.partition == partition } ?? false
        }
    }

    /// Builds the indexes that `infos` declare and the file lacks (a new index, a type after a blocking
    /// migration, a type whose online migration finished), and drops those no longer declared, in one
    /// transaction. Types with an online migration pending wait (their records still change on rewrite).
    func reconcileIndexes(_ infos: [TypeInfo]) throws {
        let tx = try database.beginWrite()
        // Beside other processes, an index this model does not declare stays: another process's model may
        // (an app and an older extension), and it is dropped once an instance that lacks it opens alone.
        // Asked only when an index would go (listing the sessions reads the directory).
        var others: Bool?
        func besideOthers() -> Bool {
            if let others { return others }
            let found = database.isShared && !database.otherLiveSessions().isEmpty
            others = found
            return found
        }
        do {
            let changed: StoredSchema? = try shared.storedSchema.withLock { stored in
                // The latest schema (another process may have changed it since this open read it).
                let latest = try tx.snapshot.get(StoredSchema.schemaKey, in: StoredSchema.metadataPartition)
                    .map { try StoredSchema.decode($0, file: shared.displayName) }
                guard var schema = latest ?? stored else { return nil }
                var changed = false
                for info in infos {
                    guard let ti = schema.types.firstIndex(where: { $0.name == info.schema.className }) else { continue }
                    let t = schema.types[ti]
                    let pending = !schema.pending(for: t.name).isEmpty
                    let binding = TypeBinding(
                        info: info, stored: t, schemaVersion: schema.schemaVersion, layouts: RecordLayouts(partition: t.partition, in: schema))
                    var kept: [StoredSchema.StoredIndex] = []
                    for index in t.indexes ?? [] {
                        if !pending, let i = binding.fieldIds.firstIndex(of: index.fieldId),
                            SecondaryIndex.matches(index, info: info, property: i)
                                || (SecondaryIndex.fitsUnindexed(index, info: info, property: i) && besideOthers())
                        {
                            kept.append(index)
                        } else {
                            try tx.dropPartition(index.partition)
                            changed = true
                        }
                    }
                    if !pending {
                        for (i, p) in info.schema.properties.enumerated() where SecondaryIndex.isIndexable(p) {
                            let fieldId = binding.fieldIds[i]
                            guard fieldId != UInt32.max, !kept.contains(where: { $0.fieldId == fieldId }) else { continue }
                            let index = StoredSchema.StoredIndex(
                                fieldId: fieldId, partition: schema.nextPartition, type: p.type, isOptional: p.isNullable,
                                defaultValue: "\(info.defaults[i])")
                            schema.nextPartition += 1
                            try SecondaryIndex.build(binding, property: i, partition: index.partition, in: tx)
                            kept.append(index)
                            changed = true
                        }
                    }
                    schema.types[ti].indexes = kept.isEmpty ? nil : kept
                }
                guard changed else { return nil }
                try tx.put(StoredSchema.schemaKey, schema.encoded(), in: StoredSchema.metadataPartition)
                try tx.commit()
                stored = schema
                return schema
            }
            if changed == nil { tx.abort() }
        } catch {
            tx.abort()
            throw error
        }
    }
}

extension StoredSchema {
    /// Takes the indexes of `typeName` off the list and drops them (in `tx`): its records are about to be
    /// written in a way that does not keep them.
    mutating func dropIndexes(of typeName: String, in tx: WriteTransaction) throws {
        guard let ti = types.firstIndex(where: { $0.name == typeName }), let list = types[ti].indexes else { return }
        for index in list { try tx.dropPartition(index.partition) }
        types[ti].indexes = nil
    }
}

extension RealmCore {
    /// Checks every listed index of `binding`'s type against the type's records at this Realm's version:
    /// one problem per missing or extra entry (at most a few per index), empty when they agree.
    func checkIndexes(_ binding: TypeBinding) -> [String] {
        let className = binding.info.schema.className
        var problems: [String] = []
        for (i, partition) in SecondaryIndex.indexes(of: binding, in: shared.storedSchema.withLock({ $0 })) {
            let name = "\(className).\(binding.info.schema.properties[i].name)"
            var expected = Set<[UInt8]>()
            var actual = Set<[UInt8]>()
            do {
                try readSnapshot.scan(binding.partition) { k, v in
                    if let key = ObjectKey.decode(k) { expected.insert(SecondaryIndex.prefix(binding.value(i, in: v)) + ObjectKey.bytes(key)) }
                    return true
                }
                try readSnapshot.scan(partition) { k, _ in
                    actual.insert([UInt8](k))
                    return true
                }
            } catch {
                problems.append("the index of \(name) cannot be read: \(error)")
                continue
            }
            let missing = expected.subtracting(actual), extra = actual.subtracting(expected)
            if !missing.isEmpty { problems.append("the index of \(name) lacks \(missing.count) of \(expected.count) entries") }
            if !extra.isEmpty { problems.append("the index of \(name) has \(extra.count) entries for no object") }
        }
        return problems
    }
}


