// Guards: XXH3-64 in Swift, bit for bit as libxxhash 0.8's XXH3_64bits_withSeed: the hash of every
// checksum and of the key filter where no system libxxhash is linked (Apple platforms,
// STRATA_PORTABLE=1). Any divergence from libxxhash would make files written on one platform
// unreadable (checksum mismatch) or mis-filtered on another, so this is tested byte for byte
// against libxxhash and against fixed known-answer vectors.
//
// Structure (xxHash's XXH3 specification, 64-bit output, default 192-byte secret):
// - 0 bytes:      64-bit avalanche of seed ^ two secret words.
// - 1...3 bytes:  the bytes and the length packed into 32 bits, xored with a seeded secret word.
// - 4...8 bytes:  first and last 4 bytes packed into 64 bits, keyed, then the rrmxmx mixer.
// - 9...16 bytes: first and last 8 bytes keyed, one 64x64->128 multiply folded to 64 bits.
// - 17...128:     up to 4 pairs of 16-byte chunks, symmetric from both ends (mix16B each).
// - 129...240:    8 chunks, avalanche, then the remaining chunks against the secret at offset 3,
//                 then the last 16 bytes.
// - > 240 bytes:  8 lanes of 64-bit accumulators. Each 64-byte stripe is keyed by the secret
//                 (shifted 8 bytes per stripe); a block is 16 stripes (1024 bytes), after which
//                 the accumulators are scrambled. Then the stripes of the last partial block and
//                 the last 64 bytes of input (always, even if overlapping), and finally the 8
//                 accumulators are merged into 64 bits. With a nonzero seed the secret is
//                 derived from the seed (XXH3_initCustomSecret); seed 0 derives kSecret itself.
// All reads are unaligned little-endian loads, so any start offset and any byte order work.

