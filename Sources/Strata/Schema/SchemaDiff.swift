/// The differences between the schema stored in a file and the one the code declares, worded and ordered
/// as RealmSwift words and orders them (`Migration is required due to the following errors:`).
struct SchemaDiff: CustomStringConvertible, Equatable {
    enum Kind: Equatable {
        case propertyAdded, propertyRemoved
        /// Realm's type names: `int`, `string`, a link's target class, `array<…>`, `set<…>`, `dictionary<string, …>`.
        case typeChanged(from: String, to: String)
        case optionalityChanged(nowOptional: Bool)
        case primaryKeyAdded, primaryKeyRemoved
        case primaryKeyChanged(from: String, to: String)
        case embeddingChanged(nowEmbedded: Bool)
    }
    var type: String
    var property: String
    var kind: Kind

    /// Added and removed properties migrate without a migration block.
    var isAutomatic: Bool {
        switch kind {
        case .propertyAdded, .propertyRemoved: true
        default: false
        }
    }

    var description: String {
        switch kind {
        case .propertyAdded: "Property '\(type).\(property)' has been added."
        case .propertyRemoved: "Property '\(type).\(property)' has been removed."
        case .typeChanged(let from, let to): "Property '\(type).\(property)' has been changed from '\(from)' to '\(to)'."
        case .optionalityChanged(let now): "Property '\(type).\(property)' has been made \(now ? "optional" : "required")."
        case .primaryKeyAdded: "Primary Key for class '\(type)' has been added."
        case .primaryKeyRemoved: "Primary Key for class '\(type)' has been removed."
        case .primaryKeyChanged(let from, let to): "Primary Key for class '\(type)' has changed from '\(from)' to '\(to)'."
        case .embeddingChanged(let now):
            now ? "Class '\(type)' has been changed from TopLevel to Embedded." : "Class '\(type)' has been changed from Embedded to TopLevel."
        }
    }

    /// Realm's name of a stored property's type (nullability is not part of it).
    static func typeName(_ p: StoredSchema.StoredProperty) -> String {
        typeName(p.type, target: p.objectClassName, list: p.isList ?? false, set: p.isSet ?? false, map: p.isMap ?? false)
    }

    /// Realm's name of a declared property's type.
    static func typeName(_ p: Property) -> String {
        typeName(p.type, target: p.objectClassName, list: p.isCollection, set: p.isSet, map: p.isMap)
    }

    /// `int`, `<Dog>` (a link), `array<int>`, `set<Dog>`, `dictionary<string, Dog>`.
    private static func typeName(_ type: PropertyType, target: String?, list: Bool, set: Bool, map: Bool) -> String {
        let base = type == .object ? (target ?? "object") : valueTypeName(type)
        if map { return "dictionary<string, \(base)>" }
        if list { return set ? "set<\(base)>" : "array<\(base)>" }
        return type == .object ? "<\(base)>" : base
    }

    static func valueTypeName(_ t: PropertyType) -> String {
        switch t {
        case .int: "int"
        case .bool: "bool"
        case .float: "float"
        case .double: "double"
        case .string: "string"
        case .data: "data"
        case .date: "date"
        case .objectId: "object id"
        case .decimal128: "decimal"
        case .UUID: "uuid"
        case .any: "mixed"
        case .object: "object"
        case .linkingObjects: "linking objects"
        }
    }

    /// Whether a stored property holds the declared one's kind of value: same type, same link target, same
    /// collection kind. (A stored collection from before sets were told apart matches a List or a set.)
    static func sameKind(_ s: StoredSchema.StoredProperty, _ p: Property) -> Bool {
        guard s.type == p.type, (s.isList ?? false) == p.isCollection, (s.isMap ?? false) == p.isMap else { return false }
        if s.type == .object, s.objectClassName != p.objectClassName { return false }
        if p.isCollection, !p.isMap, let isSet = s.isSet, isSet != p.isSet { return false }
        return true
    }

