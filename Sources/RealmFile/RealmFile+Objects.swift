/// Objects: cluster trees of rows, their column leaves, and the collections and mixed values they refer to
/// (realm-core: `cluster.cpp`, `cluster_tree.cpp`, `bplustree.cpp`, `dictionary.cpp`, `array_mixed.cpp`).
///
/// Cluster leaf: [0] the row count (tagged; keys 0..<n) or a ref to the keys (`ArrayUnsigned`), then one column leaf
/// per leaf index. Inner node: [0] a ref to the children's key offsets, or 0 when child i starts at
/// `i << (depth * shift)`; [1] depth (tagged); [2] subtree size (tagged); [3...] children. The shift is 8 in every
/// production build and 2 in realm-core's node-size-4 test builds; it is read off the tree (a full first child).
/// Object keys are stored unsigned and read signed: tombstones (unresolved objects, sync only) are negative.
extension RealmFile {
    /// A cluster leaf's keys and decoded columns (one array per property of the table, row-major within).
    struct DecodedLeaf {
        let keys: [Int64]
        let columns: [[RealmFileValue]]
    }

    static let leafCacheSize = 8
    /// Mixed values nest at most 100 deep in realm-core ("Max nesting level reached").
    static let maxMixedNesting = 100

    /// Calls `body` with each object of `table` in key order.
    public func forEachObject(in table: RealmFileTable, _ body: (RealmFileObject) throws -> Void) throws {
        guard table.clusterRoot != 0 else { return }
        try walkCluster(table, ref: table.clusterRoot, offset: 0, depth: 0) { leaf in
            for row in leaf.keys.indices {
                try body(RealmFileObject(key: leaf.keys[row], values: leaf.columns.map { $0[row] }))
            }
        }
    }

    /// The object of `table` with `key`, or nil if there is none (how embedded objects are read: through the
    /// link of their owner).
    public func object(in table: RealmFileTable, key: Int64) throws -> RealmFileObject? {
        guard table.clusterRoot != 0 else { return nil }
        var ref = table.clusterRoot
        var offset: Int64 = 0
        for depth in 0...RealmFileReader.maxDepth {
            let node = try reader.node(at: ref, "table \(table.name): cluster node")
            guard node.hasRefs, node.count >= 1 else {
                throw reader.corrupted("table \(table.name): a cluster node without refs", at: ref)
            }
            if !node.isInner {
                let leaf = try decodedLeaf(table, node, offset: offset)
                guard let row = binarySearch(leaf.keys, key) else { return nil }
                return RealmFileObject(key: key, values: leaf.columns.map { $0[row] })
            }
            let children = try innerChildren(table, node, offset: offset)
            guard let child = children.lastIndex(where: { $0.offset <= key }) else { return nil }
            ref = children[child].ref
            offset = children[child].offset
            try reader.checkDepth(depth + 1, "table \(table.name): cluster tree", at: ref)
        }
        return nil
    }

    private func binarySearch(_ keys: [Int64], _ key: Int64) -> Int? {
        var low = 0, high = keys.count
        while low < high {
            let mid = (low + high) / 2
            if keys[mid] < key { low = mid + 1 } else { high = mid }
        }
        return low < keys.count && keys[low] == key ? low : nil
    }

    private func walkCluster(
        _ table: RealmFileTable, ref: Int, offset: Int64, depth: Int, _ body: (DecodedLeaf) throws -> Void
    ) throws {
        try reader.checkDepth(depth, "table \(table.name): cluster tree", at: ref)
        let node = try reader.node(at: ref, "table \(table.name): cluster node")
        guard node.hasRefs, node.count >= 1 else {
            throw reader.corrupted("table \(table.name): a cluster node without refs", at: ref)
        }
        if !node.isInner {
            try body(decodedLeaf(table, node, offset: offset))
            return
        }
        for child in try innerChildren(table, node, offset: offset) {
            try walkCluster(table, ref: child.ref, offset: child.offset, depth: depth + 1, body)
        }
    }

