/// Decoders for realm-core's leaf arrays: each takes a node and returns its elements, checking that the node has
/// the shape its kind requires. Sources, for reading (realm-core): `array_integer.hpp` (`ArrayIntNull`: element 0 is
/// the null sentinel), `array_bool.hpp` (3 is null), `array_basic.hpp` and `null.hpp` (float and double nulls are
/// the NaNs 0x7fc000aa and 0x7ff80000000000aa), `array_string.cpp`, `array_string_short.hpp`,
/// `array_blobs_small.hpp`, `array_blobs_big.cpp`, `array_timestamp.cpp`, `array_decimal128.hpp`,
/// `array_fixed_bytes.hpp`, `array_key.hpp`.
extension RealmFileReader {
    static let nullFloatBits: UInt32 = 0x7fc0_00aa
    static let nullDoubleBits: UInt64 = 0x7ff8_0000_0000_00aa

    /// `ArrayIntNull`: element 0 is the sentinel that stands for null; element i + 1 is value i.
    func nullableIntegers(_ node: RealmNode, _ what: @autoclosure () -> String) throws -> [Int64?] {
        guard node.holdsIntegers, node.count >= 1 else {
            throw corrupted("\(what()): a nullable-integer leaf without its null sentinel", at: node.ref)
        }
        let sentinel = node.int(0)
        return (1..<node.count).map { i in
            let v = node.int(i)
            return v == sentinel ? nil : v
        }
    }

    /// `ArrayBool` and `ArrayBoolNull` (3 is null).
    func bools(_ node: RealmNode, _ what: @autoclosure () -> String) throws -> [Bool?] {
        try (0..<ints(node, what()).count).map { i in
            switch node.int(i) {
            case 0: return false
            case 1: return true
            case 3: return nil
            case let v: throw corrupted("\(what()): boolean \(i) is \(v) (0, 1 or 3 for null)", at: node.ref)
            }
        }
    }

    /// `BasicArray<float>` and `BasicArrayNull<float>`; null (when `nullable`) is the NaN 0x7fc000aa.
    func floats(_ node: RealmNode, nullable: Bool, _ what: @autoclosure () -> String) throws -> [Float?] {
        try checkFixedWidth(node, 4, what())
        return (0..<node.count).map { i in
            let bits = UInt32(truncatingIfNeeded: node.load(i * 4, 4))
            return nullable && bits == Self.nullFloatBits ? nil : Float(bitPattern: bits)
        }
    }

    /// `BasicArray<double>` and `BasicArrayNull<double>`; null is the NaN 0x7ff80000000000aa.
    func doubles(_ node: RealmNode, nullable: Bool, _ what: @autoclosure () -> String) throws -> [Double?] {
        try checkFixedWidth(node, 8, what())
        return (0..<node.count).map { i in
            let bits = node.load(i * 8, 8)
            return nullable && bits == Self.nullDoubleBits ? nil : Double(bitPattern: bits)
        }
    }

    private func checkFixedWidth(_ node: RealmNode, _ bytes: Int, _ what: String) throws {
        guard node.count == 0 || (node.widthType == .multiply && node.width == bytes) else {
            throw corrupted("\(what): a leaf of \(bytes)-byte values has width \(node.width) (\(node.widthType))", at: node.ref)
        }
    }

