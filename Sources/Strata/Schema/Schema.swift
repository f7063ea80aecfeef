/// The schema of a Realm: its object types.
public struct Schema: Sendable, Equatable, CustomStringConvertible {
    public let objectSchema: [ObjectSchema]

    public subscript(className: String) -> ObjectSchema? { objectSchema.first { $0.className == className } }

    public var description: String { objectSchema.map(\.description).joined(separator: "\n") }
}

/// The schema of one object type.
public struct ObjectSchema: Sendable, Equatable, CustomStringConvertible {
    public let className: String
    /// The persisted properties, as RealmSwift lists them (LinkingObjects are not among them).
    public let properties: [Property]
    /// The LinkingObjects properties, computed from other types' links; `self[name]` finds them too.
    public let computedProperties: [Property]
    public let isEmbedded: Bool
    /// The class the schema was read from (nil for types known only from the file).
    public let objectClass: AnyClass?

    public var primaryKeyProperty: Property? { properties.first { $0.isPrimaryKey } }
    /// A persisted or LinkingObjects property by name.
    public subscript(propertyName: String) -> Property? {
        properties.first { $0.name == propertyName } ?? computedProperties.first { $0.name == propertyName }
    }

    init(className: String, properties: [Property], computedProperties: [Property] = [], isEmbedded: Bool, objectClass: AnyClass?) {
        self.className = className
        self.properties = properties
        self.computedProperties = computedProperties
        self.isEmbedded = isEmbedded
        self.objectClass = objectClass
    }

    public static func == (a: ObjectSchema, b: ObjectSchema) -> Bool {
        a.className == b.className && a.properties == b.properties && a.computedProperties == b.computedProperties
            && a.isEmbedded == b.isEmbedded
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
    /// The target type of a link, List, MutableSet or Map of objects; the origin type of LinkingObjects.
    public let objectClassName: String?
    /// For LinkingObjects: the origin type's property that links here; nil otherwise.
    public let linkOriginPropertyName: String?
    /// A `List` property (and LinkingObjects, a list of the objects linking here, as in RealmSwift).
    public var isArray: Bool { isCollection && !isSet && !isMap }
    /// A `MutableSet` property.
    public let isSet: Bool
    let isCollection: Bool
    /// A `Map` property.
    public let isMap: Bool

    init(
        name: String, columnName: String, type: PropertyType, isOptional: Bool, isIndexed: Bool, isPrimaryKey: Bool,
        objectClassName: String?, isArray: Bool = false, isSet: Bool = false, isMap: Bool = false, hasOptionalElements: Bool = false,
        linkOriginPropertyName: String? = nil
    ) {
        self.linkOriginPropertyName = linkOriginPropertyName
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
