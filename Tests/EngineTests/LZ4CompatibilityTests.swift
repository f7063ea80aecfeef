@testable import Engine
import Testing
import TestSupport

/// What a build without liblz4 (Apple platforms, `STRATA_PORTABLE=1`) can check on its own: Swift round
/// trips, and blocks that liblz4 1.9.4 wrote (known by their size and XXH3) written the same by the Swift
/// compressor and decoded back.
@Suite struct LZ4KnownBlockTests {
    /// (shape, seed, compressed size, XXH3 of the compressed block) of 32 KiB inputs, from liblz4 1.9.4.
    static let known: [(shape: DataShape, seed: UInt64, size: Int, hash: UInt64)] = [
        (.random, 1000, 32898, 0x80DA1987BF3635E3),
        (.runs, 1001, 2236, 0xC2F549863FD1E2AB),
        (.shortPeriods, 1002, 1765, 0xEE4B6E38DC99F25E),
        (.text, 1003, 19110, 0xF63EFD5A4733AD60),
        (.records, 1004, 16632, 0x425011B8660044E3),
        (.adversarial, 1005, 16578, 0xD42F334FA285B7B6),
    ]

    @Test func blocksLikeLiblz4sCompressAndDecodeTheSame() throws {
        for k in Self.known {
            var rng = SplitMix64(seed: k.seed)
            let data = makeData(k.shape, count: 32_768, rng: &rng)
            let block = try #require(portableCompress(data))
            #expect(block.count == k.size, "\(k.shape)")
            #expect(Checksum.xxh3(block) == k.hash, "\(k.shape)")
            let (n, back) = portableDecompress(block, capacity: data.count)
            #expect(n == data.count && back == data, "\(k.shape)")
        }
    }

    @Test(arguments: DataShape.allCases)
    func swiftRoundTripsAtEveryLengthTo2KiB(shape: DataShape) {
        for length in 0...2048 {
            var rng = SplitMix64(seed: UInt64(length))
            let data = makeData(shape, count: length, rng: &rng)
            guard let block = portableCompress(data) else {
                Issue.record("\(shape) \(length): no block")
                continue
            }
            let (n, back) = portableDecompress(block, capacity: length)
            if n != length || back != data { Issue.record("\(shape) \(length): did not round-trip") }
        }
    }
}

#if STRATA_SYSTEM_CODECS
/// Prints the known blocks' figures from liblz4 (run with `--filter printKnownBlocks` to regenerate them).
@Suite struct LZ4KnownBlockSource {
    @Test func printKnownBlocks() throws {
        var lines: [String] = []
        for (i, shape) in DataShape.allCases.enumerated() {
            let seed = UInt64(1000 + i)
            var rng = SplitMix64(seed: seed)
            let data = makeData(shape, count: 32_768, rng: &rng)
            let block = try #require(lz4Compress(data))
            let line = "(.\(shape), \(seed), \(block.count), 0x\(String(Checksum.xxh3(block), radix: 16, uppercase: true)))"
            lines.append(line)
            // The table above must be liblz4's.
            #expect(LZ4KnownBlockTests.known.contains { $0.seed == seed && $0.size == block.count && $0.hash == Checksum.xxh3(block) }, "\(line)")
        }
        if lines.count != LZ4KnownBlockTests.known.count { print("KNOWN_BLOCKS [\n" + lines.joined(separator: ",\n") + "\n]") }
    }
}

/// Compresses `data` with both codecs and decodes each block with both decoders.
/// Returns whether PortableLZ4's block was byte-identical to liblz4's.
@discardableResult
private func checkRoundTrips(_ data: [UInt8], _ failures: inout Failures, _ what: @autoclosure () -> String) -> Bool {
    guard let mine = portableCompress(data) else {
        failures.record("\(what()): Portable failed to compress into compressBound")
        return false
    }
    if mine.count > PortableLZ4.compressBound(data.count) {
        failures.record("\(what()): \(mine.count) bytes exceed compressBound")
    }
    let (r1, out1) = lz4Decompress(mine, capacity: data.count)
    if r1 != data.count || out1 != data { failures.record("\(what()): liblz4 cannot decode Portable's block (\(r1))") }
    let (r2, out2) = portableDecompress(mine, capacity: data.count)
    if r2 != data.count || out2 != data { failures.record("\(what()): Portable cannot decode its own block") }
    // A roomier output changes nothing for a well-formed block.
    let (r3, out3) = portableDecompress(mine, capacity: data.count + 70)
    if r3 != data.count || out3[0..<data.count] != data[...] { failures.record("\(what()): Portable, larger output") }

    guard let theirs = lz4Compress(data) else {
        failures.record("\(what()): liblz4 failed to compress")
        return false
    }
    let (r4, out4) = portableDecompress(theirs, capacity: data.count)
    if r4 != data.count || out4 != data { failures.record("\(what()): Portable cannot decode liblz4's block") }
    return mine == theirs
}

