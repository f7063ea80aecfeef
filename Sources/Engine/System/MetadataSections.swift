// Guards: finding the Swift type metadata records of the loaded images, the one platform-specific step of
// model discovery (the object layer's `ModelDiscovery` walks the records the same way on every platform).
// ELF (Linux, Android): the Swift runtime's `swift_enumerateAllMetadataSections` hands out each image's
// `swift5_type_metadata` range. Mach-O (Apple platforms), where that function does not exist: dyld lists the
// images and `getsectiondata` finds each one's `__TEXT,__swift5_types` section, as Swift Testing finds tests.
// Nothing here writes through a pointer; the ranges stay valid while their images are loaded (for the life
// of the process: images holding Swift classes are never unloaded).

#if canImport(Darwin)
import Darwin
import MachO
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

package enum MetadataSections {
    /// The type metadata record sections of every loaded image that can hold the program's own types: arrays
    /// of 32-bit relative references to type context descriptors.
    package static func typeRecordSections() -> [UnsafeRawBufferPointer] {
        #if canImport(Darwin)
        return machOTypeSections()
        #else
        return elfTypeSections()
        #endif
    }

    #if canImport(Darwin)
    /// `MH_DYLIB_IN_CACHE` (mach-o/loader.h): the image is part of the dyld shared cache, that is, a system
    /// library. Those hold no models, and reading their thousands of records would cost launch time.
    private static let dylibInCache: UInt32 = 0x8000_0000

    #if _pointerBitWidth(_64)
    private typealias MachHeader = mach_header_64
    #else
    private typealias MachHeader = mach_header
    #endif

    private static func machOTypeSections() -> [UnsafeRawBufferPointer] {
        var sections: [UnsafeRawBufferPointer] = []
        for index in 0..<_dyld_image_count() {
            guard let header = _dyld_get_image_header(index), header.pointee.flags & dylibInCache == 0 else { continue }
            let machHeader = UnsafeRawPointer(header).assumingMemoryBound(to: MachHeader.self)
            var size: UInt = 0
            guard let start = getsectiondata(machHeader, "__TEXT", "__swift5_types", &size), size > 0 else { continue }
            sections.append(UnsafeRawBufferPointer(start: UnsafeRawPointer(start), count: Int(size)))
        }
        return sections
    }
    #else
    /// `swift_enumerateAllMetadataSections(body, context)` of the Swift runtime.
    private typealias EnumerateSections = @convention(c) (
        @convention(c) (UnsafeRawPointer?, UnsafeMutableRawPointer?) -> Bool, UnsafeMutableRawPointer?
    ) -> Void

    /// Byte offset of `swift5_type_metadata` in the runtime's `MetadataSections` (four words, then the
    /// protocol and conformance ranges of two words each): stable across the runtime's section versions.
    private static let typeMetadataRangeOffset = 8 * MemoryLayout<UInt>.size

    private static func elfTypeSections() -> [UnsafeRawBufferPointer] {
        // RTLD_DEFAULT is the null handle on ELF systems.
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "swift_enumerateAllMetadataSections") else { return [] }
        let enumerate = unsafeBitCast(symbol, to: EnumerateSections.self)
        var sections: [UnsafeRawBufferPointer] = []
        withUnsafeMutablePointer(to: &sections) { context in
            enumerate({ metadata, context in
                guard let metadata, let context else { return true }
                let start = metadata.loadUnaligned(fromByteOffset: MetadataSections.typeMetadataRangeOffset, as: UInt.self)
                let length = metadata.loadUnaligned(
                    fromByteOffset: MetadataSections.typeMetadataRangeOffset + MemoryLayout<UInt>.size, as: Int.self)
                if let base = UnsafeRawPointer(bitPattern: start), length > 0 {
                    context.assumingMemoryBound(to: [UnsafeRawBufferPointer].self).pointee
                        .append(UnsafeRawBufferPointer(start: base, count: length))
                }
                return true
            }, UnsafeMutableRawPointer(context))
        }
        return sections
    }
    #endif
}