    /// `ArrayString` and `ArrayBinary`: the bytes of each element, nil for null. Strings are stored with a
    /// terminating NUL in blob leaves (`isString` drops it); `enumKeys` is the keys leaf of an enumerated string
    /// column (its elements are indices into it).
    func blobs(_ node: RealmNode, isString: Bool, enumKeys: Int?, _ what: @autoclosure () -> String) throws -> [[UInt8]?] {
        if !node.hasRefs {
            if node.widthType == .multiply { return try shortStrings(node, what()) }
            guard let enumKeys else {
                throw corrupted("\(what()): an enumerated-string leaf in a column without enumeration keys", at: node.ref)
            }
            let keys = try blobs(self.node(at: enumKeys, "\(what()): enumeration keys"), isString: true, enumKeys: nil, what())
            return try ints(node, what()).map { index in
                guard index >= 0, index < keys.count else {
                    throw corrupted("\(what()): enumerated string index \(index) of \(keys.count) keys", at: node.ref)
                }
                return keys[Int(index)]
            }
        }
        if !node.context { return try smallBlobs(node, isString: isString, what()) }
        return try (0..<node.count).map { i in
            guard let ref = try ref(node, i, "\(what()): big blob \(i)") else { return nil }
            var bytes = try blob(at: ref, what(), depth: 0)
            if isString {
                guard bytes.popLast() == 0 else {
                    throw corrupted("\(what()): string \(i) has no terminating NUL", at: ref)
                }
            }
            return bytes
        }
    }

    /// `ArrayStringShort`: fixed blocks of `width` bytes; the last byte of a block is `width - 1 - length`, and a
    /// length of -1 is null. Width 0: every element null (or empty, in a required column).
    private func shortStrings(_ node: RealmNode, _ what: String) throws -> [[UInt8]?] {
        let width = node.width
        if width == 0 { return Array(repeating: nil, count: node.count) }
        return try (0..<node.count).map { i in
            let block = i * width
            let length = width - 1 - Int(node.payload[block + width - 1])
            if length == -1 { return nil }
            guard length >= 0 else {
                throw corrupted("\(what): short string \(i) declares a negative length", at: node.ref)
            }
            return Array(node.payload[block..<(block + length)])
        }
    }

    /// `ArraySmallBlobs`: [end offsets, one blob of all bytes, nulls (1 = null)].
    private func smallBlobs(_ node: RealmNode, isString: Bool, _ what: String) throws -> [[UInt8]?] {
        guard node.count >= 2, let offsetsRef = try ref(node, 0, what), let blobRef = try ref(node, 1, what) else {
            throw corrupted("\(what): a small-blob leaf without its offsets and bytes", at: node.ref)
        }
        let ends = try ints(self.node(at: offsetsRef, "\(what): blob offsets"), "\(what): blob offsets")
        let bytes = try blob(at: blobRef, what, depth: 0)
        var nulls = [Int64](repeating: 0, count: ends.count)
        if node.count >= 3, let nullsRef = try ref(node, 2, what) {
            nulls = try ints(self.node(at: nullsRef, "\(what): blob nulls"), "\(what): blob nulls")
            guard nulls.count == ends.count else {
                throw corrupted("\(what): \(ends.count) blob offsets but \(nulls.count) null flags", at: node.ref)
            }
        }
        var begin = 0
        return try ends.indices.map { i in
            let end = Int(clamping: ends[i])
            defer { begin = end }
            guard end >= begin, end <= bytes.count else {
                throw corrupted("\(what): blob \(i) spans \(begin)..<\(end) of \(bytes.count) bytes", at: node.ref)
            }
            if nulls[i] != 0 { return nil }
            if isString {
                guard end > begin, bytes[end - 1] == 0 else {
                    throw corrupted("\(what): string \(i) has no terminating NUL", at: node.ref)
                }
                return Array(bytes[begin..<(end - 1)])
            }
            return Array(bytes[begin..<end])
        }
    }

    /// `ArrayBlob`: raw bytes (width type ignore); with the context flag, a list of refs to the pieces of a blob
    /// too large for one node.
    private func blob(at ref: Int, _ what: String, depth: Int) throws -> [UInt8] {
        let node = try self.node(at: ref, "\(what): blob")
        guard node.context else {
            guard node.widthType == .ignore || node.count == 0 else {
                throw corrupted("\(what): a blob node with width type \(node.widthType)", at: ref)
            }
            return node.payload
        }
        guard depth == 0, node.hasRefs else {
            throw corrupted("\(what): a chunked blob whose chunks are chunked again", at: ref)
        }
        var bytes = [UInt8]()
        for i in 0..<node.count {
            guard let chunk = try self.ref(node, i, "\(what): blob chunk \(i)") else { continue }
            bytes += try blob(at: chunk, what, depth: 1)
        }
        return bytes
    }