/// Blocks compressed by the Swift LZ4 (`PortableLZ4`, what Apple platforms and `STRATA_PORTABLE=1` builds use)
/// decode with liblz4 and the reverse, over random, repetitive, text-like, record-like, incompressible and
/// adversarial data of every length to 4 KiB and random lengths to 1 MiB.
@Suite struct LZ4CompatibilityTests {
    @Test(arguments: DataShape.allCases)
    func everyLengthTo4096RoundTripsBothWays(shape: DataShape) {
        var failures = Failures()
        var identical = 0
        for length in 0...4096 {
            var rng = SplitMix64(seed: UInt64(length) &* 0x1_0000 &+ UInt64(DataShape.allCases.firstIndex(of: shape)!))
            let data = makeData(shape, count: length, rng: &rng)
            if checkRoundTrips(data, &failures, "\(shape) length \(length)") { identical += 1 }
        }
        #expect(failures.count == 0, "\(failures.summary)")
        print("[\(shape)] lengths 0...4096: \(identical)/4097 blocks byte-identical to liblz4")
    }

    @Test func randomLengthsTo72KiBRoundTripBothWays() {
        var rng = SplitMix64(seed: 72)
        var failures = Failures()
        for i in 0..<(120 * fuzzScale) {
            let shape = DataShape.allCases[i % DataShape.allCases.count]
            let length = rng.inRange(4097...73_728)
            var data = makeData(shape, count: length, rng: &rng)
            if rng.chance(30) {  // splice two shapes
                let other = makeData(DataShape.allCases[rng.below(6)], count: length / 2, rng: &rng)
                data.replaceSubrange((length / 2)..<length, with: other)
            }
            checkRoundTrips(data, &failures, "\(shape) length \(length)")
        }
        #expect(failures.count == 0, "\(failures.summary)")
    }

    @Test func inputsAcrossThe64KiBTableSwitchAndTo1MiBRoundTripBothWays() {
        var rng = SplitMix64(seed: 1 << 20)
        var failures = Failures()
        var lengths = [65_535, 65_536, 65_546, 65_547, 65_548, 65_559, 131_072, 262_147, 1 << 20]
        for _ in 0..<(3 * fuzzScale) { lengths.append(rng.inRange(73_728...(1 << 20))) }
        for (i, length) in lengths.enumerated() {
            let shape = DataShape.allCases[i % DataShape.allCases.count]
            checkRoundTrips(makeData(shape, count: length, rng: &rng), &failures, "\(shape) length \(length)")
        }
        // Long runs: lengths that need many 255 bytes, matches far longer than 64 KiB.
        for length in [70_000, 1 << 20] {
            checkRoundTrips([UInt8](repeating: 0, count: length), &failures, "zeros \(length)")
            checkRoundTrips((0..<length).map { UInt8(truncatingIfNeeded: $0 % 7) }, &failures, "period 7 \(length)")
        }
        #expect(failures.count == 0, "\(failures.summary)")
    }

    @Test func tooSmallAnOutputFailsExactlyWhenTheBlockDoesNotFit() {
        var rng = SplitMix64(seed: 11)
        var failures = Failures()
        for i in 0..<(300 * fuzzScale) {
            let shape = DataShape.allCases[i % DataShape.allCases.count]
            let length = rng.chance(80) ? rng.inRange(0...600) : rng.inRange(601...40_000)
            let data = makeData(shape, count: length, rng: &rng)
            guard let full = portableCompress(data) else {
                failures.record("\(shape) \(length): no block")
                continue
            }
            var capacities = [0, 1, full.count - 1, full.count, full.count + 1]
            for _ in 0..<4 { capacities.append(rng.below(full.count + 1)) }
            for cap in capacities where cap >= 0 {
                let got = portableCompress(data, capacity: cap)
                if cap < full.count {
                    if got != nil { failures.record("\(shape) \(length) cap \(cap) < \(full.count) gave a block") }
                } else if got != full {
                    failures.record("\(shape) \(length) cap \(cap): block differs from the one with room")
                }
                // liblz4 likewise fails exactly when its own block does not fit.
                if let theirs = lz4Compress(data), (lz4Compress(data, capacity: cap) == nil) != (cap < theirs.count) {
                    failures.record("\(shape) \(length) cap \(cap): liblz4 fit rule differs")
                }
            }
        }
        #expect(failures.count == 0, "\(failures.summary)")
    }

