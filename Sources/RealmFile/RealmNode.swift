/// One array node of a Realm file (realm-core's `Array`): an 8-byte header and a payload of packed elements.
///
/// Header, as realm-core writes it to a file: bytes 0-3 the dummy checksum `AAAA` (or, in arrays older releases
/// wrote, the capacity: realm-core's `Array::init_from_mem` reads neither); byte 4 the flags (0x80 inner
/// B+tree node, 0x40 has refs, 0x20 context flag, 0x18 width type: 0 bits, 1 multiply, 2 ignore; 0x07 the width
/// index w, width = (1 << w) >> 1 of {0, 1, 2, 4, 8, 16, 32, 64}); bytes 5-7 the element count, big-endian.
/// Elements of width 1, 2 and 4 bits are unsigned, packed from the low bit of each byte up; widths 8 to 64 are
/// signed little-endian (``unsigned(_:)`` reads them as realm-core's `ArrayUnsigned` does). In a has-refs node an
/// even element is a ref (a file offset, 0 for none) and an odd one a tagged integer `(value << 1) | 1`.
///
/// A node is built only through ``RealmFileReader/node(at:_:)``, which checks that the whole payload lies in the
/// file, so that no accessor here can read outside `payload`: each checks its index against `count`.
struct RealmNode {
    enum WidthType: UInt8 { case bits = 0, multiply = 1, ignore = 2 }

    static let headerBytes = 8

    let ref: Int
    let isInner: Bool
    let hasRefs: Bool
    let context: Bool
    let widthType: WidthType
    /// Bits per element (bits type) or bytes per element (multiply type).
    let width: Int
    /// The element count of the header (for the multiply and ignore types of some leaves, a byte count).
    let count: Int
    let payload: [UInt8]

    /// The payload's length for a header: what realm-core's `calc_byte_size` gives, before padding to 8.
    static func payloadBytes(widthType: WidthType, width: Int, count: Int) -> Int {
        switch widthType {
        case .bits: return (count * width + 7) / 8
        case .multiply: return count * width
        case .ignore: return count
        }
    }

    /// Whether the elements are packed integers (width type bits), as every structural array's are. Integer
    /// accessors on other nodes read 0: the reader checks the width type before it trusts an integer array.
    var holdsIntegers: Bool { widthType == .bits }

    /// The element at `index` as a signed integer (bits widths unsigned, byte widths signed); 0 outside the node.
    func int(_ index: Int) -> Int64 {
        guard index >= 0, index < count, widthType == .bits else { return 0 }
        switch width {
        case 0: return 0
        case 1, 2, 4:
            let bit = index * width
            return Int64((payload[bit >> 3] >> UInt8(bit & 7)) & UInt8((1 << width) - 1))
        case 8: return Int64(Int8(bitPattern: payload[index]))
        case 16: return Int64(Int16(bitPattern: UInt16(truncatingIfNeeded: load(index * 2, 2))))
        case 32: return Int64(Int32(bitPattern: UInt32(truncatingIfNeeded: load(index * 4, 4))))
        default: return Int64(bitPattern: load(index * 8, 8))
        }
    }

    /// The element at `index` as realm-core's `ArrayUnsigned` reads it: byte widths unsigned too.
    func unsigned(_ index: Int) -> UInt64 {
        guard index >= 0, index < count, widthType == .bits else { return 0 }
        switch width {
        case 8: return UInt64(payload[index])
        case 16, 32: return load(index * (width / 8), width / 8)
        default: return UInt64(bitPattern: int(index))
        }
    }

    /// `byteCount` little-endian bytes from `offset` of the payload (checked by the node's construction).
    func load(_ offset: Int, _ byteCount: Int) -> UInt64 {
        guard offset >= 0, offset + byteCount <= payload.count else { return 0 }
        var value: UInt64 = 0
        for i in 0..<byteCount { value |= UInt64(payload[offset + i]) << UInt64(8 * i) }
        return value
    }

    /// Whether element `index` of a has-refs node is a tagged integer rather than a ref.
    func isTagged(_ index: Int) -> Bool { int(index) & 1 == 1 }

    /// The tagged integer at `index`, or nil if that element is a ref.
    func tagged(_ index: Int) -> Int64? {
        let raw = int(index)
        return raw & 1 == 1 ? Int64(bitPattern: UInt64(bitPattern: raw) >> 1) : nil
    }

    /// Every element as a signed integer.
    var ints: [Int64] { (0..<count).map(int) }
}
