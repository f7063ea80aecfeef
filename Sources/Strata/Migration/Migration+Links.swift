import Engine
import Foundation

// Work across objects and types: links read through migration objects, objects converted to embedded ones,
// links kept to objects an Int primary key moves.

extension Migration {
    /// The stored link for an object assigned to property `property` (`Type.name`) linking to `target`: an
    /// object this migration handed out, an unmanaged model object (added now, once), or a dictionary or
    /// array for a new object (embedded ones included); `.null` for nil. Reports anything else and gives nil.
    func link(to value: Any?, target: String, property: String) -> StoredValue? {
        switch value {
        case nil, is NSNull:
            return .null
        case let o as Object where o._dynamic != nil:
            guard let state = o._dynamic, let key = state.key else {
                errors.append("Cannot set '\(property)' to an object this migration did not hand out")
                return nil
            }
            guard state.type.name == target else {
                errors.append("Cannot set '\(property)' to an object of type '\(state.type.name)': it links to '\(target)'")
                return nil
            }
            return .link(key)
        case let o as Object:
            let name = type(of: o).className()
            guard name == target, let t = new.type(named: target) else {
                errors.append("Cannot set '\(property)' to an object of type '\(name)': it links to '\(target)'")
                return nil
            }
            guard o._accessor == nil else {
                errors.append("Cannot set '\(property)' to a managed '\(name)': in a migration, link objects the migration hands out")
                return nil
            }
            if let known = adopted[ObjectIdentifier(o)] { return .link(known.key) }
            let state = insert(t, value: o)
            guard let key = state.key else { return nil }
            adopted[ObjectIdentifier(o)] = (o, key)
            return .link(key)
        case let some?:
            guard let t = new.type(named: target) else {
                errors.append("Object type '\(target)' not managed by the Realm")
                return nil
            }
            guard some is [String: Any] || some is [String: Any?] || some is [Any] || some is [Any?] else {
                errors.append("Invalid value '\(some)' for '\(property)': give an object, a dictionary or an array")
                return nil
            }
            return insert(t, value: some).key.map { .link($0) }
        }
    }

    /// A type the code now declares embedded that was top-level needs exactly one parent per object once the
    /// block has run: a link or list entry of another object. An object without one would be lost, one with
    /// several cannot be embedded; either is an error with the counts.
    /// Types made embedded in this migration, after the block, as RealmSwift converts them: an object no
    /// parent links to is deleted; an object with several parents is copied, so that each parent has its own;
    /// a link from an AnyRealmValue property (which cannot hold an embedded object) fails the migration.
    func convertToEmbedded() throws {
        for t in new.types where t.isEmbedded ?? false {
            guard let before = old.type(named: t.name), !(before.isEmbedded ?? false) else { continue }
            // Every incoming link: (parent type, parent key, property, position in a collection's items).
            var incoming: [Int64: [(type: StoredSchema.StoredType, key: Int64, property: StoredSchema.StoredProperty, item: Int?)]] = [:]
            // Every stored type counts as a parent, in the model or not: its objects and their links stay in the file.
            for u in new.types {
                let links = u.properties.filter { $0.type == .object && $0.objectClassName == t.name }
                let mixed = u.properties.filter { $0.type == .any }
                guard !links.isEmpty || !mixed.isEmpty else { continue }
                try forEachObject(after: u) { key, fields in
                    for p in links {
                        switch fields[p.fieldId] ?? .null {
                        case .link(let k): incoming[k, default: []].append((u, key, p, nil))
                        case .list(let items):
                            for (i, item) in items.enumerated() {
                                if case .link(let k) = item { incoming[k, default: []].append((u, key, p, i)) }
                            }
                        default: break
                        }
                    }
                    for p in mixed where Self.holdsObject(of: t.name, fields[p.fieldId] ?? .null) {
                        errors.append(
                            "Cannot convert '\(t.name)' to embedded: there is an incoming link from the Mixed property '\(u.name).\(p.name)', "
                                + "which does not support linking to embedded objects.")
                    }
                }
            }
            guard errors.isEmpty else { return }
            // One child at a time, as the type's objects will be (streamed ones read back one by one): what is kept
            // for the whole type is the incoming links, not its objects.
            try forEachObject(after: t) { key, values in
                let parents = incoming[key] ?? []
                if parents.isEmpty {
                    deleted[t.partition, default: []].insert(key)
                    written[t.partition]?[key] = nil
                    return
                }
                // The first parent keeps the object; each other one gets a copy of its own.
                for parent in parents.dropFirst() {
                    let copy = DynamicState(type: t, values: values, writable: true, defaults: defaults(for: t.name))
                    copy.modified = true
                    copy.report = reporter
                    let copyKey = allocateKey(for: t)
                    copy.key = copyKey
                    written[t.partition, default: [:]][copyKey] = copy
                    guard let owner = try writableState(parent.type, key: parent.key) else { continue }
                    if let item = parent.item, case .list(var items) = owner.values[parent.property.fieldId] ?? .null, item < items.count {
                        items[item] = .link(copyKey)
                        owner.values[parent.property.fieldId] = .list(items)
                    } else {
                        owner.values[parent.property.fieldId] = .link(copyKey)
                    }
                    owner.modified = true
                }
            }
        }
    }

