// Invariants:
// (1) The iterator, when there is one, stands at the first live key at or after the last key asked for in order
//     (`lastAsked`): a key asked next that sorts below the iterator's and at or after `lastAsked` has no value.
// (2) A key asked out of order is looked up on its own and leaves the iterator where it was.

/// Point reads of one partition of a snapshot for keys asked in ascending order, by one forward iterator: a key
/// close after the last costs a step or a few of the iterator instead of a lookup in every source (a commit that
/// reads back each object it touched, in key order). A key far ahead moves the iterator there in one seek; a
/// key asked out of order is an ordinary lookup.
package final class OrderedLookup {
    private let snapshot: Snapshot
    private let partition: UInt32
    private var iterator: MergingIterator?
    /// The last key asked for in order (its buffer reused), none before the first.
    private var lastAsked: [UInt8] = []
    private var asked = false
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
        asked = true
        lastAsked.removeAll(keepingCapacity: true)
        lastAsked.append(contentsOf: key)
        guard let it = try positioned(at: key) else { return try body(nil) }
        guard it.isValid, Bytes.compare(it.currentKey, key) == 0 else { return try body(nil) }
        try body(it.value)
    }

    /// The iterator at the first live key at or after `key` (Invariant 1).
    private func positioned(at key: UnsafeRawBufferPointer) throws -> MergingIterator? {
        if let it = iterator {
            var steps = 0
            while it.isValid && Bytes.compare(it.currentKey, key) < 0 && steps < Self.maxSteps {
                try it.next()
                steps += 1
            }
            if !it.isValid || Bytes.compare(it.currentKey, key) >= 0 { return it }
        }
        let it = try snapshot.makeIterator(partition, from: key)
        iterator = it
        return it
    }
}
