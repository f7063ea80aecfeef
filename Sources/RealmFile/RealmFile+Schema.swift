/// The group's tables and each table's spec (realm-core: `group.hpp`, `table.hpp`, `spec.hpp`, `keys.hpp`).
///
/// Group top: [0] table names (`ArrayStringShort`), [1] table tops (a ref each; a tagged value is a free slot).
/// Table top: [0] spec, [2] cluster tree root, [3] table key (tagged), [7] opposite table per leaf index,
/// [11] primary-key column key (tagged), [12] flags (tagged; bits 0-1: 1 embedded, 2 asymmetric; format 20+).
/// Spec: [0] column types (low 16 bits the column type, high 16 the key type of a map), [1] names of the public
/// columns, [2] attributes (1 indexed, 256 full-text), [4] enumeration keys per column, [5] column keys.
/// Column key: bits 0-15 the leaf index (the column's slot in a cluster leaf), 16-21 the column type, 22-29 the
/// attributes (16 nullable, 32 list, 64 dictionary, 128 set).
///
/// What is read as realm-core reads it (`README.md` beside this file lists every check and its counterpart):
/// - A column's type and attributes come from its column key (`Table::get_column_type`, `Table::is_nullable`,
///   `ColKey::get_type`), never from the spec's type array, which realm-core reads only to find the backlink
///   columns and a map's key type. The two disagree in files realm-core upgraded: `Spec::migrate_column_keys`
///   (format 24) turns a link list's key from type 13 into type 12 with the list attribute and leaves 13 in the
///   type array, so every `List<Object>` of a file created before format 24 reads spec 13, key 12.
/// - A table's top may be shorter than today's 14 slots (`Table::init` pads it with zeros), and a table whose key
///   slot is not a tagged integer has the key of its position in the group (`Table::init`: `ndx_in_parent`).
extension RealmFile {
    enum ColumnType {
        static let int = 0, bool = 1, string = 2, binary = 4, mixed = 6, timestamp = 8, float = 9, double = 10
        static let decimal = 11, link = 12, linkList = 13, backlink = 14, objectId = 15, typedLink = 16, uuid = 17
    }

    private struct RawTable {
        let name: String
        let top: Int
        let topNode: RealmNode
        let key: UInt32
    }

    static func loadTables(_ reader: RealmFileReader, topRef: Int) throws -> [RealmFileTable] {
        let top = try reader.node(at: topRef, "the group's top array")
        guard top.hasRefs, top.count >= 3 else {
            throw reader.corrupted("the group's top array has \(top.count) elements (at least 3, with refs)", at: topRef)
        }
        guard let namesRef = try reader.ref(top, 0, "table names"), let tablesRef = try reader.ref(top, 1, "table list") else {
            return []
        }
        let names = try reader.blobs(reader.node(at: namesRef, "table names"), isString: true, enumKeys: nil, "table names")
        let tableRefs = try reader.node(at: tablesRef, "table list")
        guard tableRefs.count == names.count else {
            throw reader.corrupted("\(names.count) table names but \(tableRefs.count) tables", at: tablesRef)
        }
        var raw: [RawTable?] = []
        for (i, name) in names.enumerated() {
            let nameString = String(decoding: name ?? [], as: UTF8.self)
            guard let ref = try reader.ref(tableRefs, i, "table \(nameString)") else {
                raw.append(nil)
                continue
            }
            let node = try reader.node(at: ref, "the top of table \(nameString)")
            guard node.hasRefs, node.count >= 1 else {
                throw reader.corrupted("table \(nameString): its top array has \(node.count) elements (at least its spec)", at: ref)
            }
            // realm-core `Table::init`: a key slot that is not tagged (a table from before table keys) means the
            // table's position in the group.
            let key = node.count > 3 ? node.tagged(3) ?? Int64(i) : Int64(i)
            raw.append(RawTable(name: nameString, top: ref, topNode: node, key: UInt32(truncatingIfNeeded: key)))
        }
        var indexByKey: [UInt32: Int] = [:]
        var compact: [RawTable] = []
        for case let table? in raw {
            indexByKey[table.key] = compact.count
            compact.append(table)
        }
        return try compact.enumerated().map { index, table in
            try loadTable(reader, table, index: index, indexByKey: indexByKey)
        }
    }

