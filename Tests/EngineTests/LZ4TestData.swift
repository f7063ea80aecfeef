@testable import Engine
import TestSupport

// The data, block builders and comparison of the LZ4 compatibility tests (LZ4CompatibilityTests.swift).

extension SplitMix64 {
    /// Uniform in 0..<bound (bound > 0; the modulo bias is irrelevant here).
    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
    mutating func inRange(_ range: ClosedRange<Int>) -> Int { range.lowerBound + below(range.count) }
    mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
    mutating func byte() -> UInt8 { UInt8(truncatingIfNeeded: next()) }
}

/// `STRATA_TEST_SCALE` multiplies the randomized cases.
let fuzzScale = Seeds.scale

// MARK: - Data shapes

enum DataShape: CaseIterable, CustomStringConvertible {
    case random, runs, shortPeriods, text, records, adversarial

    var description: String {
        switch self {
        case .random: "random"
        case .runs: "runs"
        case .shortPeriods: "shortPeriods"
        case .text: "text"
        case .records: "records"
        case .adversarial: "adversarial"
        }
    }
}

private let words: [[UInt8]] = [
    "the", "of", "and", "a", "to", "in", "is", "you", "that", "it", "he", "was", "for", "on", "are", "as",
    "with", "his", "they", "at", "be", "this", "have", "from", "or", "one", "had", "by", "word", "but", "not",
    "what", "all", "were", "we", "when", "your", "can", "said", "there", "use", "an", "each", "which", "she",
    "do", "how", "their", "if", "will", "up", "other", "about", "out", "many", "then", "them", "these", "so",
    "storage", "engine", "block", "page", "compaction", "segment", "index", "record", "value", "timestamp",
].map { Array($0.utf8) }

func makeData(_ shape: DataShape, count: Int, rng: inout SplitMix64) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(count + 64)
    switch shape {
    case .random:
        while out.count < count { out.append(rng.byte()) }
    case .runs:
        while out.count < count {
            let b = rng.chance(50) ? 0 : rng.byte()
            let n = rng.chance(80) ? rng.inRange(1...12) : rng.inRange(13...400)
            out.append(contentsOf: repeatElement(b, count: n))
        }
    case .shortPeriods:
        while out.count < count {
            let period = rng.inRange(1...16)
            let unit = (0..<period).map { _ in rng.byte() }
            let reps = rng.inRange(1...60)
            for _ in 0..<reps { out.append(contentsOf: unit) }
            if rng.chance(30) { out.append(rng.byte()) }
        }
    case .text:
        appendText(&out, count: count, rng: &rng)
    case .records:
        appendRecords(&out, count: count, rng: &rng)
    case .adversarial:
        // Mixes that stress the edges: incompressible stretches, runs ending right at the block end,
        // copies from far back (up to and past 64 KiB), and near-repeats that break after 3...5 bytes.
        while out.count < count {
            switch rng.below(6) {
            case 0:
                for _ in 0..<rng.inRange(1...300) { out.append(rng.byte()) }
            case 1:
                out.append(contentsOf: repeatElement(rng.byte(), count: rng.inRange(4...64)))
            case 2 where out.count > 8:
                let back = min(out.count, rng.chance(50) ? rng.inRange(1...70_000) : rng.inRange(60_000...66_000))
                let start = out.count - back
                let n = rng.inRange(4...200)
                for i in 0..<n { out.append(out[start + i % back]) }
            case 3 where out.count > 8:
                let start = rng.below(out.count - 4)
                out.append(contentsOf: out[start..<(start + rng.inRange(3...5))])
                out.append(rng.byte())
            case 4:
                let b = rng.byte()
                for i in 0..<rng.inRange(8...64) { out.append(i % 2 == 0 ? b : b &+ 1) }
            default:
                out.append(contentsOf: repeatElement(0, count: rng.inRange(1...20)))
            }
        }
    }
    if out.count > count { out.removeLast(out.count - count) }
    return out
}

