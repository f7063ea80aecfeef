import Engine
import Foundation

/// The object graph of a write: adding objects with what they link to (links, lists, embedded objects),
/// deleting them with what they own, and writing single properties.
extension RealmCore {
    /// How deep adds may nest (an add resolving a link adds the linked object, and so on) before the rest of
    /// a chain is added from a list of pending work instead: 32 levels of add, resolve and link frames stay far
    /// inside a 512 KiB stack (Darwin's secondary threads) even in a debug build, whatever the chain's length.
    static let maxAddDepth = 32

    /// Adds an unmanaged object (and the unmanaged objects it links to). `asChild`: an embedded object being
    /// given to a parent (the only way one is added).
    ///
    /// An object gets its key before its links are resolved, so a parent needs only that key of a child it
    /// links to. Below `maxAddDepth` nested adds, a child's own links are resolved at once; deeper, that work
    /// is queued (`deferredAdds`) and the outermost add runs the queue before it returns, so the stack stays
    /// bounded and the write holds the same records when the call returns.
    ///
    /// Once anything is queued, every later resolution of this add is queued too, and the queue runs first in,
    /// first out: resolutions then happen in the order their objects' values were set, so that two instances
    /// of one primary key give the record the values and the links of the same (the later) one.
    func add(_ object: Object, update: Realm.UpdatePolicy, asChild: Bool = false) {
        let outermost = addDepth == 0
        addDepth += 1
        addOne(object, update: update, asChild: asChild)
        addDepth -= 1
        guard outermost, !deferredAdds.isEmpty else { return }
        var next = 0
        while next < deferredAdds.count {
            let work = deferredAdds[next]
            next += 1
            addDepth = 1
            work()
            addDepth = 0
        }
        deferredAdds = []
    }

    /// Runs `work` (resolving an added object's links, then finishing its record) now, or queues it when the
    /// adds have nested `maxAddDepth` deep or something is queued already.
    private func resolveAdded(_ work: @escaping () -> Void) {
        if addDepth >= Self.maxAddDepth || !deferredAdds.isEmpty { deferredAdds.append(work) } else { work() }
    }