    private static func loadTable(
        _ reader: RealmFileReader, _ table: RawTable, index: Int, indexByKey: [UInt32: Int]
    ) throws -> RealmFileTable {
        let what = "table \(table.name)"
        let topNode = table.topNode
        // realm-core `Table::init` pads a short top with zeros: a slot past its end is empty.
        func topRef(_ slot: Int, _ name: String) throws -> Int? {
            slot < topNode.count ? try reader.ref(topNode, slot, "\(what): \(name)") : nil
        }
        guard let specRef = try reader.ref(topNode, 0, "\(what): spec") else {
            throw reader.corrupted("\(what) has no spec", at: table.top)
        }
        let spec = try reader.node(at: specRef, "\(what): spec")
        guard spec.hasRefs, spec.count >= 6 else {
            throw reader.corrupted("\(what): its spec has \(spec.count) elements (6 since realm-core 6)", at: specRef)
        }
        func leaf(_ slot: Int, _ name: String) throws -> RealmNode? {
            guard let ref = try reader.ref(spec, slot, "\(what): spec \(name)") else { return nil }
            return try reader.node(at: ref, "\(what): spec \(name)")
        }
        let types = try leaf(0, "types").map { try reader.ints($0, "\(what): spec types") } ?? []
        let names = try leaf(1, "names").map { try reader.blobs($0, isString: true, enumKeys: nil, "\(what): column names") } ?? []
        let attributes = try leaf(2, "attributes").map { try reader.ints($0, "\(what): spec attributes") } ?? []
        let enumKeys = try reader.ref(spec, 4, "\(what): enumeration keys")
        let columnKeys = try leaf(5, "column keys").map { try reader.ints($0, "\(what): column keys") } ?? []
        guard attributes.count == types.count, columnKeys.count == types.count, names.count <= types.count else {
            throw reader.corrupted(
                "\(what): its spec lists \(types.count) types, \(names.count) names, \(attributes.count) attributes and \(columnKeys.count) column keys",
                at: specRef)
        }
        let opposite = try topRef(7, "opposite tables").map { try reader.ints(reader.node(at: $0, "\(what): opposite tables"), "\(what): opposite tables") } ?? []
        // A search index is a ref per leaf index (primary keys have one without the spec's Indexed attribute).
        let searchIndexes = try topRef(4, "search indexes").map { try reader.ints(reader.node(at: $0, "\(what): search indexes"), "\(what): search indexes") } ?? []
        let primaryKey = topNode.count > 11 ? topNode.tagged(11) : nil
        let flags = topNode.count > 12 ? (topNode.tagged(12) ?? 0) : 0
        var properties: [RealmFileProperty] = []
        var primaryKeyIndex: Int?
        for specIndex in 0..<names.count {
            let columnKey = columnKeys[specIndex]
            let columnType = Int((columnKey >> 16) & 0x3f)
            let keyAttributes = Int((columnKey >> 22) & 0xff)
            let name = String(decoding: names[specIndex] ?? [], as: UTF8.self)
            // The type is the key's (see above): the type array is not compared with it.
            if columnType == ColumnType.backlink { continue }
            let type: RealmFilePropertyType
            switch columnType {
            case ColumnType.int: type = .int
            case ColumnType.bool: type = .bool
            case ColumnType.string: type = .string
            case ColumnType.binary: type = .data
            case ColumnType.mixed: type = .mixed
            case ColumnType.timestamp: type = .date
            case ColumnType.float: type = .float
            case ColumnType.double: type = .double
            case ColumnType.decimal: type = .decimal128
            case ColumnType.link, ColumnType.linkList: type = .object
            case ColumnType.objectId: type = .objectId
            case ColumnType.uuid: type = .uuid
            default:
                throw RealmFileError(
                    .unsupportedFormat,
                    "\(what).\(name) has column type \(columnType), which RealmSwift never creates (typed link or a pre-2020 type)",
                    file: reader.path, offset: specRef)
            }
            let collection: RealmFileCollectionKind
            if columnType == ColumnType.linkList || keyAttributes & 32 != 0 {
                collection = .list
            } else if keyAttributes & 64 != 0 {
                collection = .map
                guard types[specIndex] >> 16 == 2 else {
                    throw RealmFileError(
                        .unsupportedFormat, "\(what).\(name) is a map with keys of type \(types[specIndex] >> 16); RealmSwift's maps have String keys",
                        file: reader.path, offset: specRef)
                }
            } else if keyAttributes & 128 != 0 {
                collection = .set
            } else {
                collection = .none
            }
            var target: Int?
            let leafIndex = Int(columnKey & 0xffff)
            if type == .object {
                guard leafIndex < opposite.count, let index = indexByKey[UInt32(truncatingIfNeeded: opposite[leafIndex])] else {
                    throw reader.corrupted("\(what).\(name): a link column whose target table is missing", at: table.top)
                }
                target = index
            }
            if primaryKey == columnKey { primaryKeyIndex = properties.count }
            // Optional, as RealmSwift declares it (for a collection, its elements; for a map, its values): a mixed
            // value always; a link, and a map of links, always; a list or set of links never; any other value when
            // its key has the nullable attribute.
            let isOptional = type == .mixed
                || (type == .object ? collection == .none || collection == .map : keyAttributes & 16 != 0)
            properties.append(RealmFileProperty(
                name: name, type: type,
                isOptional: isOptional,
                collection: collection, targetTable: target,
                isIndexed: attributes[specIndex] & 1 != 0 || (leafIndex < searchIndexes.count && searchIndexes[leafIndex] != 0), isFullTextIndexed: attributes[specIndex] & 256 != 0,
                isPrimaryKey: primaryKey == columnKey, columnKey: columnKey, columnType: columnType, specIndex: specIndex,
                specType: Int(types[specIndex] & 0xffff)))
        }
        let clusterRoot = try topRef(2, "objects") ?? 0
        let objectCount = clusterRoot == 0 ? 0 : try clusterSize(reader, clusterRoot, what)
        return RealmFileTable(
            name: table.name, index: index, key: table.key, isEmbedded: flags & 3 == 1, isAsymmetric: flags & 3 == 2,
            properties: properties, primaryKeyIndex: primaryKeyIndex, objectCount: objectCount,
            clusterRoot: clusterRoot, enumKeysRef: enumKeys ?? 0, top: table.top)
    }