/// XXH3-64 with a seed, bit for bit as libxxhash's XXH3_64bits_withSeed, written in Swift.
package enum PortableXXH3 {
    package static func hash(_ bytes: UnsafeRawBufferPointer, seed: UInt64) -> UInt64 {
        let len = bytes.count
        guard len != 0, let p = bytes.baseAddress else {
            return xxh64Avalanche(seed ^ (ks(56) ^ ks(64)))
        }
        if len <= 16 {
            if len > 8 { return len9to16(p, len, seed) }
            if len >= 4 { return len4to8(p, len, seed) }
            return len1to3(p, len, seed)
        }
        if len <= 128 { return len17to128(p, len, seed) }
        if len <= 240 { return len129to240(p, len, seed) }
        return long(p, len, seed)
    }

    // MARK: Constants

    private static let prime32_1: UInt64 = 0x9E37_79B1
    private static let prime32_2: UInt64 = 0x85EB_CA77
    private static let prime32_3: UInt64 = 0xC2B2_AE3D
    private static let prime64_1: UInt64 = 0x9E37_79B1_85EB_CA87
    private static let prime64_2: UInt64 = 0xC2B2_AE3D_27D4_EB4F
    private static let prime64_3: UInt64 = 0x1656_67B1_9E37_79F9
    private static let prime64_4: UInt64 = 0x85EB_CA77_C2B2_AE63
    private static let prime64_5: UInt64 = 0x27D4_EB2F_1656_67C5

    /// Word `i` (little-endian) of the default 192-byte secret XXH3_kSecret.
    /// A switch rather than an array: no global initialisation, no bounds checks, and with a
    /// constant `i` it folds to an immediate. Every call site passes a constant on purpose: a
    /// variable index left a table lookup (or jump table) per read, up to 2x slower.
    @inline(__always)
    private static func kw(_ i: Int) -> UInt64 {
        switch i {
        case 0: 0xBE4B_A423_396C_FEB8
        case 1: 0x1CAD_21F7_2C81_017C
        case 2: 0xDB97_9083_E96D_D4DE
        case 3: 0x1F67_B3B7_A4A4_4072
        case 4: 0x78E5_C0CC_4EE6_79CB
        case 5: 0x2172_FFCC_7DD0_5A82
        case 6: 0x8E24_43F7_7446_08B8
        case 7: 0x4C26_3A81_E690_35E0
        case 8: 0xCB00_C391_BB52_283C
        case 9: 0xA32E_531B_8B65_D088
        case 10: 0x4EF9_0DA2_9748_6471
        case 11: 0xD8AC_DEA9_46EF_1938
        case 12: 0x3F34_9CE3_3F76_FAA8
        case 13: 0x1D4F_0BC7_C7BB_DCF9
        case 14: 0x3159_B4CD_4BE0_518A
        case 15: 0x6473_78D9_C97E_9FC8
        case 16: 0xC3EB_D334_83AC_C5EA
        case 17: 0xEB63_13FA_FFA0_81C5
        case 18: 0x49DA_F0B7_51DD_0D17
        case 19: 0x9E68_D429_2655_16D3
        case 20: 0xFCA1_477D_58BE_162B
        case 21: 0xCE31_D07A_D1B8_F88F
        case 22: 0x2804_1695_8F3A_CB45
        default: 0x7E40_4BBB_CAFB_D7AF
        }
    }

    /// The little-endian UInt64 at byte offset `o` of kSecret (o + 8 <= 192).
    @inline(__always)
    private static func ks(_ o: Int) -> UInt64 {
        let i = o &>> 3
        let shift = UInt64(o & 7) &* 8
        if shift == 0 { return kw(i) }
        return (kw(i) &>> shift) | (kw(i &+ 1) &<< (64 &- shift))
    }

    // MARK: Primitives

    @inline(__always)
    private static func read64(_ p: UnsafeRawPointer, _ offset: Int) -> UInt64 {
        UInt64(littleEndian: p.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    @inline(__always)
    private static func read32(_ p: UnsafeRawPointer, _ offset: Int) -> UInt32 {
        UInt32(littleEndian: p.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    @inline(__always)
    private static func rotl(_ x: UInt64, _ r: UInt64) -> UInt64 {
        (x &<< r) | (x &>> (64 &- r))
    }

    /// 64x64 -> 128-bit product, high half xor low half (XXH3_mul128_fold64).
    @inline(__always)
    private static func fold64(_ a: UInt64, _ b: UInt64) -> UInt64 {
        let product = a.multipliedFullWidth(by: b)
        return product.high ^ product.low
    }

    /// XXH64's final mix, used by the 0 and 1...3 byte paths.
    @inline(__always)
    private static func xxh64Avalanche(_ h0: UInt64) -> UInt64 {
        var h = h0
        h ^= h &>> 33
        h = h &* prime64_2
        h ^= h &>> 29
        h = h &* prime64_3
        return h ^ (h &>> 32)
    }

    @inline(__always)
    private static func avalanche(_ h0: UInt64) -> UInt64 {
        var h = h0 ^ (h0 &>> 37)
        h = h &* 0x1656_6791_9E37_79F9
        return h ^ (h &>> 32)
    }

    /// Pelle Evensen's rrmxmx as adapted by XXH3 for 4...8 bytes.
    @inline(__always)
    private static func rrmxmx(_ h0: UInt64, _ len: UInt64) -> UInt64 {
        var h = h0 ^ rotl(h0, 49) ^ rotl(h0, 24)
        h = h &* 0x9FB2_1C65_1E98_DF25
        h ^= (h &>> 35) &+ len
        h = h &* 0x9FB2_1C65_1E98_DF25
        return h ^ (h &>> 28)
    }

    /// 16 input bytes at `p + offset` against the kSecret words at byte offset `s`.
    @inline(__always)
    private static func mix16(_ p: UnsafeRawPointer, _ offset: Int, _ s: Int, _ seed: UInt64) -> UInt64 {
        fold64(read64(p, offset) ^ (ks(s) &+ seed), read64(p, offset &+ 8) ^ (ks(s &+ 8) &- seed))
    }

    // MARK: Short inputs (kSecret, seed applied directly)

    @inline(__always)
    private static func len1to3(_ p: UnsafeRawPointer, _ len: Int, _ seed: UInt64) -> UInt64 {
        let c1 = UInt32(p.load(fromByteOffset: 0, as: UInt8.self))
        let c2 = UInt32(p.load(fromByteOffset: len &>> 1, as: UInt8.self))
        let c3 = UInt32(p.load(fromByteOffset: len &- 1, as: UInt8.self))
        let combined = (c1 &<< 16) | (c2 &<< 24) | c3 | (UInt32(truncatingIfNeeded: len) &<< 8)
        let bitflip = UInt64(UInt32(truncatingIfNeeded: ks(0)) ^ UInt32(truncatingIfNeeded: ks(4))) &+ seed
        return xxh64Avalanche(UInt64(combined) ^ bitflip)
    }

    @inline(__always)
    private static func len4to8(_ p: UnsafeRawPointer, _ len: Int, _ seed0: UInt64) -> UInt64 {
        let seed = seed0 ^ (UInt64(UInt32(truncatingIfNeeded: seed0).byteSwapped) &<< 32)
        let input1 = UInt64(read32(p, 0))
        let input2 = UInt64(read32(p, len &- 4))
        let bitflip = (ks(8) ^ ks(16)) &- seed
        let keyed = (input2 &+ (input1 &<< 32)) ^ bitflip
        return rrmxmx(keyed, UInt64(truncatingIfNeeded: len))
    }

    @inline(__always)
    private static func len9to16(_ p: UnsafeRawPointer, _ len: Int, _ seed: UInt64) -> UInt64 {
        let lo = read64(p, 0) ^ ((ks(24) ^ ks(32)) &+ seed)
        let hi = read64(p, len &- 8) ^ ((ks(40) ^ ks(48)) &- seed)
        return avalanche(UInt64(truncatingIfNeeded: len) &+ lo.byteSwapped &+ hi &+ fold64(lo, hi))
    }

    private static func len17to128(_ p: UnsafeRawPointer, _ len: Int, _ seed: UInt64) -> UInt64 {
        // Pairs of 16-byte chunks from the front and the back, so every byte is covered.
        var acc = UInt64(truncatingIfNeeded: len) &* prime64_1
        if len > 32 {
            if len > 64 {
                if len > 96 {
                    acc &+= mix16(p, 48, 96, seed)
                    acc &+= mix16(p, len &- 64, 112, seed)
                }
                acc &+= mix16(p, 32, 64, seed)
                acc &+= mix16(p, len &- 48, 80, seed)
            }
            acc &+= mix16(p, 16, 32, seed)
            acc &+= mix16(p, len &- 32, 48, seed)
        }
        acc &+= mix16(p, 0, 0, seed)
        acc &+= mix16(p, len &- 16, 16, seed)
        return avalanche(acc)
    }

    @inline(never)  // as for long(): inlined, its register pressure made every short call save 5 registers
    private static func len129to240(_ p: UnsafeRawPointer, _ len: Int, _ seed: UInt64) -> UInt64 {
        var acc = UInt64(truncatingIfNeeded: len) &* prime64_1
        // Written out so every secret read has a constant offset: as loops, the secret reads
        // stayed table lookups behind a call per chunk (2x slower).
        acc &+= mix16(p, 0, 0, seed)
        acc &+= mix16(p, 16, 16, seed)
        acc &+= mix16(p, 32, 32, seed)
        acc &+= mix16(p, 48, 48, seed)
        acc &+= mix16(p, 64, 64, seed)
        acc &+= mix16(p, 80, 80, seed)
        acc &+= mix16(p, 96, 96, seed)
        acc &+= mix16(p, 112, 112, seed)
        acc = avalanche(acc)
        // Chunks 8... reuse the secret from offset 3 (MIDSIZE_STARTOFFSET).
        let rounds = len &>> 4  // 8...15
        if rounds > 8 { acc &+= mix16(p, 128, 3, seed) }
        if rounds > 9 { acc &+= mix16(p, 144, 19, seed) }
        if rounds > 10 { acc &+= mix16(p, 160, 35, seed) }
        if rounds > 11 { acc &+= mix16(p, 176, 51, seed) }
        if rounds > 12 { acc &+= mix16(p, 192, 67, seed) }
        if rounds > 13 { acc &+= mix16(p, 208, 83, seed) }
        if rounds > 14 { acc &+= mix16(p, 224, 99, seed) }
        // Last 16 bytes against secret offset 136 - 17 (SECRET_SIZE_MIN - MIDSIZE_LASTOFFSET).
        acc &+= mix16(p, len &- 16, 119, seed)
        return avalanche(acc)
    }

    // MARK: Long inputs (> 240 bytes)

    private static let stripeLength = 64
    private static let stripesPerBlock = 16  // (192 - 64) / 8: the secret advances 8 bytes a stripe
    private static let blockLength = 1024

    /// The 192-byte secret for `seed` (XXH3_initCustomSecret) in a stack buffer: each 16-byte
    /// pair of kSecret words becomes (lo + seed, hi - seed). Seed 0 yields kSecret exactly,
    /// which is what libxxhash uses for seed 0, so no special case is needed. Written as 3 SIMD8
    /// adds of constant vectors (12 SSE2 paddq/psubq): as a loop over kw() it became a jump table.
    @inline(never)  // keeps hash()'s short paths free of this frame and its register saves
    private static func long(_ p: UnsafeRawPointer, _ len: Int, _ seed: UInt64) -> UInt64 {
        let minus = 0 &- seed
        let seeds = SIMD8<UInt64>(seed, minus, seed, minus, seed, minus, seed, minus)
        @inline(__always) func words(_ k: Int) -> SIMD8<UInt64> {
            SIMD8(kw(k), kw(k &+ 1), kw(k &+ 2), kw(k &+ 3), kw(k &+ 4), kw(k &+ 5), kw(k &+ 6), kw(k &+ 7))
        }
        return withUnsafeTemporaryAllocation(of: SIMD8<UInt64>.self, capacity: 3) { secret in
            secret.initializeElement(at: 0, to: littleEndianLanes(words(0) &+ seeds))
            secret.initializeElement(at: 1, to: littleEndianLanes(words(8) &+ seeds))
            secret.initializeElement(at: 2, to: littleEndianLanes(words(16) &+ seeds))
            return longWithSecret(p, len, UnsafeRawPointer(secret.baseAddress!))
        }
    }

    /// Little-endian lanes <-> native lanes (the identity on little-endian platforms).
    @inline(__always)
    private static func littleEndianLanes(_ v: SIMD8<UInt64>) -> SIMD8<UInt64> {
        #if _endian(big)
        return SIMD8(v[0].byteSwapped, v[1].byteSwapped, v[2].byteSwapped, v[3].byteSwapped,
                     v[4].byteSwapped, v[5].byteSwapped, v[6].byteSwapped, v[7].byteSwapped)
        #else
        return v
        #endif
    }

    /// 8 little-endian UInt64 lanes at `p + offset`.
    @inline(__always)
    private static func read8x64(_ p: UnsafeRawPointer, _ offset: Int) -> SIMD8<UInt64> {
        littleEndianLanes(p.loadUnaligned(fromByteOffset: offset, as: SIMD8<UInt64>.self))
    }

    /// XXH3_accumulate_512 on one 64-byte stripe. Each lane adds its neighbour's raw input (so
    /// the input survives in the sum) and the 32x32->64 product of its keyed input's halves.
    /// SIMD8 rather than 8 scalar locals: the scalars were vectorized only when inlined into
    /// hash() and ran at half the speed (15 vs 30 GB/s) once outlined; SIMD8 lowers to SSE2
    /// pmuludq/pshufd/paddq regardless (arm64 codegen not inspected here).
    @inline(__always)
    private static func accumulate(_ acc: inout SIMD8<UInt64>, _ p: UnsafeRawPointer, _ s: UnsafeRawPointer) {
        let data = read8x64(p, 0)
        let keyed = data ^ read8x64(s, 0)
        let swapped = SIMD8(data[1], data[0], data[3], data[2], data[5], data[4], data[7], data[6])
        acc &+= swapped &+ (keyed & 0xFFFF_FFFF) &* (keyed &>> 32)
    }

    @inline(__always)
    private static func longWithSecret(_ p: UnsafeRawPointer, _ len: Int, _ secret: UnsafeRawPointer) -> UInt64 {
        var acc = SIMD8<UInt64>(prime32_3, prime64_1, prime64_2, prime64_3,
                                prime64_4, prime32_2, prime64_5, prime32_1)
        let blocks = (len &- 1) / blockLength
        let scrambleKey = read8x64(secret, 128)  // the last 64 bytes of the secret
        var block = p
        for _ in 0..<blocks {
            for stripe in 0..<stripesPerBlock {
                accumulate(&acc, block + stripe &* stripeLength, secret + stripe &* 8)
            }
            acc = (acc ^ (acc &>> 47) ^ scrambleKey) &* prime32_1
            block += blockLength
        }
        // Whole stripes of the last partial block (the final byte always goes to the last stripe).
        let stripes = ((len &- 1) &- blocks &* blockLength) / stripeLength
        for stripe in 0..<stripes {
            accumulate(&acc, block + stripe &* stripeLength, secret + stripe &* 8)
        }
        // Last 64 input bytes against secret offset 192 - 64 - 7 (SECRET_LASTACC_START).
        accumulate(&acc, p + (len &- stripeLength), secret + 121)

        // Merge the accumulators pairwise against the secret from offset 11 (MERGEACCS_START).
        var result = UInt64(truncatingIfNeeded: len) &* prime64_1
        result &+= fold64(acc[0] ^ read64(secret, 11), acc[1] ^ read64(secret, 19))
        result &+= fold64(acc[2] ^ read64(secret, 27), acc[3] ^ read64(secret, 35))
        result &+= fold64(acc[4] ^ read64(secret, 43), acc[5] ^ read64(secret, 51))
        result &+= fold64(acc[6] ^ read64(secret, 59), acc[7] ^ read64(secret, 67))
        return avalanche(result)
    }
}