    /// The objects that `rebuildPrimaryKeys` will move, per type name: old key -> new key (an Int primary key is
    /// the object key, so an object whose key value changed moves).
    func plannedMoves() throws -> [String: [Int64: Int64]] {
        var out: [String: [Int64: Int64]] = [:]
        for t in new.types {
            guard let pk = t.properties.first(where: \.isPrimaryKey), pk.type == .int else { continue }
            let oldType = old.type(named: t.name)
            let oldPK = oldType?.properties.first(where: \.isPrimaryKey)
            let pkChanged = pk.fieldId != oldPK?.fieldId || pk.type != oldPK?.type || oldType?.partition != t.partition
            let wrotePK = primaryKeysWritten.contains(t.partition) || (written[t.partition] ?? [:]).values.contains { $0.wrotePrimaryKey }
            guard pkChanged || wrotePK else { continue }
            let defaults = self.defaults(for: t.name)
            var moves: [Int64: Int64] = [:]
            try forEachObject(after: t) { key, fields in
                if let target = Self.objectKey(ofIntPrimaryKey: fields[pk.fieldId] ?? defaults[pk.name] ?? .null), target != key { moves[key] = target }
            }
            if !moves.isEmpty { out[t.name] = moves }
        }
        return out
    }

    /// Rewrites the links (to-one, List, MutableSet, Map, AnyRealmValue) that name objects about to move.
    func relinkMovedObjects() throws {
        let moves = try plannedMoves()
        guard !moves.isEmpty else { return }
        // Links of a property of objects (a map's keys are strings and stay).
        func remapLinks(_ v: StoredValue, _ m: [Int64: Int64]) -> StoredValue {
            switch v {
            case .link(let k): return .link(m[k] ?? k)
            case .list(let items): return .list(items.map { remapLinks($0, m) })
            default: return v
            }
        }
        // Objects held by an AnyRealmValue, at any depth of its nested collections.
        func remapAny(_ v: StoredValue) -> StoredValue {
            if let (name, k) = AnyRealmValue.objectReference(v) { return AnyRealmValue.objectForm(name, moves[name]?[k] ?? k) }
            if case .list(let items) = v { return .list(items.map(remapAny)) }
            return v
        }
        func remap(_ v: StoredValue, _ p: StoredSchema.StoredProperty) -> StoredValue {
            if p.type == .any { return remapAny(v) }
            guard let m = p.objectClassName.flatMap({ moves[$0] }) else { return v }
            return remapLinks(v, m)
        }
        for u in new.types {
            let affected = u.properties.filter { p in
                p.type == .any || (p.type == .object && p.objectClassName.map { moves[$0] != nil } == true)
            }
            guard !affected.isEmpty else { continue }
            var toFix: [Int64] = []
            try forEachObject(after: u) { key, fields in
                if affected.contains(where: { p in let v = fields[p.fieldId] ?? .null; return remap(v, p) != v }) {
                    toFix.append(key)
                }
            }
            for key in toFix {
                guard let state = try writableState(u, key: key) else { continue }
                for p in affected {
                    let v = state.values[p.fieldId] ?? .null
                    let r = remap(v, p)
                    if r != v {
                        state.values[p.fieldId] = r
                        state.modified = true
                    }
                }
            }
        }
    }

