import Engine
import Foundation

// Invariants:
// (1) Everything sync keeps lives in one engine partition (`partition`), written in the same engine transaction
//     as the objects it describes: a commit's outbox entry, its undo images and the list metadata of its
//     objects are durable exactly when its objects are.
// (2) The client state's `nextSequence` is one more than the sequence of the newest outbox entry ever written;
//     entries are removed only by an acknowledgement (`removeOutbox`), oldest first.
// (3) An object's metadata (`objectKey`) holds the ids and positions of its lists' elements, in list order and
//     as many as the list holds, or its tombstone when it is deleted; an object with neither has no entry.

/// Where sync's state lives in the file, and its encodings.
enum SyncStorage {
    /// The engine partition of sync's state (far above the partitions types get, which count up from 1).
    static let partition: UInt32 = 0xFFFF_FF00

    static let stateKey: [UInt8] = [0x73]  // "s"
    private static let outboxTag: UInt8 = 0x6F  // "o"
    private static let undoTag: UInt8 = 0x75  // "u"
    private static let objectTag: UInt8 = 0x6D  // "m"

    /// The most bytes of operations (or undo images) in one value; a larger change set is split in chunks.
    static let chunkBytes = 1 << 20

    static func outboxKey(_ sequence: UInt64, chunk: UInt32) -> [UInt8] { key(outboxTag, sequence, chunk) }
    static func undoKey(_ sequence: UInt64, chunk: UInt32) -> [UInt8] { key(undoTag, sequence, chunk) }
    static let outboxPrefix: [UInt8] = [outboxTag]
    static let undoPrefix: [UInt8] = [undoTag]
    static let objectPrefix: [UInt8] = [objectTag]

    private static func key(_ tag: UInt8, _ sequence: UInt64, _ chunk: UInt32) -> [UInt8] {
        var k: [UInt8] = [tag]
        withUnsafeBytes(of: sequence.bigEndian) { k.append(contentsOf: $0) }
        withUnsafeBytes(of: chunk.bigEndian) { k.append(contentsOf: $0) }
        return k
    }

    /// The sequence and chunk of an outbox or undo key.
    static func parse(_ key: UnsafeRawBufferPointer) -> (tag: UInt8, sequence: UInt64, chunk: UInt32)? {
        guard key.count == 13 else { return nil }
        var seq: UInt64 = 0
        for i in 1..<9 { seq = seq << 8 | UInt64(key[i]) }
        var chunk: UInt32 = 0
        for i in 9..<13 { chunk = chunk << 8 | UInt32(key[i]) }
        return (key[0], seq, chunk)
    }

    static func objectKey(_ ref: ObjectReference) -> [UInt8] {
        var k: [UInt8] = [objectTag]
        SyncCoding.write(ref, into: &k)
        return k
    }

    /// A client's sync state.
    struct ClientState: Sendable, Hashable {
        var clientID: UInt64
        /// The sequence the next local change set gets.
        var nextSequence: UInt64 = 1
        /// The last server version applied.
        var serverVersion: UInt64 = 0
        /// The counter of the next list element this client inserts.
        var nextElement: UInt64 = 1
        /// Outbox entries at or below this were taken by an acknowledgement.
        var acknowledged: UInt64 = 0

        func encoded() -> [UInt8] {
            var out: [UInt8] = [1]
            out.appendUInt64LE(clientID)
            out.appendVarint(nextSequence)
            out.appendVarint(serverVersion)
            out.appendVarint(nextElement)
            out.appendVarint(acknowledged)
            return out
        }

        static func decode(_ bytes: [UInt8]) throws -> ClientState {
            try bytes.withUnsafeBytes { raw in
                var r = ByteReader(raw)
                let version = try r.readUInt8("sync state format")
                guard version == 1 else { throw StorageError(.corrupted, "sync state format \(version) is unknown", file: nil, offset: 0) }
                var s = ClientState(clientID: try r.readUInt64LE("client id"))
                s.nextSequence = try r.readVarint("next sequence")
                s.serverVersion = try r.readVarint("server version")
                s.nextElement = try r.readVarint("next element")
                s.acknowledged = try r.readVarint("acknowledged")
                return s
            }
        }

