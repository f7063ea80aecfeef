import Engine
import Foundation

/// The outbox: the change sets committed here that no acknowledgement has taken yet, with their undo images.
extension RealmCore {
    /// One outbox entry.
    struct OutboxEntry {
        var changeSet: ChangeSet
        /// How many operation chunks it is stored in.
        var chunks: Int
    }

    /// The outbox entries after `sequence` at `snapshot`, oldest first (at most `limit`).
    func outboxEntries(after sequence: UInt64, at snapshot: Snapshot, limit: Int = .max) throws -> [OutboxEntry] {
        try SyncStorage.outboxEntries(after: sequence, at: snapshot, limit: limit) { what, key in
            Realm.Error(.invalidDatabase, "the sync outbox of \(shared.displayName) is damaged at key \(SyncStorage.hex(key)): \(what)")
        }
    }

    /// The bytes each outbox entry after `sequence` takes at `snapshot` (its header and operation chunks, as
    /// stored), by sequence, oldest first; nothing is decoded.
    func outboxSizes(after sequence: UInt64, at snapshot: Snapshot) throws -> [(sequence: UInt64, bytes: Int)] {
        var out: [(sequence: UInt64, bytes: Int)] = []
        let cursor = try snapshot.cursor(SyncStorage.partition, from: SyncStorage.outboxKey(sequence &+ 1, chunk: 0))
        while let (key, value) = try cursor.next() {
            guard let (tag, seq, _) = key.withUnsafeBytes({ SyncStorage.parse($0) }), tag == SyncStorage.outboxPrefix[0] else { break }
            if out.last?.sequence == seq {
                out[out.count - 1].bytes += value.count
            } else {
                out.append((seq, value.count))
            }
        }
        return out
    }

    /// The undo images of outbox entry `sequence`, and how many chunks hold them.
    func undoImages(_ sequence: UInt64, at snapshot: Snapshot) throws -> (images: [(ObjectReference, UndoImage)], chunks: Int) {
        try SyncStorage.undoImages(sequence, at: snapshot) { what, _ in
            Realm.Error(.invalidDatabase, "the undo images of change set \(sequence) in \(shared.displayName) are damaged: \(what)")
        }
    }

    /// Removes outbox entries through `sequence` (their operations and undo images) in `tx`.
    func removeOutbox(through sequence: UInt64, at snapshot: Snapshot, in tx: WriteTransaction) throws {
        for tag in [SyncStorage.outboxPrefix[0], SyncStorage.undoPrefix[0]] {
            let cursor = try snapshot.cursor(SyncStorage.partition, from: [tag])
            while let (key, _) = try cursor.next() {
                guard let (t, seq, _) = key.withUnsafeBytes({ SyncStorage.parse($0) }), t == tag, seq <= sequence else { break }
                try tx.delete(key, in: SyncStorage.partition)
            }
        }
    }
}

/// The outbox's decoders, for a Realm (`RealmCore.outboxEntries`, `undoImages`) and for `strata verify`
/// (`DatabaseInspector.verify`), which has no Realm.
extension SyncStorage {
    /// The outbox entries after `sequence` at `snapshot`, oldest first (at most `limit`). Damage is thrown as
    /// `damaged(what was wrong, the key it was found at)` makes it.
    static func outboxEntries(
        after sequence: UInt64, at snapshot: Snapshot, limit: Int = .max, damaged: (String, [UInt8]) -> any Error
    ) throws -> [RealmCore.OutboxEntry] {
        var out: [RealmCore.OutboxEntry] = []
        let cursor = try snapshot.cursor(partition, from: outboxKey(sequence &+ 1, chunk: 0))
        var current: (header: ChangeSet, expected: Int, chunks: Int)?
        func finish() throws {
            guard let c = current else { return }
            guard c.header.operations.count == c.expected else {
                throw damaged("change set \(c.header.sequence) holds \(c.header.operations.count) operations, its header says \(c.expected)", outboxKey(c.header.sequence, chunk: 0))
            }
            out.append(RealmCore.OutboxEntry(changeSet: c.header, chunks: c.chunks))
            current = nil
        }
        while let (key, value) = try cursor.next() {
            guard let (tag, seq, chunk) = key.withUnsafeBytes({ parse($0) }), tag == outboxPrefix[0] else { break }
            if chunk == 0 {
                try finish()
                if out.count >= limit { break }
                do {
                    try value.withUnsafeBytes { raw in
                        var r = ByteReader(raw)
                        let (header, count) = try SyncCoding.readHeader(&r)
                        let chunks = try r.readVarint("chunk count")
                        guard header.sequence == seq, count < UInt64(Int.max), chunks < UInt64(UInt32.max) else {
                            throw StorageError(.corrupted, "the header of change set \(seq) says sequence \(header.sequence)", file: nil, offset: 0)
                        }
                        current = (header, Int(count), Int(chunks))
                    }
                } catch let e as StorageError {
                    throw damaged("\(e)", key)
                }
            } else {
                guard var c = current, c.header.sequence == seq else { throw damaged("an operation chunk without its header", key) }
                do {
                    try value.withUnsafeBytes { raw in
                        var r = ByteReader(raw)
                        let n = try r.readLength("operation count", limit: r.remaining)
                        for _ in 0..<n { try SyncCoding.readOutboxItem(&r, into: &c.header.operations) }
                        guard r.isAtEnd else { throw StorageError(.corrupted, "\(r.remaining) bytes follow the operations", file: nil, offset: r.position) }
                    }
                } catch let e as StorageError {
                    throw damaged("\(e)", key)
                }
                current = c
            }
        }
        try finish()
        return out
    }

    /// The undo images of outbox entry `sequence` at `snapshot`, and how many chunks hold them. Damage is thrown
    /// as `damaged(what was wrong, the key it was found at)` makes it.
    static func undoImages(
        _ sequence: UInt64, at snapshot: Snapshot, damaged: (String, [UInt8]) -> any Error
    ) throws -> (images: [(ObjectReference, UndoImage)], chunks: Int) {
        var out: [(ObjectReference, UndoImage)] = []
        var chunks = 0
        let cursor = try snapshot.cursor(partition, from: undoKey(sequence, chunk: 0))
        while let (key, value) = try cursor.next() {
            guard let (tag, seq, _) = key.withUnsafeBytes({ parse($0) }), tag == undoPrefix[0], seq == sequence else { break }
            chunks += 1
            do {
                try value.withUnsafeBytes { raw in
                    var r = ByteReader(raw)
                    let n = try r.readLength("image count", limit: r.remaining)
                    for _ in 0..<n { try SyncCoding.readUndoItem(&r, into: &out) }
                }
            } catch let e as StorageError {
                throw damaged("\(e)", key)
            }
        }
        return (out, chunks)
    }

    /// A key as hexadecimal digits, for messages.
    static func hex(_ key: [UInt8]) -> String { key.map { String(format: "%02x", $0) }.joined() }
}
