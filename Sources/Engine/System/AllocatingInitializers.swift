// Guards: making an instance of a class through its `init()` when that initializer is not `required`.
//
// Swift source calls an initializer through a metatype (`cls.init()`) only when it is `required`, which forces
// every subclass that declares an initializer of its own to redeclare it as `required init()`. A class's
// vtable holds the allocating entry of each designated initializer all the same (a subclass that does not
// inherit `init()` gets a stub that traps "Use of unimplemented initializer 'init()'"), so the call is made
// here, as the Objective-C runtime makes `[[cls alloc] init]`: the vtable slot is found once from the root
// class's context descriptor (the Swift ABI's TargetClassDescriptor: its vtable header and method
// descriptors), checked against the root's own metadata, and called through a C function that passes the
// metatype in Swift's self register. Nothing here writes through a pointer.

import CSwiftRuntime

package enum AllocatingInitializers {
    /// Where a class's metadata keeps its context descriptor: after the isa and the superclass pointers (and,
    /// where Objective-C interoperates, the cache and data words), the flags, the instance address point,
    /// size and alignment, the class size and address point.
    #if canImport(ObjectiveC)
    private static let descriptorOffset = 64
    #else
    private static let descriptorOffset = 40
    #endif

    /// The vtable slot, in words from the metadata's address point, of the allocating entry of the only
    /// designated initializer of `root` (a class with no superclass of its own); nil when the descriptor is
    /// not one this reader knows (the caller traps, naming the class).
    package static func slot(ofOnlyDesignatedInitializerOf root: AnyClass) -> Int? {
        #if !_pointerBitWidth(_64)
        // The offsets above are those of 64-bit platforms.
        return nil
        #else
        let metadata = unsafeBitCast(root, to: UnsafeRawPointer.self)
        let descriptor = metadata.load(fromByteOffset: descriptorOffset, as: UnsafeRawPointer.self)
        let flags = descriptor.load(as: UInt32.self)
        // A class (kind 16), not generic (bit 7), with a vtable (bit 31) and no trailing structure before it:
        // no resilient superclass (bit 29) and no metadata initialization (bits 16-17).
        guard flags & 0x1F == 16, flags & 0x80 == 0, flags & (1 << 31) != 0, flags & (1 << 29) == 0, flags & (3 << 16) == 0 else {
            return nil
        }
        // TargetClassDescriptor: eleven 32-bit fields, then the vtable header (offset, size) and the method
        // descriptors (flags, relative pointer to the implementation).
        let header = descriptor + 44
        let vtableOffset = Int(header.load(as: UInt32.self))
        let vtableSize = Int(header.load(fromByteOffset: 4, as: UInt32.self))
        let methods = header + 8
        var found: Int? = nil
        for i in 0..<vtableSize {
            let method = methods + 8 * i
            // Kind 1: an initializer's allocating entry.
            guard method.load(as: UInt32.self) & 0x0F == 1 else { continue }
            guard found == nil else { return nil }
            // The root's own vtable holds the implementation its descriptor names.
            let relative = Int(method.load(fromByteOffset: 4, as: Int32.self))
            let implementation = method + 4 + relative
            let slot = vtableOffset + i
            guard metadata.load(fromByteOffset: word * slot, as: UnsafeRawPointer.self) == implementation else { return nil }
            found = slot
        }
        return found
        #endif
    }

    private static let word = MemoryLayout<UnsafeRawPointer>.size

    /// A new instance of `cls` (the root of `slot`'s class or a subclass of it), made by the initializer in
    /// vtable slot `slot`.
    package static func make(_ cls: AnyClass, slot: Int) -> AnyObject {
        let metadata = unsafeBitCast(cls, to: UnsafeRawPointer.self)
        let function = metadata.load(fromByteOffset: word * slot, as: UnsafeRawPointer.self)
        let instance = strata_call_allocating_initializer(function, metadata)
        return Unmanaged<AnyObject>.fromOpaque(instance).takeRetainedValue()
    }
}