    @Test func compressBoundIsLZ4CompressBound() {
        var values = Array(0...5000) + [65_535, 65_536, 1 << 20, 0x7E00_0000 - 1, 0x7E00_0000, 0x7E00_0001, -1, -100]
        var rng = SplitMix64(seed: 5)
        for _ in 0..<1000 { values.append(rng.below(0x7E00_0000)) }
        for n in values {
            #expect(PortableLZ4.compressBound(n) == LZ4.System.compressBound(n), "n = \(n)")
        }
    }

    @Test func compressesAsWellAsLZ4CompressDefault() {
        for shape in [DataShape.text, .records, .runs, .adversarial] {
            var rng = SplitMix64(seed: 32)
            var raw = 0
            var mine = 0
            var theirs = 0
            for _ in 0..<16 {
                let data = makeData(shape, count: 32_768, rng: &rng)
                raw += data.count
                mine += portableCompress(data)?.count ?? .max / 64
                theirs += lz4Compress(data)?.count ?? 0
            }
            print("[\(shape)] 16 x 32 KiB: raw \(raw), Portable \(mine), liblz4 \(theirs), ratio Portable/liblz4 \(Double(mine) / Double(theirs))")
            #expect(Double(mine) <= Double(theirs) * 1.01, "\(shape): \(mine) vs \(theirs)")
        }
    }
}

/// A block of hand-made sequences with lengths and offsets biased toward the interesting values.
/// Returns the block and the size it would decode to if valid.
private func craftBlock(_ rng: inout SplitMix64) -> ([UInt8], Int) {
    var sequences: [LZ4Sequence] = []
    var op = 0
    let count = rng.chance(80) ? rng.inRange(0...4) : rng.inRange(5...40)
    for _ in 0..<count {
        let literalCount: Int
        switch rng.below(10) {
        case 0..<7: literalCount = rng.inRange(0...14)
        case 7, 8: literalCount = rng.inRange(15...40)
        default: literalCount = rng.inRange(41...300)
        }
        let zeros = rng.chance(30)
        let literals = (0..<literalCount).map { _ in zeros ? 0 : rng.byte() }
        op += literalCount
        let offset: Int
        switch rng.below(100) {
        case 0..<45: offset = op == 0 ? 1 : rng.inRange(1...min(op, 16))
        case 45..<70: offset = op == 0 ? 1 : rng.inRange(1...min(op, 65_535))
        case 70..<80: offset = op + 1
        case 80..<84: offset = 0
        case 84..<90: offset = 65_535
        default: offset = rng.below(65_536)
        }
        let matchLength: Int
        switch rng.below(10) {
        case 0..<6: matchLength = rng.inRange(4...18)
        case 6, 7: matchLength = 19
        case 8: matchLength = rng.inRange(19...60)
        default: matchLength = rng.inRange(61...700)
        }
        op += matchLength
        sequences.append(LZ4Sequence(literals: literals, offset: offset, matchLength: matchLength))
    }
    var last: [UInt8]? = nil
    if rng.chance(88) {
        let n = rng.chance(80) ? rng.inRange(0...20) : rng.inRange(21...300)
        last = (0..<n).map { _ in rng.byte() }
        op += n
    }
    var block = buildBlock(sequences, last: last)
    if rng.chance(8) { block += (0..<rng.inRange(1...20)).map { _ in rng.byte() } }
    return (block, op)
}

/// Capacities around the decoded size and around liblz4's distance tests (5, 12, 16, 17, 32, 64 bytes).
private func capacities(around size: Int, _ rng: inout SplitMix64) -> [Int] {
    var caps = [size, size - 1, size + 1, rng.below(size + 80)]
    let margins = [2, 5, 6, 11, 12, 13, 16, 17, 18, 31, 32, 33, 63, 64, 65, 70]
    for _ in 0..<3 { caps.append(size + margins[rng.below(margins.count)] * (rng.chance(25) ? -1 : 1)) }
    return caps.filter { $0 >= 0 }
}

