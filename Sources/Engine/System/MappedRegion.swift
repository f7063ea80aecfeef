// Guards: the lifetime of every byte range the engine reads. A MappedRegion owns either a read-only mmap of a
// file or a heap allocation, and frees it in deinit; a GrowableBuffer owns heap memory while it is being
// written. Bytes are lent out as UnsafeRawBufferPointer views that stay valid while the owner is alive;
// holders keep the owner in a stored property for as long as they use a view.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Immutable bytes with a stable address: a read-only file mapping or an adopted heap buffer.
package final class MappedRegion: @unchecked Sendable {
    private let base: UnsafeRawPointer?
    package let count: Int
    private let isMapped: Bool
    /// Heap memory from malloc (adopted buffers) is released with free.
    private let isMalloced: Bool
    /// The buffer whose memory a borrowing region reads (kept alive, never freed here).
    private let lender: GrowableBuffer?

    /// Maps the whole of `fd` (which the caller may close afterwards).
    package init(mapping fd: Int32, count: Int, path: String) throws {
        self.count = count
        if count == 0 {
            base = nil
            isMapped = false
        } else {
            base = try Syscalls.mapReadOnly(fd, count: count, path: path)
            isMapped = true
        }
        isMalloced = false
        lender = nil
    }

    /// Copies `bytes` into a new heap region.
    package init(copying bytes: some Collection<UInt8>) {
        count = bytes.count
        isMapped = false
        isMalloced = false
        lender = nil
        if count == 0 {
            base = nil
        } else {
            let p = UnsafeMutableRawPointer.allocate(byteCount: count, alignment: 16)
            let target = UnsafeMutableRawBufferPointer(start: p, count: count)
            _ = target.initializeMemory(as: UInt8.self, from: bytes)
            base = UnsafeRawPointer(p)
        }
    }

    /// Takes over the memory of `buffer`, which is left empty.
    package init(adopting buffer: GrowableBuffer) {
        let (p, n) = buffer.release()
        base = p.map { UnsafeRawPointer($0) }
        count = n
        isMapped = false
        isMalloced = true
        lender = nil
    }

    /// Reads the memory of `buffer` in place, which must not change while the region is alive (a spill reads
    /// a batch that is emptied only once the spill has succeeded).
    package init(borrowing buffer: GrowableBuffer) {
        base = buffer.storage.base.map { UnsafeRawPointer($0) }
        count = buffer.count
        isMapped = false
        isMalloced = false
        lender = buffer
    }

    deinit {
        guard let base, lender == nil else { return }
        if isMapped {
            Syscalls.unmap(base, count: count)
        } else if isMalloced {
            free(UnsafeMutableRawPointer(mutating: base))
        } else {
            UnsafeMutableRawPointer(mutating: base).deallocate()
        }
    }

    /// The region's bytes; valid only while `self` is alive (hold a reference for as long as you use them).
    package var unsafeBytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: base, count: count)
    }

    package func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withExtendedLifetime(self) { try body(unsafeBytes) }
    }

    /// The bytes in `range`, which must lie within the region.
    package func withUnsafeBytes<R>(in range: Range<Int>, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        require(range.lowerBound >= 0 && range.upperBound <= count, "MappedRegion range out of bounds")
        return try withExtendedLifetime(self) { try body(UnsafeRawBufferPointer(rebasing: unsafeBytes[range])) }
    }

    package var bytes: [UInt8] { [UInt8](unsafeBytes) }
}

/// A growable heap buffer for building a WAL record or a block; it can be adopted by a `MappedRegion`
/// without a copy.
///
/// Its state is one struct, so that each operation makes a single (exclusivity-checked) access to it.
///
/// The object layer encodes every record through its appends, so they are compiled into its code: the class and
/// those methods are public to the `EngineInternals` SPI only (`@_spi(EngineInternals) import Engine`), not to
/// users. `@inlinable` on a `package` method was not honoured across modules (a call of about 25 instructions per
/// byte or word appended, Swift 6.3); on a public one it is.
@_spi(EngineInternals) public final class GrowableBuffer: @unchecked Sendable {
    @usableFromInline struct Storage {
        @usableFromInline var base: UnsafeMutableRawPointer?
        @usableFromInline var capacity: Int
        @usableFromInline var count = 0

