// Guards: the LZ4 block format in Swift, used where no system liblz4 is linked (Apple platforms,
// STRATA_PORTABLE=1). Blocks it writes decode with liblz4 and blocks liblz4 writes decode here; the decoder
// never reads or writes outside its two buffers, whatever its input, and accepts exactly the blocks that
// liblz4 1.9.4's LZ4_decompress_safe accepts (with the same output), except offset 0 (see below).
//
// The format (lz4's doc/lz4_Block_format.md), in short. A block is a run of sequences. Each sequence is a
// token byte (high nibble: literal count, low nibble: match length - 4), where a nibble of 15 goes on in
// extra bytes that are added to it (255 means one more byte follows); then the literals; then a 2-byte
// little-endian offset 1...65535 counting back from the current output position; then the match-length
// bytes. A match may overlap its own output (offset < length repeats a pattern). The last sequence has
// literals only and no offset. Encoders keep the last 5 bytes literal (LASTLITERALS) and start no match in
// the last 12 bytes (MFLIMIT), so that fast decoders can copy in wide strides.
//
// liblz4 does not check the end-of-block rules against the block but against the room left in its
// buffers, and its 18-byte shortcut skips them: a match may start within 12 bytes of the end when the
// output buffer is roomier than the block, and may even end the block when it is copied by the shortcut
// (16+ input and 32+ output bytes left, offset >= 8). Blocks from real encoders never notice, but to accept
// exactly what liblz4 accepts, the careful loop below makes the same distance tests (16/32 for the
// shortcut, 12/8 for the last literals, 5 for the last match, 15/4 for length bytes). The fast loop's own
// tests (64/32/17) only choose when to hand over and never change the outcome. The one deliberate
// difference: liblz4 decodes offset 0 as zero bytes; the format calls it corrupt, and so does this decoder.