    private func addOne(_ object: Object, update: Realm.UpdatePolicy, asChild: Bool) {
        // The usual add: a new object of a type holding plain values, every value set. The write and the binding
        // are used unretained (a retain and a release are atomic operations, and were most of an add's time):
        // the core holds its write and its bindings, and an add of such an object runs no code of the app's. The
        // general path below is for every other object (this one's conditions would fail there too).
        if object._accessor == nil, let write = writeUnretained,
            write._withUnsafeGuaranteedRef({ w in
                withBinding(forClass: type(of: object)) { binding in
                    let info = binding.info
                    guard info.holdsValuesOnly, !info.schema.isEmbedded, object._unmanagedValues == nil, object._unmanagedLinks == nil,
                        object._unmanagedCollections == nil, object._setValues.map({ $0.count == info.propertyCount && $0.allSet }) == true
                    else { return false }
                    writeChanges += 1
                    spillIfDue(w)
                    return addNew(object, binding, w)
                }
            })
        {
            return
        }
        let w = requireWrite("adding a \(type(of: object).className())")
        if let accessor = object._accessor {
            require(!accessor.isDead, "Adding a deleted or invalidated object to a Realm is not permitted.")
            require(accessor.core === self, "Object is already managed by another Realm. Use create instead to copy it into this Realm.")
            return
        }
        let binding = binding(forClass: type(of: object))
        let info = binding.info
        require(
            asChild || !info.schema.isEmbedded,
            "Embedded objects cannot be created directly: assign this \(info.schema.className) to a property, List or Map of its parent object")
        var values = info.unmanagedValues(of: object)
        for i in info.requiredIndices where values[i].isNull { values[i] = info.defaults[i] }
        // Linked objects are resolved once this one has its key, so that a cycle of links ends here.
        let links = info.unmanagedLinks(of: object)
        var lists: [(Int, any StoredOnAdd)] = info.listIndices.isEmpty ? [] : info.collectionsToStore(of: object)
        // AnyRealmValue properties holding nested collections (with the objects in them).
        if let collections = object._unmanagedCollections {
            for (i, c) in collections { if let any = c as? UnmanagedAnyValue { lists.append((i, any)) } }
        }
        var key: Int64
        var pkEntry: [UInt8]? = nil
        if let pkIndex = info.primaryKeyIndex {
            let pkValue = values[pkIndex]
            if let existing = objectKey(forPrimaryKey: pkValue, binding: binding) {
                guard update != .error else {
                    fatalError(
                        "Attempting to create an object of type '\(info.schema.className)' with an existing primary key value '\(Object.describe(pkValue))'.")
                }
                key = existing
                let record = pendingRecord(binding, existing, w)
                for i in values.indices where links[i] == nil && info.listTargets[i] == nil && (update == .all || record.values[i] != values[i]) {
                    record.values[i] = values[i]
                }
                // An object stored before this write stays valid if the write is cancelled.
                attach(object, binding: binding, key: key, added: !storedAtBase(binding, key))
                // The record as it is when the resolution runs: a queued one may find it encoded meanwhile (by
                // another instance of this key resolved before it), and must not write into a stale copy.
                let pk = PendingKey(partition: binding.partition, key: existing)
                resolveAdded { self.resolve(links, lists, into: w.record(pk) ?? record, update: update, w) }
                return
            }
            if binding.intPrimaryKey, case .int(let v) = pkValue {
                if v == Self.nilIntPrimaryKey, info.schema.properties[pkIndex].isNullable {
                    fatalError("\(info.schema.className): primary key \(v) is reserved for nil in an optional Int primary key; use another value")
                }
                key = v
            } else if binding.intPrimaryKey, pkValue.isNull {
                key = Self.nilIntPrimaryKey
            } else {
                key = allocateKey(binding, w)
                pkEntry = PrimaryKeyIndex.entry(pkValue)
            }
        } else {
            key = allocateKey(binding, w)
        }
        let pk = PendingKey(partition: binding.partition, key: key)
        if pkEntry == nil, info.holdsValuesOnly, links.isEmpty, lists.isEmpty, !info.schema.isEmbedded {
            // Nothing to resolve: the record is encoded now, into the transaction's batch, and no pending record
            // is made.
            let version = w.encodedVersion ?? (shared.storedSchema.withLock { $0?.schemaVersion } ?? configuration.schemaVersion)
            w.encodedVersion = version
            w.addEncoded(pk, binding, values, version: version)
            attach(object, binding: binding, key: key)
            info.recycleSetValues(&object._setValues)
            object._setValues = nil
            return
        }
        let record = PendingRecord(binding: binding, values: values)
        record.primaryKeyIndexEntry = pkEntry
        w.setPending(pk, record, added: true)
        if info.schema.isEmbedded { w.orphans.insert(pk) }
        attach(object, binding: binding, key: key)
        w.objectsToInvalidate.append(.init(object: object))
        // A new record's embedded properties own nothing yet, whatever the unmanaged values said.
        for i in info.embeddedTargets.keys { record.values[i] = info.listTargets[i] != nil ? .list([]) : .null }
        resolveAdded {
            self.resolve(links, lists, into: w.record(pk) ?? record, update: update, w)
            // Its links and lists resolved, the record is final: encoded into the batch now, so that the write
            // holds no record per object (a later change decodes it back). Not for embedded objects, whose
            // parents may still change within this add.
            if !info.schema.isEmbedded {
                let version = w.encodedVersion ?? (self.shared.storedSchema.withLock { $0?.schemaVersion } ?? self.configuration.schemaVersion)
                if version == binding.schemaVersion, w.encodeRecord(pk, version: version) { w.encodedVersion = version }
            }
        }
    }

    /// Adds a new object of a type holding plain values whose setters recorded every value: its record is
    /// encoded from them straight into the transaction's batch (no array of values, no pending record). False when
    /// this path does not apply (a primary key that exists, is nil or is not an Int; another schema version):
    /// the caller takes the general one.
    /// The values are read from the object (`_setValues`, every one set), not passed: its array is then held
    /// once, and handed back to the type for its next object (`TypeInfo.recycleSetValues`).
    func addNew(_ object: Object, _ binding: TypeBinding, _ w: WriteState) -> Bool {
        let info = binding.info
        let version = w.encodedVersion ?? (shared.storedSchema.withLock { $0?.schemaVersion } ?? configuration.schemaVersion)
        guard version == binding.schemaVersion else { return false }
        let key: Int64
        if let pkIndex = info.primaryKeyIndex {
            guard binding.intPrimaryKey, case .int(let v)? = object._setValues.unsafelyUnwrapped[pkIndex], v != Self.nilIntPrimaryKey,
                objectKey(forPrimaryKey: .int(v), binding: binding) == nil
            else { return false }
            key = v
        } else {
            key = allocateKey(binding, w)
        }
        let pk = PendingKey(partition: binding.partition, key: key)
        guard w.addEncoded(pk, binding, encodeRecord: { binding.encodeFormat2(setter: object._setValues.unsafelyUnwrapped, into: &$0) })
        else { return false }
        w.encodedVersion = version
        attach(object, binding: binding, key: key)
        // The values are in the batch now; the write keeps no reference to the object (a cancel invalidates it
        // through its accessor).
        info.recycleSetValues(&object._setValues)
        object._setValues = nil
        return true
    }

