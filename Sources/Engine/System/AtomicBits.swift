import Atomics

// Pointer code (audited, UnsafeCodeAuditTests): the words of a bit set, in memory this class allocates, owns
// and frees, read and written only through swift-atomics' `UnsafeAtomic` at an index checked against the count.

/// Bits that are set once each and read without a lock: which pages of a segment's index, or chunks of its key
/// filter, were checked. A bit read as clear only costs a check done twice.
///
/// The words live in one allocation: an array of `ManagedAtomic` would be an object per word, retained and
/// released at every read (seven times per segment in a point read's filter probes).
package final class AtomicBits: @unchecked Sendable {
    private typealias Word = UnsafeAtomic<UInt64>
    /// `wordCount` words of bits, then one word counting the bits set.
    private let words: UnsafeMutablePointer<Word.Storage>
    private let wordCount: Int
    private let count: Int

    package init(count: Int) {
        self.count = count
        wordCount = max(1, (count + 63) >> 6)
        words = UnsafeMutablePointer<Word.Storage>.allocate(capacity: wordCount + 1)
        words.initialize(repeating: Word.Storage(0), count: wordCount + 1)
    }

    deinit {
        words.deinitialize(count: wordCount + 1)
        words.deallocate()
    }

    @inline(__always)
    private func word(_ i: Int) -> Word {
        let w = i >> 6
        require(i >= 0 && i < count, "bit \(i) of a set of \(count)")
        return Word(at: words + w)
    }

    @inline(__always)
    package func contains(_ i: Int) -> Bool {
        word(i).load(ordering: .acquiring) & (1 << UInt64(i & 63)) != 0
    }

    /// Whether every bit is set (one load: what lets a reader skip the per-bit checks once all are done).
    @inline(__always)
    package var isFull: Bool {
        Word(at: words + wordCount).load(ordering: .acquiring) == UInt64(count)
    }

    package func insert(_ i: Int) {
        let bit: UInt64 = 1 << UInt64(i & 63)
        if word(i).loadThenBitwiseOr(with: bit, ordering: .acquiringAndReleasing) & bit == 0 {
            Word(at: words + wordCount).wrappingIncrement(ordering: .acquiringAndReleasing)
        }
    }
}
