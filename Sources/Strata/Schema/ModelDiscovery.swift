import Engine
import Foundation

// Audited pointer code (STYLE.md, "Unsafe code"): this file reads the Swift type metadata records of the
// loaded images to find every model class, as RealmSwift's Objective-C runtime lookup does on Apple
// platforms. Where the records are is the system layer's business (`MetadataSections`: the runtime's section
// list on ELF, dyld on Mach-O); what they say is read here, the same way on every platform: 32-bit relative
// type records, context descriptor headers, and calls of the metadata access functions of non-generic
// classes only. Nothing here writes through a pointer.

/// Every non-generic subclass of `Object` (and `EmbeddedObject`) in the program, found once per process:
/// the schema of a Realm opened with no `objectTypes`.
package enum ModelDiscovery {
    /// The model classes, in a stable order (by class name, then module-qualified description).
    package static let modelClasses: [Object.Type] = {
        var found: [Object.Type] = []
        for section in MetadataSections.typeRecordSections() {
            forEachClass(inTypeRecords: section) { type in
                guard let model = type as? Object.Type, !builtInClasses.contains(ObjectIdentifier(model)) else { return }
                found.append(model)
            }
        }
        return found.sorted { ($0.className(), String(reflecting: $0)) < ($1.className(), String(reflecting: $1)) }
    }()

    /// The discovered classes a Realm with no `objectTypes` binds at open: those whose model is valid (on its
    /// own and in `SchemaValidation`), whose class name no other model class shares, and whose links and linking
    /// objects reach only such classes.
    /// (A class left out still joins the schema when it is first used, and reports its problem then.)
    package static let schemaClasses: [Object.Type] = {
        var infos: [ObjectIdentifier: TypeInfo] = [:]
        for cls in modelClasses {
            // try?: a class whose model is wrong reports it when first used (no storage read).
            if let info = try? TypeRegistry.checkedInfo(for: cls) { infos[ObjectIdentifier(cls)] = info }
        }
        let byName = Dictionary(grouping: infos.values, by: { $0.schema.className })
        var kept = byName.values.compactMap { $0.count == 1 ? $0[0] : nil }.filter { SchemaValidation.problems(of: $0).isEmpty }
        while true {
            let names = Set(kept.map(\.schema.className))
            let keptByName = Dictionary(kept.map { ($0.schema.className, $0) }, uniquingKeysWith: { a, _ in a })
            let next = kept.filter { info in
                SchemaValidation.embeddedCycle(from: info, in: keptByName) == nil
                    && info.schema.properties.allSatisfy { $0.objectClassName.map(names.contains) ?? true }
                    && info.linkingObjects.allSatisfy { inverse in
                        names.contains(inverse.origin.className())
                            && infos[ObjectIdentifier(inverse.origin)]?.schema.properties.contains {
                                $0.name == inverse.property && $0.objectClassName == info.schema.className
                            } == true
                    }
            }
            if next.count == kept.count { break }
            kept = next
        }
        let keptIds = Set(kept.map { ObjectIdentifier($0.objectClass) })
        return modelClasses.filter { keptIds.contains(ObjectIdentifier($0)) }
    }()

    /// Strata's own base classes, which are not models.
    private static let builtInClasses: Set<ObjectIdentifier> = [
        ObjectIdentifier(Object.self), ObjectIdentifier(EmbeddedObject.self), ObjectIdentifier(DynamicObject.self),
    ]

    /// A metadata access function of a non-generic type: takes a request (0: complete metadata) and returns
    /// the metadata first (in the first return register, as a C function would).
    private typealias MetadataAccessor = @convention(c) (Int) -> UnsafeRawPointer?

    /// Calls `body` with the metatype of every non-generic class in a section of type metadata records.
    /// Records of other kinds of type, of generic classes, of classes with no superclass (so never a model:
    /// `@Observable` classes, plain root classes) and Objective-C references are skipped without a call.
    static func forEachClass(inTypeRecords section: UnsafeRawBufferPointer, _ body: (Any.Type) -> Void) {
        guard let base = section.baseAddress else { return }
        for i in 0..<(section.count / 4) {
            let record = base + 4 * i
            let recordAddress = UInt(bitPattern: record)
            let relative = record.loadUnaligned(as: Int32.self)
            let kind = relative & 3
            let target = UInt(bitPattern: Int(bitPattern: recordAddress) + Int(relative & ~3))
            let descriptor: UnsafeRawPointer?
            switch kind {
            case 0: descriptor = UnsafeRawPointer(bitPattern: target)  // direct type descriptor
            case 1: descriptor = UnsafeRawPointer(bitPattern: target)?.loadUnaligned(as: UnsafeRawPointer?.self)  // indirect
            default: descriptor = nil  // Objective-C class names and references: none on Linux
            }
            guard let descriptor else { continue }
            let flags = descriptor.loadUnaligned(as: UInt32.self)
            // Kind 16 is a class; bit 7 marks a generic one (its metadata needs arguments).
            guard flags & 0x1F == 16, flags & 0x80 == 0 else { continue }
            // Superclass mangled name (offset 20): a class with none cannot be a model.
            guard descriptor.loadUnaligned(fromByteOffset: 20, as: Int32.self) != 0 else { continue }
            let accessorOffset = descriptor.loadUnaligned(fromByteOffset: 12, as: Int32.self)
            guard accessorOffset != 0,
                let accessorAddress = UnsafeRawPointer(bitPattern: Int(bitPattern: descriptor) + 12 + Int(accessorOffset))
            else { continue }
            let accessor = unsafeBitCast(accessorAddress, to: MetadataAccessor.self)
            guard let metadata = accessor(0) else { continue }
            body(unsafeBitCast(metadata, to: Any.Type.self))
        }
    }
}