    /// Gives the existing embedded object `key` the values of the unmanaged `object` (only those that differ),
    /// its nested links and lists included; `object` then is that managed child.
    func updateEmbedded(_ object: Object, _ binding: TypeBinding, _ key: Int64, _ w: WriteState) {
        let info = binding.info
        let record = pendingRecord(binding, key, w)
        var values = info.unmanagedValues(of: object)
        for j in info.requiredIndices where values[j].isNull { values[j] = info.defaults[j] }
        for j in values.indices where info.linkTargets[j] == nil && info.listTargets[j] == nil && record.values[j] != values[j] {
            record.values[j] = values[j]
        }
        let links = info.unmanagedLinks(of: object)
        let lists: [(Int, any StoredOnAdd)] = info.collectionsToStore(of: object)
        attach(object, binding: binding, key: key, added: false)
        resolve(links, lists, into: record, update: .modified, w)
    }

    func resolve(_ links: [Int: Object?], _ lists: [(Int, any StoredOnAdd)], into record: PendingRecord, update: Realm.UpdatePolicy, _ w: WriteState) {
        resolvingAdd += 1
        defer { resolvingAdd -= 1 }
        for (i, linked) in links {
            if let linked, let target = record.binding.info.linkTargets[i] {
                Self.checkLinkType(linked, target, "'\(record.binding.info.schema.className).\(record.binding.info.schema.properties[i].name)'")
            }
            // `.modified` edits an existing embedded child in place (O031): it stays the same object.
            if update == .modified, let linked, linked._accessor == nil, let target = record.binding.info.embeddedTargets[i],
                record.binding.info.linkTargets[i] != nil, case .link(let childKey) = record.values[i]
            {
                let childBinding = binding(forClass: target)
                if exists(binding: childBinding, key: childKey) {
                    updateEmbedded(linked, childBinding, childKey, w)
                    continue
                }
            }
            var v = link(to: linked, update: update)
            // An AnyRealmValue holding an object stores the object's type with its key.
            if record.binding.info.schema.properties[i].type == .any, case .link(let k) = v, let linked {
                v = AnyRealmValue.objectForm(type(of: linked).className(), k)
            }
            if update != .modified || record.values[i] != v {
                adopt(record.binding, i, old: record.values[i], new: v, w)
                record.values[i] = v
            }
        }
        for (i, list) in lists {
            let v = update == .modified ? updatedEmbeddedList(list, i, of: record, w) ?? list.storedElements(in: self, update: update)
                : list.storedElements(in: self, update: update)
            if update != .modified || record.values[i] != v {
                adopt(record.binding, i, old: record.values[i], new: v, w)
                record.values[i] = v
            }
        }
    }

    /// For `update: .modified`, a List of embedded objects as Realm updates it: the element at each position
    /// that already holds an embedded object edits that object in place (it stays the same object), further
    /// elements are added, and positions beyond the new elements are removed. Nil for any other property.
    func updatedEmbeddedList(_ list: any StoredOnAdd, _ i: Int, of record: PendingRecord, _ w: WriteState) -> StoredValue? {
        let info = record.binding.info
        guard let target = info.embeddedTargets[i], info.schema.properties[i].isArray, case .list(let old) = record.values[i],
              let elements = (list as? any ListStorage)?.anyElements
        else { return nil }
        let childBinding = binding(forClass: target)
        var keys: [StoredValue] = []
        keys.reserveCapacity(elements.count)
        for (n, element) in elements.enumerated() {
            guard let object = element as? Object else { return nil }
            if n < old.count, object._accessor == nil, case .link(let key) = old[n], exists(binding: childBinding, key: key) {
                updateEmbedded(object, childBinding, key, w)
                keys.append(.link(key))
            } else {
                keys.append(link(to: object, update: .modified))
            }
        }
        return .list(keys)
    }