func appendText(_ out: inout [UInt8], count: Int, rng: inout SplitMix64) {
    var sentence = 0
    while out.count < count {
        let w = words[rng.below(words.count)]
        if sentence == 0, let first = w.first {
            out.append(first &- 32)
            out.append(contentsOf: w.dropFirst())
        } else {
            out.append(contentsOf: w)
        }
        sentence += 1
        if sentence > rng.inRange(6...18) {
            out.append(contentsOf: rng.chance(20) ? Array(".\n".utf8) : Array(". ".utf8))
            sentence = 0
        } else {
            out.append(rng.chance(8) ? UInt8(ascii: ",") : UInt8(ascii: " "))
            if out.last == UInt8(ascii: ",") { out.append(UInt8(ascii: " ")) }
        }
    }
}

/// Row-like records: repeated key prefixes, small integers, a timestamp, a short text field.
func appendRecords(_ out: inout [UInt8], count: Int, rng: inout SplitMix64) {
    var id = rng.inRange(1...100_000)
    var timestamp: UInt64 = 1_700_000_000_000 + UInt64(rng.below(1_000_000))
    let tables: [[UInt8]] = ["users", "orders", "events", "sessions"].map { Array($0.utf8) }
    while out.count < count {
        id += rng.inRange(1...3)
        timestamp += UInt64(rng.inRange(0...5000))
        let table = tables[rng.below(tables.count)]
        out.append(contentsOf: Array("key:".utf8))
        out.append(contentsOf: table)
        out.append(UInt8(ascii: "/"))
        out.append(contentsOf: Array(String(id).utf8))
        out.append(0)
        withUnsafeBytes(of: timestamp.littleEndian) { out.append(contentsOf: $0) }
        withUnsafeBytes(of: UInt32(rng.below(100)).littleEndian) { out.append(contentsOf: $0) }
        withUnsafeBytes(of: UInt16(rng.below(4)).littleEndian) { out.append(contentsOf: $0) }
        out.append(UInt8(rng.below(2)))
        let w = words[rng.below(words.count)]
        out.append(UInt8(w.count))
        out.append(contentsOf: w)
    }
}

// MARK: - The two implementations

#if STRATA_SYSTEM_CODECS
/// liblz4's LZ4_compress_default into `capacity` bytes (its bound when nil).
func lz4Compress(_ input: [UInt8], capacity: Int? = nil) -> [UInt8]? {
    var out = [UInt8](repeating: 0, count: max(capacity ?? LZ4.System.compressBound(input.count), 1))
    let cap = capacity ?? out.count
    let n = input.withUnsafeBytes { src in out.withUnsafeMutableBytes { LZ4.System.compress(src, into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<cap])) } }
    return n.map { Array(out[0..<$0]) }
}

/// liblz4's LZ4_decompress_safe into a buffer of `capacity` bytes prefilled with `fill`: (its result, -1 for
/// an error, and the buffer).
func lz4Decompress(_ block: [UInt8], capacity: Int, fill: UInt8 = 0xA5) -> (Int, [UInt8]) {
    var out = [UInt8](repeating: fill, count: capacity)
    let n = block.withUnsafeBytes { src in out.withUnsafeMutableBytes { LZ4.System.decompress(src, into: $0) } }
    return (n ?? -1, out)
}

#endif

func portableCompress(_ input: [UInt8], capacity: Int? = nil) -> [UInt8]? {
    let cap = capacity ?? PortableLZ4.compressBound(input.count)
    var out = [UInt8](repeating: 0, count: cap)
    let n = input.withUnsafeBytes { src in
        out.withUnsafeMutableBytes { dst in PortableLZ4.compress(src, into: dst) }
    }
    guard let n else { return nil }
    return Array(out[0..<n])
}

func portableDecompress(_ block: [UInt8], capacity: Int, fill: UInt8 = 0x5A) -> (Int?, [UInt8]) {
    var out = [UInt8](repeating: fill, count: capacity)
    let n = block.withUnsafeBytes { src in
        out.withUnsafeMutableBytes { dst in PortableLZ4.decompress(src, into: dst) }
    }
    return (n, out)
}

