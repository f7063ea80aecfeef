@testable import Engine
import Testing
import TestSupport

/// The Swift XXH3-64 (`PortableXXH3`, what Apple platforms and `STRATA_PORTABLE=1` builds use) is libxxhash's
/// `XXH3_64bits_withSeed` bit for bit: every checksum and key-filter hash in a file is the same whichever
/// build wrote or reads it. Known answers (computed with libxxhash 0.8.1) run in every build; the
/// differential tests run where libxxhash is linked. `STRATA_TEST_SCALE` multiplies the random cases.
@Suite struct XXH3CompatibilityTests {
    /// xxHash's sanity buffer: byteGen = PRIME32; buffer[i] = byteGen >> 56; byteGen *= PRIME64.
    static let sanityBuffer: [UInt8] = {
        var byteGen: UInt64 = 2_654_435_761
        return (0..<((1 << 20) + 64)).map { _ in
            defer { byteGen &*= 11_400_714_785_074_694_797 }
            return UInt8(truncatingIfNeeded: byteGen >> 56)
        }
    }()

    static let vectors: [(offset: Int, length: Int, seed: UInt64, expected: UInt64)] = [
        (0, 0, 0x0000000000000000, 0x2D06800538D394C2),
        (0, 0, 0x9E3779B185EBCA8D, 0xA8A6B918B2F0364A),
        (0, 1, 0x0000000000000000, 0xC44BDFF4074EECDB),
        (0, 1, 0x9E3779B185EBCA8D, 0x032BE332DD766EF8),
        (0, 3, 0x0000000000000000, 0x54247382A8D6B94D),
        (0, 3, 0x9E3779B185EBCA8D, 0x634B8990B4976373),
        (0, 4, 0x0000000000000000, 0xE5DC74BC51848A51),
        (0, 4, 0x9E3779B185EBCA8D, 0xAA2E7ECCB0C8F747),
        (0, 8, 0x0000000000000000, 0x24CCC9ACAA9F65E4),
        (0, 8, 0x9E3779B185EBCA8D, 0x8F973410999B8F6B),
        (0, 9, 0x0000000000000000, 0x14D5001C15DD3F2B),
        (0, 9, 0x9E3779B185EBCA8D, 0xB3AE7333D9013F60),
        (0, 16, 0x0000000000000000, 0x981B17D36C7498C9),
        (0, 16, 0x9E3779B185EBCA8D, 0x663F29333B4DB6B1),
        (0, 17, 0x0000000000000000, 0x796F5ACD3A60F862),
        (0, 17, 0x9E3779B185EBCA8D, 0xF3EC5067F4306DB3),
        (0, 32, 0x0000000000000000, 0x9FEADDBDBF57EED3),
        (0, 32, 0x9E3779B185EBCA8D, 0x2199FAB1534893D9),
        (0, 33, 0x0000000000000000, 0xABFB2D081B400A10),
        (0, 33, 0x9E3779B185EBCA8D, 0xAD56348DA574BB6D),
        (0, 64, 0x0000000000000000, 0x9CB48487720EC49D),
        (0, 64, 0x9E3779B185EBCA8D, 0x4FE8895DB9B8C077),
        (0, 65, 0x0000000000000000, 0xFD81AAC4BEBC3883),
        (0, 65, 0x9E3779B185EBCA8D, 0xAD80AEEC1FC9E0A7),
        (0, 96, 0x0000000000000000, 0x935A769A7F94776F),
        (0, 96, 0x9E3779B185EBCA8D, 0x70CF51937E500540),
        (0, 97, 0x0000000000000000, 0xCA4CA268FD3C3A6C),
        (0, 97, 0x9E3779B185EBCA8D, 0xEE461D3ADD7EE6C9),
        (0, 128, 0x0000000000000000, 0xFCFF24126754D861),
        (0, 128, 0x9E3779B185EBCA8D, 0x73FDE75280646649),
        (0, 129, 0x0000000000000000, 0x98F1B0A679A2CA29),
        (0, 129, 0x9E3779B185EBCA8D, 0x21FFFDBCA099C844),
        (0, 200, 0x0000000000000000, 0xBDDCA58935D7C038),
        (0, 200, 0x9E3779B185EBCA8D, 0x5B899E984B88DB8D),
        (0, 240, 0x0000000000000000, 0x81C3C2B67F568CCF),
        (0, 240, 0x9E3779B185EBCA8D, 0xCC0F58C27EF3D8EE),
        (0, 241, 0x0000000000000000, 0xC5A639ECD2030E5E),
        (0, 241, 0x9E3779B185EBCA8D, 0xDDA9B0A161D4829A),
        (0, 256, 0x0000000000000000, 0x55DE574AD89D0AC5),
        (0, 256, 0x9E3779B185EBCA8D, 0x4D30234B7A3AA61C),
        (0, 1024, 0x0000000000000000, 0xDD85C9B5C1109C5C),
        (0, 1024, 0x9E3779B185EBCA8D, 0xEF368A8A2EBABAEF),
        (0, 1025, 0x0000000000000000, 0xD870C0FA13211C6A),
        (0, 1025, 0x9E3779B185EBCA8D, 0x96792BCF9AF88519),
        (0, 2367, 0x0000000000000000, 0xCB37AEB9E5D361ED),
        (0, 2367, 0x9E3779B185EBCA8D, 0xD2DB3415B942B42A),
        (0, 4160, 0x0000000000000000, 0x4F323B15321E94E1),
        (0, 4160, 0x9E3779B185EBCA8D, 0x1BF6F5FAF9EECABD),
        (0, 1 << 20, 0x0000000000000000, 0x7ADE52BBFBD697BA),
        (0, 1 << 20, 0x9E3779B185EBCA8D, 0x31146B91B00EB226),
        (0, 0, 0x6B657966696C7472, 0xAFB111A6F748A529),
        (0, 2, 0x6B657966696C7472, 0x63EA30065BB532F7),
        (0, 6, 0x6B657966696C7472, 0xE80AD7BD49C6AB75),
        (0, 12, 0x6B657966696C7472, 0xE123407C07DACB99),
        (0, 100, 0x6B657966696C7472, 0xD06962910B005D01),
        (0, 239, 0x6B657966696C7472, 0x87334EA02538AFB0),
        (0, 1088, 0x6B657966696C7472, 0x178401077D3B9786),
        (1, 7, 0x0000000000000000, 0xE86D059952DE680D),
        (3, 100, 0x9E3779B185EBCA8D, 0x505D15FC40226367),
        (5, 200, 0x0000000000000000, 0xF6A87B21E012C910),
        (7, 1000, 0x6B657966696C7472, 0x6266DE1AD4A01DC6),
        (3, 3000, 0x9E3779B185EBCA8D, 0x0D00EEA325EC7026),
    ]