    /// The object count of a cluster tree, from its root: a leaf's key count or an inner node's subtree size.
    private static func clusterSize(_ reader: RealmFileReader, _ root: Int, _ what: String) throws -> Int {
        let node = try reader.node(at: root, "\(what): cluster root")
        guard node.hasRefs, node.count >= 1 else {
            throw reader.corrupted("\(what): its cluster root is not a node with refs", at: root)
        }
        if node.isInner {
            return Int(clamping: try reader.tagged(node, 2, "\(what): cluster size"))
        }
        if let size = node.tagged(0) { return Int(clamping: size) }
        guard let keys = try reader.ref(node, 0, "\(what): cluster keys") else { return 0 }
        return try reader.node(at: keys, "\(what): cluster keys").count
    }

    /// The `version` of the object store's `metadata` table (realm-core `object_store.cpp`): -1 means not versioned.
    func readSchemaVersion() throws -> UInt64? {
        guard let metadata = tables.first(where: { $0.name == "metadata" }),
              let column = metadata.properties.firstIndex(where: { $0.name == "version" && $0.type == .int && $0.collection == .none })
        else { return nil }
        var version: Int64?
        try forEachObject(in: metadata) { object in
            if version == nil, case .int(let v) = object.values[column] { version = v }
        }
        guard let version, version >= 0 else { return nil }
        return UInt64(version)
    }
}
