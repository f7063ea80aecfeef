@_spi(EngineInternals) import Engine
import Foundation

// Invariants:
// (1) On the other core only `PlainCapture.take` runs, for keys the caller does not take: it reads the write (its
//     pending objects and its batch, through `WriteState.visitEncoded`), the write's base and what it spilled,
//     and writes only its own capture's buffers. The caller reads the same things (its own half, with its own
//     capture and lookups) and changes nothing of the write until `wait()` has returned: the objects either half
//     declines take the general path afterwards, which writes to the transaction.
// (2) `WriteState`'s last-partition cache is set to the partition before the other core starts
//     (`prepareConcurrentReads`), so that neither thread's reads of the partition's pending objects write it.

extension PlainCapture {
    /// The upper half of a large type's new and changed objects, taken on another core while the caller takes the
    /// lower half: a large write's commit otherwise records its operations on one core, while the second (which
    /// the write's spills used) waits.
    final class Concurrent: @unchecked Sendable {  // @unchecked: the other core runs `run` while the caller waits for `done` before reading `result`, and reads nothing it changes (invariant 1)
        /// Fewer objects than this are taken on the caller's core alone: starting the other costs tens of
        /// microseconds.
        static let minimumObjects = 16_384

        /// Where `keys` (ascending) is cut: the first key the other core takes, `keys.count` when it takes none.
        /// A key that appears more than once stays on one side.
        static func split(_ keys: [Int64]) -> Int {
            guard keys.count >= minimumObjects, ProcessInfo.processInfo.activeProcessorCount > 1 else { return keys.count }
            var cut = keys.count / 2
            while cut < keys.count, keys[cut] == keys[cut - 1] { cut += 1 }
            return cut
        }

        /// Where the other half runs: a serial queue of its own, as the engine's spill worker has, not the shared
        /// global pool (whose threads may all be waiting, for this write's gate among other things, while the
        /// commit waits for the other half). Commits of different databases take turns on it.
        private static let queue = DispatchQueue(label: "strata.capture.concurrent", qos: .userInitiated)
        /// How many times another core took half of a write (tests check that a large write did).
        static let started = Locked(0)

        /// The capture the other core fills: its runs are handed over by the caller (`finish`) after `wait()`.
        let capture: PlainCapture
        private let keys: ArraySlice<Int64>
        private let write: RealmCore.WriteState
        private let partition: UInt32
        private let largestBase: Int64
        private let old: OrderedLookup
        private let new: OrderedLookup
        private let done = DispatchSemaphore(value: 0)
        private var result: Result<[Int64], any Error> = .success([])

        /// Starts taking `keys` (ascending) of `partition` on another core, with a capture set up as `plain` and
        /// lookups of its own: `old` reads the write's base, `new` what the write spilled (or its view).
        init(
            _ keys: ArraySlice<Int64>, like plain: PlainCapture, write w: RealmCore.WriteState, partition: UInt32, largestBase: Int64,
            old: OrderedLookup?, new: OrderedLookup?
        ) throws {
            guard let old, let new else { throw StorageError(.invalidArgument, "capture's concurrent half needs the base and the write's view") }
            capture = PlainCapture(plain.shape)
            capture.takesCreates = plain.takesCreates
            capture.takesChanges = plain.takesChanges
            capture.metadataAt = plain.metadataAt
            self.keys = keys
            self.write = w
            self.partition = partition
            self.largestBase = largestBase
            self.old = old
            self.new = new
            w.prepareConcurrentReads(partition)
            Self.started.withLock { $0 += 1 }
            Self.queue.async { [self] in
                result = Result { try run() }
                done.signal()
            }
        }

        /// Waits for the other core; returns the keys it declined, ascending, or throws what it threw. Called once.
        func wait() throws -> [Int64] {
            done.wait()
            return try result.get()
        }

        private func run() throws -> [Int64] {
            var declined: [Int64] = []
            var previous: Int64?
            // Held by `self` for the loop.
            let (o, n) = (Unmanaged.passUnretained(old), Unmanaged.passUnretained(new))
            for key in keys where key != previous {
                previous = key
                let took = try capture.take(key, isNew: key > largestBase, write: write, partition: partition, old: o, new: n)
                if !took { declined.append(key) }
            }
            return declined
        }
    }
}
