/// Lists, sets and maps, and mixed values with their nested collections.
///
/// A list or set is a B+tree (`bplustree.hpp`): a leaf of the element type, or an inner node [0] elements per
/// child (tagged) or a ref to cumulative offsets, [1..<n-1] children, [n-1] the total size (tagged). A set is the
/// same tree kept sorted. A map (format 23 and later) is a pair [keys B+tree, values B+tree of mixed] sorted by key;
/// in formats 21 and 22 it is a cluster tree of (key, value) rows ordered by a hash of the key. Map values are
/// always mixed, whatever the declared type; a link in a map is a typed link.
///
/// Mixed (`array_mixed.hpp`): [0] composite values `payload << 8 | payload index << 5 | (data type + 1)` (0 is
/// null), [1] 64-bit ints (large ints, float and double bits, link keys), [2] pairs (timestamps, decimals, typed
/// links), [3] strings (strings, binary, ObjectId and UUID bytes), [4] refs to nested lists and dictionaries
/// (format 24).
extension RealmFile {
    enum DataType {
        static let int = 0, bool = 1, string = 2, binary = 4, timestamp = 8, float = 9, double = 10, decimal = 11
        static let link = 12, objectId = 15, typedLink = 16, uuid = 17, list = 19, set = 20, dictionary = 21
    }

    func collection(_ property: RealmFileProperty, table: RealmFileTable, root: Int, _ what: String) throws -> RealmFileValue {
        switch property.collection {
        case .map:
            let entries = reader.formatVersion <= 22
                ? try legacyMap(root, linkTarget: property.targetTable, what)
                : try map(root, linkTarget: property.targetTable, depth: 0, what)
            return .map(entries)
        case .list, .set:
            let element = property.element
            var values = try bptree(root, depth: 0, what) { leaf in try self.scalars(leaf, element, enumKeys: nil, what) }
            // An unresolved link (a tombstone, sync only) is left out of a collection, as RealmSwift does.
            if property.type == .object { values.removeAll { $0 == .null } }
            return property.collection == .set ? .set(values) : .list(values)
        case .none:
            throw reader.corrupted("\(what): not a collection", at: root)
        }
    }

    /// The elements of a B+tree, leaves decoded by `leaf`, in order; the total is checked against the root's.
    func bptree(_ ref: Int, depth: Int, _ what: String, leaf: (RealmNode) throws -> [RealmFileValue]) throws -> [RealmFileValue] {
        try reader.checkDepth(depth, "\(what): B+tree", at: ref)
        let node = try reader.node(at: ref, "\(what): B+tree node")
        guard node.isInner else { return try leaf(node) }
        guard node.hasRefs, node.count >= 3 else {
            throw reader.corrupted("\(what): a B+tree inner node of \(node.count) elements", at: ref)
        }
        let total = try reader.tagged(node, node.count - 1, "\(what): B+tree size")
        var values: [RealmFileValue] = []
        for i in 1..<(node.count - 1) {
            guard let child = try reader.ref(node, i, "\(what): B+tree child") else {
                throw reader.corrupted("\(what): B+tree child \(i - 1) is not a ref", at: ref)
            }
            values += try bptree(child, depth: depth + 1, what, leaf: leaf)
            guard values.count <= total else { break }
        }
        guard values.count == total else {
            throw reader.corrupted("\(what): a B+tree that declares \(total) elements holds \(values.count)", at: ref)
        }
        return values
    }

    /// A map of format 23 and later, or a dictionary nested in a mixed value: [keys, values].
    private func map(_ ref: Int, linkTarget: Int?, depth: Int, _ what: String) throws -> [RealmFileMapEntry] {
        let top = try reader.node(at: ref, "\(what): map")
        guard top.hasRefs, top.count >= 2 else {
            throw reader.corrupted("\(what): a map top of \(top.count) elements (keys and values)", at: ref)
        }
        guard let keysRef = try reader.ref(top, 0, "\(what): map keys"), let valuesRef = try reader.ref(top, 1, "\(what): map values") else {
            return []
        }
        let keys = try bptree(keysRef, depth: 0, what) { leaf in
            try self.reader.blobs(leaf, isString: true, enumKeys: nil, "\(what): map keys").map { .string(String(decoding: $0 ?? [], as: UTF8.self)) }
        }
        let values = try bptree(valuesRef, depth: 0, what) { leaf in try self.mixedValues(leaf, depth: depth, what, linkTarget: linkTarget) }
        guard keys.count == values.count else {
            throw reader.corrupted("\(what): a map of \(keys.count) keys and \(values.count) values", at: ref)
        }
        return zip(keys, values).map { key, value in
            guard case .string(let k) = key else { return RealmFileMapEntry(key: "", value: value) }
            return RealmFileMapEntry(key: k, value: value)
        }
    }

