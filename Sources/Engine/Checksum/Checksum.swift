// Guards: the engine's one door to XXH3-64, the checksum of every log record, segment block, segment index,
// footer and manifest, and the hash of the key filter. The system libxxhash (`STRATA_SYSTEM_CODECS`) or
// `PortableXXH3` (Apple platforms, `STRATA_PORTABLE=1`) computes it; both give the same value for every input
// and seed (`CodecCompatibilityTests`), so files move between builds unchanged.

#if STRATA_SYSTEM_CODECS
import CXXHash
#endif

package enum Checksum {
    /// XXH3-64 of `bytes` with `seed`.
    @inline(__always)
    package static func xxh3(_ bytes: UnsafeRawBufferPointer, seed: UInt64 = 0) -> UInt64 {
        #if STRATA_SYSTEM_CODECS
        if !Codecs.portable { return systemXXH3(bytes, seed: seed) }
        #endif
        return PortableXXH3.hash(bytes, seed: seed)
    }

    #if STRATA_SYSTEM_CODECS
    /// libxxhash's `XXH3_64bits_withSeed` (the compatibility tests compare it with `PortableXXH3`).
    @inline(__always)
    package static func systemXXH3(_ bytes: UnsafeRawBufferPointer, seed: UInt64) -> UInt64 {
        UInt64(cxxh3_64(bytes.baseAddress, bytes.count, seed))
    }
    #endif

    package static func xxh3(_ bytes: [UInt8], seed: UInt64 = 0) -> UInt64 {
        bytes.withUnsafeBytes { xxh3($0, seed: seed) }
    }
}
