/// The schema of a Realm: its object types.
public struct Schema: Sendable, Equatable, CustomStringConvertible {
    public let objectSchema: [ObjectSchema]

    public subscript(className: String) -> ObjectSchema? { objectSchema.first { $0.className == className } }

    public var description: String { objectSchema.map(\.description).joined(separator: "\n") }
}

/// The schema of one object type.
public struct ObjectSchema: Sendable, Equatable, CustomStringConvertible {
    public let className: String
    public let properties: [Property]
    public let isEmbedded: Bool
    /// The class the schema was read from (nil for types known only from the file).
    public let objectClass: AnyClass?

    public var primaryKeyProperty: Property? { properties.first { $0.isPrimaryKey } }
    public subscript(propertyName: String) -> Property? { properties.first { $0.name == propertyName } }

    public static func == (a: ObjectSchema, b: ObjectSchema) -> Bool {
        a.className == b.className && a.properties == b.properties && a.isEmbedded == b.isEmbedded
    }

    public var description: String {
        "\(className) {\n" + properties.map { "\t\($0)" }.joined(separator: "\n") + "\n}"
    }
}

/// One property of an object type.
public struct Property: Sendable, Equatable, CustomStringConvertible {
    public let name: String
    /// The name stored in the file (differs from `name` with `propertiesMapping()`).
    public let columnName: String
    public let type: PropertyType
    /// Whether the property is optional, as RealmSwift reports it: declared with a Swift optional, or a collection
    /// of optional elements (`List<Int?>`, `Map<String, Dog?>`); never an `AnyRealmValue` (it holds `.none`).
    public var isOptional: Bool { type == .any ? false : (isCollection ? hasOptionalElements : isNullable) }
    /// Whether the stored value may be nil (an `AnyRealmValue` may: it holds `.none`).
    let isNullable: Bool
    /// Whether a collection's elements (a map's values) are optional.
    let hasOptionalElements: Bool
    public let isIndexed: Bool
    public let isPrimaryKey: Bool
    public let objectClassName: String?
    /// A `List` property.
    public var isArray: Bool { isCollection && !isSet && !isMap }
    /// A `MutableSet` property.
    public let isSet: Bool
    let isCollection: Bool
    /// A `Map` property.
    public let isMap: Bool

    init(
        name: String, columnName: String, type: PropertyType, isOptional: Bool, isIndexed: Bool, isPrimaryKey: Bool,
        objectClassName: String?, isArray: Bool = false, isSet: Bool = false, isMap: Bool = false, hasOptionalElements: Bool = false
    ) {
        self.name = name
        self.columnName = columnName
        self.type = type
        self.isNullable = isOptional
        self.hasOptionalElements = hasOptionalElements
        self.isIndexed = isIndexed
        self.isPrimaryKey = isPrimaryKey
        self.objectClassName = objectClassName
        self.isCollection = isArray || isSet || isMap
        self.isSet = isSet
        self.isMap = isMap
    }

    public var description: String {
        "\(name) {type = \(isSet ? "MutableSet<\(type)>" : isArray ? "List<\(type)>" : "\(type)")\(isNullable ? "?" : "")\(isPrimaryKey ? ", primary key" : "")\(isIndexed ? ", indexed" : "")}"
    }
}
