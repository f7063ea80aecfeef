import Engine
import Foundation

// Iterating a Results: streaming scans of the engine, reusing one object where the loop lets it go.

extension Results {
    /// The state of a streaming scan, shared by copies of its iterator (they move one scan): the engine's
    /// iterator and the object handed out last, which the next step reuses or lets keep its record.
    final class ScanState {
        let stream: MergingIterator
        // Used by one thread at a time, without re-entry (an iterator is not shared across threads): dynamic
        // exclusivity checks are off, as on an accessor's fields.
        @exclusivity(unchecked) var started = false
        @exclusivity(unchecked) var last: Object? = nil
        init(stream: MergingIterator) { self.stream = stream }
        deinit {
            // The last object, or its accessor, when the loop kept it (`first(where:)`'s answer, a list view
            // taken before a `break`), is no cursor any more: it reads its own copy of its record from here on
            // (and records its reads for Observation).
            guard last != nil, last!._accessor != nil else { return }
            if !isKnownUniquelyReferenced(&last!) || !isKnownUniquelyReferenced(&last!._accessor!) { last!._accessor!.keepRecord() }
        }
    }

    public struct Iterator: IteratorProtocol {
        let results: Results
        /// Streaming over the engine (no query, no sort; in a write, none of the type's objects changed yet): no
        /// list is built first.
        let state: ScanState?
        let keys: [Int64]
        let records: [[UInt8]?]
        /// For values: the stored values to hand out, and how they become elements.
        let items: [StoredValue]
        private let values: ValueSource<Element>?
        /// For projections: the projection of each object.
        @usableFromInline let projector: ((Object) -> Element)?
        var i = 0
        /// Whether the binding's objects are exactly `Element`s (then no dynamic cast is needed).
        @usableFromInline let exactClass: Bool
        /// Whether records may need an online migration's transforms.
        let needsMigration: Bool
        /// Whether objects are lent their records in the scan's blocks. Not for a frozen Realm: its objects may
        /// be read on other threads while this one moves the scan on, and a lent record is copied then.
        let lends: Bool
        /// The version the stream reads, stamped on the objects it makes.
        let streamVersion: UInt64
        // The Results' core and binding, held directly: the hot path touches nothing else of `results`.
        private let core: RealmCore
        private let binding: TypeBinding
        /// `state` again, unretained, for the per-object steps: `state` (a `let` of this iterator) keeps it
        /// alive for as long as this reference can be used, and each retain and release of a use costs more
        /// than the rest of a step's bookkeeping.
        private unowned(unsafe) let scan: ScanState?
        /// Whether the type has `let` properties (`RealmProperty`), whose objects are never reused.
        private let hasLegacyProperties: Bool

        init(results: Results, stream: MergingIterator?, keys: [Int64], records: [[UInt8]?], items: [StoredValue] = []) {
            self.results = results
            self.items = items
            values = results.values
            projector = results.projector
            let state = stream.map { ScanState(stream: $0) }
            self.state = state
            self.keys = keys
            self.records = records
            exactClass = results.binding.objectClass == Element.self
            needsMigration = results.binding.migration != nil
            lends = !results.core.isFrozen
            streamVersion = results.core.versionToken
            core = results.core
            binding = results.binding
            scan = state
            hasLegacyProperties = results.binding.info.hasLegacyProperties
        }

        /// Before the scan moves on: the object handed out last when nothing but the scan refers to it any more
        /// (the loop body kept no reference), to be pointed at the next record; nil otherwise. Whatever may
        /// still read the bytes lent to it (the object, kept elsewhere; its accessor, held by a list or map
        /// view) first gets its own copy of them.
        /// Also says whether the object's accessor is its alone (then it is pointed at the next record too).
        @inline(__always)
        private func takeReusable(_ state: ScanState) -> (object: Object, ownAccessor: Bool)? {
            guard state.last != nil else { return nil }
            // An object with `let` properties is never reused: they may outlive it, bound to its accessor.
            if !hasLegacyProperties, isKnownUniquelyReferenced(&state.last!) {
                let object = state.last!
                guard object._accessor != nil else { return (object, false) }
                if isKnownUniquelyReferenced(&object._accessor!) { return (object, true) }
                object._accessor!.keepRecord()
                return (object, false)
            }
            state.last!._accessor?.keepRecord()
            state.last = nil
            return nil
        }

