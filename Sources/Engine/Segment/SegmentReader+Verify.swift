
// Reading a segment whole to check it (`strata verify`) or to copy what can still be read (`strata salvage`).

extension SegmentReader {
    /// Every entry of every block that passes its checks, in key order (a nil value is a deletion); the blocks
    /// that do not are skipped and returned. For `Database.salvage`.
    func salvageEntries(_ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer?) -> Void) -> [UnreadableBlock] {
        let index: SegmentIndex
        do {
            index = try self.index()
        } catch {
            return [UnreadableBlock(offset: nil, firstKey: nil, endKey: nil, error: error)]
        }
        var unreadable: [UnreadableBlock] = []
        let scratch = GrowableBuffer(capacity: Tuning.blockBytes + 1024)
        var i = 0
        while i < blockCount {
            do {
                try withBlock(i, scratch: scratch) { view in
                    for j in 0..<view.entryCount {
                        let e = try view.entry(at: try view.entryOffset(j))
                        body(e.key, e.value)
                    }
                }
                i += 1
            } catch {
                let lost = index.loss(ofBlock: i, in: indexArea(index))
                unreadable.append(UnreadableBlock(offset: lost.offset, firstKey: lost.firstKey, endKey: lost.endKey, error: error))
                i = lost.next
            }
        }
        return unreadable
    }

    /// Checks the index and every block's checksum (those not checked before), and in an encrypted segment that
    /// every block authenticates (once per block).
    func checkAllBlocks() throws {
        for i in 0..<blockCount {
            _ = try locating(i) { try locate(i) }
            try locating(i) { try authenticate(i) }
        }
    }

    /// Reads every block and entry, checking checksums and key order. Returns the problems found.
    package func verify() -> [String] {
        var problems: [String] = []
        var previous: [UInt8]? = nil
        let scratch = GrowableBuffer()
        var seen = 0
        let blockOffsets: [Int]
        do {
            let index = try index()
            try index.checkAll(in: indexArea(index))
            blockOffsets = try (0..<blockCount).map { try blockOffset($0, index) }
        } catch let error as StorageError {
            return ["\(error.file == nil ? error.located(file: name) : error)"]
        } catch {
            return ["\(error)"]
        }
        for i in 0..<blockOffsets.count {
            do {
                let end = i + 1 < blockOffsets.count ? blockOffsets[i + 1] : indexOffset
                let stored = try locate(i).stored
                guard stored.upperBound == end else {
                    throw StorageError.corrupted(
                        "block \(i) ends at \(stored.upperBound), the index puts the next \(i + 1 < blockOffsets.count ? "block" : "part") at \(end)",
                        file: name, offset: blockOffsets[i])
                }
                try withBlock(i, scratch: scratch) { view in
                    var pos = 0
                    for j in 0..<view.entryCount {
                        guard try view.entryOffset(j) == pos else {
                            throw StorageError.corrupted("block \(i) entry \(j) offset table disagrees with the entries", file: name, offset: blockOffsets[i])
                        }
                        let e = try view.entry(at: pos)
                        if let p = previous, p.withUnsafeBytes({ Bytes.compare($0, e.key) }) >= 0 {
                            throw StorageError.corrupted("block \(i) entry \(j) key is not after the previous key", file: name, offset: blockOffsets[i])
                        }
                        previous = [UInt8](e.key)
                        pos = e.next
                        seen += 1
                    }
                    guard pos == view.entriesEnd else {
                        throw StorageError.corrupted("block \(i) has \(view.entriesEnd - pos) bytes after its last entry", file: name, offset: blockOffsets[i])
                    }
                }
            } catch {
                problems.append("\(error)")
            }
        }
        if problems.isEmpty && seen != entryCount {
            problems.append("\(name): footer declares \(entryCount) entries, the blocks hold \(seen)")
        }
        return problems
    }
}