    /// Every difference for the declared types that the file already has, in Realm's order: types by name;
    /// within a type the stored properties in stored order (removed, retyped, made optional or required), the
    /// added ones in declared order, then the primary key; changes of embeddedness after every property line.
    static func differences(stored: StoredSchema, declared: [TypeInfo]) -> [SchemaDiff] {
        var out: [SchemaDiff] = []
        var embedding: [SchemaDiff] = []
        for info in declared.sorted(by: { Array($0.schema.className.utf8).lexicographicallyPrecedes(Array($1.schema.className.utf8)) }) {
            let name = info.schema.className
            guard let t = stored.type(named: name) else { continue }
            let declaredByColumn = Dictionary(info.schema.properties.map { ($0.columnName, $0) }, uniquingKeysWith: { a, _ in a })
            for s in t.properties {
                guard let p = declaredByColumn[s.name] else {
                    out.append(SchemaDiff(type: name, property: s.name, kind: .propertyRemoved))
                    continue
                }
                if !sameKind(s, p) {
                    out.append(SchemaDiff(type: name, property: p.name, kind: .typeChanged(from: typeName(s), to: typeName(p))))
                } else if s.isOptional != p.isNullable {
                    out.append(SchemaDiff(type: name, property: p.name, kind: .optionalityChanged(nowOptional: p.isNullable)))
                } else if p.isCollection, let stored = s.hasOptionalElements, stored != p.hasOptionalElements {
                    // `List<Int>` to `List<Int?>` and back: a change RealmSwift asks a schema version for, as for a
                    // property (files that did not record it take the declared optionality at the next open).
                    out.append(SchemaDiff(type: name, property: p.name, kind: .optionalityChanged(nowOptional: p.hasOptionalElements)))
                }
            }
            for p in info.schema.properties where !t.properties.contains(where: { $0.name == p.columnName }) {
                out.append(SchemaDiff(type: name, property: p.name, kind: .propertyAdded))
            }
            let storedKey = t.properties.first(where: \.isPrimaryKey)?.name
            let declaredKey = info.schema.properties.first(where: \.isPrimaryKey)?.columnName
            switch (storedKey, declaredKey) {
            case (nil, let now?): out.append(SchemaDiff(type: name, property: now, kind: .primaryKeyAdded))
            case (let was?, nil): out.append(SchemaDiff(type: name, property: was, kind: .primaryKeyRemoved))
            case (let was?, let now?) where was != now:
                out.append(SchemaDiff(type: name, property: now, kind: .primaryKeyChanged(from: was, to: now)))
            default: break
            }
            if (t.isEmbedded ?? false) != info.schema.isEmbedded {
                embedding.append(SchemaDiff(type: name, property: "", kind: .embeddingChanged(nowEmbedded: info.schema.isEmbedded)))
            }
        }
        return out + embedding
    }

    /// Adds or updates `info`'s type in `schema`: new types get partitions, new properties field ids, removed
    /// properties leave the list (their bytes stay in old records, unread). Returns whether anything changed.
    static func apply(_ info: TypeInfo, to schema: inout StoredSchema) -> Bool {
        let name = info.schema.className
        if let i = schema.types.firstIndex(where: { $0.name == name }) {
            var t = schema.types[i]
            var properties: [StoredSchema.StoredProperty] = []
            for p in info.schema.properties {
                // A collection whose elements become required starts again empty, under a new field id, as
                // realm-core's `make_property_required` removes the column and adds it again (the migration block
                // copies what it keeps from the old object): its nulls are never read as required elements.
                if var s = t.properties.first(where: { $0.name == p.columnName }), sameKind(s, p),
                    !(p.isCollection && s.hasOptionalElements == true && !p.hasOptionalElements)
                {
                    s.isIndexed = p.isIndexed
                    s.isOptional = p.isNullable
                    s.type = p.type
                    s.objectClassName = p.objectClassName
                    s.isPrimaryKey = p.isPrimaryKey
                    if p.isCollection && !p.isMap { s.isSet = p.isSet }
                    s.hasOptionalElements = p.isCollection ? p.hasOptionalElements : nil
                    properties.append(s)
                } else {
                    properties.append(.init(
                        fieldId: t.nextFieldId, name: p.columnName, type: p.type, isOptional: p.isNullable,
                        isPrimaryKey: p.isPrimaryKey, isIndexed: p.isIndexed, objectClassName: p.objectClassName, isList: p.isCollection ? true : nil, isMap: p.isMap ? true : nil,
                isSet: p.isCollection && !p.isMap ? p.isSet : nil, hasOptionalElements: p.isCollection ? p.hasOptionalElements : nil))
                    t.nextFieldId += 1
                }
            }
            t.properties = properties
            // A non-Int primary key needs an index partition; an Int one (the object key itself) or none does not.
            let pk = properties.first(where: \.isPrimaryKey)
            if let pk, pk.type != .int {
                if t.primaryKeyPartition == nil {
                    t.primaryKeyPartition = schema.nextPartition
                    schema.nextPartition += 1
                }
            } else {
                t.primaryKeyPartition = nil
            }
            t.isEmbedded = info.schema.isEmbedded ? true : nil
            let changed = t != schema.types[i]
            schema.types[i] = t
            return changed
        }
        var t = StoredSchema.StoredType(name: name, partition: schema.nextPartition, primaryKeyPartition: nil, nextFieldId: 1, properties: [])
        t.isEmbedded = info.schema.isEmbedded ? true : nil
        t.recordFormat = RecordLayout.storedFormat
        schema.nextPartition += 1
        if let pk = info.schema.primaryKeyProperty, pk.type != .int {
            t.primaryKeyPartition = schema.nextPartition
            schema.nextPartition += 1
        }
        for p in info.schema.properties {
            t.properties.append(.init(
                fieldId: t.nextFieldId, name: p.columnName, type: p.type, isOptional: p.isNullable,
                isPrimaryKey: p.isPrimaryKey, isIndexed: p.isIndexed, objectClassName: p.objectClassName, isList: p.isCollection ? true : nil, isMap: p.isMap ? true : nil,
                isSet: p.isCollection && !p.isMap ? p.isSet : nil, hasOptionalElements: p.isCollection ? p.hasOptionalElements : nil))
            t.nextFieldId += 1
        }
        schema.types.append(t)
        return true
    }
}