private func mutate(_ block: [UInt8], _ rng: inout SplitMix64) -> [UInt8] {
    var b = block
    switch rng.below(8) {
    case 0, 1:  // bit flips
        for _ in 0..<rng.inRange(1...3) where !b.isEmpty {
            b[rng.below(b.count)] ^= 1 << UInt8(rng.below(8))
        }
    case 2:  // a byte set to an extreme or random value
        if !b.isEmpty { b[rng.below(b.count)] = [0, 255, 15, 0xF0, 0xFF, rng.byte()][rng.below(6)] }
    case 3:  // truncation
        b.removeLast(min(b.count, rng.inRange(1...20)))
    case 4:  // extension
        b += (0..<rng.inRange(1...20)).map { _ in rng.byte() }
    case 5:  // a byte deleted or inserted
        if !b.isEmpty, rng.chance(50) { b.remove(at: rng.below(b.count)) } else { b.insert(rng.byte(), at: rng.below(b.count + 1)) }
    case 6:  // damage near the end, where the end-of-block rules apply
        if !b.isEmpty { b[max(0, b.count - 1 - rng.below(24))] = rng.byte() }
    default:  // an offset-like pair set to small or large values
        if b.count > 2 {
            let i = rng.below(b.count - 1)
            let v = [0, 1, 2, 7, 8, 15, 16, 65_535, rng.below(65_536)][rng.below(9)]
            b[i] = UInt8(truncatingIfNeeded: v)
            b[i + 1] = UInt8(truncatingIfNeeded: v >> 8)
        }
    }
    return b
}

/// The Swift LZ4 decoder against liblz4's LZ4_decompress_safe on hostile input: both reject the same blocks
/// and agree on every accepted one (count and bytes), whatever the output capacity. The one deliberate
/// difference, an offset of 0 (which liblz4 decodes as zeros and the format calls corrupt), is excused and
/// pinned down in `edgeCases`.
@Suite struct LZ4DecoderCompatibilityTests {
    @Test func randomBytesGetLibLZ4sVerdict() {
        var rng = SplitMix64(seed: 0xB10C)
        var failures = Failures()
        for i in 0..<(20_000 * fuzzScale) {
            let length = rng.chance(90) ? rng.inRange(0...64) : rng.inRange(65...2_000)
            let block = (0..<length).map { _ in rng.chance(20) ? 0 : rng.byte() }
            for cap in [0, 1, rng.below(80), rng.below(4_000), 64 + rng.below(8)] {
                checkSameDecode(block, capacity: cap, &failures, "random #\(i)")
            }
        }
        print("[decoder \(#function)] \(failures.tally)")
        #expect(failures.count == 0, "\(failures.summary)")
    }

    @Test func craftedSequencesGetLibLZ4sVerdict() {
        var rng = SplitMix64(seed: 0xC4AF7)
        var failures = Failures()
        for i in 0..<(25_000 * fuzzScale) {
            let (block, size) = craftBlock(&rng)
            for cap in capacities(around: size, &rng) {
                checkSameDecode(block, capacity: cap, &failures, "crafted #\(i)")
            }
            // Truncated and extended by one byte: the end-of-input tests.
            if !block.isEmpty { checkSameDecode(Array(block.dropLast()), capacity: size, &failures, "crafted-1 #\(i)") }
            checkSameDecode(block + [0], capacity: size, &failures, "crafted+1 #\(i)")
        }
        print("[decoder \(#function)] \(failures.tally)")
        #expect(failures.count == 0, "\(failures.summary)")
    }

    @Test(arguments: [false, true])
    func mutatedValidBlocksGetLibLZ4sVerdict(large: Bool) {
        var rng = SplitMix64(seed: large ? 0x1A46E : 0x5A11)
        var failures = Failures()
        let rounds = (large ? 120 : 4_000) * fuzzScale
        for i in 0..<rounds {
            let shape = DataShape.allCases[i % DataShape.allCases.count]
            let length = large ? rng.inRange(2_000...72_000) : rng.inRange(0...1_500)
            let data = makeData(shape, count: length, rng: &rng)
            guard let valid = (i % 2 == 0 ? portableCompress(data) : lz4Compress(data)) else { continue }
            for _ in 0..<(large ? 6 : 4) {
                let block = mutate(valid, &rng)
                for cap in capacities(around: length, &rng).prefix(large ? 3 : 7) {
                    checkSameDecode(block, capacity: cap, &failures, "\(shape) \(length) mutated #\(i)")
                }
            }
            // The valid block itself at tight, short and roomy capacities.
            for cap in [length, length - 1, length + 1, length + 64, 0] where cap >= 0 {
                checkSameDecode(valid, capacity: cap, &failures, "\(shape) \(length) valid #\(i)")
            }
        }
        print("[decoder \(#function)] \(failures.tally)")
        #expect(failures.count == 0, "\(failures.summary)")
    }

