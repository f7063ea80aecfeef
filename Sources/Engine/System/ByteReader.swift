// Guards: every parse of bytes that came from disk. A ByteReader is a cursor over a borrowed byte range whose
// reads throw `.corrupted` instead of going past the end, so the parsers built on it contain no pointer
// arithmetic. Offsets in its errors are relative to the start of the range; callers relocate them.

/// A bounds-checked cursor over borrowed bytes.
package struct ByteReader {
    package let bytes: UnsafeRawBufferPointer
    package var position: Int

    package init(_ bytes: UnsafeRawBufferPointer, position: Int = 0) {
        self.bytes = bytes
        self.position = position
    }

    package var remaining: Int { bytes.count - position }
    package var isAtEnd: Bool { position >= bytes.count }

    func truncated(_ what: String, needed: Int) -> StorageError {
        StorageError.corrupted(
            "\(what) needs \(needed) bytes but only \(max(remaining, 0)) remain", file: nil, offset: position)
    }

    @inline(__always)
    package mutating func readUInt8(_ what: @autoclosure () -> String = "byte") throws -> UInt8 {
        guard position < bytes.count else { throw truncated(what(), needed: 1) }
        defer { position += 1 }
        return bytes[position]
    }

    @inline(__always)
    package mutating func readUInt32LE(_ what: @autoclosure () -> String = "32-bit field") throws -> UInt32 {
        guard position >= 0, remaining >= 4 else { throw truncated(what(), needed: 4) }
        defer { position += 4 }
        return UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: position, as: UInt32.self))
    }

    @inline(__always)
    package mutating func readUInt64LE(_ what: @autoclosure () -> String = "64-bit field") throws -> UInt64 {
        guard position >= 0, remaining >= 8 else { throw truncated(what(), needed: 8) }
        defer { position += 8 }
        return UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: position, as: UInt64.self))
    }

    /// Reads a LEB128 varint of at most 10 bytes.
    @inline(__always)
    package mutating func readVarint(_ what: @autoclosure () -> String = "varint") throws -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        let start = position
        while true {
            guard position < bytes.count else { throw truncated(what(), needed: 1) }
            let b = bytes[position]
            position += 1
            if shift == 63 && b > 1 {
                throw StorageError.corrupted("\(what()) overflows 64 bits", file: nil, offset: start)
            }
            result |= UInt64(b & 0x7F) << shift
            if b < 0x80 { return result }
            shift += 7
            if shift > 63 { throw StorageError.corrupted("\(what()) is longer than 10 bytes", file: nil, offset: start) }
        }
    }

    /// Reads a varint and checks it against `limit`, returning it as an Int.
    @inline(__always)
    package mutating func readLength(_ what: @autoclosure () -> String, limit: Int) throws -> Int {
        let start = position
        let v = try readVarint(what())
        guard v <= UInt64(limit) else {
            throw StorageError.corrupted("\(what()) is \(v), the limit is \(limit)", file: nil, offset: start)
        }
        return Int(v)
    }

    /// The next `count` bytes as a borrowed view.
    @inline(__always)
    package mutating func readBytes(count: Int, _ what: @autoclosure () -> String = "bytes") throws -> UnsafeRawBufferPointer {
        guard count >= 0, position >= 0, remaining >= count else { throw truncated(what(), needed: count) }
        defer { position += count }
        return UnsafeRawBufferPointer(rebasing: bytes[position..<(position + count)])
    }

    package mutating func skip(_ count: Int, _ what: @autoclosure () -> String = "bytes") throws {
        guard count >= 0, remaining >= count else { throw truncated(what(), needed: count) }
        position += count
    }
}

/// Byte-range helpers that need a borrowed view.
package enum Bytes {
    /// A view of `count` bytes at `offset` in `bytes`, or nil when the range is outside.
    @inline(__always)
    package static func slice(_ bytes: UnsafeRawBufferPointer, _ offset: Int, _ count: Int) -> UnsafeRawBufferPointer? {
        guard offset >= 0, count >= 0, offset <= bytes.count, count <= bytes.count - offset else { return nil }
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)])
    }

    /// Unsigned lexicographic comparison: negative, zero or positive.
    @inline(__always)
    package static func compare(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
        let n = min(a.count, b.count)
        var i = 0
        while i + 8 <= n {
            let x = UInt64(bigEndian: a.loadUnaligned(fromByteOffset: i, as: UInt64.self))
            let y = UInt64(bigEndian: b.loadUnaligned(fromByteOffset: i, as: UInt64.self))
            if x != y { return x < y ? -1 : 1 }
            i += 8
        }
        while i < n {
            let x = a[i], y = b[i]
            if x != y { return x < y ? -1 : 1 }
            i += 1
        }
        return a.count - b.count
    }

    /// The first 8 bytes as a big-endian integer, zero-padded: ordering by it never contradicts `compare`.
    @inline(__always)
    package static func prefix64(_ a: UnsafeRawBufferPointer) -> UInt64 {
        if a.count >= 8 { return UInt64(bigEndian: a.loadUnaligned(fromByteOffset: 0, as: UInt64.self)) }
        var x: UInt64 = 0
        for i in 0..<8 { x = x << 8 | UInt64(i < a.count ? a[i] : 0) }
        return x
    }

    @inline(__always)
    package static func loadUInt32LE(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt32? {
        guard offset >= 0, offset <= bytes.count - 4 else { return nil }
        return UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    @inline(__always)
    package static func loadUInt64LE(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt64? {
        guard offset >= 0, offset <= bytes.count - 8 else { return nil }
        return UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }
}

/// Little-endian encoders for building small on-disk structures in arrays.
extension Array where Element == UInt8 {
    // Inlinable: record and block encoders in other modules call these for every field.
    // One append of the word's bytes: a capacity and uniqueness check per word instead of per byte.
    @inlinable
    package mutating func appendUInt32LE(_ v: UInt32) {
        Swift.withUnsafeBytes(of: v.littleEndian) { append(contentsOf: $0) }
    }
    @inlinable
    package mutating func appendUInt64LE(_ v: UInt64) {
        Swift.withUnsafeBytes(of: v.littleEndian) { append(contentsOf: $0) }
    }
    @inlinable
    package mutating func appendVarint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        append(UInt8(v))
    }
}
