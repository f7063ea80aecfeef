import Foundation

// `description` of objects and collections in RealmSwift's format (RLMObjectBase's and
// RLMDescriptionWithMaxDepth's): what `print(object)` and debuggers show, and what tests written against
// RealmSwift match.
//
//     Dog {
//     	name = Rex;
//     	age = 3;
//     	owner = Person {
//     		name = Ada;
//     		dogs = List<Dog> <0x600000c04000> (
//     			[0] Dog {
//     				…
//     	tags = List<string> <0x600000c04040> (
//     		[0] a
//     	);
//     	vet = (null);
//     }
//
// Nesting stops at five levels (`<Maximum depth exceeded>`) and a collection shows its first 100 elements.

/// A value that describes itself down to a depth.
protocol DepthDescribable {
    func description(depth: Int) -> String
}

enum RealmDescription {
    static let maxDepth = 5
    static let maxElements = 100
    static let depthExceeded = "<Maximum depth exceeded>"

    /// Every line after the first one level further in, as a nested value is.
    static func indented(_ s: String) -> String { s.replacingOccurrences(of: "\n", with: "\n\t") }

    /// A property value or an element as Objective-C's `description` shows it: numbers as `NSNumber` does
    /// (`Bool` as 0 or 1), nil as `(null)`, data as its first 24 bytes in hex and its length.
    static func value(_ value: Any?, depth: Int) -> String {
        guard let value else { return "(null)" }
        switch value {
        case let d as any DepthDescribable: return d.description(depth: depth)
        case let v as AnyRealmValue: return anyValue(v, depth: depth)
        case let b as Bool: return b ? "1" : "0"
        case let f as Float: return String(format: "%0.7g", Double(f))
        case let d as Double: return String(format: "%0.16g", d)
        case let data as Data: return dataDescription(data)
        case let e as any PersistableEnum: return self.value(e.rawValue as Any, depth: depth)
        default:
            // An Optional inside the Any (a typed value read through a generic path).
            let mirror = Mirror(reflecting: value)
            if mirror.displayStyle == .optional { return self.value(mirror.children.first?.value, depth: depth) }
            return "\(value)"
        }
    }

    static func anyValue(_ v: AnyRealmValue, depth: Int) -> String {
        switch v {
        case .none: "(null)"
        case .int(let x): "\(x)"
        case .bool(let x): x ? "1" : "0"
        case .float(let x): value(x, depth: depth)
        case .double(let x): value(x, depth: depth)
        case .string(let x): x
        case .data(let x): dataDescription(x)
        case .date(let x): "\(x)"
        case .object(let x): x.description(depth: depth)
        case .objectId(let x): "\(x)"
        case .decimal128(let x): "\(x)"
        case .uuid(let x): "\(x)"
        case .list(let x): x.description(depth: depth)
        case .dictionary(let x): x.description(depth: depth)
        }
    }

    /// `<61626364 65 — 5 total bytes>`: at most the first 24 bytes, in 4-byte groups.
    static func dataDescription(_ data: Data) -> String {
        let shown = data.prefix(24)
        var hex = ""
        for (i, byte) in shown.enumerated() {
            if i > 0 && i % 4 == 0 { hex += " " }
            hex += String(byte, radix: 16).count == 1 ? "0" + String(byte, radix: 16) : String(byte, radix: 16)
        }
        return "<\(hex) — \(data.count) total bytes>"
    }

    /// What the element type of a collection is called: its class, or Realm's name of a value type.
    static func typeName<T: _Persistable>(_ type: T.Type) -> String {
        if let objectType = T._objectType { return objectType.className() }
        return T._propertyType == .decimal128 ? "decimal128" : SchemaDiff.valueTypeName(T._propertyType)
    }

    /// `Name<Type> <0x…> (` then `\t[i] element,` per element, then `)`.
    static func collection<S: Sequence>(_ name: String, _ elementType: String, address: AnyObject?, count: Int, _ elements: S, depth: Int)
        -> String
    {
        guard depth > 0 else { return depthExceeded }
        var s = "\(name)<\(elementType)> <\(pointer(address))> (\n"
        var index = 0
        var items: [String] = []
        for element in elements {
            items.append("\t[\(index)] \(indented(value(element, depth: depth - 1)))")
            index += 1
            if index >= maxElements { break }
        }
        s += items.joined(separator: ",\n")
        if count > index { s += "\n\t... \(count - index) objects skipped." }
        return s + "\n)"
    }

    static func pointer(_ object: AnyObject?) -> String {
        let bits = object.map { UInt(bitPattern: ObjectIdentifier($0)) } ?? 0
        return "0x" + String(bits, radix: 16)
    }
}

extension Object: DepthDescribable {
    func description(depth: Int) -> String {
        guard depth > 0 else { return RealmDescription.depthExceeded }
        if isInvalidated { return "[invalid object]" }
        let info = _accessor?.info ?? TypeRegistry.info(for: type(of: self))
        var s = "\(info.schema.className) {\n"
        for property in info.schema.properties {
            let shown = RealmDescription.value(value(forKey: property.name), depth: depth - 1)
            s += "\t\(property.name) = \(RealmDescription.indented(shown));\n"
        }
        return s + "}"
    }
}

extension List: DepthDescribable {
    func description(depth: Int) -> String {
        RealmDescription.collection("List", RealmDescription.typeName(Element.self), address: self, count: count, self, depth: depth)
    }
}

extension MutableSet: DepthDescribable {
    func description(depth: Int) -> String {
        RealmDescription.collection("MutableSet", RealmDescription.typeName(Element.self), address: self, count: count, self, depth: depth)
    }
}

extension Map: DepthDescribable {
    /// `Map<string, Type> <0x…> (` then `[key]: value,` per entry (not indented, as RealmSwift's), then `)`.
    func description(depth: Int) -> String {
        guard depth > 0 else { return RealmDescription.depthExceeded }
        var s = "Map<string, \(RealmDescription.typeName(Value.self))> <\(RealmDescription.pointer(self))> (\n"
        var items: [String] = []
        for (key, value) in self.prefix(RealmDescription.maxElements) {
            items.append(RealmDescription.indented("[\(key)]: \(RealmDescription.value(value, depth: depth - 1))"))
        }
        s += items.joined(separator: ",\n")
        if count > items.count { s += "\n\t... \(count - items.count) objects skipped." }
        return s + "\n)"
    }
}

extension LinkingObjects: DepthDescribable {
    func description(depth: Int) -> String {
        RealmDescription.collection("LinkingObjects", Element.className(), address: target?.core, count: count, self, depth: depth)
    }
}

extension Results: DepthDescribable {
    func description(depth: Int) -> String {
        // Objects name their class; projections and values their Swift type, as RealmSwift's do.
        let elementType: String
        if values != nil, let valueType = Element.self as? any _Persistable.Type {
            elementType = RealmDescription.typeName(valueType)
        } else {
            elementType = projector == nil ? binding.info.schema.className : "\(Element.self)"
        }
        return RealmDescription.collection("Results", elementType, address: cache, count: count, self, depth: depth)
    }
}
