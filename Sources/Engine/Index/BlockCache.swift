import Synchronization

/// Decompressed segment blocks shared by every segment of a database, for point reads (scans decompress
/// into their own buffer). Bounded by bytes; the oldest insertion is evicted first.
final class BlockCache: Sendable {
    struct Key: Hashable {
        var file: UInt64
        var block: Int
    }
    private struct State {
        var blocks: [Key: MappedRegion] = [:]
        var order: [Key] = []
        var head = 0
        var bytes = 0
    }
    private let state = Mutex(State())
    let capacityBytes: Int

    init(capacityBytes: Int) { self.capacityBytes = capacityBytes }

    func get(_ key: Key) -> MappedRegion? { state.withLock { $0.blocks[key] } }

    func insert(_ key: Key, _ block: MappedRegion) {
        guard block.count <= capacityBytes else { return }
        state.withLock { s in
            guard s.blocks[key] == nil else { return }
            s.blocks[key] = block
            s.order.append(key)
            s.bytes += block.count
            while s.bytes > capacityBytes, s.head < s.order.count {
                let victim = s.order[s.head]
                s.head += 1
                if let gone = s.blocks.removeValue(forKey: victim) { s.bytes -= gone.count }
            }
            if s.head > 1024 && s.head * 2 > s.order.count {
                s.order.removeFirst(s.head)
                s.head = 0
            }
        }
    }

    var byteCount: Int { state.withLock { $0.bytes } }
}
