@_spi(EngineInternals) import Engine

/// Where a record is encoded: an array of bytes, or a `GrowableBuffer`.
///
/// A new object's record is encoded into a growable buffer, whose append of a word or a byte is a call of about
/// 25 instructions: an array's `append(contentsOf:)` of a word costs about 200 (release builds, callgrind). Encoding
/// a small transaction's records went from about 1,440 to 1,040 instructions each.
protocol RecordSink {
    var count: Int { get }
    mutating func removeAll()
    mutating func append(_ byte: UInt8)
    mutating func appendBytes(_ bytes: UnsafeRawBufferPointer)
    mutating func appendUInt32LE(_ v: UInt32)
    mutating func appendUInt64LE(_ v: UInt64)
    mutating func appendVarint(_ value: UInt64)
    /// Sets the bits of `mask` in the byte at `offset` (below `count`).
    mutating func orByte(at offset: Int, _ mask: UInt8)
}

extension Array: RecordSink where Element == UInt8 {
    mutating func removeAll() { removeAll(keepingCapacity: true) }
    mutating func appendBytes(_ bytes: UnsafeRawBufferPointer) { append(contentsOf: bytes) }
    mutating func orByte(at offset: Int, _ mask: UInt8) { self[offset] |= mask }
}

extension GrowableBuffer: RecordSink {
    func appendBytes(_ bytes: UnsafeRawBufferPointer) { append(bytes) }
}