    /// Named cases, pinning down liblz4 acceptance rules that are easy to get wrong.
    @Test func edgeCasesOfLibLZ4sAcceptance() {
        func both(_ block: [UInt8], _ cap: Int) -> (Int, Int?) {
            (lz4Decompress(block, capacity: cap).0, portableDecompress(block, capacity: cap).0)
        }
        // Empty output: only the lone zero token.
        #expect(both([0], 0) == (0, 0))
        #expect(both([], 0).1 == nil)
        #expect(both([0, 0], 0).1 == nil)
        #expect(both([0x10, 0x41], 0).1 == nil)
        #expect(both([0], 7) == (0, 0))
        #expect(both([], 10).1 == nil)
        #expect(both([0x10, 0x41], 1) == (1, 1))
        #expect(both([0x20, 0x41], 1).1 == nil)  // literal past the input
        #expect(both([0x10, 0x41, 0x00], 5).1 == nil)  // trailing byte

        let lits = Array("abcde".utf8)
        let tail = Array("vwxyz".utf8)
        // A match starting 9 bytes before the end breaks MFLIMIT, yet liblz4 measures that against the
        // capacity, not the block: rejected with an exact output, accepted with 100 bytes of room.
        let early = buildBlock([LZ4Sequence(literals: lits, offset: 1, matchLength: 4)], last: tail)
        #expect(both(early, 14).0 < 0)
        #expect(both(early, 14).1 == nil)
        #expect(both(early, 100) == (14, 14))
        #expect(portableDecompress(early, capacity: 100).1.prefix(14).elementsEqual(Array("abcdeeeeevwxyz".utf8)))

        // Offset 0: liblz4 writes zeros; the format (and PortableLZ4) calls the block corrupt.
        let zero = buildBlock([LZ4Sequence(literals: lits, offset: 0, matchLength: 4)], last: tail)
        let (ref, refOut) = lz4Decompress(zero, capacity: 100)
        #expect(ref == 14 && refOut[5..<9].allSatisfy { $0 == 0 })
        #expect(portableDecompress(zero, capacity: 100).0 == nil)

        // A last match may end at the very end of the output when it goes through liblz4's 18-byte
        // shortcut (offset >= 8, 16+ input bytes left, 32+ output bytes): 14 literals, an 18-byte match,
        // then an empty last sequence. The same block with offset 1 takes the careful path and fails the
        // "last 5 bytes are literals" test.
        let fourteen = (0..<14).map { UInt8($0 + 65) }
        let endMatch8 = buildBlock([LZ4Sequence(literals: fourteen, offset: 8, matchLength: 18)], last: [])
        let endMatch1 = buildBlock([LZ4Sequence(literals: fourteen, offset: 1, matchLength: 18)], last: [])
        #expect(both(endMatch8, 32) == (32, 32))
        #expect(both(endMatch1, 32).0 < 0)
        #expect(both(endMatch1, 32).1 == nil)
        #expect(both(endMatch1, 37) == (32, 32))

        // Match-length bytes may not reach the last 4 input bytes, even before an empty last sequence.
        let longEnd = buildBlock([LZ4Sequence(literals: fourteen, offset: 8, matchLength: 19)], last: [])
        #expect(both(longEnd, 200).0 < 0)
        #expect(both(longEnd, 200).1 == nil)

        // Offset reaching one byte before the output start.
        let before = buildBlock([LZ4Sequence(literals: lits, offset: 6, matchLength: 4)], last: tail + tail)
        #expect(both(before, 100).0 < 0)
        #expect(both(before, 100).1 == nil)

        // Lengths written with long 255 runs, and a long overlapping match through the fast loop.
        let run = buildBlock([LZ4Sequence(literals: [7], offset: 1, matchLength: 5_000)], last: tail)
        #expect(both(run, 5_006) == (5_006, 5_006))
        #expect(both(run, 5_005).1 == nil)
    }
}
#endif