    @Test func theSanityBufferIsXXHashs() {
        #expect(Array(Self.sanityBuffer.prefix(8)) == [0x00, 0x52, 0x92, 0x9B, 0xB7, 0x32, 0xA3, 0x24])
    }

    /// Every length class, seeds 0, nonzero and the key filter's, unaligned starts: the Swift hash and the
    /// engine's `Checksum.xxh3` (whichever implementation this build uses) give libxxhash's values.
    @Test func knownAnswersOfEveryLengthClass() {
        Self.sanityBuffer.withUnsafeBytes { all in
            for v in Self.vectors {
                let input = UnsafeRawBufferPointer(rebasing: all[v.offset..<(v.offset + v.length)])
                #expect(PortableXXH3.hash(input, seed: v.seed) == v.expected, "offset \(v.offset) length \(v.length) seed \(v.seed)")
                #expect(Checksum.xxh3(input, seed: v.seed) == v.expected, "offset \(v.offset) length \(v.length) seed \(v.seed)")
            }
        }
        #expect(PortableXXH3.hash(UnsafeRawBufferPointer(start: nil, count: 0), seed: 0) == 0x2D06800538D394C2)
    }

    #if STRATA_SYSTEM_CODECS
    /// 1 MiB + 64 bytes of generator output, shared by the differential tests.
    static let randomBuffer: [UInt8] = {
        var rng = SplitMix64(seed: 0x5EED_0FB0_FFE2_5)
        return (0..<((1 << 20) + 64)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
    }()

    /// 0, the key filter's seed, edge values, then random seeds.
    static let seeds: [UInt64] = {
        var rng = SplitMix64(seed: 42)
        return [0, 0x6B65_7966_696C_7472, 1, UInt64.max, 0x8000_0000_0000_0000, 0xFFFF_FFFF, 0x1_0000_0000] + (0..<5).map { _ in rng.next() }
    }()

    static var iterations: Int { 300 * Seeds.scale }

    /// Swift against libxxhash on `randomBuffer[offset..<offset + length]`; the mismatches, described.
    static func mismatches(offset: Int, lengths: some Sequence<Int>, seed: UInt64) -> [String] {
        randomBuffer.withUnsafeBytes { all in
            lengths.compactMap { length in
                let slice = UnsafeRawBufferPointer(rebasing: all[offset..<(offset + length)])
                let (swift, c) = (PortableXXH3.hash(slice, seed: seed), Checksum.systemXXH3(slice, seed: seed))
                return swift == c ? nil : "offset \(offset) length \(length) seed \(seed): \(swift) != \(c)"
            }
        }
    }

    @Test(arguments: seeds)
    func everyLengthTo4096MatchesLibxxhash(seed: UInt64) {
        #expect(Self.mismatches(offset: 0, lengths: 0...4096, seed: seed) == [])
    }

    @Test(arguments: 1...7)
    func everyLengthTo1024AtUnalignedStartsMatchesLibxxhash(offset: Int) {
        for seed in Self.seeds { #expect(Self.mismatches(offset: offset, lengths: 0...1024, seed: seed) == []) }
    }

    @Test func randomLengthsUpTo1MiBMatchLibxxhash() {
        var rng = SplitMix64(seed: 0xC0FFEE)
        for _ in 0..<Self.iterations {
            // Half short (block boundaries), half anywhere up to 1 MiB.
            let length = rng.next() & 1 == 0 ? Int(rng.next() % 8193) : Int(rng.next() % ((1 << 20) + 1))
            let seed = rng.next() & 3 == 0 ? 0 : rng.next()
            #expect(Self.mismatches(offset: Int(rng.next() % 64), lengths: [length], seed: seed) == [])
        }
    }

    /// The seeds the log gives its records (`LogRecord.seed`), over record-sized payloads.
    @Test func logRecordSeedsMatchLibxxhash() {
        var rng = SplitMix64(seed: 0x106)
        for pair in 0..<(Self.iterations + 100) {
            let sequence: UInt64 = pair < 100 ? UInt64(pair) : rng.next() >> (rng.next() % 64)
            let count = pair % 3 == 0 ? Int(rng.next() % 241) : Int(rng.next() % 70_000)
            let seed = LogRecord.seed(sequence: sequence, payloadCount: count)
            #expect(Self.mismatches(offset: Int(rng.next() % 8), lengths: [count], seed: seed) == [])
        }
    }

    @Test func stripeAndBlockBoundariesMatchLibxxhash() {
        var rng = SplitMix64(seed: 0xB10C)
        let lengths = [
            0, 1, 3, 4, 8, 9, 16, 17, 32, 33, 64, 65, 96, 97, 128, 129, 239, 240, 241, 255, 256, 257, 1023, 1024, 1025,
            1087, 1088, 1089, 2047, 2048, 2049, 16383, 16384, 16385, 32767, 32768, 32769, 1 << 20,
        ]
        for _ in 0..<max(20, Self.iterations / 10) {
            #expect(Self.mismatches(offset: Int(rng.next() % 64), lengths: lengths, seed: rng.next()) == [])
        }
    }
    #endif
}