    /// The children of an inner cluster node with their key offsets.
    private func innerChildren(_ table: RealmFileTable, _ node: RealmNode, offset: Int64) throws -> [(ref: Int, offset: Int64)] {
        let what = "table \(table.name): inner cluster node"
        guard node.count >= 4 else { throw reader.corrupted("\(what) has no children", at: node.ref) }
        let depth = try reader.tagged(node, 1, "\(what): depth")
        guard depth >= 1, depth <= 8 else { throw reader.corrupted("\(what) has depth \(depth)", at: node.ref) }
        var refs: [Int] = []
        for i in 3..<node.count {
            guard let ref = try reader.ref(node, i, "\(what): child \(i - 3)") else {
                throw reader.corrupted("\(what): child \(i - 3) is not a ref", at: node.ref)
            }
            refs.append(ref)
        }
        if let keysRef = try reader.ref(node, 0, "\(what): key offsets") {
            let keys = try reader.node(at: keysRef, "\(what): key offsets")
            guard keys.holdsIntegers, keys.count == refs.count else {
                throw reader.corrupted("\(what): \(refs.count) children but \(keys.count) key offsets", at: keysRef)
            }
            return refs.indices.map { (refs[$0], offset &+ Int64(bitPattern: keys.unsigned($0))) }
        }
        if refs.count > 1, clusterShift == nil {
            // A compact node's children are full except the last: a first child whose keys are compact holds
            // 1 << (depth * shift) objects. (After deletions a leaf has explicit keys and says nothing.)
            let first = try reader.node(at: refs[0], "\(what): first child")
            let size = first.isInner ? try reader.tagged(first, 2, "\(what): first child's size") : first.tagged(0)
            if let size {
                guard size > 0, size & (size - 1) == 0, size.trailingZeroBitCount % Int(depth) == 0,
                      size.trailingZeroBitCount / Int(depth) <= 8 else {
                    throw reader.corrupted("\(what): its first child holds \(size) objects, not a full node", at: node.ref)
                }
                clusterShift = Int64(size.trailingZeroBitCount) / depth
            }
        }
        let shift = clusterShift ?? 8
        return refs.indices.map { (refs[$0], offset &+ (Int64($0) << (depth * shift))) }
    }

    private func decodedLeaf(_ table: RealmFileTable, _ node: RealmNode, offset: Int64) throws -> DecodedLeaf {
        if let cached = leafCache[node.ref] { return cached }
        let what = "table \(table.name)"
        var keys: [Int64]
        if let count = node.tagged(0) {
            guard count >= 0, count < 1 << 24 else { throw reader.corrupted("\(what): a cluster of \(count) objects", at: node.ref) }
            keys = (0..<count).map { offset &+ $0 }
        } else if let keysRef = try reader.ref(node, 0, "\(what): cluster keys") {
            let keyNode = try reader.node(at: keysRef, "\(what): cluster keys")
            guard keyNode.holdsIntegers else { throw reader.corrupted("\(what): cluster keys of width type \(keyNode.widthType)", at: keysRef) }
            keys = (0..<keyNode.count).map { offset &+ Int64(bitPattern: keyNode.unsigned($0)) }
        } else {
            keys = []
        }
        var columns: [[RealmFileValue]] = []
        for property in table.properties {
            let slot = 1 + property.leafIndex
            let name = "\(what).\(property.name)"
            guard slot < node.count, let ref = try reader.ref(node, slot, name) else {
                throw reader.corrupted("\(name): the cluster has no leaf for the column (leaf index \(property.leafIndex))", at: node.ref)
            }
            let values = try columnValues(table, property, leafRef: ref, name)
            guard values.count == keys.count else {
                throw reader.corrupted("\(name): the column leaf holds \(values.count) values for \(keys.count) objects", at: ref)
            }
            columns.append(values)
        }
        // Tombstones (negative keys) are not objects of the table.
        if keys.contains(where: { $0 < 0 }) {
            let live = keys.indices.filter { keys[$0] >= 0 }
            columns = columns.map { column in live.map { column[$0] } }
            keys = live.map { keys[$0] }
        }
        let leaf = DecodedLeaf(keys: keys, columns: columns)
        if leafCacheOrder.count >= Self.leafCacheSize { leafCache[leafCacheOrder.removeFirst()] = nil }
        leafCache[node.ref] = leaf
        leafCacheOrder.append(node.ref)
        return leaf
    }

