/// A borrowed view of one block's raw (decompressed) bytes.
struct BlockView {
    let raw: UnsafeRawBufferPointer
    let entryCount: Int
    /// Where the entries end and the offset table begins.
    let entriesEnd: Int

    /// The offset of entry `j`, checked against the entries area.
    @inline(__always)
    func entryOffset(_ j: Int) throws -> Int {
        guard let o = Bytes.loadUInt32LE(raw, at: entriesEnd + 4 * j), Int(o) < entriesEnd else {
            throw StorageError.corrupted("entry \(j)'s offset is outside the block's \(entriesEnd) entry bytes", file: nil, offset: nil)
        }
        return Int(o)
    }

    /// Decodes the entry at `offset`: its key, its value (nil for a deletion) and where the next one starts.
    @inline(__always)
    func entry(at offset: Int) throws -> (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer?, next: Int) {
        // The common case: both lengths fit one varint byte.
        if offset >= 0, offset + 2 <= entriesEnd {
            let keyCount = Int(raw[offset]), tag = Int(raw[offset + 1])
            if keyCount < 0x80 && tag < 0x80 {
                let keyStart = offset + 2
                let valueStart = keyStart + keyCount
                let end = valueStart + (tag == 0 ? 0 : tag - 1)
                guard end <= entriesEnd else {
                    throw StorageError.corrupted("entry at \(offset) runs past the block's entries", file: nil, offset: offset)
                }
                let key = UnsafeRawBufferPointer(rebasing: raw[keyStart..<valueStart])
                return (key, tag == 0 ? nil : UnsafeRawBufferPointer(rebasing: raw[valueStart..<end]), end)
            }
        }
        return try slowEntry(at: offset)
    }

    @inline(never)
    func slowEntry(at offset: Int) throws -> (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer?, next: Int) {
        var r = ByteReader(UnsafeRawBufferPointer(rebasing: raw[0..<entriesEnd]), position: offset)
        let keyCount = try r.readLength("key length", limit: Limits.maxKeyBytes)
        let tag = try r.readVarint("value length")
        guard tag <= UInt64(Limits.maxValueBytes) + 1 else {
            throw StorageError.corrupted("value length \(tag &- 1) exceeds \(Limits.maxValueBytes)", file: nil, offset: offset)
        }
        let key = try r.readBytes(count: keyCount, "key")
        let value: UnsafeRawBufferPointer? = tag == 0 ? nil : try r.readBytes(count: Int(tag - 1), "value")
        return (key, value, r.position)
    }
}

/// The result of looking a key up in one source.
package enum Lookup {
    case absent
    case deleted
    case found(UnsafeRawBufferPointer)
}