        /// A new client: a random id (never 0, which marks elements without one).
        static func new() -> ClientState {
            var id: UInt64 = 0
            while id == 0 { id = UInt64.random(in: 1...UInt64.max) }
            return ClientState(clientID: id)
        }
    }

    /// An object's metadata: its tombstone, or the ids and positions of its lists' elements.
    enum ObjectMeta: Sendable, Hashable {
        case tombstone(Tombstone)
        case lists([String: [(id: ElementID, position: ListPosition)]])

        static func == (a: ObjectMeta, b: ObjectMeta) -> Bool { a.encoded() == b.encoded() }
        func hash(into h: inout Hasher) { h.combine(encoded()) }

        func encoded() -> [UInt8] {
            var out: [UInt8] = []
            switch self {
            case .tombstone(let t):
                out.append(1)
                out.appendUInt64LE(t.version)
                out.appendUInt64LE(t.client)
            case .lists(let lists):
                out.append(2)
                out.appendVarint(UInt64(lists.count))
                for name in lists.keys.sorted() {
                    SyncCoding.writeString(name, into: &out)
                    let elements = lists[name]!
                    out.appendVarint(UInt64(elements.count))
                    for e in elements {
                        SyncCoding.write(e.id, into: &out)
                        SyncCoding.write(e.position, into: &out)
                    }
                }
            }
            return out
        }

        static func decode(_ raw: UnsafeRawBufferPointer) throws -> ObjectMeta {
            var r = ByteReader(raw)
            switch try r.readUInt8("object metadata tag") {
            case 1:
                return .tombstone(Tombstone(version: try r.readUInt64LE("tombstone version"), client: try r.readUInt64LE("tombstone client")))
            case 2:
                let n = try r.readLength("list count", limit: r.remaining)
                var lists: [String: [(id: ElementID, position: ListPosition)]] = [:]
                for _ in 0..<n {
                    let name = try SyncCoding.readString(&r, "property name")
                    let count = try r.readLength("element count", limit: r.remaining)
                    var elements: [(id: ElementID, position: ListPosition)] = []
                    elements.reserveCapacity(count)
                    for _ in 0..<count {
                        let id = try SyncCoding.readElement(&r)
                        elements.append((id, try SyncCoding.readPosition(&r)))
                    }
                    lists[name] = elements
                }
                return .lists(lists)
            case let tag:
                throw StorageError(.corrupted, "unknown object metadata tag \(tag)", file: nil, offset: 0)
            }
        }

        /// The metadata that goes with an object's sync state (nil: none).
        static func of(_ state: SyncObjectState) -> ObjectMeta? {
            switch state {
            case .absent: return nil
            case .deleted(let t): return .tombstone(t)
            case .live(let o):
                var lists: [String: [(id: ElementID, position: ListPosition)]] = [:]
                for (name, field) in o.fields {
                    if case .list(let l) = field, !l.isEmpty { lists[name] = l.map { ($0.id, $0.position) } }
                }
                return lists.isEmpty ? nil : .lists(lists)
            }
        }
    }

    /// Builds values of encoded items, each at most about `chunkBytes` (a larger item makes a chunk of its own)
    /// and prefixed by its item count.
    struct ChunkBuilder {
        private var chunks: [[UInt8]] = []
        private var body: [UInt8] = []
        private var count = 0
        /// What the items added stand for in all: operations (or undo images), a run counting each of its own.
        private(set) var total = 0

        /// Adds one item, as `write` appends it, that stands for `stands` operations (a run, more than one).
        mutating func add(standingFor stands: Int = 1, _ write: (inout [UInt8]) -> Void) {
            write(&body)
            count += 1
            total += stands
            if body.count >= SyncStorage.chunkBytes { flush() }
        }

        private mutating func flush() {
            var value: [UInt8] = []
            value.reserveCapacity(body.count + 10)
            value.appendVarint(UInt64(count))
            value.append(contentsOf: body)
            chunks.append(value)
            body.removeAll(keepingCapacity: true)
            count = 0
        }

        /// The chunks (one, empty, when nothing was added).
        mutating func finish() -> [[UInt8]] {
            if count > 0 || chunks.isEmpty { flush() }
            return chunks
        }
    }
}