        /// Inlined into the loop, and so specialized for its element type: the step's object comes from the
        /// non-generic work below, and handing it out as an `Element` is a move (unspecialized, it went through
        /// the element type's metadata at every step).
        @inlinable
        public mutating func next() -> Element? {
            guard let object = _nextObject() else { return _nextValue() }
            if let projector { return projector(object) }
            return exactClass ? unsafeBitCast(object, to: Element.self) : object as! Element
        }

        @usableFromInline
        mutating func _nextObject() -> Object? { nextObject() }

        /// The next value of a Results of values; nil at the end (and always for objects).
        @usableFromInline
        mutating func _nextValue() -> Element? {
            guard let values, i < items.count else { return nil }
            defer { i += 1 }
            return values.element(items[i], in: core)
        }

        /// The next object of an object or projection Results; nil at the end (and always for values).
        @inline(__always)
        private mutating func nextObject() -> Object? {
            if state != nil, let scan {
                let stream = scan.stream
                let reusable = takeReusable(scan)
                do {
                    if scan.started { try stream.next() } else { scan.started = true }
                } catch {
                    fatalError("reading \(results.binding.info.schema.className) failed: \(error)\(RealmCore.damageAdvice)")
                }
                guard stream.isValid, let value = stream.value, let key = ObjectKey.decode(stream.currentKey) else { return nil }
                if needsMigration, let record = binding.migratedRecord(value) {
                    // Through the pending transforms, encoded at the current version: the object owns the
                    // record, and the next one reuses the object as a lent record would.
                    if let (object, ownAccessor) = reusable, ownAccessor {
                        object._accessor!.reset(key: key, record: record, version: streamVersion)
                        return object
                    }
                    let made = core.makeObject(binding: binding, key: key, currentRecord: record, version: streamVersion)
                    let object = made
                    if lends { scan.last = object }
                    return object
                }
                if !lends {
                    let made = core.makeObject(binding: binding, key: key, currentRecord: [UInt8](value), version: streamVersion)
                    return made
                }
                if let (object, ownAccessor) = reusable {
                    if ownAccessor {
                        object._accessor!.lend(key: key, value, by: stream, version: streamVersion)
                    } else {
                        // A list or another view of the old object keeps its accessor (with its own copy, made
                        // above): this object gets a new one.
                        object._accessor = ObjectAccessor(core: core, binding: binding, key: key, lent: value, lender: stream, version: streamVersion)
                    }
                    return object
                }
                let made = core.makeObject(binding: binding, key: key, lent: value, lender: stream, version: streamVersion)
                let object = made
                scan.last = object
                return object
            }
            guard i < keys.count else { return nil }
            defer { i += 1 }
            return core.makeObject(binding: binding, key: keys[i], record: i < records.count ? records[i] : nil)
        }
    }

    public func makeIterator() -> Iterator {
        if core.tracksObservation { observeRead(count: false) }
        if values != nil { return Iterator(results: self, stream: nil, keys: [], records: [], items: valueItems()) }
        if predicate == nil && sort.isEmpty && distinctKeys.isEmpty && base == nil {
            if let w = core.write {
                // In a write, iteration sees the objects as they were when it began (Realm's snapshot of a
                // Results enumerated in a write). With none of the type's objects changed yet, that is the
                // write's base snapshot, streamed. An object the loop changes or deletes before the scan reaches
                // it still reads as the write left it: reads in a write look at the write's changes first.
                if !w.hasEntries(in: binding.partition), !w.isDropped(binding.partition) {
                    let stream = core.mustRead("the objects of \(binding.info.schema.className)") { try w.tx.snapshot.makeIterator(binding.partition) }
                    return Iterator(results: self, stream: stream, keys: [], records: [])
                }
            } else {
                let stream = core.mustRead("the objects of \(binding.info.schema.className)") {
                    try core.readSnapshot.makeIterator(binding.partition)
                }
                return Iterator(results: self, stream: stream, keys: [], records: [])
            }
        }
        let c = evaluated()
        return Iterator(results: self, stream: nil, keys: c.keys, records: c.records)
    }
}
