import Engine
import Foundation

/// What a write transaction holds until it commits: the pending records of the objects it added, changed or
/// deleted, by partition and key.
extension RealmCore {
    /// A pending object of the current write transaction.
    final class PendingRecord {
        let binding: TypeBinding
        var values: [StoredValue]
        var deleted = false
        /// The primary-key index entry to add (types with a non-Int primary key).
        var primaryKeyIndexEntry: [UInt8]?
        init(binding: TypeBinding, values: [StoredValue]) {
            self.binding = binding
            self.values = values
        }
    }

    struct PendingKey: Hashable, Comparable {
        var partition: UInt32
        var key: Int64

        static func < (a: PendingKey, b: PendingKey) -> Bool {
            a.partition != b.partition ? a.partition < b.partition : a.key < b.key
        }

        /// Both fields in one word, for hashing (equal keys give equal words; unequal ones rarely do).
        private var packed: Int64 { Int64(bitPattern: UInt64(partition) << 48 ^ UInt64(bitPattern: key)) }
        func hash(into hasher: inout Hasher) { hasher.combine(packed) }
        /// One-word hashing, as Int64 does it: a large write hashes every key it touches several times, and a
        /// general `Hasher` per hash was a tenth of an insert.
        func _rawHashValue(seed: Int) -> Int { packed._rawHashValue(seed: seed) }
    }

    final class WriteState {
        let tx: WriteTransaction
        /// The pending records; add them with `setPending`, which keeps `order`.
        private(set) var pending: [PendingKey: PendingRecord] = [:]
        /// The keys of `pending` in the order they were first added.
        private(set) var order: [PendingKey] = []

        /// Sets the pending record of `key`; true when it had none.
        @discardableResult
        func setPending(_ key: PendingKey, _ record: PendingRecord) -> Bool {
            guard pending.updateValue(record, forKey: key) == nil else { return false }
            order.append(key)
            return true
        }

        func removePending(partition: UInt32) {
            pending = pending.filter { $0.key.partition != partition }
            order.removeAll { $0.partition == partition }
        }

        /// The keys of `pending`, by partition.
        func pendingKeysByPartition() -> [UInt32: [Int64]] {
            var out: [UInt32: [Int64]] = [:]
            for k in order { out[k.partition, default: []].append(k.key) }
            return out
        }
        /// Keys added in this transaction per partition, in order, for queries.
        var added: [UInt32: [Int64]] = [:]
        var nextKeys: [UInt32: Int64] = [:]
        var deletedPrimaryKeys: [(UInt32, [UInt8])] = []
        /// Keys of deleted objects by type name, whose links are nulled at commit.
        var deletedKeys: [String: Set<Int64>] = [:]
        /// Embedded objects added in this write that no parent has taken yet (`adopt`).
        var orphans = Set<PendingKey>()
        var schemaChanged = false
        /// deleteAll dropped partitions: observers re-evaluate.
        var droppedPartitions = false
        var objectsToInvalidate: [Object] = []
        init(tx: WriteTransaction) { self.tx = tx }
    }
}