    /// Whether an AnyRealmValue's stored form holds an object of `typeName`, at any depth.
    static func holdsObject(of typeName: String, _ v: StoredValue) -> Bool {
        if let (name, _) = AnyRealmValue.objectReference(v) { return name == typeName }
        guard case .list(let items) = v else { return false }
        return items.contains { holdsObject(of: typeName, $0) }
    }

    /// The new-schema state of an object this migration writes: the one it has, or its record brought to the
    /// new schema (through its pending transforms, this call's included) and kept for writing.
    func writableState(_ t: StoredSchema.StoredType, key: Int64) throws -> DynamicState? {
        if let state = written[t.partition]?[key] ?? unstream(t, key) { return state }
        guard let bytes = try openTx.snapshot.get(ObjectKey.bytes(key), in: t.partition) else { return nil }
        let layouts = layouts(t.partition)
        let record = try bytes.withUnsafeBytes { try ObjectRecord.decodeAll($0, layouts: layouts) }
        let gens = generations(t.name)
        let migration = gens.isEmpty ? nil : TypeMigration(
            typeName: t.name, newType: t, newVersion: new.schemaVersion, defaults: defaults(for: t.name), generations: gens)
        let state = freshState(t, version: record.schemaVersion, fields: record.fields, through: migration)
        state.key = key
        written[t.partition, default: [:]][key] = state
        return state
    }

    /// Every object of `t` as the migration leaves it (the file's objects, with the block's changes, creations
    /// and deletions), by key, with its fields.
    func forEachObject(after t: StoredSchema.StoredType, _ body: (Int64, FieldValues) throws -> Void) throws {
        let changed = written[t.partition] ?? [:]
        let gone = deleted[t.partition] ?? []
        let records = streamed[t.partition]
        if !dataDeleted.contains(t.name) {
            let layouts = layouts(t.partition)
            try openTx.snapshot.scan(t.partition) { k, v in
                guard let key = ObjectKey.decode(k), !gone.contains(key), changed[key] == nil, !(records?.contains(key) ?? false) else { return true }
                try body(key, try ObjectRecord.decodeAll(v, layouts: layouts).fields)
                return true
            }
        }
        if let records {
            for (key, range) in records.all where !gone.contains(key) && changed[key] == nil {
                try body(key, try streamedFields(t, key, range, records))
            }
        }
        for (key, state) in changed where !gone.contains(key) { try body(key, state.values) }
    }

    /// The object of `typeName` with `key`, as links in migration objects name it: in the old schema
    /// (read-only, as the file had it) or in the new one (writable, with what the migration did to it).
    func linkedObject(_ typeName: String, key: Int64, old isOld: Bool) -> MigrationObject? {
        guard let t = isOld ? old.type(named: typeName) : new.type(named: typeName) else { return nil }
        if !isOld {
            if let state = written[t.partition]?[key] ?? unstream(t, key) { return dynamic(state) }
            if deleted[t.partition]?.contains(key) ?? false { return nil }
        }
        let record: (schemaVersion: UInt64, fields: FieldValues)
        do {
            guard let bytes = try openTx.snapshot.get(ObjectKey.bytes(key), in: t.partition) else { return nil }
            let layouts = layouts(t.partition)
            record = try bytes.withUnsafeBytes { try ObjectRecord.decodeAll($0, layouts: layouts) }
        } catch {
            errors.append("reading \(typeName) object \(key), linked from a migration object, failed: \(error)")
            return nil
        }
        if isOld {
            let state = DynamicState(type: t, values: record.fields, writable: false, defaults: [:])
            state.key = key
            return dynamic(state)
        }
        let state = freshState(t, version: record.schemaVersion, fields: record.fields, through: priorMigration(typeName))
        state.key = key
        written[t.partition, default: [:]][key] = state
        return dynamic(state)
    }
}
