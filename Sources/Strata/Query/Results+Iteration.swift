import Engine
import Foundation

// Iterating a Results: streaming scans of the engine, reusing one object where the loop lets it go.

/// A streaming scan of one type's objects, and the object handed out last, which the next step reuses or lets
/// keep its record. Not generic: a loop's `next()` is inlined and specialized for its element type, and this is
/// the per-object work it calls, compiled once, with the scan's fields at fixed offsets. Shared by copies of an
/// iterator (they move one scan).
@usableFromInline
final class ObjectStream {
    let stream: MergingIterator
    private let core: RealmCore
    private let binding: TypeBinding
    /// Whether records may need an online migration's transforms.
    private let needsMigration: Bool
    /// Whether objects are lent their records in the scan's blocks. Not for a frozen Realm: its objects may be
    /// read on other threads while this one moves the scan on, and a lent record is copied then.
    private let lends: Bool
    /// The version the stream reads, stamped on the objects it makes.
    private let version: UInt64
    /// Whether the type has `let` properties (`RealmProperty`), whose objects are never reused.
    private let hasLegacyProperties: Bool
    // Used by one thread at a time, without re-entry (an iterator is not shared across threads): dynamic
    // exclusivity checks are off, as on an accessor's fields.
    @exclusivity(unchecked) private var started = false
    @exclusivity(unchecked) private var last: Object? = nil

    init(stream: MergingIterator, core: RealmCore, binding: TypeBinding) {
        self.stream = stream
        self.core = core
        self.binding = binding
        needsMigration = binding.migration != nil
        lends = !core.isFrozen
        version = core.versionToken
        hasLegacyProperties = binding.info.hasLegacyProperties
    }

    deinit {
        // The last object, or its accessor, when the loop kept it (`first(where:)`'s answer, a list view taken
        // before a `break`), is no cursor any more: it reads its own copy of its record from here on (and
        // records its reads for Observation).
        guard last != nil, last!._accessor != nil else { return }
        if !isKnownUniquelyReferenced(&last!) || !isKnownUniquelyReferenced(&last!._accessor!) { last!._accessor!.keepRecord() }
    }

    /// What the step may reuse of the object handed out last (which stays in `last` when reused).
    enum Reuse {
        /// Nothing: `last` is nil.
        case nothing
        /// The object, with a new accessor.
        case object
        /// The object and its accessor.
        case objectAndAccessor
    }

    /// Before the scan moves on: whether the object handed out last is referred to by nothing but the scan (the
    /// loop body kept no reference), to be pointed at the next record; otherwise `last` is let go. Whatever may
    /// still read the bytes lent to it (the object, kept elsewhere; its accessor, held by a list or map view)
    /// first gets its own copy of them. Also says whether the object's accessor is its alone (then it is pointed
    /// at the next record too). Done in place: moving the object out and back cost a release per step.
    @inline(__always)
    private func reusable() -> Reuse {
        guard last != nil else { return .nothing }
        // An object with `let` properties is never reused: they may outlive it, bound to its accessor.
        if !hasLegacyProperties, isKnownUniquelyReferenced(&last!) {
            guard last!._accessor != nil else { return .object }
            if isKnownUniquelyReferenced(&last!._accessor!) { return .objectAndAccessor }
            last!._accessor!.keepRecord()
            return .object
        }
        last!._accessor?.keepRecord()
        last = nil
        return .nothing
    }

    /// A read of the scan failed: out of line, so that formatting the message costs the step nothing.
    @inline(never)
    private func failed(_ error: any Error) -> Never {
        fatalError("reading \(binding.info.schema.className) failed: \(error)\(RealmCore.damageAdvice)")
    }

    /// The next object; nil at the end.
    @usableFromInline
    func next() -> Object? {
        let reuse = reusable()
        do {
            if started { try stream.next() } else { started = true }
        } catch {
            failed(error)
        }
        guard let (rawKey, stored) = stream.entry, let value = stored, let key = ObjectKey.decode(rawKey) else {
            last = nil
            return nil
        }
        if needsMigration, let record = binding.migratedRecord(value) {
            // Through the pending transforms, encoded at the current version: the object owns the record, and
            // the next one reuses the object as a lent record would.
            if reuse == .objectAndAccessor {
                last!._accessor!.reset(key: key, record: record, version: version)
                return last
            }
            let object = make(key: key, record: record)
            if lends { last = object }
            return object
        }
        if !lends {
            return make(key: key, record: [UInt8](value))
        }
        switch reuse {
        case .objectAndAccessor:
            // `last` keeps the accessor for the call: unretained.
            Unmanaged.passUnretained(last.unsafelyUnwrapped._accessor.unsafelyUnwrapped)._withUnsafeGuaranteedRef {
                $0.lend(key: key, value, by: stream, version: version)
            }
            return last
        case .object:
            // A list or another view of the old object keeps its accessor (with its own copy, made above): this
            // object gets a new one.
            last!._accessor = ObjectAccessor(core: core, binding: binding, key: key, lent: value, lender: stream, version: version)
            return last
        case .nothing:
            let object = make(key: key, lent: value)
            last = object
            return object
        }
    }

