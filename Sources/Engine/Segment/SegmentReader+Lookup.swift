// Point reads: a key's entry in one segment (through its key filter and block index), in the newest of a
// partition's segments, and where that entry is stored.

extension SegmentReader {
    /// The segment's largest key (a deletion's too); nil for a segment without entries. One block read, once.
    func lastKey() throws -> [UInt8]? {
        let cached = lastKeyCache.withLock { $0 }
        if cached.known { return cached.key }
        var key: [UInt8]? = nil
        if blockCount > 0 {
            key = try withPointBlock(blockCount - 1) { view, _ in
                guard view.entryCount > 0 else { return nil }
                return [UInt8](try view.entry(at: try view.entryOffset(view.entryCount - 1)).key)
            }
        }
        lastKeyCache.withLock { $0 = (true, key) }
        return key
    }

    /// Looks `key` up: at most one block read.
    package func lookup<R>(_ key: UnsafeRawBufferPointer, hash: UInt64? = nil, _ body: (Lookup) throws -> R) throws -> R {
        let index = try index()
        if index.hasFilter, !(try mayContain(hash: hash ?? KeyFilter.hash(key), index)) {
            return try body(.absent)
        }
        guard let b = try blockIndex(for: key) else { return try body(.absent) }
        let p = Bytes.prefix64(key)
        return try withPointBlock(b) { view, prefixes in
            var lo = 0, hi = prefixes.count
            while lo < hi {
                let mid = (lo + hi) >> 1
                if prefixes[mid] < p { lo = mid + 1 } else { hi = mid }
            }
            while lo < prefixes.count && prefixes[lo] == p {
                let e = try view.entry(at: try view.entryOffset(lo))
                let c = Bytes.compare(e.key, key)
                if c == 0 { return try body(e.value.map { .found($0) } ?? .deleted) }
                if c > 0 { break }
                lo += 1
            }
            return try body(.absent)
        }
    }

    /// Whether the key whose filter hash is `hash` may be in this segment, by its key filter.
    func mayContain(hash: UInt64, _ index: SegmentIndex) throws -> Bool {
        do {
            return try index.mayContain(hash: hash, in: indexArea(index))
        } catch let error as StorageError {
            throw error.file == nil ? error.located(file: name) : error
        }
    }

    /// Whether any of `segments` may hold an entry of `key`, by their key filters (no block read). A segment
    /// whose index cannot be read may: the lookup that follows reports the damage.
    static func mayHold(_ key: UnsafeRawBufferPointer, in segments: [SegmentReader]) -> Bool {
        let hash = KeyFilter.hash(key)
        for segment in segments {
            // try?: a segment whose index or filter cannot be read may hold it; the read that follows reports it.
            guard let index = try? segment.index(), let may = try? segment.mayContain(hash: hash, index) else { return true }
            if may { return true }
        }
        return false
    }

    /// Where the newest entry of `key` in `segments` is stored: the segment file and the offset of its block;
    /// nil when no segment holds it (or its newest entry is a deletion).
    static func location(of key: UnsafeRawBufferPointer, in segments: [SegmentReader]) throws -> (file: String, blockOffset: Int)? {
        let hash = segments.isEmpty ? 0 : KeyFilter.hash(key)
        for segment in segments {
            let found: Bool? = try segment.lookup(key, hash: hash) { lookup in
                switch lookup {
                case .absent: nil
                case .deleted: false
                case .found: true
                }
            }
            guard let found else { continue }
            guard found, let b = try segment.blockIndex(for: key) else { return nil }
            return (segment.name, try segment.blockOffset(b, try segment.index()))
        }
        return nil
    }

    /// Calls `body` with the value of `key` in the first of `segments` (newest first) that has it, nil when that
    /// one deleted it or none has it. The key's filter hash is computed once for all of them.
    static func newestValue<R>(of key: UnsafeRawBufferPointer, in segments: [SegmentReader], _ body: (UnsafeRawBufferPointer?) throws -> R) throws -> R {
        let hash = segments.isEmpty ? 0 : KeyFilter.hash(key)
        for segment in segments {
            let step: LookupStep<R> = try segment.lookup(key, hash: hash) { lookup in
                switch lookup {
                case .absent: return .next
                case .deleted: return .done(try body(nil))
                case .found(let v): return .done(try body(v))
                }
            }
            if case .done(let r) = step { return r }
        }
        return try body(nil)
    }
}
