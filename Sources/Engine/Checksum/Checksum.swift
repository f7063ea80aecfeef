// Guards: the only use of libxxhash. XXH3-64 is the checksum of every WAL record, segment block, segment
// index, footer and manifest.

import CXXHash

package enum Checksum {
    /// XXH3-64 of `bytes` with `seed`.
    @inline(__always)
    package static func xxh3(_ bytes: UnsafeRawBufferPointer, seed: UInt64 = 0) -> UInt64 {
        UInt64(cxxh3_64(bytes.baseAddress, bytes.count, seed))
    }

    package static func xxh3(_ bytes: [UInt8], seed: UInt64 = 0) -> UInt64 {
        bytes.withUnsafeBytes { xxh3($0, seed: seed) }
    }
}