    private func columnValues(_ table: RealmFileTable, _ property: RealmFileProperty, leafRef: Int, _ what: String) throws -> [RealmFileValue] {
        let node = try reader.node(at: leafRef, what)
        if property.collection != .none {
            guard node.hasRefs || node.count == 0 else {
                throw reader.corrupted("\(what): a collection column whose leaf holds no refs", at: leafRef)
            }
            return try (0..<node.count).map { row in
                guard let root = try reader.ref(node, row, what) else {
                    switch property.collection {
                    case .map: return .map([])
                    case .set: return .set([])
                    default: return .list([])
                    }
                }
                return try collection(property, table: table, root: root, "\(what) (row \(row))")
            }
        }
        if property.type == .object {  // ArrayKey: key + 1, 0 for none
            return try reader.ints(node, what).map { link(property.targetTable, $0 &- 1) }
        }
        return try scalars(node, property, enumKeys: property.type == .string ? enumKeysRef(table, property) : nil, what)
    }

    private func enumKeysRef(_ table: RealmFileTable, _ property: RealmFileProperty) throws -> Int? {
        guard table.enumKeysRef != 0 else { return nil }
        let keys = try reader.node(at: table.enumKeysRef, "table \(table.name): enumeration keys")
        return property.specIndex < keys.count ? try reader.ref(keys, property.specIndex, "enumeration keys") : nil
    }

    /// A link to `key` in `table`, or null for no object and for unresolved objects (keys of -2 and below).
    func link(_ table: Int?, _ key: Int64) -> RealmFileValue {
        guard let table, key >= 0 else { return .null }
        return .link(RealmFileLink(table: table, key: key))
    }

    /// The values of a scalar leaf of `property`'s element type (a cluster column or a B+tree leaf).
    func scalars(_ node: RealmNode, _ property: RealmFileProperty, enumKeys: Int?, _ what: String) throws -> [RealmFileValue] {
        let nullable = property.isOptional
        switch property.type {
        case .int:
            if nullable { return try reader.nullableIntegers(node, what).map { $0.map(RealmFileValue.int) ?? .null } }
            return try reader.ints(node, what).map(RealmFileValue.int)
        case .bool:
            return try reader.bools(node, what).map { $0.map(RealmFileValue.bool) ?? .null }
        case .float:
            return try reader.floats(node, nullable: nullable, what).map { $0.map(RealmFileValue.float) ?? .null }
        case .double:
            return try reader.doubles(node, nullable: nullable, what).map { $0.map(RealmFileValue.double) ?? .null }
        case .string:
            return try reader.blobs(node, isString: true, enumKeys: enumKeys, what).map { bytes in
                guard let bytes else { return nullable ? .null : .string("") }
                return .string(String(decoding: bytes, as: UTF8.self))
            }
        case .data:
            return try reader.blobs(node, isString: false, enumKeys: nil, what).map { bytes in
                guard let bytes else { return nullable ? .null : .data([]) }
                return .data(bytes)
            }
        case .date:
            return try reader.timestamps(node, what).map { $0.map(RealmFileValue.timestamp) ?? .null }
        case .decimal128:
            return try reader.decimals(node, what).map { nullable && $0 == .null ? .null : .decimal128($0) }
        case .objectId:
            return try reader.fixedBytes(node, elementBytes: 12, what).map { $0.map(RealmFileValue.objectId) ?? .null }
        case .uuid:
            return try reader.fixedBytes(node, elementBytes: 16, what).map { $0.map(RealmFileValue.uuid) ?? .null }
        case .mixed:
            return try mixedValues(node, depth: 0, what)
        case .object:  // elements of lists and sets of links: keys as they are
            return try reader.ints(node, what).map { link(property.targetTable, $0) }
        }
    }
}
