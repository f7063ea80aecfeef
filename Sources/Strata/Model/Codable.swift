import Foundation

// `Codable` as RealmSwift has it: a model that declares `Codable` gets `init(from:)` and `encode(to:)`
// synthesized over its `@Persisted` properties, and its collections encode as arrays (a `Map` as a
// dictionary). As in RealmSwift, synthesized encoding reads the values an unmanaged object holds.

extension Decoder {
    /// A value of `T`, where a null reads as nil for an optional type.
    fileprivate func decodeValue<T: _Persistable & Decodable>(_ type: T.Type) throws -> T {
        let container = try singleValueContainer()
        if T._isOptional, container.decodeNil(), let none = T._fromStored(.null) { return none }
        return try container.decode(T.self)
    }
}

extension Encoder {
    /// A collection's elements, as an array.
    fileprivate func encodeElements<S: Sequence>(of elements: S) throws where S.Element: Encodable {
        var container = unkeyedContainer()
        for element in elements { try container.encode(element) }
    }
}

extension Persisted: Decodable where Value: Decodable {
    public init(from decoder: any Decoder) throws {
        self.init(wrappedValue: try decoder.decodeValue(Value.self))
    }
}

extension Persisted: Encodable where Value: Encodable {
    /// Encodes the value the property holds while its object is unmanaged. A managed object's values live in
    /// its Realm, out of the property's reach: RealmSwift throws there, Strata encodes the value the object
    /// had when it was made (see "Moving from RealmSwift"); define `encode(to:)` to encode managed objects.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(unmanagedValue)
    }
}

extension List: Decodable where Element: Decodable {
    public convenience init(from decoder: any Decoder) throws {
        self.init()
        var container = try decoder.unkeyedContainer()
        var items: [Element] = []
        while !container.isAtEnd { items.append(try container.decode(Element.self)) }
        append(objectsIn: items)
    }
}

extension List: Encodable where Element: Encodable {
    public func encode(to encoder: any Encoder) throws {
        try encoder.encodeElements(of: self)
    }
}

extension MutableSet: Decodable where Element: Decodable {
    public convenience init(from decoder: any Decoder) throws {
        self.init()
        var container = try decoder.unkeyedContainer()
        while !container.isAtEnd { insert(try container.decode(Element.self)) }
    }
}

extension MutableSet: Encodable where Element: Encodable {
    public func encode(to encoder: any Encoder) throws {
        try encoder.encodeElements(of: self)
    }
}

extension Map: Decodable where Key: Decodable, Value: Decodable {
    public convenience init(from decoder: any Decoder) throws {
        self.init()
        let container = try decoder.singleValueContainer()
        for (key, value) in try container.decode([Key: Value].self) { self[key] = value }
    }
}

extension Map: Encodable where Key: Encodable, Value: Encodable {
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(Dictionary(map { ($0.key, $0.value) }, uniquingKeysWith: { a, _ in a }))
    }
}

/// Linking objects are computed, never stored: decoding gives an empty one, encoding writes the objects.
extension LinkingObjects: Decodable {
    public init(from decoder: any Decoder) throws {
        self.init(propertyName: "", target: nil)
    }
}

extension LinkingObjects: Encodable where Element: Encodable {
    public func encode(to encoder: any Encoder) throws {
        try encoder.encodeElements(of: self)
    }
}

extension Results: Encodable where Element: Encodable {
    public func encode(to encoder: any Encoder) throws {
        try encoder.encodeElements(of: self)
    }
}

extension AnyRealmCollection: Encodable where Element: Encodable {
    public func encode(to encoder: any Encoder) throws {
        try encoder.encodeElements(of: self)
    }
}

extension RealmProperty: Codable where Value: Codable {
    public convenience init(from decoder: any Decoder) throws {
        self.init()
        value = try decoder.decodeValue(Value.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }
}

extension RealmOptional: Codable where Wrapped: Codable {
    public convenience init(from decoder: any Decoder) throws {
        self.init()
        value = try decoder.decodeValue(Wrapped?.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }
}
