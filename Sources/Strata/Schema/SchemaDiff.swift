/// The differences between the schema stored in a file and the one the code declares.
struct SchemaDiff: CustomStringConvertible, Equatable {
    enum Kind: Equatable {
        case propertyAdded, propertyRemoved, typeChanged(from: PropertyType, to: PropertyType, fromList: Bool = false, toList: Bool = false)
        case optionalityChanged(nowOptional: Bool), primaryKeyChanged(nowPrimary: Bool)
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
        case .typeChanged(let from, let to, let fromList, let toList):
            "Property '\(type).\(property)' has been changed from '\(fromList ? "List<\(from)>" : "\(from)")' to '\(toList ? "List<\(to)>" : "\(to)")'."
        case .optionalityChanged(let now): "Property '\(type).\(property)' has been made \(now ? "optional" : "required")."
        case .embeddingChanged(let now):
            now ? "Class '\(type)' has been made an embedded object." : "Class '\(type)' has been made a top-level object (no longer embedded)."
        case .primaryKeyChanged(let now):
            now ? "Primary Key for class '\(type)' has been added: '\(property)'." : "Primary Key for class '\(type)' has been removed: '\(property)'."
        }
    }

    /// Every difference for the declared types that the file already has.
    static func differences(stored: StoredSchema, declared: [TypeInfo]) -> [SchemaDiff] {
        var out: [SchemaDiff] = []
        for info in declared {
            let name = info.schema.className
            guard let t = stored.type(named: name) else { continue }
            if (t.isEmbedded ?? false) != info.schema.isEmbedded {
                out.append(SchemaDiff(type: name, property: "", kind: .embeddingChanged(nowEmbedded: info.schema.isEmbedded)))
            }
            for p in info.schema.properties {
                guard let s = t.properties.first(where: { $0.name == p.columnName }) else {
                    out.append(SchemaDiff(type: name, property: p.name, kind: .propertyAdded))
                    continue
                }
                if s.type != p.type || (s.isList ?? false) != p.isCollection || (s.isMap ?? false) != p.isMap {
                    out.append(SchemaDiff(type: name, property: p.name, kind: .typeChanged(from: s.type, to: p.type, fromList: s.isList ?? false, toList: p.isCollection)))
                }
                if s.isOptional != p.isOptional { out.append(SchemaDiff(type: name, property: p.name, kind: .optionalityChanged(nowOptional: p.isOptional))) }
                if s.isPrimaryKey != p.isPrimaryKey { out.append(SchemaDiff(type: name, property: p.name, kind: .primaryKeyChanged(nowPrimary: p.isPrimaryKey))) }
            }
            for s in t.properties where !info.schema.properties.contains(where: { $0.columnName == s.name }) {
                out.append(SchemaDiff(type: name, property: s.name, kind: .propertyRemoved))
                if s.isPrimaryKey { out.append(SchemaDiff(type: name, property: s.name, kind: .primaryKeyChanged(nowPrimary: false))) }
            }
        }
        return out
    }

    /// Adds or updates `info`'s type in `schema`: new types get partitions, new properties field ids, removed
    /// properties leave the list (their bytes stay in old records, unread). Returns whether anything changed.
    static func apply(_ info: TypeInfo, to schema: inout StoredSchema) -> Bool {
        let name = info.schema.className
        if let i = schema.types.firstIndex(where: { $0.name == name }) {
            var t = schema.types[i]
            var properties: [StoredSchema.StoredProperty] = []
            for p in info.schema.properties {
                if var s = t.properties.first(where: { $0.name == p.columnName }), s.type == p.type, (s.isList ?? false) == p.isCollection,
                    (s.isMap ?? false) == p.isMap
                {
                    s.isIndexed = p.isIndexed
                    s.isOptional = p.isOptional
                    s.type = p.type
                    s.objectClassName = p.objectClassName
                    s.isPrimaryKey = p.isPrimaryKey
                    properties.append(s)
                } else {
                    properties.append(.init(
                        fieldId: t.nextFieldId, name: p.columnName, type: p.type, isOptional: p.isOptional,
                        isPrimaryKey: p.isPrimaryKey, isIndexed: p.isIndexed, objectClassName: p.objectClassName, isList: p.isCollection ? true : nil, isMap: p.isMap ? true : nil))
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
        schema.nextPartition += 1
        if let pk = info.schema.primaryKeyProperty, pk.type != .int {
            t.primaryKeyPartition = schema.nextPartition
            schema.nextPartition += 1
        }
        for p in info.schema.properties {
            t.properties.append(.init(
                fieldId: t.nextFieldId, name: p.columnName, type: p.type, isOptional: p.isOptional,
                isPrimaryKey: p.isPrimaryKey, isIndexed: p.isIndexed, objectClassName: p.objectClassName, isList: p.isCollection ? true : nil, isMap: p.isMap ? true : nil))
            t.nextFieldId += 1
        }
        schema.types.append(t)
        return true
    }
}