/// LZ4 block format (the format of LZ4_compress_default / LZ4_decompress_safe), written in Swift.
package enum PortableLZ4 {
    private static let minMatch = 4
    private static let lastLiterals = 5
    private static let mfLimit = 12
    private static let maxDistance = 65_535
    /// LZ4_MAX_INPUT_SIZE.
    private static let maxInputSize = 0x7E00_0000
    /// LZ4_MEMORY_USAGE 14: the compressor's position table.
    private static let tableBytes = 16_384
    /// Below this size every position fits in a UInt16, so (like liblz4) the table holds twice as many.
    private static let shortInputLimit = 65_536 + 12 - 1
    /// liblz4's fast decoding loop runs while this much output space is left.
    private static let fastLoopMargin = 64

    /// Worst-case compressed size, equal to liblz4's LZ4_compressBound(n) = n + n/255 + 16 (for n <= LZ4_MAX_INPUT_SIZE).
    package static func compressBound(_ count: Int) -> Int {
        guard count >= 0, count <= maxInputSize else { return 0 }
        return count + count / 255 + 16
    }

    // MARK: - Decoding

    /// Decodes one block into `output`; returns the number of bytes written, or nil when the input is malformed
    /// (any way: truncated, offset 0, offset before the output start, match or literal running past either buffer,
    /// trailing garbage, last-sequence rules violated). Never reads or writes outside the two buffers, whatever the input.
    /// Must accept exactly what LZ4_decompress_safe(src, dst, srcCount, dstCapacity) accepts, with the same result.
    package static func decompress(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int? {
        let inputCount = input.count
        let outputCount = output.count
        // An empty output takes only the empty block, a lone zero token.
        if outputCount == 0 { return inputCount == 1 && input[0] == 0 ? 0 : nil }
        guard inputCount > 0, let src = input.baseAddress, let dst = output.baseAddress else { return nil }
        return decodeBlock(src, inputCount, dst, outputCount)
    }

    /// Where the careful loop picks up a sequence that the fast loop handed over.
    private enum Resume { case token, literals, matchLength, matchCopy }

    private static func decodeBlock(
        _ src: UnsafeRawPointer, _ iend: Int, _ dst: UnsafeMutableRawPointer, _ oend: Int
    ) -> Int? {
        var ip = 0
        var op = 0
        var token = 0
        var literalCount = 0
        var matchCount = 0
        var offset = 0
        var resume = Resume.token

        // Fast loop: with at least 64 bytes of output left, literals and matches are copied in 16-byte strides
        // that may run past their end. Its tests are liblz4's; they also prove the strides stay inside both
        // buffers (ip < iend and op <= oend - 64 at the top of each turn). Wrapping arithmetic: positions and
        // lengths are bounded by the buffer sizes, far from overflow, and overflow checks cost here.
        if oend >= fastLoopMargin {
            fast: while true {
                token = byte(src, ip)
                ip &+= 1
                literalCount = token &>> 4
                if literalCount == 15 {
                    let more = lengthTail(src, &ip, iend, reserved: 15)
                    if more < 0 { return nil }
                    literalCount &+= more
                    if op &+ literalCount > oend &- 32 || ip &+ literalCount > iend &- 32 {
                        resume = .literals
                        break fast
                    }
                    copyStrides16(dst + op, src + ip, literalCount)
                } else {
                    // 16 bytes are read and written for up to 14 literals.
                    if ip > iend &- 17 {
                        resume = .literals
                        break fast
                    }
                    copy16(dst + op, src + ip)
                }
                ip &+= literalCount
                op &+= literalCount

                offset = le16(src, ip)
                ip &+= 2
                matchCount = token & 15
                if matchCount == 15 {
                    let more = lengthTail(src, &ip, iend, reserved: 4)
                    if more < 0 { return nil }
                    matchCount &+= more &+ minMatch
                    if op &+ matchCount >= oend &- fastLoopMargin {
                        resume = .matchCopy
                        break fast
                    }
                } else {
                    matchCount &+= minMatch
                    if op &+ matchCount >= oend &- fastLoopMargin {
                        resume = .matchCopy
                        break fast
                    }
                    // Most matches: 4...18 bytes, source at least 8 back, so three 8-byte copies in order do it.
                    if offset >= 8 && offset <= op {
                        let d = dst + op
                        let s = UnsafeRawPointer(d - offset)
                        copy8(d, s)
                        copy8(d + 8, s + 8)
                        copy8(d + 16, s + 16)
                        op &+= matchCount
                        continue fast
                    }
                }
                if offset == 0 || offset > op { return nil }
                copyMatchWide(dst + op, offset: offset, count: matchCount)
                op &+= matchCount
            }
        }

        // Careful loop: the last part of the output (or of the input), small outputs, and the sequences the
        // fast loop handed over. It never returns to the fast loop, as in liblz4.
        while true {
            if resume == .token {
                token = byte(src, ip)
                ip += 1
                literalCount = token &>> 4
                // liblz4's shortcut for ordinary sequences: with 16+ input bytes and 32+ output bytes left it
                // copies 16 bytes of literals and 18 of match without the end-of-block tests below.
                if literalCount != 15 && ip < iend - 16 && op <= oend - 32 {
                    copy16(dst + op, src + ip)
                    op += literalCount
                    ip += literalCount
                    offset = le16(src, ip)
                    ip += 2
                    matchCount = token & 15
                    if matchCount != 15 && offset >= 8 && offset <= op {
                        let d = dst + op
                        let s = UnsafeRawPointer(d - offset)
                        copy8(d, s)
                        copy8(d + 8, s + 8)
                        (d + 16).storeBytes(of: (s + 16).loadUnaligned(as: UInt16.self), as: UInt16.self)
                        op += matchCount + minMatch
                        continue
                    }
                    resume = .matchLength
                } else {
                    if literalCount == 15 {
                        let more = lengthTail(src, &ip, iend, reserved: 15)
                        if more < 0 { return nil }
                        literalCount += more
                    }
                    resume = .literals
                }
            }
            if resume == .literals {
                let end = op + literalCount
                if end > oend - mfLimit || ip + literalCount > iend - (2 + 1 + lastLiterals) {
                    // Too close to an end for another sequence: these must be the last literals, ending the
                    // input exactly and fitting the output.
                    guard ip + literalCount == iend, end <= oend else { return nil }
                    (dst + op).copyMemory(from: src + ip, byteCount: literalCount)
                    return end
                }
                (dst + op).copyMemory(from: src + ip, byteCount: literalCount)
                ip += literalCount
                op = end
                offset = le16(src, ip)
                ip += 2
                matchCount = token & 15
                resume = .matchLength
            }
            if resume == .matchLength {
                if matchCount == 15 {
                    let more = lengthTail(src, &ip, iend, reserved: 4)
                    if more < 0 { return nil }
                    matchCount += more
                }
                matchCount += minMatch
            }
            if offset == 0 || offset > op { return nil }
            let end = op + matchCount
            // The last 5 bytes of output are literals.
            if end > oend - lastLiterals { return nil }
            copyMatchBounded(dst, from: op, offset: offset, to: end, limit: oend)
            op = end
            resume = .token
        }
    }

    /// Extra length bytes after a nibble of 15, or -1 when they run into the last `reserved` input bytes:
    /// 15 for a literal length, 4 for a match length (liblz4 gives up there: such a block cannot be well
    /// formed). Callers guarantee ip < iend on entry.
    @inline(__always)
    private static func lengthTail(_ src: UnsafeRawPointer, _ ip: inout Int, _ iend: Int, reserved: Int) -> Int {
        let limit = iend &- reserved
        if ip >= limit { return -1 }
        var total = 0
        while true {
            let b = byte(src, ip)
            ip &+= 1
            total &+= b
            if ip > limit { return -1 }
            if b != 255 { return total }
        }
    }

    /// Copies a match in the fast loop, where at least 32 bytes past its end are free to overwrite.
    @inline(__always)
    private static func copyMatchWide(_ d: UnsafeMutableRawPointer, offset: Int, count: Int) {
        var d = d
        let end = d + count
        if offset >= 16 {
            var s = UnsafeRawPointer(d - offset)
            repeat {
                copy16(d, s)
                d += 16
                s += 16
            } while d < end
        } else if offset >= 8 {
            var s = UnsafeRawPointer(d - offset)
            repeat {
                copy8(d, s)
                d += 8
                s += 8
            } while d < end
        } else {
            let (pattern, step) = repeatingPattern(UnsafeRawPointer(d - offset), period: offset)
            if step == 8 {
                repeat {
                    d.storeBytes(of: pattern, as: UInt64.self)
                    d.storeBytes(of: pattern, toByteOffset: 8, as: UInt64.self)
                    d += 16
                } while d < end
            } else {
                repeat {
                    d.storeBytes(of: pattern, as: UInt64.self)
                    d += step
                } while d < end
            }
        }
    }

    /// Copies a match near the output end: 8-byte strides while they fit below `limit`, then single bytes.
    /// Requires end <= limit - 5 (so the pattern's 8-byte read at the source stays inside).
    @inline(__always)
    private static func copyMatchBounded(
        _ dst: UnsafeMutableRawPointer, from start: Int, offset: Int, to end: Int, limit: Int
    ) {
        var d = start
        if offset >= 8 {
            while d < end && d + 8 <= limit {
                copy8(dst + d, dst + (d - offset))
                d += 8
            }
        } else {
            let (pattern, step) = repeatingPattern(dst + (d - offset), period: offset)
            while d < end && d + 8 <= limit {
                (dst + d).storeBytes(of: pattern, as: UInt64.self)
                d += step
            }
        }
        while d < end {
            dst.storeBytes(of: dst.load(fromByteOffset: d - offset, as: UInt8.self), toByteOffset: d, as: UInt8.self)
            d += 1
        }
    }

    /// For a match whose source is 1...7 bytes back (never 0: the loop would not end): eight bytes of its repeating output (in memory order),
    /// and the largest multiple of the period that is <= 8, the stride at which those bytes can be stored again.
    /// Reads 8 bytes at `source`; only the first `period` matter (the rest may not be written yet).
    @inline(__always)
    private static func repeatingPattern(_ source: UnsafeRawPointer, period: Int) -> (UInt64, Int) {
        let bits = UInt64(truncatingIfNeeded: period &* 8)
        var word = UInt64(littleEndian: source.loadUnaligned(as: UInt64.self)) & ((1 &<< bits) &- 1)
        var width = bits
        while width < 64 {
            word |= word &<< width
            width &+= width
        }
        // Byte p of this constant is the stride for period p: 8, 8, 6, 8, 5, 6, 7.
        let step = Int(truncatingIfNeeded: (0x0706_0508_0608_0800 as UInt64) &>> bits) & 0xFF
        return (word.littleEndian, step)
    }

    // MARK: - Encoding

    /// Compresses `input` into `output` (output.count >= compressBound(input.count) is NOT required: return nil
    /// when the output does not fit, like LZ4_compress_default returning 0). Returns the compressed byte count.
    package static func compress(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int? {
        let count = input.count
        let capacity = output.count
        guard count <= maxInputSize, capacity > 0, let dst = output.baseAddress else { return nil }
        guard count > 0, let src = input.baseAddress else {
            dst.storeBytes(of: 0, as: UInt8.self)
            return 1
        }
        // Too short to hold a match (it must start 12 bytes before the end, after one literal).
        if count <= mfLimit { return encodeLastLiterals(src, from: 0, to: count, dst, at: 0, capacity: capacity) }
        // 16 KiB on the stack (not the heap), zeroed per call as liblz4 does.
        return withUnsafeTemporaryAllocation(byteCount: tableBytes, alignment: 16) { scratch in
            let base = scratch.baseAddress!
            if count < shortInputLimit {
                let table = base.initializeMemory(as: UInt16.self, repeating: 0, count: tableBytes / 2)
                return encode(ShortInputTable.self, src, count, dst, capacity, table)
            } else {
                let table = base.initializeMemory(as: UInt32.self, repeating: 0, count: tableBytes / 4)
                return encode(LongInputTable.self, src, count, dst, capacity, table)
            }
        }
    }

    /// Greedy single-probe matching as in LZ4_compress_default (acceleration 1): a hash of the next bytes
    /// names the last position seen with the same hash; after 64 misses in a row the probe skips ahead ever
    /// faster, which keeps incompressible input cheap.
    /// Output checks are lower bounds of the final size, so the result is nil exactly when it does not fit.
    @inline(__always)
    private static func encode<Table: PositionTable>(
        _: Table.Type, _ src: UnsafeRawPointer, _ count: Int,
        _ dst: UnsafeMutableRawPointer, _ capacity: Int, _ table: UnsafeMutablePointer<Table.Entry>
    ) -> Int? {
        let matchLimit = count - lastLiterals
        let searchEnd = count - mfLimit + 1  // a match starts before this
        var op = 0
        var anchor = 0
        var ip = 1
        var candidate = 0
        table[Table.hash(src)] = 0
        var nextHash = Table.hash(src + 1)

        search: while true {
            var forward = ip
            var step = 1
            var misses = 1 << 6
            repeat {
                let h = nextHash
                ip = forward
                forward += step
                step = misses &>> 6
                misses += 1
                if forward > searchEnd { break search }
                candidate = Int(table[h])
                nextHash = Table.hash(src + forward)
                table[h] = Table.Entry(truncatingIfNeeded: ip)
            } while (Table.mayBeOutOfReach && candidate + maxDistance < ip) || load32(src, candidate) != load32(src, ip)

            // Extend the match backwards over equal bytes not yet emitted.
            while ip > anchor && candidate > 0 && byte(src, ip - 1) == byte(src, candidate - 1) {
                ip -= 1
                candidate -= 1
            }

            let literalCount = ip - anchor
            var tokenAt = op
            op += 1
            // Room for the literals, their length bytes, an offset, a final token and 5 last literals.
            if op + literalCount + 8 + literalCount / 255 > capacity { return nil }
            if literalCount >= 15 {
                dst.storeBytes(of: 0xF0, toByteOffset: tokenAt, as: UInt8.self)
                op = writeLengthTail(dst, op, literalCount - 15)
            } else {
                dst.storeBytes(of: UInt8(truncatingIfNeeded: literalCount &<< 4), toByteOffset: tokenAt, as: UInt8.self)
            }
            // May write 7 bytes past the literals: covered by the check above. Reads stay below ip + 7 < count.
            copyStrides8(dst + op, src + anchor, literalCount)
            op += literalCount

            while true {
                let distance = ip - candidate
                dst.storeBytes(of: UInt16(truncatingIfNeeded: distance).littleEndian, toByteOffset: op, as: UInt16.self)
                op += 2
                let extra = matchExtent(src, ip + minMatch, candidate + minMatch, matchLimit)
                ip += minMatch + extra
                if op + 1 + lastLiterals + (extra + 240) / 255 > capacity { return nil }
                if extra >= 15 {
                    orToken(dst, tokenAt, 15)
                    op = writeLengthTail(dst, op, extra - 15)
                } else {
                    orToken(dst, tokenAt, extra)
                }
                anchor = ip
                if ip >= searchEnd { break search }

                let behind = ip - 2
                table[Table.hash(src + behind)] = Table.Entry(truncatingIfNeeded: behind)
                // A match right here needs no literals.
                let h = Table.hash(src + ip)
                candidate = Int(table[h])
                table[h] = Table.Entry(truncatingIfNeeded: ip)
                guard (!Table.mayBeOutOfReach || candidate + maxDistance >= ip) && load32(src, candidate) == load32(src, ip)
                else { break }
                tokenAt = op
                dst.storeBytes(of: 0, toByteOffset: op, as: UInt8.self)
                op += 1
            }
            ip += 1
            nextHash = Table.hash(src + ip)
        }
        return encodeLastLiterals(src, from: anchor, to: count, dst, at: op, capacity: capacity)
    }

    private static func encodeLastLiterals(
        _ src: UnsafeRawPointer, from anchor: Int, to count: Int, _ dst: UnsafeMutableRawPointer, at start: Int,
        capacity: Int
    ) -> Int? {
        let literalCount = count - anchor
        if start + 1 + (literalCount + 240) / 255 + literalCount > capacity { return nil }
        var op = start + 1
        if literalCount >= 15 {
            dst.storeBytes(of: 0xF0, toByteOffset: start, as: UInt8.self)
            op = writeLengthTail(dst, op, literalCount - 15)
        } else {
            dst.storeBytes(of: UInt8(truncatingIfNeeded: literalCount &<< 4), toByteOffset: start, as: UInt8.self)
        }
        (dst + op).copyMemory(from: src + anchor, byteCount: literalCount)
        return op + literalCount
    }

    @inline(__always)
    private static func orToken(_ dst: UnsafeMutableRawPointer, _ at: Int, _ matchNibble: Int) {
        let token = dst.load(fromByteOffset: at, as: UInt8.self) | UInt8(truncatingIfNeeded: matchNibble)
        dst.storeBytes(of: token, toByteOffset: at, as: UInt8.self)
    }

    /// Writes the bytes that continue a length nibble of 15: 255s, then the rest.
    @inline(__always)
    private static func writeLengthTail(_ dst: UnsafeMutableRawPointer, _ at: Int, _ remaining: Int) -> Int {
        var op = at
        var rest = remaining
        while rest >= 255 {
            dst.storeBytes(of: 255, toByteOffset: op, as: UInt8.self)
            op += 1
            rest -= 255
        }
        dst.storeBytes(of: UInt8(truncatingIfNeeded: rest), toByteOffset: op, as: UInt8.self)
        return op + 1
    }

    /// How many bytes at `a` equal those at `b`, reading nothing at or past `limit` on the `a` side (b < a).
    @inline(__always)
    private static func matchExtent(_ src: UnsafeRawPointer, _ a: Int, _ b: Int, _ limit: Int) -> Int {
        var a = a
        var b = b
        let start = a
        while a < limit - 7 {
            let diff = UInt64(littleEndian: src.loadUnaligned(fromByteOffset: a, as: UInt64.self))
                ^ UInt64(littleEndian: src.loadUnaligned(fromByteOffset: b, as: UInt64.self))
            if diff != 0 { return a - start + diff.trailingZeroBitCount &>> 3 }
            a += 8
            b += 8
        }
        if a < limit - 3 && load32(src, a) == load32(src, b) {
            a += 4
            b += 4
        }
        if a < limit - 1 && src.loadUnaligned(fromByteOffset: a, as: UInt16.self) == src.loadUnaligned(fromByteOffset: b, as: UInt16.self) {
            a += 2
            b += 2
        }
        if a < limit && byte(src, a) == byte(src, b) { a += 1 }
        return a - start
    }

    // MARK: - Raw memory helpers

    @inline(__always)
    private static func byte(_ p: UnsafeRawPointer, _ i: Int) -> Int {
        Int(p.load(fromByteOffset: i, as: UInt8.self))
    }

    @inline(__always)
    private static func le16(_ p: UnsafeRawPointer, _ i: Int) -> Int {
        Int(UInt16(littleEndian: p.loadUnaligned(fromByteOffset: i, as: UInt16.self)))
    }

    @inline(__always)
    private static func load32(_ p: UnsafeRawPointer, _ i: Int) -> UInt32 {
        p.loadUnaligned(fromByteOffset: i, as: UInt32.self)
    }

    @inline(__always)
    private static func copy8(_ d: UnsafeMutableRawPointer, _ s: UnsafeRawPointer) {
        d.storeBytes(of: s.loadUnaligned(as: UInt64.self), as: UInt64.self)
    }

    /// Both halves are read before either is written, so the source may be as little as 16 bytes back.
    @inline(__always)
    private static func copy16(_ d: UnsafeMutableRawPointer, _ s: UnsafeRawPointer) {
        let low = s.loadUnaligned(as: UInt64.self)
        let high = s.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
        d.storeBytes(of: low, as: UInt64.self)
        d.storeBytes(of: high, toByteOffset: 8, as: UInt64.self)
    }

    /// Copies `count` (>= 1) bytes in 16-byte strides: reads and writes up to 15 bytes past the end.
    @inline(__always)
    private static func copyStrides16(_ d: UnsafeMutableRawPointer, _ s: UnsafeRawPointer, _ count: Int) {
        var i = 0
        repeat {
            copy16(d + i, s + i)
            i &+= 16
        } while i < count
    }

    /// Copies `count` bytes in 8-byte strides: reads and writes up to 7 bytes past the end (8 when count is 0).
    @inline(__always)
    private static func copyStrides8(_ d: UnsafeMutableRawPointer, _ s: UnsafeRawPointer, _ count: Int) {
        var i = 0
        repeat {
            copy8(d + i, s + i)
            i &+= 8
        } while i < count
    }
}

/// The compressor's hash table: which position last had a given hash.
private protocol PositionTable {
    associatedtype Entry: FixedWidthInteger & UnsignedInteger
    static func hash(_ p: UnsafeRawPointer) -> Int
    /// Whether an entry can lie more than 65535 bytes back (the input is longer than that).
    static var mayBeOutOfReach: Bool { get }
}

/// Inputs under 64 KiB + 11: positions fit 16 bits, so 8192 entries in the same 16 KiB (liblz4's byU16).
private enum ShortInputTable: PositionTable {
    typealias Entry = UInt16
    @inline(__always)
    static func hash(_ p: UnsafeRawPointer) -> Int {
        Int(truncatingIfNeeded: (p.loadUnaligned(as: UInt32.self).littleEndian &* 2_654_435_761) &>> (32 - 13))
    }
    static var mayBeOutOfReach: Bool { false }
}

/// Longer inputs: 4096 32-bit positions, hashed on 5 bytes (liblz4's byU32 on 64-bit hosts).
private enum LongInputTable: PositionTable {
    typealias Entry = UInt32
    @inline(__always)
    static func hash(_ p: UnsafeRawPointer) -> Int {
        let word = UInt64(littleEndian: p.loadUnaligned(as: UInt64.self))
        return Int(truncatingIfNeeded: ((word &<< 24) &* 889_523_592_379) &>> (64 - 12))
    }
    static var mayBeOutOfReach: Bool { true }
}

extension PortableLZ4 {
    /// Whether `block` has a match with offset 0 before anything malformed: a block liblz4 decodes (as zero
    /// bytes) and this decoder rejects, as the format says. Lets differential checks tell that difference
    /// from a real one.
    package static func hasZeroOffsetMatch(_ block: [UInt8]) -> Bool {
        var ip = 0
        while ip < block.count {
            let token = Int(block[ip])
            ip += 1
            var literals = token >> 4
            if literals == 15 {
                while ip < block.count {
                    let b = Int(block[ip])
                    ip += 1
                    literals += b
                    if b != 255 { break }
                }
            }
            ip += literals
            guard ip + 1 < block.count else { return false }
            let offset = Int(block[ip]) | Int(block[ip + 1]) << 8
            ip += 2
            if offset == 0 { return true }
            if token & 15 == 15 {
                while ip < block.count {
                    let b = block[ip]
                    ip += 1
                    if b != 255 { break }
                }
            }
        }
        return false
    }
}