        @usableFromInline init(base: UnsafeMutableRawPointer?, capacity: Int) {
            self.base = base
            self.capacity = capacity
        }

        @inlinable @inline(__always)
        mutating func reserve(_ extra: Int) {
            let needed = count + extra
            if needed <= capacity { return }
            grow(needed)
        }

        @usableFromInline @inline(never)
        mutating func grow(_ needed: Int) {
            var newCapacity = max(capacity * 2, 16)
            while newCapacity < needed { newCapacity *= 2 }
            // realloc moves large buffers by remapping pages rather than copying them.
            guard let fresh = realloc(base, newCapacity) else {
                fatalError("GrowableBuffer: out of memory growing to \(newCapacity) bytes")
            }
            base = fresh
            capacity = newCapacity
        }

        @inlinable @inline(__always)
        mutating func append(_ byte: UInt8) {
            reserve(1)
            base!.storeBytes(of: byte, toByteOffset: count, as: UInt8.self)
            count += 1
        }

        @inlinable @inline(__always)
        mutating func append(_ bytes: UnsafeRawBufferPointer) {
            guard bytes.count > 0 else { return }
            reserve(bytes.count)
            (base! + count).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
            count += bytes.count
        }

        @inlinable @inline(__always)
        mutating func appendVarint(_ value: UInt64) {
            reserve(10)
            var v = value
            let p = base!
            while v >= 0x80 {
                p.storeBytes(of: UInt8(truncatingIfNeeded: v) | 0x80, toByteOffset: count, as: UInt8.self)
                count += 1
                v >>= 7
            }
            p.storeBytes(of: UInt8(v), toByteOffset: count, as: UInt8.self)
            count += 1
        }

        @inlinable @inline(__always)
        mutating func appendLE<T: FixedWidthInteger>(_ v: T) {
            reserve(MemoryLayout<T>.size)
            base!.storeBytes(of: v.littleEndian, toByteOffset: count, as: T.self)
            count += MemoryLayout<T>.size
        }
    }

    // Dynamic exclusivity checks are off: a buffer is used by one thread at a time and no method re-enters.
    @usableFromInline @exclusivity(unchecked) var storage: Storage

    package init(capacity: Int = 256) {
        let c = max(capacity, 16)
        storage = Storage(base: malloc(c), capacity: c)
    }

    deinit { free(storage.base) }

    private init(adopting storage: Storage) { self.storage = storage }

    /// Moves this buffer's bytes, without a copy, into a new buffer, which is returned; this one goes on
    /// empty with `spare`'s memory (which is left with none) or a fresh allocation.
    package func handOff(takingMemoryOf spare: GrowableBuffer?) -> GrowableBuffer {
        let moved = GrowableBuffer(adopting: storage)
        if let spare, spare.storage.base != nil {
            storage = Storage(base: spare.storage.base, capacity: spare.storage.capacity)
            spare.storage = Storage(base: nil, capacity: 0)
        } else {
            let c = max(storage.capacity, 16)
            storage = Storage(base: malloc(c), capacity: c)
        }
        return moved
    }

    @inlinable public var count: Int { storage.count }

    @inlinable public func removeAll() { storage.count = 0 }

    /// Sets the bits of `mask` in the byte at `offset`, which must be below `count`.
    @inlinable @inline(__always) public func orByte(at offset: Int, _ mask: UInt8) {
        require(offset >= 0 && offset < storage.count, "GrowableBuffer.orByte at \(offset) of \(storage.count) bytes")
        let p = storage.base! + offset
        p.storeBytes(of: p.load(as: UInt8.self) | mask, as: UInt8.self)
    }