    /// `ArrayTimestamp`: [seconds (`ArrayIntNull`, null is a null date), nanoseconds (`ArrayInteger`)].
    func timestamps(_ node: RealmNode, _ what: @autoclosure () -> String) throws -> [RealmFileTimestamp?] {
        guard node.hasRefs, node.count >= 2, let secondsRef = try ref(node, 0, what()), let nanosRef = try ref(node, 1, what()) else {
            throw corrupted("\(what()): a timestamp leaf without its seconds and nanoseconds", at: node.ref)
        }
        let seconds = try nullableIntegers(self.node(at: secondsRef, "\(what()): seconds"), what())
        let nanos = try ints(self.node(at: nanosRef, "\(what()): nanoseconds"), "\(what()): nanoseconds")
        guard seconds.count == nanos.count else {
            throw corrupted("\(what()): \(seconds.count) seconds but \(nanos.count) nanoseconds", at: node.ref)
        }
        return try zip(seconds, nanos).map { s, ns in
            guard let s else { return nil }
            guard let ns = Int32(exactly: ns), ns > -1_000_000_000, ns < 1_000_000_000 else {
                throw corrupted("\(what()): nanoseconds \(ns) out of range", at: node.ref)
            }
            return RealmFileTimestamp(seconds: s, nanoseconds: ns)
        }
    }

    /// `ArrayDecimal128`: elements of 16 bytes (BID128), or in format 24 of 8 (BID64) or 4 (BID32) bytes, or of 0
    /// (all null, or all zero with the context flag).
    func decimals(_ node: RealmNode, _ what: @autoclosure () -> String) throws -> [RealmFileDecimal128] {
        guard node.widthType == .multiply || node.count == 0 else {
            throw corrupted("\(what()): a decimal leaf with width type \(node.widthType)", at: node.ref)
        }
        switch node.width {
        case 0: return Array(repeating: node.context ? .zero : .null, count: node.count)
        case 4: return (0..<node.count).map { BID.decimal128(bid32: UInt32(truncatingIfNeeded: node.load($0 * 4, 4))) }
        case 8: return (0..<node.count).map { BID.decimal128(bid64: node.load($0 * 8, 8)) }
        case 16: return (0..<node.count).map { RealmFileDecimal128(low: node.load($0 * 16, 8), high: node.load($0 * 16 + 8, 8)) }
        default: throw corrupted("\(what()): a decimal leaf of \(node.width)-byte elements", at: node.ref)
        }
    }

    /// `ArrayFixedBytes` (ObjectId: 12 bytes, UUID: 16): blocks of one null-bit byte and eight elements; the header
    /// counts bytes.
    func fixedBytes(_ node: RealmNode, elementBytes: Int, _ what: @autoclosure () -> String) throws -> [[UInt8]?] {
        let blockBytes = 8 * elementBytes + 1
        guard node.count == 0 || (node.widthType == .multiply && node.width == 1) else {
            throw corrupted("\(what()): a fixed-bytes leaf with width \(node.width) (\(node.widthType))", at: node.ref)
        }
        let dataBytes = node.count - (node.count + blockBytes - 1) / blockBytes
        guard dataBytes % elementBytes == 0 else {
            throw corrupted("\(what()): a fixed-bytes leaf of \(node.count) bytes is not whole \(elementBytes)-byte elements", at: node.ref)
        }
        return (0..<(dataBytes / elementBytes)).map { i in
            let block = (i / 8) * blockBytes
            if node.payload[block] & (1 << UInt8(i % 8)) != 0 { return nil }
            let start = block + 1 + (i % 8) * elementBytes
            return Array(node.payload[start..<(start + elementBytes)])
        }
    }
}
