/// The type of a property's values, as RealmSwift declares it.
public enum RealmFilePropertyType: String, Sendable, Hashable {
    case int, bool, string, data, date, float, double, decimal128, objectId, uuid
    /// `AnyRealmValue`.
    case mixed
    /// A link to an object of ``RealmFileProperty/targetTable``.
    case object
}

/// Whether a property holds one value or a collection of them.
public enum RealmFileCollectionKind: String, Sendable, Hashable {
    case none, list, set, map
}

/// One persisted property of a table, read from its spec and column key.
public struct RealmFileProperty: Sendable, Hashable {
    /// The persisted (column) name: what RealmSwift's `propertiesMapping` maps a Swift name to.
    public let name: String
    public let type: RealmFilePropertyType
    /// Whether the value (for a collection, each element) may be null.
    public let isOptional: Bool
    public let collection: RealmFileCollectionKind
    /// For links: the index in ``RealmFile/tables`` of the table linked to.
    public let targetTable: Int?
    public let isIndexed: Bool
    public let isFullTextIndexed: Bool
    public let isPrimaryKey: Bool

    // Where the values are: the column key's leaf index, its column type, the spec position.
    let columnKey: Int64
    let columnType: Int
    let specIndex: Int
    /// The spec's type array's entry (low 16 bits), which realm-core does not read for the column's type: 13
    /// for a link list of a file created before format 24, whose key says 12.
    var specType: Int = -1
    var leafIndex: Int { Int(columnKey & 0xFFFF) }
}

/// One table of the file's group: a RealmSwift class (`class_Name`), the schema-version table `metadata`, or a
/// table of realm-core's own.
public struct RealmFileTable: Sendable {
    /// The table's name in the group (`class_Person`).
    public let name: String
    /// The RealmSwift class name (`Person`) when the table is one (its name starts with `class_`).
    public var className: String? { name.hasPrefix("class_") ? String(name.dropFirst(6)) : nil }
    /// The position in ``RealmFile/tables``.
    public let index: Int
    /// realm-core's `TableKey`.
    public let key: UInt32
    public let isEmbedded: Bool
    /// A sync-only asymmetric table (never one of RealmSwift's local classes).
    public let isAsymmetric: Bool
    /// The persisted properties in spec order (the hidden backlink columns left out).
    public let properties: [RealmFileProperty]
    /// The index in ``properties`` of the primary key, if any.
    public let primaryKeyIndex: Int?
    /// The number of live objects.
    public let objectCount: Int

    let clusterRoot: Int
    let enumKeysRef: Int
    let top: Int
}

/// An object read from a table: its key and one value per property of ``RealmFileTable/properties``.
public struct RealmFileObject: Sendable {
    /// realm-core's `ObjKey`: unique in its table, and what links and ``RealmFileLink/key`` refer to.
    public let key: Int64
    public let values: [RealmFileValue]
}