    @inlinable @inline(__always) public func append(_ byte: UInt8) { storage.append(byte) }
    @inlinable @inline(__always) public func append(_ bytes: UnsafeRawBufferPointer) { storage.append(bytes) }
    @inlinable @inline(__always) public func appendUInt32LE(_ v: UInt32) { storage.appendLE(v) }
    @inlinable @inline(__always) public func appendUInt64LE(_ v: UInt64) { storage.appendLE(v) }
    @inlinable @inline(__always) public func appendVarint(_ value: UInt64) { storage.appendVarint(value) }

    package func append(contentsOf bytes: some Collection<UInt8>) {
        if let done: Void = bytes.withContiguousStorageIfAvailable({ storage.append(UnsafeRawBufferPointer($0)) }) {
            return done
        }
        for b in bytes { storage.append(b) }
    }

    /// Appends one segment block entry in one access: `varint keyCount · varint (valueCount + 1, or 0) · key ·
    /// value`. Returns the entry's offset.
    @inline(__always)
    package func appendEntry(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer?) -> Int {
        storage.reserve(20 + key.count + (value?.count ?? 0))
        let offset = storage.count
        storage.appendVarint(UInt64(key.count))
        storage.appendVarint(value.map { UInt64($0.count) + 1 } ?? 0)
        storage.append(key)
        if let value { storage.append(value) }
        return offset
    }

    /// Appends a put or delete operation of a write batch in one access: the header fields, then the key and
    /// value. Returns the offset of the key.
    @inline(__always)
    package func appendOperation(
        _ op: UInt8, partition: UInt32, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer?
    ) -> Int {
        storage.reserve(31 + key.count + (value?.count ?? 0))
        storage.append(op)
        storage.appendVarint(UInt64(partition))
        storage.appendVarint(UInt64(key.count))
        if let value { storage.appendVarint(UInt64(value.count)) }
        let offset = storage.count
        storage.append(key)
        if let value { storage.append(value) }
        return offset
    }

    /// Overwrites 4 bytes at `offset`, which must already be written.
    package func setUInt32LE(_ v: UInt32, at offset: Int) {
        require(offset >= 0 && offset + 4 <= storage.count, "GrowableBuffer.setUInt32LE out of bounds")
        storage.base!.storeBytes(of: v.littleEndian, toByteOffset: offset, as: UInt32.self)
    }

    /// Overwrites the byte at `offset`, which must already be written.
    package func setUInt8(_ v: UInt8, at offset: Int) {
        require(offset >= 0 && offset < storage.count, "GrowableBuffer.setUInt8 out of bounds")
        storage.base!.storeBytes(of: v, toByteOffset: offset, as: UInt8.self)
    }

    /// Overwrites 8 bytes at `offset`, which must already be written.
    package func setUInt64LE(_ v: UInt64, at offset: Int) {
        require(offset >= 0 && offset + 8 <= storage.count, "GrowableBuffer.setUInt64LE out of bounds")
        storage.base!.storeBytes(of: v.littleEndian, toByteOffset: offset, as: UInt64.self)
    }

    /// Writes bytes directly: `body` receives room for `maxCount` bytes and returns how many it wrote.
    package func appendWithUnsafeSpace(maxCount: Int, _ body: (UnsafeMutableRawBufferPointer) throws -> Int) rethrows {
        storage.reserve(maxCount)
        let n = try body(UnsafeMutableRawBufferPointer(start: storage.base! + storage.count, count: maxCount))
        require(n >= 0 && n <= maxCount, "GrowableBuffer.appendWithUnsafeSpace wrote out of bounds")
        storage.count += n
    }

    /// The written bytes; valid until the next append.
    @inlinable public var unsafeBytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: storage.base, count: storage.count)
    }

    @inlinable public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withExtendedLifetime(self) { try body(unsafeBytes) }
    }

    fileprivate func release() -> (UnsafeMutableRawPointer?, Int) {
        let result = (storage.base, storage.count)
        storage = Storage(base: nil, capacity: 0)
        if result.1 == 0 {
            free(result.0)
            return (nil, 0)
        }
        return result
    }
}
