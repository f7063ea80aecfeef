// Guards: the only use of liblz4. Compression writes into a buffer sized by LZ4_compressBound; decompression
// uses LZ4_decompress_safe, which never reads or writes out of bounds, even on hostile input.

import CLZ4

enum LZ4 {
    /// Appends the LZ4 block compression of `input` to `output` and returns the compressed size,
    /// or nil when LZ4 could not compress it.
    static func compress(_ input: UnsafeRawBufferPointer, into output: GrowableBuffer) -> Int? {
        guard input.count > 0, input.count <= Limits.maxBlockBytes else { return nil }
        let bound = Int(clz4_compress_bound(CInt(input.count)))
        var written = 0
        output.appendWithUnsafeSpace(maxCount: bound) { space in
            let n = Int(clz4_compress(input.baseAddress, space.baseAddress, CInt(input.count), CInt(bound)))
            written = max(n, 0)
            return written
        }
        return written > 0 ? written : nil
    }

    /// Decompresses one block into `output` (replacing its contents). The caller stored `originalCount`
    /// beside the block, because the LZ4 block format does not record it.
    static func decompress(_ block: UnsafeRawBufferPointer, originalCount: Int, into output: GrowableBuffer) throws {
        guard originalCount > 0, originalCount <= Limits.maxBlockBytes else {
            throw StorageError.corrupted(
                "block declares \(originalCount) uncompressed bytes, the limit is \(Limits.maxBlockBytes)",
                file: nil, offset: nil)
        }
        output.removeAll()
        var produced = -1
        output.appendWithUnsafeSpace(maxCount: originalCount) { space in
            produced = Int(clz4_decompress(block.baseAddress, space.baseAddress, CInt(block.count), CInt(originalCount)))
            return max(0, min(produced, originalCount))
        }
        guard produced == originalCount else {
            throw StorageError.corrupted(
                "LZ4 block of \(block.count) bytes decoded to \(produced) bytes, expected \(originalCount)",
                file: nil, offset: nil)
        }
    }
}
