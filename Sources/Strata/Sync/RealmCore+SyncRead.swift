import Engine
import Foundation

/// Objects of the file as sync's model has them (`SyncObject`): read from the version a write began at (the
/// state before it) or from the write's own view (the state after it).
extension RealmCore {
    /// Reads objects from one version, remembering the primary keys of link targets it looked up.
    final class SyncReader {
        let core: RealmCore
        /// The version to read; nil: the write's view with its pending objects.
        let snapshot: Snapshot?
        private var primaryKeys: [PendingKey: SyncValue?] = [:]
        private var bindingsByName: [String: TypeBinding] = [:]

        init(core: RealmCore, snapshot: Snapshot?) {
            self.core = core
            self.snapshot = snapshot
        }

        func binding(_ name: String) -> TypeBinding? {
            if let b = bindingsByName[name] { return b }
            guard let b = core.boundType(named: name) else { return nil }
            bindingsByName[name] = b
            return b
        }

        /// The stored values of object `key` (by property index), nil when there is none.
        func values(_ binding: TypeBinding, _ key: Int64) -> [StoredValue]? {
            let count = binding.info.schema.properties.count
            if let snapshot {
                var out: [StoredValue]?
                core.mustRead("\(binding.info.schema.className) #\(key)") {
                    try ObjectKey.withBytes(key) { k in
                        try snapshot.visitValue(forKey: k, in: binding.partition) { raw in
                            guard let raw else { return }
                            out = binding.migratedValues(raw) ?? (0..<count).map { binding.value($0, in: raw) }
                        }
                    }
                }
                return out
            }
            return core.withRecord(binding, key: key) { ref in (0..<count).map { ref.value($0) } }
        }

        /// A reader of one type's objects for keys asked in ascending order (capture's walk over the objects a
        /// write touched): the partition is read by one forward iterator (`OrderedLookup`), a step or a few per
        /// object instead of a lookup in every segment; a key asked out of order is looked up on its own.
        func inOrder(_ binding: TypeBinding) -> InOrder {
            if let snapshot { return InOrder(binding: binding, write: nil, lookup: OrderedLookup(snapshot, partition: binding.partition)) }
            // The write's view, its pending objects first.
            let w = core.write
            return InOrder(binding: binding, write: w, lookup: w.map { OrderedLookup($0.tx.view, partition: binding.partition) })
        }

        struct InOrder {
            let binding: TypeBinding
            let write: WriteState?
            let lookup: OrderedLookup?

            /// Calls `body` with object `key`'s record, nil when there is none. The record is valid only during
            /// the call, which must not change the write (a pending record lies in its batch).
            func visit(_ key: Int64, _ body: (RecordRef?) throws -> Void) throws {
                if let w = write {
                    var failure: (any Error)?
                    switch w.visit(PendingKey(partition: binding.partition, key: key), { ref in
                        do { try body(ref) } catch { failure = error }
                    }) {
                    case .live:
                        if let failure { throw failure }
                        return
                    case .deleted: return try body(nil)
                    case .none: break
                    }
                    if w.isDropped(binding.partition) { return try body(nil) }
                }
                guard let lookup else { return try body(nil) }
                try ObjectKey.withBytes(key) { k in
                    try lookup.visitValue(forKey: k) { raw in
                        guard let raw else { return try body(nil) }
                        if let migrated = binding.migratedRecord(raw) {
                            try migrated.withUnsafeBytes { try body(.bytes($0, binding)) }
                        } else {
                            try body(.bytes(raw, binding))
                        }
                    }
                }
            }
        }

        /// The primary key of object `key` of a type, nil when the object is not there.
        func primaryKey(_ binding: TypeBinding, _ key: Int64) -> SyncValue? {
            let pk = PendingKey(partition: binding.partition, key: key)
            if let known = primaryKeys[pk] { return known }
            var found: SyncValue?
            if let index = binding.info.primaryKeyIndex, let values = values(binding, key) {
                found = plain(values[index])
            }
            primaryKeys[pk] = found
            return found
        }

        /// The reference of a top-level object from its values.
        func reference(_ binding: TypeBinding, _ values: [StoredValue]) -> ObjectReference? {
            guard let index = binding.info.primaryKeyIndex else { return nil }
            return ObjectReference(type: binding.info.schema.className, primaryKey: plain(values[index]))
        }

        /// Object `key` of a top-level type as sync's model (lists without element ids yet), nil when absent.
        func object(_ binding: TypeBinding, _ key: Int64) -> (ObjectReference, SyncObject)? {
            guard let values = values(binding, key), let ref = reference(binding, values) else { return nil }
            return (ref, object(binding, values))
        }

        func object(_ binding: TypeBinding, _ values: [StoredValue]) -> SyncObject {
            var fields: [String: FieldState] = [:]
            for (i, p) in binding.info.schema.properties.enumerated() where p.type != .linkingObjects {
                fields[p.columnName] = field(p, values[i])
            }
            return SyncObject(fields: fields)
        }