    /// Keeps embedded objects owned by exactly one parent when property `i` of an object of `binding` goes
    /// from `old` to `new`: objects it gains must be new (added in this write, without a parent), objects it
    /// loses are deleted with what they embed. Nothing for other properties.
    func adopt(_ binding: TypeBinding, _ i: Int, old: StoredValue, new: StoredValue, _ w: WriteState) {
        // Every property write comes here: most types embed nothing, and answer without hashing.
        guard !binding.info.embeddedTargets.isEmpty, let target = binding.info.embeddedTargets[i] else { return }
        let childBinding = self.binding(forClass: target)
        let name = "\(binding.info.schema.className).\(binding.info.schema.properties[i].name)"
        let oldKeys = Self.linkKeys(old), newKeys = Self.linkKeys(new)
        let oldSet = Set(oldKeys), newSet = Set(newKeys)
        if newSet.count != newKeys.count { fatalError("\(name) cannot hold the same embedded \(target.className()) twice") }
        let property = binding.info.schema.properties[i]
        for k in newKeys where !oldSet.contains(k) {
            if w.orphans.remove(PendingKey(partition: childBinding.partition, key: k)) == nil {
                // RealmSwift's texts (O028), then which property and what to do instead.
                let reason = property.isMap ? "Cannot add an existing managed embedded object to a Dictionary."
                    : property.isCollection ? "Cannot add an existing managed embedded object to a List."
                    : "Can't set link to existing managed embedded object"
                fatalError("\(reason) (\(name): an embedded \(target.className()) belongs to one parent; assign a new, unmanaged one)")
            }
        }
        for k in oldKeys where !newSet.contains(k) { deleteCascading(childBinding, k, w, nullifyLinks: false) }
    }

    /// Deletes an object and the objects it embeds. `nullifyLinks`: links to it elsewhere become nil at commit
    /// (not needed when its parent is the one letting it go).
    func deleteCascading(_ binding: TypeBinding, _ key: Int64, _ w: WriteState, nullifyLinks: Bool, known: Bool = false) {
        guard known || exists(binding: binding, key: key) else { return }
        if binding.deletesWithoutReading {
            // Nothing to read for a deletion (no primary-key entry, nothing embedded): the pending entry says
            // deleted, without a record.
            w.markDeleted(PendingKey(partition: binding.partition, key: key), binding)
            if nullifyLinks { w.noteDeleted(binding, key) }
            return
        }
        let record = pendingRecord(binding, key, w)
        if record.deleted { return }
        if let pkIndex = binding.info.primaryKeyIndex, let pkPartition = binding.primaryKeyPartition {
            w.deletedPrimaryKeys.append((pkPartition, PrimaryKeyIndex.entry(record.values[pkIndex])))
            record.primaryKeyIndexEntry = nil
        }
        record.deleted = true
        w.orphans.remove(PendingKey(partition: binding.partition, key: key))
        if nullifyLinks { w.noteDeleted(binding, key) }
        for (i, target) in binding.info.embeddedTargets {
            let childBinding = self.binding(forClass: target)
            for k in Self.linkKeys(record.values[i]) { deleteCascading(childBinding, k, w, nullifyLinks: false) }
        }
    }

    /// The stored form of a link to `object`, adding it to this Realm first when it is unmanaged.
    func link(to object: Object?, update: Realm.UpdatePolicy = .error) -> StoredValue {
        guard var object else { return .null }
        // Adding or creating an object that holds a managed embedded object (another parent's) copies it, as
        // RealmSwift does (O031): an embedded object has one parent.
        if resolvingAdd > 0, object is EmbeddedObject, object._accessor != nil {
            let copy = Object.make(type(of: object))
            TypeRegistry.info(for: type(of: object)).assign(object, to: copy)
            object = copy
        }
        // `create(_:value:)` copies an object another Realm manages, as RealmSwift's does; `add` may not link one.
        // One copy per stored object, however many places of the value reach it (each read of a link makes a
        // new instance, so the row is the identity): cycles end, and a shared object is copied once.
        if creatingFromValue > 0, let accessor = object._accessor, accessor.core !== self {
            let row = ForeignRow(accessor)
            if let copied = foreignCopies[row] {
                object = copied
            } else {
                let copy = Object.make(type(of: object))
                foreignCopies[row] = copy
                TypeRegistry.info(for: type(of: object)).assign(object, to: copy)
                object = copy
            }
        }
        if object._accessor == nil { add(object, update: update, asChild: true) }
        guard let accessor = object._accessor, accessor.core === self else {
            fatalError("Object is already managed by another Realm. Use create instead to copy it into this Realm.")
        }
        return .link(accessor.key)
    }

