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

    /// Calls `body` with the metatype of every model class (a non-generic class whose superclass chain reaches
    /// Strata's `Object`) in a section of type metadata records. Whether a class is one is read from the
    /// context descriptors alone: no other class's metadata accessor is called, so discovery never runs an
    /// Objective-C class's `+initialize` or touches a class whose superclass is missing at run time (weak
    /// linking), and records of other kinds of type, generic classes, root classes (`@Observable` ones among
    /// them) and Objective-C references cost a few loads each.
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
            guard reachesModelBase(descriptor) else { continue }
            let accessorOffset = descriptor.loadUnaligned(fromByteOffset: 12, as: Int32.self)
            guard accessorOffset != 0,
                let accessorAddress = UnsafeRawPointer(bitPattern: Int(bitPattern: descriptor) + 12 + Int(accessorOffset))
            else { continue }
            let accessor = unsafeBitCast(accessorAddress, to: MetadataAccessor.self)
            guard let metadata = accessor(0) else { continue }
            body(unsafeBitCast(metadata, to: Any.Type.self))
        }
    }

    // MARK: Reading context descriptors (the Swift ABI's TypeContextDescriptor and ClassDescriptor)

    /// Whether the superclass chain of the class described by `descriptor` reaches `Strata.Object` (or
    /// `EmbeddedObject`, its subclass): followed through symbolic references to the superclasses' descriptors,
    /// at most 32 classes up. A superclass named by text rather than a reference (Objective-C classes) ends
    /// the walk: no model has one.
    static func reachesModelBase(_ descriptor: UnsafeRawPointer) -> Bool {
        var current = descriptor
        for _ in 0..<32 {
            guard let superclass = superclassDescriptor(of: current) else { return false }
            if isModelBase(superclass) { return true }
            current = superclass
        }
        return false
    }

    /// The context descriptor of a class descriptor's superclass, when its mangled name (offset 20) is a
    /// symbolic reference to one: 0x01 and a relative offset to it, or 0x02 and a relative offset to a
    /// pointer to it.
    private static func superclassDescriptor(of descriptor: UnsafeRawPointer) -> UnsafeRawPointer? {
        let nameOffset = descriptor.loadUnaligned(fromByteOffset: 20, as: Int32.self)
        guard nameOffset != 0 else { return nil }
        let name = descriptor + 20 + Int(nameOffset)
        let kind = name.load(as: UInt8.self)
        guard kind == 1 || kind == 2 else { return nil }
        let reference = name + 1
        let target = reference + Int(reference.loadUnaligned(as: Int32.self))
        let superclass = kind == 1 ? target : target.loadUnaligned(as: UnsafeRawPointer?.self)
        guard let superclass, superclass.loadUnaligned(as: UInt32.self) & 0x1F == 16 else { return nil }
        return superclass
    }

    /// Whether `descriptor` is that of `Strata.Object` or `Strata.EmbeddedObject`: its name (offset 8) and
    /// its parent's (offset 4, a relative pointer that is indirect when its low bit is set), a module.
    private static func isModelBase(_ descriptor: UnsafeRawPointer) -> Bool {
        let name = cString(at: descriptor + 8)
        guard name == "Object" || name == "EmbeddedObject" else { return false }
        let parentOffset = Int(descriptor.loadUnaligned(fromByteOffset: 4, as: Int32.self))
        guard parentOffset != 0 else { return false }
        let parentField = descriptor + 4 + (parentOffset & ~1)
        let parent = parentOffset & 1 == 0 ? parentField : parentField.loadUnaligned(as: UnsafeRawPointer?.self)
        // Kind 0: a module.
        guard let parent, parent.loadUnaligned(as: UInt32.self) & 0x1F == 0 else { return false }
        return cString(at: parent + 8) == moduleName
    }

    /// This module's name, as its descriptors spell it.
    private static let moduleName = String(reflecting: Object.self).split(separator: ".").first.map(String.init) ?? "Strata"

    /// The string a relative direct pointer at `field` points to.
    private static func cString(at field: UnsafeRawPointer) -> String {
        var p = field + Int(field.loadUnaligned(as: Int32.self))
        var bytes: [UInt8] = []
        // Names of types and modules are short; 256 bytes bounds the read whatever the record says.
        while bytes.count < 256 {
            let byte = p.load(as: UInt8.self)
            if byte == 0 { break }
            bytes.append(byte)
            p += 1
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