/// One sequence of a hand-built block.
struct LZ4Sequence {
    var literals: [UInt8]
    var offset: Int  // written as 16 bits, whatever its value
    var matchLength: Int  // >= 4 for real matches; the token nibble is matchLength - 4 clamped at 0
}

/// Serializes sequences plus last literals (nil: end with a match, which is malformed).
func buildBlock(_ sequences: [LZ4Sequence], last: [UInt8]?) -> [UInt8] {
    var out: [UInt8] = []
    func lengthTail(_ n: Int) {
        var rest = n
        while rest >= 255 {
            out.append(255)
            rest -= 255
        }
        out.append(UInt8(rest))
    }
    for s in sequences {
        let ll = s.literals.count
        let ml = max(0, s.matchLength - 4)
        out.append(UInt8(min(ll, 15) << 4 | min(ml, 15)))
        if ll >= 15 { lengthTail(ll - 15) }
        out.append(contentsOf: s.literals)
        out.append(UInt8(truncatingIfNeeded: s.offset))
        out.append(UInt8(truncatingIfNeeded: s.offset >> 8))
        if ml >= 15 { lengthTail(ml - 15) }
    }
    if let last {
        out.append(UInt8(min(last.count, 15) << 4))
        if last.count >= 15 { lengthTail(last.count - 15) }
        out.append(contentsOf: last)
    }
    return out
}

/// Collects the first few failures of a long loop, so one #expect reports them.
struct Failures {
    private(set) var count = 0
    private(set) var samples: [String] = []
    mutating func record(_ message: @autoclosure () -> String) {
        count += 1
        if samples.count < 5 { samples.append(message()) }
    }
    /// Tallies of checkSameDecode: blocks both accepted, both rejected, and offset-0 blocks only liblz4 took.
    var accepted = 0
    var rejected = 0
    var zeroOffset = 0
    var summary: String { "\(count) failure(s): " + samples.joined(separator: " | ") }
    var tally: String { "\(accepted) accepted by both, \(rejected) rejected by both, \(zeroOffset) offset-0 blocks only liblz4 accepts" }
}

func hexPrefix(_ bytes: [UInt8], _ n: Int = 48) -> String {
    let digits = Array("0123456789abcdef")
    return bytes.prefix(n).map { String([digits[Int($0 >> 4)], digits[Int($0 & 15)]]) }.joined()
        + (bytes.count > n ? "…(\(bytes.count))" : "")
}

#if STRATA_SYSTEM_CODECS
/// Decodes `block` with both decoders into `capacity` bytes; records any disagreement.
/// Agreement: both reject; or both accept with the same count and bytes; or liblz4 accepts a block with an
/// offset-0 match that PortableLZ4 rejects.
func checkSameDecode(_ block: [UInt8], capacity: Int, _ failures: inout Failures, _ what: @autoclosure () -> String) {
    let (ref, refOut) = lz4Decompress(block, capacity: capacity)
    let (mine, myOut) = portableDecompress(block, capacity: capacity)
    if ref < 0 {
        failures.rejected += 1
        if let mine { failures.record("\(what()): liblz4 rejects, Portable returns \(mine); cap \(capacity) block \(hexPrefix(block))") }
        return
    }
    guard let mine else {
        if PortableLZ4.hasZeroOffsetMatch(block) {
            failures.zeroOffset += 1
        } else {
            failures.record("\(what()): liblz4 returns \(ref), Portable rejects; cap \(capacity) block \(hexPrefix(block))")
        }
        return
    }
    failures.accepted += 1
    if mine != ref || refOut[0..<ref] != myOut[0..<mine] {
        failures.record("\(what()): liblz4 \(ref) bytes, Portable \(mine) (or content differs); cap \(capacity) block \(hexPrefix(block))")
    }
}
#endif