        /// Property `p`'s stored value as sync's model (a list's elements without ids yet).
        func field(_ p: Property, _ v: StoredValue) -> FieldState {
            guard p.isCollection, case .list(let items) = v else {
                if p.isCollection { return p.isMap ? .map([:]) : p.isSet ? .set([]) : .list([]) }
                return .value(element(p, v))
            }
            if p.isMap {
                var map: [String: SyncValue] = [:]
                var i = 0
                while i + 1 < items.count {
                    if case .string(let k) = items[i] { map[k] = element(p, items[i + 1]) }
                    i += 2
                }
                return .map(map)
            }
            if p.isSet { return .set(FieldState.sortedSet(items.map { element(p, $0) })) }
            return .list(items.map { ListElement(id: ElementID(client: 0, counter: 0), position: ListPosition(bytes: []), value: element(p, $0)) })
        }

        /// One value of property `p` (an element of its collection).
        func element(_ p: Property, _ v: StoredValue) -> SyncValue {
            switch p.type {
            case .object:
                guard case .link(let key) = v, let name = p.objectClassName, let target = binding(name) else { return .null }
                if target.info.schema.isEmbedded {
                    guard let values = values(target, key) else { return .null }
                    return .embedded(embeddedFields(target, values))
                }
                guard let pk = primaryKey(target, key) else { return .null }
                return .link(ObjectReference(type: name, primaryKey: pk))
            case .any:
                return mixed(v)
            default:
                return plain(v)
            }
        }

        private func embeddedFields(_ binding: TypeBinding, _ values: [StoredValue]) -> [String: SyncValue] {
            var out: [String: SyncValue] = [:]
            for (i, p) in binding.info.schema.properties.enumerated() where p.type != .linkingObjects {
                switch field(p, values[i]) {
                case .value(let v): out[p.columnName] = v
                case .list(let l): out[p.columnName] = .list(l.map(\.value))
                case .set(let s): out[p.columnName] = .list(s)
                case .map(let m): out[p.columnName] = .dictionary(m)
                }
            }
            return out
        }

        /// An `AnyRealmValue`'s stored form: an object, a nested collection or a plain value.
        func mixed(_ v: StoredValue) -> SyncValue {
            if let (name, key) = AnyRealmValue.objectReference(v) {
                guard let target = binding(name), let pk = primaryKey(target, key) else { return .null }
                return .link(ObjectReference(type: name, primaryKey: pk))
            }
            if let items = NestedForm.items(v, list: true) { return .list(items.map(mixed)) }
            if let items = NestedForm.items(v, list: false) {
                var d: [String: SyncValue] = [:]
                var i = 0
                while i + 1 < items.count {
                    if case .string(let k) = items[i] { d[k] = mixed(items[i + 1]) }
                    i += 2
                }
                return .dictionary(d)
            }
            return plain(v)
        }

        func plain(_ v: StoredValue) -> SyncValue { Self.plainValue(v) }

        /// A plain stored value as sync's value (a link or a collection, which have no plain form, as null).
        static func plainValue(_ v: StoredValue) -> SyncValue {
            switch v {
            case .null: .null
            case .bool(let b): .bool(b)
            case .int(let i): .int(i)
            case .float(let f): .float(f)
            case .double(let d): .double(d)
            case .string(let s): .string(s)
            case .data(let d): .data(d)
            case .date(let d): .date(d)
            case .uuid(let u): .uuid(u)
            case .objectId(let o): .objectId(o)
            case .decimal(let d): .decimal(d)
            case .link, .list: .null
            }
        }
    }

    /// The metadata of `ref` as stored at `snapshot`.
    func syncMeta(_ ref: ObjectReference, at snapshot: Snapshot) throws -> SyncStorage.ObjectMeta? {
        try snapshot.withValue(forKey: SyncStorage.objectKey(ref), in: SyncStorage.partition) { raw in
            guard let raw else { return nil }
            do {
                return try SyncStorage.ObjectMeta.decode(raw)
            } catch let e as StorageError {
                throw Realm.Error(.invalidDatabase, "the sync metadata of \(ref) in \(shared.displayName) is damaged (\(e)); the file is damaged")
            }
        }
    }

    /// An object's sync state: `object` (read from the file, lists without ids) with its metadata's element
    /// ids and positions, or its tombstone when it is not live.
    static func syncState(_ object: SyncObject?, meta: SyncStorage.ObjectMeta?) -> SyncObjectState {
        guard var object else {
            if case .tombstone(let t)? = meta { return .deleted(t) }
            return .absent
        }
        var lists: [String: [(id: ElementID, position: ListPosition)]] = [:]
        if case .lists(let l)? = meta { lists = l }
        for (name, field) in object.fields {
            guard case .list(let elements) = field, !elements.isEmpty else { continue }
            let known = lists[name] ?? []
            if known.count == elements.count {
                object.fields[name] = .list(zip(elements, known).map { ListElement(id: $1.id, position: $1.position, value: $0.value) })
            } else {
                // Not as the metadata says (written before capture began): ids of no client, positions in order.
                let positions = ListPosition.spread(elements.count, between: nil, nil)
                object.fields[name] = .list(elements.indices.map { i in
                    ListElement(id: ElementID(client: 0, counter: UInt64(i + 1)), position: positions[i], value: elements[i].value)
                })
            }
        }
        return .live(object)
    }
}