    /// The object a link names in this Realm, or nil for no link or a deleted object.
    func linkedObject(_ stored: StoredValue, target: Object.Type) -> Object? {
        guard case .link(let key) = stored else { return nil }
        let b = binding(forClass: target)
        guard exists(binding: b, key: key) else { return nil }
        return makeObject(binding: b, key: key, record: nil)
    }

    /// The object a link of type `typeName` names, as a `DynamicObject` (`dynamicList` and its kin).
    func linkedDynamicObject(_ stored: StoredValue, typeName: String) -> Object? {
        guard case .link(let key) = stored else { return nil }
        let b = dynamicBinding(typeName)
        guard exists(binding: b, key: key) else { return nil }
        return makeObject(binding: b, key: key, record: nil)
    }

    /// Makes `object` the managed object `key`; `added`: its object is new in this write (a cancel invalidates it).
    func attach(_ object: Object, binding: TypeBinding, key: Int64, added: Bool = true) {
        let accessor = ObjectAccessor(core: self, binding: binding, key: key, record: nil)
        if added { accessor.addedIn = writeSerial }
        object._accessor = accessor
        object._unmanagedValues = nil
        if object._observation != nil { object._keepObservation(accessor) }
        if binding.info.hasLegacyProperties { binding.info.bindLegacyProperties(of: object) }
    }

    /// The pending record of an existing object, loading its current values on first change.
    func pendingRecord(_ binding: TypeBinding, _ key: Int64, _ w: WriteState) -> PendingRecord {
        let pk = PendingKey(partition: binding.partition, key: key)
        if let r = w.record(pk) { return r }
        var values = binding.info.defaults
        mustRead("\(binding.info.schema.className) #\(key)") {
            try ObjectKey.withBytes(key) { k in
                try w.tx.view.visitValue(forKey: k, in: binding.partition) { raw in
                    guard let raw else { return }
                    values = binding.migratedValues(raw) ?? binding.info.schema.properties.indices.map { binding.value($0, in: raw) }
                }
            }
        }
        let r = PendingRecord(binding: binding, values: values)
        w.setPending(pk, r)
        return r
    }

    func delete(_ object: Object) {
        let w = requireWrite("deleting a \(object._accessor?.binding.info.schema.className ?? type(of: object).className())")
        guard let accessor = object._accessor, accessor.core === self else {
            fatalError("Can only delete an object from the Realm it belongs to.")
        }
        require(objectExists(accessor), "Object has been deleted or invalidated.")
        deleteCascading(accessor.binding, accessor.key, w, nullifyLinks: true, known: true)
        accessor.removed = true
    }

    /// Deletes the objects `results` matches, by key: a query's matches are deleted without an object made for
    /// each. A collection's results may name an object twice; it is deleted once.
    func delete<T: Object>(_ results: Results<T>) {
        guard results.core === self else { fatalError("Can only delete an object from the Realm it belongs to.") }
        // Evaluated first: the results' cache (a count just before) holds until the write changes something.
        let keys = results.evaluated(needsRecords: false).keys
        let w = requireWrite("deleting \(results.binding.info.schema.className) objects")
        let binding = results.binding
        // A query's keys are live objects, each once; a collection's are checked (a list may repeat one).
        let known = results.base == nil
        if known && binding.deletesWithoutReading {
            // Nothing to read for these deletions (no primary-key entry, nothing embedded): their pending entries
            // say deleted, a few thousand at a time (spilling between them, as between operations).
            var start = keys.startIndex
            while start < keys.endIndex {
                spillIfDue(w)
                let end = min(start + 4096, keys.endIndex)
                w.markDeleted(keys[start..<end], binding)
                w.noteDeleted(binding, keys[start..<end])
                start = end
            }
            return
        }
        for key in keys {
            // Between deletions, as between the operations of a write: a large delete spills.
            spillIfDue(w)
            deleteCascading(binding, key, w, nullifyLinks: true, known: known)
        }
    }

