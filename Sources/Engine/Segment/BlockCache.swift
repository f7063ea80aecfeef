
/// A block prepared for point reads: its decompressed bytes (nil when it is read in place from the mapping)
/// and the first 8 bytes of every key, so that a lookup binary-searches a small array instead of the block.
final class CachedBlock: Sendable {
    let region: MappedRegion?
    let prefixes: [UInt64]
    let entryCount: Int
    let entriesEnd: Int
    var byteCount: Int { (region?.count ?? 0) + prefixes.count * 8 + 64 }

    init(region: MappedRegion?, prefixes: [UInt64], entryCount: Int, entriesEnd: Int) {
        self.region = region
        self.prefixes = prefixes
        self.entryCount = entryCount
        self.entriesEnd = entriesEnd
    }
}

/// Blocks prepared for point reads, shared by every segment of a database (scans decompress into their own
/// buffer). Bounded by bytes; the oldest insertion is evicted first.
package final class BlockCache: Sendable {
    struct Key: Hashable {
        var file: UInt64
        var block: Int
    }
    private struct State {
        var blocks: [Key: CachedBlock] = [:]
        var order: [Key] = []
        var head = 0
        var bytes = 0
    }
    private let state = Locked(State())
    let capacityBytes: Int

    init(capacityBytes: Int) { self.capacityBytes = capacityBytes }

    func get(_ key: Key) -> CachedBlock? { state.withLock { $0.blocks[key] } }

    func insert(_ key: Key, _ block: CachedBlock) {
        guard block.byteCount <= capacityBytes else { return }
        state.withLock { s in
            guard s.blocks[key] == nil else { return }
            s.blocks[key] = block
            s.order.append(key)
            s.bytes += block.byteCount
            while s.bytes > capacityBytes, s.head < s.order.count {
                let victim = s.order[s.head]
                s.head += 1
                if let gone = s.blocks.removeValue(forKey: victim) { s.bytes -= gone.byteCount }
            }
            if s.head > 1024 && s.head * 2 > s.order.count {
                s.order.removeFirst(s.head)
                s.head = 0
            }
        }
    }

    var byteCount: Int { state.withLock { $0.bytes } }
}