    /// A map of formats 21 and 22: a cluster tree whose column 0 holds the keys and column 1 the values.
    private func legacyMap(_ ref: Int, linkTarget: Int?, _ what: String, depth: Int = 0) throws -> [RealmFileMapEntry] {
        try reader.checkDepth(depth, "\(what): map", at: ref)
        let node = try reader.node(at: ref, "\(what): map node")
        guard node.hasRefs, node.count >= 1 else { throw reader.corrupted("\(what): a map node without refs", at: ref) }
        if node.isInner {
            var entries: [RealmFileMapEntry] = []
            for i in 3..<max(3, node.count) {
                guard let child = try reader.ref(node, i, "\(what): map child") else {
                    throw reader.corrupted("\(what): map child \(i - 3) is not a ref", at: ref)
                }
                entries += try legacyMap(child, linkTarget: linkTarget, what, depth: depth + 1)
            }
            return entries
        }
        guard node.count >= 3, let keysRef = try reader.ref(node, 1, "\(what): map keys"),
              let valuesRef = try reader.ref(node, 2, "\(what): map values") else {
            return []
        }
        let keys = try reader.blobs(reader.node(at: keysRef, "\(what): map keys"), isString: true, enumKeys: nil, "\(what): map keys")
        let values = try mixedValues(reader.node(at: valuesRef, "\(what): map values"), depth: 0, what, linkTarget: linkTarget)
        guard keys.count == values.count else {
            throw reader.corrupted("\(what): a map leaf of \(keys.count) keys and \(values.count) values", at: ref)
        }
        return zip(keys, values).map { RealmFileMapEntry(key: String(decoding: $0 ?? [], as: UTF8.self), value: $1) }
    }

