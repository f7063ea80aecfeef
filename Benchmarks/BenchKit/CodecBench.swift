import Engine

#if STRATA_SYSTEM_CODECS

/// The codecs on their own (issue 34): LZ4 decode and encode and XXH3 over 32 KiB blocks of the Bench's packed
/// records (what the engine's segment blocks hold), with liblz4 and libxxhash and with the Swift versions that
/// Apple platforms use. Each figure is bytes of uncompressed data per second.
enum CodecBench {
    /// 32 KiB blocks of key and packed record pairs, as a segment block lays them out (roughly).
    static func blocks(_ data: Dataset, count: Int) -> [[UInt8]] {
        var blocks: [[UInt8]] = []
        var block: [UInt8] = []
        var record: [UInt8] = []
        for p in data.people {
            withUnsafeBytes(of: UInt64(p.id).bigEndian) { block.append(contentsOf: $0) }
            PackedPerson.encode(p, into: &record)
            block.append(UInt8(record.count))
            block.append(contentsOf: record)
            if block.count >= 32 * 1024 {
                blocks.append(block)
                block = []
                if blocks.count == count { break }
            }
        }
        return blocks
    }

    struct Figures {
        var decode: Double
        var encode: Double
        var hash: Double
    }

    /// Bytes per second of each operation over `blocks`, with one implementation, repeated `rounds` times.
    static func measure(_ blocks: [[UInt8]], portable: Bool, rounds: Int) -> Figures {
        let implementation: LZ4.Implementation = portable ? .portable : .system
        let compressed = blocks.map { LZ4.encode($0, with: implementation) ?? [] }
        let bytes = Double(blocks.reduce(0) { $0 + $1.count } * rounds)
        var output = [UInt8](repeating: 0, count: 64 * 1024)
        var sink = 0
        var start = now()
        for _ in 0..<rounds {
            for (block, c) in zip(blocks, compressed) {
                c.withUnsafeBytes { input in
                    output.withUnsafeMutableBytes { space in
                        let target = UnsafeMutableRawBufferPointer(rebasing: space[0..<block.count])
                        sink &+= (portable ? PortableLZ4.decompress(input, into: target) : LZ4.System.decompress(input, into: target)) ?? 0
                    }
                }
            }
        }
        let decode = bytes / (now() - start)
        start = now()
        for _ in 0..<rounds {
            for block in blocks {
                block.withUnsafeBytes { input in
                    output.withUnsafeMutableBytes { space in
                        sink &+= (portable ? PortableLZ4.compress(input, into: space) : LZ4.System.compress(input, into: space)) ?? 0
                    }
                }
            }
        }
        let encode = bytes / (now() - start)
        start = now()
        for _ in 0..<rounds {
            for block in blocks {
                block.withUnsafeBytes { sink &+= Int(truncatingIfNeeded: portable ? PortableXXH3.hash($0, seed: 0) : Checksum.systemXXH3($0, seed: 0)) }
            }
        }
        let hash = bytes / (now() - start)
        if sink == 42 { print("") }  // keeps the work observable to the optimizer
        return Figures(decode: decode, encode: encode, hash: hash)
    }
}
#endif