    func deleteAll() {
        let w = requireWrite("deleteAll()")
        let stored = shared.storedSchema.withLock { $0 }
        w.droppedPartitions = true
        for t in stored?.types ?? [] {
            // Dropping a partition is O(1) in the engine. It fails only on a transaction the engine refuses
            // (closed, over its size limit): deleteAll cannot throw, and half a deleteAll is not an answer.
            w.dropped.insert(t.partition)
            if let p = t.primaryKeyPartition { w.dropped.insert(p) }
            do {
                try w.tx.dropPartition(t.partition)
                if let p = t.primaryKeyPartition { try w.tx.dropPartition(p) }
                // The type's indexes stay listed: empty, they are right for no objects.
                for index in t.indexes ?? [] { try w.tx.dropPartition(index.partition) }
            } catch {
                fatalError("deleteAll in \(shared.displayName) failed on \(t.name): \(error)\(RealmCore.damageAdvice)")
            }
            w.removePending(partition: t.partition)
        }
    }

    // MARK: - Writes (continued)

    /// Writes property `index` of a managed object (in a write transaction).
    func write(_ accessor: ObjectAccessor, _ index: Int, _ value: StoredValue) {
        // The usual set: a value of a type holding plain values, written into the object's record in the batch.
        // The write and the binding are used unretained (a retain and a release are atomic operations, and cost
        // more than the rest of a set): the core holds its write and the accessor its binding, and a set lets
        // neither go (a spill replaces the write's pending objects, not the write).
        if let write = writeUnretained,
            write._withUnsafeGuaranteedRef({ w in
                Unmanaged.passUnretained(accessor.binding)._withUnsafeGuaranteedRef { binding in
                    binding.info.holdsValuesOnly && index != binding.info.primaryKeyIndex && (!value.isNull || binding.isOptional[index])
                        && !accessor.isDead && writeIntoRecord(w, accessor, binding, index, value)
                }
            })
        {
            return
        }
        let w = requireWrite("setting \(accessor.binding.info.schema.className).\(accessor.binding.info.schema.properties[index].name)")
        require(!accessor.isDead, "Object has been deleted or invalidated.")
        let binding = accessor.binding
        // From the binding's flat arrays: a copy of the property's schema retained and released its strings on
        // every set.
        require(index != binding.info.primaryKeyIndex, "Primary key can't be changed after an object is inserted.")
        require(
            !value.isNull || binding.isOptional[index],
            "\(binding.info.schema.className).\(binding.info.schema.properties[index].name) is not optional and cannot be set to nil")
        require(objectExists(accessor), "Object has been deleted or invalidated.")
        let record = pendingRecord(accessor.binding, accessor.key, w)
        adopt(accessor.binding, index, old: record.values[index], new: value, w)
        record.values[index] = value
    }

    /// A value of a type holding plain values (`binding`, whose checks the caller made), written into the
    /// object's encoded record in the transaction's batch (put there from the stored record on its first change)
    /// in place when it is fixed-width, by encoding the record again otherwise; no pending record made. False
    /// when none of that applies (a record at another schema version, or one the batch refused): the caller
    /// makes a pending record.
    @inline(__always)
    private func writeIntoRecord(_ w: WriteState, _ accessor: ObjectAccessor, _ binding: TypeBinding, _ index: Int, _ value: StoredValue) -> Bool {
        writeChanges += 1
        spillIfDue(w)
        let version = w.encodedVersion ?? (shared.storedSchema.withLock { $0?.schemaVersion } ?? configuration.schemaVersion)
        guard version == binding.schemaVersion else { return false }
        let pk = PendingKey(partition: binding.partition, key: accessor.key)
        let patched = w.patch(pk, index, value)
        if patched == .done { return true }
        if patched == .noEntry, !w.isDropped(binding.partition) {
            // Its stored record is copied into the batch with the value written on the way.
            var copied: (added: Bool, set: Bool) = (false, false)
            if accessor.recordVersion == versionToken, !spilledOver(w, binding.partition, accessor.key),
                let done = accessor.withRecord({ record in
                    record.count > 0 && binding.hasCurrentLayout(record)
                        ? w.addStored(pk, binding, record, setting: index, value) : (false, false)
                })
            {
                // The record the object was read with is the stored one: this write has not changed it.
                copied = done
            } else {
                mustRead("\(binding.info.schema.className) #\(accessor.key)") {
                    try ObjectKey.withBytes(accessor.key) { k in
                        try w.tx.view.visitValue(forKey: k, in: binding.partition) { v in
                            guard let v, binding.hasCurrentLayout(v) else { return }
                            copied = w.addStored(pk, binding, v, setting: index, value)
                        }
                    }
                }
            }
            if copied.added { w.encodedVersion = version }
            if copied.set { return true }
        }
        // A value no slot holds (a string, data): the record is encoded again into the batch.
        if w.reencode(pk, index, value, version: version) {
            w.encodedVersion = version
            return true
        }
        return false
    }
}
