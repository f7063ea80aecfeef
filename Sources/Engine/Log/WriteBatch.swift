/// One operation's position in a batch's bytes: the key at `keyOffset`, the value right after it.
package struct Slot: Sendable {
    package var keyOffset: Int
    package var keyCount: Int32
    /// The value's length, or -1 for a deletion (a tombstone).
    package var valueCount: Int32

    @inline(__always) package var isTombstone: Bool { valueCount < 0 }
    @inline(__always) package var valueOffset: Int { keyOffset + Int(keyCount) }
    /// The bytes of its key and value, which lie back to back.
    @inline(__always) var entryBytes: Int { Int(keyCount) + max(Int(valueCount), 0) }
}

/// The operations of one transaction on one partition.
package struct PartitionBatch: Sendable {
    /// The partition was dropped by this transaction before `slots` were written.
    package var drop = false
    /// Puts and deletes in the order they were made (later ones win).
    package var slots: [Slot] = []
    package var userMetadata: UInt64? = nil
}

/// The operations of one write transaction, encoded as the payload of its log record as they are made.
///
/// The buffer starts with room for the record header, so the committed record is written with one call, and
/// the same bytes then serve as the memtable's storage for the keys and values (no copy).
///
/// Payload operations: `0x01 put: varint partition, varint keyCount, varint valueCount, key, value`;
/// `0x02 delete: varint partition, varint keyCount, key`; `0x03 drop: varint partition`;
/// `0x04 user metadata: varint partition, u64 value`.
package final class WriteBatch: @unchecked Sendable {
    static let opPut: UInt8 = 1
    static let opDelete: UInt8 = 2
    static let opDrop: UInt8 = 3
    static let opUserMetadata: UInt8 = 4

    package let buffer: GrowableBuffer

    /// The slot lists, in one struct so that each operation makes one access to them.
    struct Slots {
        var partitions: [UInt32: PartitionBatch] = [:]
        var lastPartition: UInt32? = nil
        var lastSlots: [Slot] = []
        var operationCount = 0

        /// Adds a slot to its partition's list; consecutive operations on one partition skip the dictionary.
        @inline(__always)
        mutating func append(_ slot: Slot, partition: UInt32) {
            operationCount += 1
            if partition == lastPartition {
                lastSlots.append(slot)
                return
            }
            stash()
            lastPartition = partition
            lastSlots = partitions[partition]?.slots ?? []
            partitions[partition]?.slots = []
            if partitions[partition] == nil { partitions[partition] = PartitionBatch() }
            lastSlots.append(slot)
        }

        /// Moves the slots being collected for the last partition back into `partitions`.
        mutating func stash() {
            if let p = lastPartition {
                partitions[p, default: PartitionBatch()].slots = lastSlots
                lastSlots = []
                lastPartition = nil
            }
        }
    }
    // Dynamic exclusivity checks are off: a batch belongs to one transaction on one thread.
    @exclusivity(unchecked) private var slots = Slots()

    package var operationCount: Int { slots.operationCount }

    /// Whether the batch holds an operation of `partition`: a put, a deletion, a drop or metadata.
    package func touches(_ partition: UInt32) -> Bool {
        slots.lastPartition == partition || slots.partitions[partition] != nil
    }

    package init() {
        buffer = GrowableBuffer(capacity: 64 * 1024)
        for _ in 0..<LogRecord.headerBytes { buffer.append(0) }
    }

    package var isEmpty: Bool { operationCount == 0 }

    /// This batch's operations moved, without a copy, into a new batch, which is returned (a spill's worker
    /// reads it); this batch goes on empty, with `spare`'s memory when one is given.
    func handOff(reusing spare: WriteBatch?) -> WriteBatch {
        slots.stash()
        let moved = WriteBatch(buffer: buffer.handOff(takingMemoryOf: spare?.buffer), slots: slots, lastValueOffset: lastValueOffset)
        slots = Slots()
        lastValueOffset = 0
        for _ in 0..<LogRecord.headerBytes { buffer.append(0) }
        return moved
    }

    private init(buffer: GrowableBuffer, slots: Slots, lastValueOffset: Int) {
        self.buffer = buffer
        self.slots = slots
        self.lastValueOffset = lastValueOffset
    }

    /// Empties the batch after its buffer was adopted (a spill): the next operation starts a new payload.
    func reset() {
        buffer.removeAll()
        for _ in 0..<LogRecord.headerBytes { buffer.append(0) }
        slots = Slots()
        lastValueOffset = 0
    }
    package var payloadBytes: Int { buffer.count - LogRecord.headerBytes }

    private func checkRoom(_ extra: Int) throws {
        guard buffer.count + extra <= Limits.maxTransactionBytes else {
            throw StorageError.invalidArgument(
                "transaction would be \(buffer.count + extra) bytes, the limit is \(Limits.maxTransactionBytes) "
                    + "(WriteTransaction); commit in smaller transactions")
        }
    }

    package func put(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer, partition: UInt32) throws {
        guard key.count <= Limits.maxKeyBytes else {
            throw StorageError.invalidArgument("key is \(key.count) bytes, the limit is \(Limits.maxKeyBytes) (WriteTransaction.put)")
        }
        guard value.count <= Limits.maxValueBytes else {
            throw StorageError.invalidArgument(
                "value is \(value.count) bytes, the limit is \(Limits.maxValueBytes) (WriteTransaction.put)")
        }
        try checkRoom(key.count + value.count + 20)
        let offset = buffer.appendOperation(Self.opPut, partition: partition, key: key, value: value)
        slots.append(Slot(keyOffset: offset, keyCount: Int32(key.count), valueCount: Int32(value.count)), partition: partition)
        lastValueOffset = offset + key.count
    }

    /// Where the value of the last `put` starts in `buffer`. Unchecked, as `slots` is.
    @exclusivity(unchecked) package private(set) var lastValueOffset = 0

    /// The operations per partition, once the transaction is complete.
    package var operationsByPartition: [UInt32: PartitionBatch] {
        slots.stash()
        return slots.partitions
    }

    package func delete(_ key: UnsafeRawBufferPointer, partition: UInt32) throws {
        guard key.count <= Limits.maxKeyBytes else {
            throw StorageError.invalidArgument("key is \(key.count) bytes, the limit is \(Limits.maxKeyBytes) (WriteTransaction.delete)")
        }
        try checkRoom(key.count + 12)
        let offset = buffer.appendOperation(Self.opDelete, partition: partition, key: key, value: nil)
        slots.append(Slot(keyOffset: offset, keyCount: Int32(key.count), valueCount: -1), partition: partition)
    }

    package func drop(partition: UInt32) throws {
        try checkRoom(8)
        buffer.append(Self.opDrop)
        buffer.appendVarint(UInt64(partition))
        slots.stash()
        slots.partitions[partition] = PartitionBatch(drop: true, slots: [], userMetadata: nil)
        slots.operationCount += 1
    }

    package func setUserMetadata(_ value: UInt64, partition: UInt32) throws {
        try checkRoom(16)
        buffer.append(Self.opUserMetadata)
        buffer.appendVarint(UInt64(partition))
        buffer.appendUInt64LE(value)
        slots.stash()
        slots.partitions[partition, default: PartitionBatch()].userMetadata = value
        slots.operationCount += 1
    }

    /// Rebuilds the operations of a record read back from the log. `record` holds the header and payload.
    package static func decode(record: MappedRegion) throws -> [UInt32: PartitionBatch] {
        var partitions: [UInt32: PartitionBatch] = [:]
        var r = ByteReader(record.unsafeBytes, position: LogRecord.headerBytes)
        while !r.isAtEnd {
            let at = r.position
            let op = try r.readUInt8("operation code")
            let partitionValue = try r.readVarint("partition")
            guard partitionValue <= UInt64(Limits.maxPartition) else {
                throw StorageError.corrupted("partition \(partitionValue) is out of range", file: nil, offset: at)
            }
            let partition = UInt32(partitionValue)
            switch op {
            case opPut:
                let keyCount = try r.readLength("key length", limit: Limits.maxKeyBytes)
                let valueCount = try r.readLength("value length", limit: Limits.maxValueBytes)
                let offset = r.position
                try r.skip(keyCount + valueCount, "key and value")
                partitions[partition, default: PartitionBatch()].slots.append(
                    Slot(keyOffset: offset, keyCount: Int32(keyCount), valueCount: Int32(valueCount)))
            case opDelete:
                let keyCount = try r.readLength("key length", limit: Limits.maxKeyBytes)
                let offset = r.position
                try r.skip(keyCount, "key")
                partitions[partition, default: PartitionBatch()].slots.append(
                    Slot(keyOffset: offset, keyCount: Int32(keyCount), valueCount: -1))
            case opDrop:
                partitions[partition] = PartitionBatch(drop: true, slots: [], userMetadata: nil)
            case opUserMetadata:
                partitions[partition, default: PartitionBatch()].userMetadata = try r.readUInt64LE("user metadata")
            default:
                throw StorageError.corrupted("unknown operation code \(op)", file: nil, offset: at)
            }
        }
        return partitions
    }
}
