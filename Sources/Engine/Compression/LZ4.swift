// Guards: the engine's one door to LZ4 block compression. Two implementations sit behind it: the system
// liblz4 (Linux's default build, `STRATA_SYSTEM_CODECS`) and `PortableLZ4`, written here in Swift (Apple
// platforms and `STRATA_PORTABLE=1`). They are interchangeable byte for byte in what they accept and produce
// (`CodecCompatibilityTests`). Compression writes into a buffer sized by the compress bound; decompression
// never reads or writes out of bounds, even on hostile input (LZ4_decompress_safe, or PortableLZ4's checks).

#if STRATA_SYSTEM_CODECS
import CLZ4
#endif

package enum LZ4 {
    /// Appends the LZ4 block compression of `input` to `output` and returns the compressed size,
    /// or nil when LZ4 could not compress it.
    package static func compress(_ input: UnsafeRawBufferPointer, into output: GrowableBuffer) -> Int? {
        guard input.count > 0, input.count <= Limits.maxBlockBytes else { return nil }
        let bound = PortableLZ4.compressBound(input.count)
        var written = 0
        output.appendWithUnsafeSpace(maxCount: bound) { space in
            #if STRATA_SYSTEM_CODECS
            if !Codecs.portable {
                written = System.compress(input, into: space) ?? 0
                return written
            }
            #endif
            written = PortableLZ4.compress(input, into: space) ?? 0
            return written
        }
        return written > 0 ? written : nil
    }

    /// Decompresses one block into `output` (replacing its contents). The caller stored `originalCount`
    /// beside the block, because the LZ4 block format does not record it.
    package static func decompress(_ block: UnsafeRawBufferPointer, originalCount: Int, into output: GrowableBuffer) throws {
        guard originalCount > 0, originalCount <= Limits.maxBlockBytes else {
            throw StorageError.corrupted(
                "block declares \(originalCount) uncompressed bytes, the limit is \(Limits.maxBlockBytes)",
                file: nil, offset: nil)
        }
        output.removeAll()
        var produced = -1
        output.appendWithUnsafeSpace(maxCount: originalCount) { space in
            produced = decode(block, into: space)
            return max(0, min(produced, originalCount))
        }
        guard produced == originalCount else {
            throw StorageError.corrupted(
                produced < 0
                    ? "LZ4 block of \(block.count) bytes does not decode (malformed, or larger than the \(originalCount) bytes declared)"
                    : "LZ4 block of \(block.count) bytes decoded to \(produced) bytes, expected \(originalCount)",
                file: nil, offset: nil)
        }
    }

    /// The bytes written into `space`, or -1 when `block` is not a valid LZ4 block that fits.
    private static func decode(_ block: UnsafeRawBufferPointer, into space: UnsafeMutableRawBufferPointer) -> Int {
        #if STRATA_SYSTEM_CODECS
        if !Codecs.portable { return System.decompress(block, into: space) ?? -1 }
        #endif
        return PortableLZ4.decompress(block, into: space) ?? -1
    }

    /// One of the two implementations, chosen by name (tests, fuzzing and the Bench compare them).
    package enum Implementation: Sendable, CustomStringConvertible {
        /// `PortableLZ4`.
        case portable
        /// liblz4; only where it is linked (`Codecs.systemCodecsLinked`).
        case system

        package var description: String { self == .portable ? "Swift" : "liblz4" }
    }

    /// `bytes` compressed by `implementation`, or nil when it could not compress them.
    package static func encode(_ bytes: [UInt8], with implementation: Implementation) -> [UInt8]? {
        var output = [UInt8](repeating: 0, count: PortableLZ4.compressBound(bytes.count))
        let n: Int? = bytes.withUnsafeBytes { input in
            output.withUnsafeMutableBytes { space in
                switch implementation {
                case .portable: return PortableLZ4.compress(input, into: space)
                case .system:
                    #if STRATA_SYSTEM_CODECS
                    return System.compress(input, into: space)
                    #else
                    fatalError("LZ4.Implementation.system: liblz4 is not linked in this build (STRATA_PORTABLE=1 or an Apple platform)")
                    #endif
                }
            }
        }
        return n.map { Array(output[0..<$0]) }
    }

    /// `block` decoded by `implementation` into at most `capacity` bytes, or nil when it is not a valid block
    /// that fits.
    package static func decode(_ block: [UInt8], capacity: Int, with implementation: Implementation) -> [UInt8]? {
        var output = [UInt8](repeating: 0, count: capacity)
        let n: Int? = block.withUnsafeBytes { input in
            output.withUnsafeMutableBytes { space in
                switch implementation {
                case .portable: return PortableLZ4.decompress(input, into: space)
                case .system:
                    #if STRATA_SYSTEM_CODECS
                    return System.decompress(input, into: space)
                    #else
                    fatalError("LZ4.Implementation.system: liblz4 is not linked in this build (STRATA_PORTABLE=1 or an Apple platform)")
                    #endif
                }
            }
        }
        return n.map { Array(output[0..<$0]) }
    }

    #if STRATA_SYSTEM_CODECS
    /// liblz4's block functions, with `PortableLZ4`'s signatures (the compatibility tests call both).
    package enum System {
        /// `LZ4_compress_default`: the compressed size, or nil when it does not fit in `output`.
        package static func compress(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int? {
            let n = Int(clz4_compress(input.baseAddress, output.baseAddress, CInt(input.count), CInt(output.count)))
            return n > 0 ? n : nil
        }

        /// `LZ4_compressBound`.
        package static func compressBound(_ count: Int) -> Int { Int(clz4_compress_bound(CInt(truncatingIfNeeded: count))) }

        /// `LZ4_decompress_safe`: the decoded size, or nil when `input` is malformed or does not fit.
        package static func decompress(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int? {
            let n = Int(clz4_decompress(input.baseAddress, output.baseAddress, CInt(input.count), CInt(output.count)))
            return n >= 0 ? n : nil
        }
    }
    #endif
}

/// Which implementation of LZ4 and XXH3 the engine calls.
package enum Codecs {
    /// Whether this build links the system liblz4 and libxxhash (Linux, unless built with `STRATA_PORTABLE=1`).
    package static var systemCodecsLinked: Bool {
        #if STRATA_SYSTEM_CODECS
        return true
        #else
        return false
        #endif
    }

    /// When true, a build with the system codecs calls the Swift ones instead: the Bench's portable rows.
    /// Set it only while no database is open (it is read without synchronization on every block and record);
    /// either choice reads and writes the same files.
    nonisolated(unsafe) package static var portable = false
}