    /// The values of an `ArrayMixed` leaf. `linkTarget` is the table of an untyped link (a map's declared target).
    func mixedValues(_ node: RealmNode, depth: Int, _ what: String, linkTarget: Int? = nil) throws -> [RealmFileValue] {
        guard node.hasRefs, node.count >= 1, let compositeRef = try reader.ref(node, 0, "\(what): mixed values") else {
            if node.count == 0 || (node.hasRefs && node.int(0) == 0) { return [] }
            throw reader.corrupted("\(what): a mixed leaf without its values", at: node.ref)
        }
        let composite = try reader.ints(reader.node(at: compositeRef, "\(what): mixed values"), "\(what): mixed values")
        var payloads: [Int: [Int64]] = [:]
        var strings: [[UInt8]?]?
        func payload(_ slot: Int) throws -> [Int64] {
            if let cached = payloads[slot] { return cached }
            guard slot < node.count, let ref = try reader.ref(node, slot, "\(what): mixed payload \(slot)") else {
                throw reader.corrupted("\(what): a mixed value refers to payload \(slot), which the leaf lacks", at: node.ref)
            }
            let values = try reader.ints(reader.node(at: ref, "\(what): mixed payload \(slot)"), "\(what): mixed payload")
            payloads[slot] = values
            return values
        }
        func string(_ index: Int64) throws -> [UInt8] {
            if strings == nil {
                guard node.count > 3, let ref = try reader.ref(node, 3, "\(what): mixed strings") else {
                    throw reader.corrupted("\(what): a mixed value refers to strings, which the leaf lacks", at: node.ref)
                }
                strings = try reader.blobs(reader.node(at: ref, "\(what): mixed strings"), isString: true, enumKeys: nil, what)
            }
            guard index >= 0, index < strings!.count, let bytes = strings![Int(index)] else {
                throw reader.corrupted("\(what): mixed string \(index) is missing", at: node.ref)
            }
            return bytes
        }
        func element(_ slot: Int, _ index: Int64) throws -> Int64 {
            let values = try payload(slot)
            guard index >= 0, index < values.count else {
                throw reader.corrupted("\(what): mixed payload \(slot) has no element \(index)", at: node.ref)
            }
            return values[Int(index)]
        }
        return try composite.map { value in
            if value == 0 { return .null }
            let type = Int(value & 0x1f) - 1
            let payloadIndex = (value & 0xe0) >> 5
            let int = value >> 8
            switch type {
            case DataType.int: return .int(payloadIndex != 0 ? try element(1, int) : int)
            case DataType.bool: return .bool(int != 0)
            case DataType.string: return .string(String(decoding: try string(int), as: UTF8.self))
            case DataType.binary: return .data(try string(int))
            case DataType.float: return .float(Float(bitPattern: UInt32(truncatingIfNeeded: try element(1, int))))
            case DataType.double: return .double(Double(bitPattern: UInt64(bitPattern: try element(1, int))))
            case DataType.timestamp:
                let seconds = try element(2, 2 * int), nanos = try element(2, 2 * int + 1)
                guard let ns = Int32(exactly: nanos) else { throw reader.corrupted("\(what): mixed timestamp nanoseconds \(nanos)", at: node.ref) }
                return .timestamp(RealmFileTimestamp(seconds: seconds, nanoseconds: ns))
            case DataType.decimal:
                return .decimal128(RealmFileDecimal128(
                    low: UInt64(bitPattern: try element(2, 2 * int)), high: UInt64(bitPattern: try element(2, 2 * int + 1))))
            case DataType.objectId:
                let bytes = try string(int)
                guard bytes.count == 12 else { throw reader.corrupted("\(what): a mixed ObjectId of \(bytes.count) bytes", at: node.ref) }
                return .objectId(bytes)
            case DataType.uuid:
                let bytes = try string(int)
                guard bytes.count == 16 else { throw reader.corrupted("\(what): a mixed UUID of \(bytes.count) bytes", at: node.ref) }
                return .uuid(bytes)
            case DataType.link:
                return link(linkTarget, try element(1, int))
            case DataType.typedLink:
                let tableKey = UInt32(truncatingIfNeeded: try element(2, 2 * int))
                let key = try element(2, 2 * int + 1)
                guard let table = tableIndexByKey[tableKey] else {
                    throw reader.corrupted("\(what): a link to table key \(tableKey), which the file does not have", at: node.ref)
                }
                return link(table, key)
            case DataType.list, DataType.dictionary:
                guard payloadIndex == 4 else { throw reader.corrupted("\(what): a nested collection outside the refs payload", at: node.ref) }
                guard depth < Self.maxMixedNesting else {
                    throw reader.corrupted("\(what): mixed collections nest more than \(Self.maxMixedNesting) deep", at: node.ref)
                }
                let ref = try element(4, int)
                if ref == 0 { return type == DataType.list ? .list([]) : .map([]) }
                guard ref > 0, ref & 7 == 0, ref < Int64(reader.image.count) else {
                    throw reader.corrupted("\(what): a nested collection at ref \(ref)", at: node.ref)
                }
                if type == DataType.list {
                    return .list(try bptree(Int(ref), depth: 0, what) { leaf in try self.mixedValues(leaf, depth: depth + 1, what) })
                }
                return .map(try map(Int(ref), linkTarget: nil, depth: depth + 1, what))
            default:
                throw reader.corrupted("\(what): a mixed value of data type \(type)", at: node.ref)
            }
        }
    }
}

extension RealmFileProperty {
    /// The property of one element of this collection.
    var element: RealmFileProperty {
        RealmFileProperty(
            name: name, type: type, isOptional: isOptional, collection: .none, targetTable: targetTable,
            isIndexed: false, isFullTextIndexed: false, isPrimaryKey: false, columnKey: columnKey,
            columnType: columnType, specIndex: specIndex)
    }
}