    // Making an object, out of line: inlined, its code (reflection for `let` properties among it) made every
    // step set up a frame for it.
    @inline(never)
    private func make(key: Int64, record: [UInt8]) -> Object {
        core.makeObject(binding: binding, key: key, currentRecord: record, version: version)
    }

    @inline(never)
    private func make(key: Int64, lent: UnsafeRawBufferPointer) -> Object {
        core.makeObject(binding: binding, key: key, lent: lent, lender: stream, version: version)
    }
}

extension Results {
    public struct Iterator: IteratorProtocol {
        let results: Results
        /// Streaming over the engine (no query, no sort; in a write, none of the type's objects changed yet): no
        /// list is built first.
        @usableFromInline let objects: ObjectStream?
        /// `objects` again, unretained, for the steps: `objects` (a `let` of this iterator) keeps it alive for as
        /// long as this reference can be used, and a retain and release around each step cost more than the
        /// rest of its bookkeeping.
        @usableFromInline let stepper: Unmanaged<ObjectStream>?
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

        init(results: Results, stream: MergingIterator?, keys: [Int64], records: [[UInt8]?], items: [StoredValue] = []) {
            self.results = results
            self.items = items
            values = results.values
            projector = results.projector
            let objects = stream.map { ObjectStream(stream: $0, core: results.core, binding: results.binding) }
            self.objects = objects
            stepper = objects.map { Unmanaged.passUnretained($0) }
            self.keys = keys
            self.records = records
            exactClass = results.binding.objectClass == Element.self
        }

        /// Inlined into the loop, and so specialized for its element type: the step's object comes from the
        /// non-generic work of `ObjectStream`, and handing it out as an `Element` is a move (unspecialized, it
        /// went through the element type's metadata at every step).
        @inlinable
        public mutating func next() -> Element? {
            let next: Object?
            if let stepper {
                // `objects` keeps the stream alive across the step, without a retain.
                next = withExtendedLifetime(objects) { stepper._withUnsafeGuaranteedRef { $0.next() } }
            } else {
                next = _nextListed()
            }
            guard let object = next else { return _nextValue() }
            if let projector { return projector(object) }
            return exactClass ? unsafeBitCast(object, to: Element.self) : object as! Element
        }

        /// The next object of an evaluated object or projection Results; nil at the end (and always for values).
        @usableFromInline
        mutating func _nextListed() -> Object? {
            guard i < keys.count else { return nil }
            defer { i += 1 }
            return results.core.makeObject(binding: results.binding, key: keys[i], record: i < records.count ? records[i] : nil)
        }

        /// The next value of a Results of values; nil at the end (and always for objects).
        @usableFromInline
        mutating func _nextValue() -> Element? {
            guard let values, i < items.count else { return nil }
            defer { i += 1 }
            return values.element(items[i], in: results.core)
        }
    }

    public func makeIterator() -> Iterator {
        if core.tracksObservation { observeRead(count: false) }
        if values != nil { return Iterator(results: self, stream: nil, keys: [], records: [], items: valueItems()) }
        if predicate == nil && sort.isEmpty && distinctKeys.isEmpty && base == nil {
            if let w = core.write {
                // In a write, iteration sees the objects as they were when it began (Realm's snapshot of a
                // Results enumerated in a write). With none of the type's objects pending, that is the write's
                // view (its base, with what it spilled), streamed. An object the loop changes or deletes before the scan reaches
                // it still reads as the write left it: reads in a write look at the write's changes first.
                if !w.hasEntries(in: binding.partition), !w.isDropped(binding.partition) {
                    let stream = core.mustRead("the objects of \(binding.info.schema.className)") { try w.tx.view.makeIterator(binding.partition) }
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
