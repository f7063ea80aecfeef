// Invariants:
// (1) The iterator, when there is one, stands at the first live key at or after the last key asked for in order
//     (`lastAsked`): a key asked next that sorts below the iterator's and at or after `lastAsked` has no value.
//     The first key asked makes no iterator (it is looked up on its own); the next key asked in order makes it,
//     at that key.
// (2) A key asked out of order is looked up on its own and leaves the iterator where it was.

/// Point reads of one partition of a snapshot for keys asked in ascending order, by one forward iterator: a key
/// close after the last costs a step or a few of the iterator instead of a lookup in every source (a commit that
/// reads back each object it touched, in key order). A key far ahead moves the iterator there in one seek; a
/// key asked out of order is an ordinary lookup.
package final class OrderedLookup {
    private let snapshot: Snapshot
    private let partition: UInt32
    // One reader on one thread uses a lookup: dynamic exclusivity checks are off for its state.
    /// The iterator, held here, and the same unretained (what each lookup uses: no retain per key).
    @exclusivity(unchecked) private var held: MergingIterator?
    @exclusivity(unchecked) private var iterator: Unmanaged<MergingIterator>?
    /// The last key asked for in order (its buffer reused), none before the first.
    @exclusivity(unchecked) private var lastAsked: [UInt8] = []
    @exclusivity(unchecked) private var asked = false
    /// Steps taken before a seek: beyond them the keys asked for are sparse, and a seek costs less.
    private static let maxSteps = 8

    package init(_ snapshot: Snapshot, partition: UInt32) {
        self.snapshot = snapshot
        self.partition = partition
    }

    /// Calls `body` with the value of `key`, or nil when it has none, as `Snapshot.visitValue` does.
    package func visitValue(forKey key: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer?) throws -> Void) throws {
        if asked, lastAsked.withUnsafeBytes({ Bytes.compare(key, $0) < 0 }) {
            return try snapshot.visitValue(forKey: key, in: partition, body)
        }
        lastAsked.removeAll(keepingCapacity: true)
        lastAsked.append(contentsOf: key)
        // The first key is looked up on its own: an iterator costs more than a lookup to set up, and a commit
        // that touched one object asks for one key.
        guard asked else {
            asked = true
            return try snapshot.visitValue(forKey: key, in: partition, body)
        }
        // The iterator is held by `self` for the call (only a later call replaces it): used unretained.
        try positioned(at: key)._withUnsafeGuaranteedRef { it in
            guard it.isValid, Bytes.compare(it.currentKey, key) == 0 else { return try body(nil) }
            try body(it.value)
        }
    }

    /// The iterator at the first live key at or after `key` (Invariant 1), unretained (`self` holds it).
    private func positioned(at key: UnsafeRawBufferPointer) throws -> Unmanaged<MergingIterator> {
        if let it = iterator {
            let reached = try it._withUnsafeGuaranteedRef { it in
                var steps = 0
                while it.isValid && Bytes.compare(it.currentKey, key) < 0 && steps < Self.maxSteps {
                    try it.next()
                    steps += 1
                }
                return !it.isValid || Bytes.compare(it.currentKey, key) >= 0
            }
            if reached { return it }
        }
        let it = try snapshot.makeIterator(partition, from: key)
        held = it
        iterator = Unmanaged.passUnretained(it)
        return Unmanaged.passUnretained(it)
    }
}
