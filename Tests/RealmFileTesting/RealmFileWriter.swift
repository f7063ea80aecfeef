import RealmFile
/// A writer of Realm-format files of this project's own, for tests, fuzz seeds and the Bench: it writes what the
/// reader reads (format 24; the cluster, B+tree, leaf and mixed layouts of realm-core as `RealmFile` documents
/// them), so that files of any shape (deep trees, every leaf kind, deliberate damage) can be made without
/// realm-core. It is not a second implementation of realm-core: it writes no free lists, history or search
/// indexes, and each leaf in the simplest form that holds its values.
package struct RealmFileWriter {
    /// One class to write.
    package struct Table {
        package var name: String
        package var isEmbedded = false
        package var primaryKey: String?
        package var properties: [Property]
        /// Objects in ascending key order; each has one value per property.
        package var objects: [(key: Int64, values: [RealmFileValue])]

        package init(name: String, isEmbedded: Bool = false, primaryKey: String? = nil, properties: [Property], objects: [(key: Int64, values: [RealmFileValue])]) {
            self.name = name
            self.isEmbedded = isEmbedded
            self.primaryKey = primaryKey
            self.properties = properties
            self.objects = objects
        }
    }

    package struct Property {
        package var name: String
        package var type: RealmFilePropertyType
        package var isOptional: Bool
        package var collection: RealmFileCollectionKind
        /// For links: the index of the target among the file's tables, as `RealmFile.tables` numbers them (the
        /// `metadata` table first when there is a schema version). Links in values use the same numbers.
        package var target: Int?
        package var isIndexed: Bool

        package init(_ name: String, _ type: RealmFilePropertyType, optional: Bool = false, collection: RealmFileCollectionKind = .none, target: Int? = nil, indexed: Bool = false) {
            self.name = name
            self.type = type
            self.isOptional = optional
            self.collection = collection
            self.target = target
            self.isIndexed = indexed
        }
    }

    /// Objects per cluster leaf (realm-core: 256; its test builds: 4). A power of two.
    package var clusterLeafObjects = 256
    /// Elements per B+tree leaf (realm-core: 1000).
    package var bptreeLeafElements = 1000
    /// Writes the top ref into a footer, as `writeCopy` does.
    package var streamingForm = false
    package var schemaVersion: UInt64? = 0

    // Shapes of files realm-core created long ago and upgraded since (`RealmFile+Schema.swift` says how it reads
    // each): what a user's years-old file holds, made here without the old releases.

    /// The file format in the header. The layouts written are format 23's and 24's (maps as key and value
    /// B+trees): give 23, or 24.
    package var formatVersion: UInt8 = 24

    /// How a `List` of objects is described.
    package enum LinkListShape: CaseIterable, Sendable {
        /// As realm-core 14 creates it: spec type 12 (link), column key type 12 with the list attribute.
        case current
        /// As realm-core 14 leaves a file created before format 24 (`Spec::migrate_column_keys`): spec type 13
        /// (link list), column key type 12 with the list attribute.
        case upgraded
        /// As realm-core 6 to 13 wrote it (formats 10 to 23): spec type 13, column key type 13.
        case legacy
    }
    package var linkListShape = LinkListShape.current

    /// What bytes 0-3 of each node header hold.
    package enum NodeSignature: CaseIterable, Sendable {
        /// `AAAA`, as realm-core's group writer writes them.
        case checksum
        /// The node's capacity in bytes as realm-core's allocator keeps it in memory (bytes 0-2: capacity >> 19,
        /// >> 11, >> 3), as arrays that older releases wrote or upgraded carry it.
        case capacity
        /// Zeros.
        case zero
    }
    package var nodeSignature = NodeSignature.checksum

    /// Slots of each table's top array (14 today; realm-core 6's tables had fewer, and `Table::init` pads them).
    /// Below 12 the primary key is not written: give no table a primary key then.
    package var tableTopSlots = 14
    /// Whether a table's key is a tagged integer in its top (false: slot 3 is 0, and the key is the table's
    /// position in the group, as for a table from before table keys).
    package var tagsTableKeys = true

    private var bytes: [UInt8] = Array(repeating: 0, count: 24)

    package init() {}

    /// The bytes of a file holding `tables` (and a `metadata` table with ``schemaVersion``).
    package mutating func write(_ tables: [Table]) -> [UInt8] {
        bytes = Array(repeating: 0, count: 24)
        var all = tables.map { ($0, "class_" + $0.name) }
        if let schemaVersion {
            all.insert((Table(name: "metadata", properties: [Property("version", .int)], objects: [(0, [.int(Int64(bitPattern: schemaVersion))])]), "metadata"), at: 0)
        }
        var tops: [Int64] = []
        for (index, (table, _)) in all.enumerated() {
            tops.append(Int64(writeTable(table, key: Int64(index))))
        }
        let names = shortStrings(all.map { Array($0.1.utf8) })
        let tablesRef = array(tops, hasRefs: true)
        let top = array([Int64(names), Int64(tablesRef), tag(Int64(bytes.count + 8 * 4))], hasRefs: true)
        header(top: top)
        return bytes
    }

    private mutating func header(top: Int) {
        var h = [UInt8](repeating: 0, count: 24)
        let topWord = streamingForm ? UInt64.max : UInt64(top)
        for i in 0..<8 { h[i] = UInt8(truncatingIfNeeded: topWord >> UInt64(8 * i)) }
        h[16...19] = [0x54, 0x2d, 0x44, 0x42]  // T-DB
        h[20] = formatVersion
        bytes.replaceSubrange(0..<24, with: h)
        if streamingForm {
            for i in 0..<8 { bytes.append(UInt8(truncatingIfNeeded: UInt64(top) >> UInt64(8 * i))) }
            for i in 0..<8 { bytes.append(UInt8(truncatingIfNeeded: UInt64(0x3034_1252_37E5_26C8) >> UInt64(8 * i))) }
        }
    }

    // MARK: Tables

    static func columnType(_ p: Property) -> Int {
        switch p.type {
        case .int: return 0
        case .bool: return 1
        case .string: return 2
        case .data: return 4
        case .mixed: return 6
        case .date: return 8
        case .float: return 9
        case .double: return 10
        case .decimal128: return 11
        case .object: return 12
        case .objectId: return 15
        case .uuid: return 17
        }
    }

    static func columnKey(_ p: Property, leafIndex: Int, linkLists: LinkListShape = .current) -> Int64 {
        let isLinkList = p.type == .object && p.collection == .list
        let type = isLinkList && linkLists == .legacy ? 13 : columnType(p)
        var attributes = p.isOptional ? 16 : 0
        switch p.collection {
        case .list: attributes |= 32
        case .map: attributes |= 64
        case .set: attributes |= 128
        case .none: break
        }
        return Int64(leafIndex) | Int64(type) << 16 | Int64(attributes) << 22 | 1 << 30
    }

    private mutating func writeTable(_ table: Table, key tableKey: Int64) -> Int {
        let keys = table.properties.indices.map { Self.columnKey(table.properties[$0], leafIndex: $0, linkLists: linkListShape) }
        let types = table.properties.map { p -> Int64 in
            let specType = p.type == .object && p.collection == .list && linkListShape != .current ? 13 : Self.columnType(p)
            return Int64(specType) | (p.collection == .map ? 2 << 16 : 0)
        }
        let spec = array([
            Int64(array(types)),
            Int64(shortStrings(table.properties.map { Array($0.name.utf8) })),
            Int64(array(table.properties.map { $0.isIndexed ? 1 : 0 })),
            0, 0,
            Int64(array(keys)),
        ], hasRefs: true)
        let root = cluster(table)
        let opposite = array(table.properties.map { $0.target.map { Int64($0) } ?? 0 })
        let primary = table.primaryKey.flatMap { name in table.properties.firstIndex { $0.name == name } }
        let top: [Int64] = [
            Int64(spec), 0, Int64(root), tagsTableKeys ? tag(tableKey) : 0, 0, tag(Int64(keys.count)), tag(0),
            Int64(opposite), 0, tag(Int64(table.objects.count)), 0,
            primary.map { tag(keys[$0]) } ?? 0, tag(table.isEmbedded ? 1 : 0), 0,
        ]
        return array(Array(top.prefix(tableTopSlots)), hasRefs: true)
    }

    /// The cluster tree of a table: leaves of ``clusterLeafObjects``, inner nodes above them, compact where the
    /// keys are dense from 0.
    private mutating func cluster(_ table: Table) -> Int {
        let dense = table.objects.enumerated().allSatisfy { $0.offset == Int($0.element.key) }
        var level: [(ref: Int, first: Int64, size: Int)] = []
        var start = 0
        repeat {
            let end = min(start + clusterLeafObjects, table.objects.count)
            let objects = Array(table.objects[start..<end])
            // A root leaf has no parent to hold its offset: its keys are absolute.
            let first = table.objects.count <= clusterLeafObjects ? 0 : objects.first?.key ?? 0
            var slots: [Int64] = [dense ? tag(Int64(objects.count)) : Int64(unsignedArray(objects.map { UInt64($0.key - first) }))]
            for (i, p) in table.properties.enumerated() {
                slots.append(Int64(column(p, objects.map { $0.values[i] })))
            }
            level.append((array(slots, hasRefs: true), dense ? Int64(start) : first, objects.count))
            start = end
        } while start < table.objects.count
        var depth = 1
        while level.count > 1 {
            var next: [(ref: Int, first: Int64, size: Int)] = []
            for group in stride(from: 0, to: level.count, by: clusterLeafObjects) {
                let children = level[group..<min(group + clusterLeafObjects, level.count)]
                let first = level.count <= clusterLeafObjects ? 0 : children.first!.first
                let offsets = dense ? 0 : Int64(unsignedArray(children.map { UInt64($0.first - first) }))
                let size = children.reduce(0) { $0 + $1.size }
                let ref = array([offsets, tag(Int64(depth)), tag(Int64(size))] + children.map { Int64($0.ref) }, hasRefs: true, inner: true)
                next.append((ref, first, size))
            }
            level = next
            depth += 1
        }
        return level[0].ref
    }

    private mutating func column(_ p: Property, _ values: [RealmFileValue]) -> Int {
        if p.collection != .none {
            return array(values.map { v -> Int64 in
                switch v {
                case .list(let e), .set(let e): return e.isEmpty ? 0 : Int64(bptree(e) { w, leaf in w.leaf(p, leaf, links: .raw) })
                case .map(let entries): return entries.isEmpty ? 0 : Int64(map(entries))
                default: return 0
                }
            }, hasRefs: true)
        }
        return leaf(p, values, links: .plusOne)
    }

    enum LinkEncoding { case plusOne, raw }

    /// A leaf of `p`'s element type.
    mutating func leaf(_ p: Property, _ values: [RealmFileValue], links: LinkEncoding) -> Int {
        switch p.type {
        case .int:
            let ints = values.map { v -> Int64? in if case .int(let x) = v { return x }; return nil }
            if !p.isOptional { return array(ints.map { $0 ?? 0 }) }
            var sentinel: Int64 = 0
            while ints.contains(sentinel) { sentinel -= 1 }
            return array([sentinel] + ints.map { $0 ?? sentinel })
        case .bool:
            return array(values.map { v in if case .bool(let b) = v { return b ? 1 : 0 }; return 3 })
        case .float:
            return fixed(values.map { v in
                if case .float(let f) = v { return littleEndian(UInt64(f.bitPattern), 4) }
                return littleEndian(UInt64(0x7fc0_00aa), 4)
            }, width: 4)
        case .double:
            return fixed(values.map { v in
                if case .double(let d) = v { return littleEndian(d.bitPattern, 8) }
                return littleEndian(0x7ff8_0000_0000_00aa, 8)
            }, width: 8)
        case .string, .data:
            let blobs = values.map { v -> [UInt8]? in
                switch v {
                case .string(let s): return Array(s.utf8)
                case .data(let d): return d
                default: return nil
                }
            }
            return strings(blobs, isString: p.type == .string)
        case .date:
            let stamps = values.map { v -> RealmFileTimestamp? in if case .timestamp(let t) = v { return t }; return nil }
            var sentinel: Int64 = Int64.min
            while stamps.contains(where: { $0?.seconds == sentinel }) { sentinel += 1 }
            let seconds = array([sentinel] + stamps.map { $0?.seconds ?? sentinel })
            let nanos = array(stamps.map { Int64($0?.nanoseconds ?? 0) })
            return array([Int64(seconds), Int64(nanos)], hasRefs: true)
        case .decimal128:
            return fixed(values.map { v in
                let d: RealmFileDecimal128
                if case .decimal128(let x) = v { d = x } else { d = .null }
                return littleEndian(d.low, 8) + littleEndian(d.high, 8)
            }, width: 16)
        case .objectId, .uuid:
            return fixedBytes(values.map { v in
                switch v {
                case .objectId(let b), .uuid(let b): return b
                default: return nil
                }
            }, elementBytes: p.type == .uuid ? 16 : 12)
        case .object:
            return array(values.map { v in
                guard case .link(let l) = v else { return links == .plusOne ? 0 : -1 }
                return links == .plusOne ? l.key + 1 : l.key
            })
        case .mixed:
            return mixed(values)
        }
    }

    /// A B+tree of `elements`: one leaf, or compact inner nodes over leaves of ``bptreeLeafElements``.
    private mutating func bptree(_ elements: [RealmFileValue], leaf: (inout RealmFileWriter, [RealmFileValue]) -> Int) -> Int {
        if elements.count <= bptreeLeafElements { return leaf(&self, elements) }
        var children: [Int64] = []
        for start in stride(from: 0, to: elements.count, by: bptreeLeafElements) {
            children.append(Int64(leaf(&self, Array(elements[start..<min(start + bptreeLeafElements, elements.count)]))))
        }
        return array([tag(Int64(bptreeLeafElements))] + children + [tag(Int64(elements.count))], hasRefs: true, inner: true)
    }

    private mutating func map(_ entries: [RealmFileMapEntry]) -> Int {
        let sorted = entries.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
        let keys = bptree(sorted.map { .string($0.key) }) { w, leaf in
            w.strings(leaf.map { v in if case .string(let s) = v { return Array(s.utf8) }; return nil }, isString: true)
        }
        let values = bptree(sorted.map(\.value)) { w, leaf in w.mixed(leaf) }
        return array([Int64(keys), Int64(values)], hasRefs: true)
    }

    /// An `ArrayMixed` leaf: [composite, ints, pairs, strings, refs].
    private mutating func mixed(_ values: [RealmFileValue]) -> Int {
        var composite: [Int64] = [], ints: [Int64] = [], pairs: [Int64] = []
        var strings: [[UInt8]?] = [], refs: [Int64] = []
        func code(_ type: Int, _ payloadIndex: Int64, _ value: Int64) -> Int64 { value << 8 | payloadIndex << 5 | Int64(type + 1) }
        for v in values {
            switch v {
            case .null: composite.append(0)
            case .int(let x):
                if let small = Int32(exactly: x) { composite.append(code(0, 0, Int64(small))) }
                else { composite.append(code(0, 1, Int64(ints.count))); ints.append(x) }
            case .bool(let b): composite.append(code(1, 0, b ? 1 : 0))
            case .float(let f): composite.append(code(9, 1, Int64(ints.count))); ints.append(Int64(f.bitPattern))
            case .double(let d): composite.append(code(10, 1, Int64(ints.count))); ints.append(Int64(bitPattern: d.bitPattern))
            case .string(let s): composite.append(code(2, 3, Int64(strings.count))); strings.append(Array(s.utf8))
            case .data(let d): composite.append(code(4, 3, Int64(strings.count))); strings.append(d)
            case .objectId(let b): composite.append(code(15, 3, Int64(strings.count))); strings.append(b)
            case .uuid(let b): composite.append(code(17, 3, Int64(strings.count))); strings.append(b)
            case .timestamp(let t): composite.append(code(8, 2, Int64(pairs.count / 2))); pairs += [t.seconds, Int64(t.nanoseconds)]
            case .decimal128(let d): composite.append(code(11, 2, Int64(pairs.count / 2))); pairs += [Int64(bitPattern: d.low), Int64(bitPattern: d.high)]
            case .link(let l): composite.append(code(16, 2, Int64(pairs.count / 2))); pairs += [Int64(l.table), l.key]
            case .list(let e), .set(let e):
                composite.append(code(19, 4, Int64(refs.count)))
                refs.append(e.isEmpty ? 0 : Int64(bptree(e) { w, leaf in w.mixed(leaf) }))
            case .map(let entries):
                composite.append(code(21, 4, Int64(refs.count)))
                refs.append(entries.isEmpty ? 0 : Int64(map(entries)))
            }
        }
        let slots: [Int64] = [
            Int64(array(composite)),
            ints.isEmpty ? 0 : Int64(array(ints)),
            pairs.isEmpty ? 0 : Int64(array(pairs)),
            strings.isEmpty ? 0 : Int64(self.strings(strings, isString: true)),
            refs.isEmpty ? 0 : Int64(array(refs, hasRefs: true)),
        ]
        return array(slots, hasRefs: true)
    }

    // MARK: Nodes

    private func tag(_ v: Int64) -> Int64 { v << 1 | 1 }

    private func littleEndian(_ v: UInt64, _ count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: v >> UInt64(8 * $0)) }
    }

    /// Appends a node; returns its ref.
    package mutating func node(flags: UInt8, count: Int, payload: [UInt8]) -> Int {
        let ref = bytes.count
        let signature: [UInt8]
        switch nodeSignature {
        case .checksum: signature = [0x41, 0x41, 0x41, 0x41]
        case .capacity:
            // realm-core's allocator rounds a node up to 8 bytes and keeps its capacity in bytes 0-2.
            let capacity = (8 + payload.count + 7) & ~7
            signature = [UInt8(truncatingIfNeeded: capacity >> 19), UInt8(truncatingIfNeeded: capacity >> 11), UInt8(truncatingIfNeeded: capacity >> 3), 0]
        case .zero: signature = [0, 0, 0, 0]
        }
        bytes += signature + [flags, UInt8(count >> 16 & 0xff), UInt8(count >> 8 & 0xff), UInt8(count & 0xff)]
        bytes += payload
        while bytes.count % 8 != 0 { bytes.append(0) }
        return ref
    }

    /// An integer array in the narrowest width that holds `values` (1, 2 and 4 bits unsigned; bytes signed).
    package mutating func array(_ values: [Int64], hasRefs: Bool = false, inner: Bool = false, context: Bool = false) -> Int {
        let low = values.min() ?? 0, high = values.max() ?? 0
        let width: Int
        if low >= 0 && high <= 0 { width = 0 }
        else if low >= 0 && high <= 1 { width = 1 }
        else if low >= 0 && high <= 3 { width = 2 }
        else if low >= 0 && high <= 15 { width = 4 }
        else if low >= -128 && high <= 127 { width = 8 }
        else if low >= -32768 && high <= 32767 { width = 16 }
        else if low >= Int64(Int32.min) && high <= Int64(Int32.max) { width = 32 }
        else { width = 64 }
        var payload = [UInt8](repeating: 0, count: (values.count * width + 7) / 8)
        for (i, v) in values.enumerated() where width > 0 {
            if width < 8 {
                let bit = i * width
                payload[bit >> 3] |= UInt8(truncatingIfNeeded: v) << UInt8(bit & 7)
            } else {
                for b in 0..<(width / 8) { payload[i * width / 8 + b] = UInt8(truncatingIfNeeded: v >> Int64(8 * b)) }
            }
        }
        let flags = (inner ? 0x80 : 0) | (hasRefs ? 0x40 : 0) | (context ? 0x20 : 0) | UInt8(width == 0 ? 0 : width.trailingZeroBitCount + 1)
        return node(flags: UInt8(flags), count: values.count, payload: payload)
    }

    /// An `ArrayUnsigned` (cluster keys and key offsets): byte widths unsigned.
    private mutating func unsignedArray(_ values: [UInt64]) -> Int {
        let high = values.max() ?? 0
        let width = high <= 0xff ? 8 : high <= 0xffff ? 16 : high <= 0xffff_ffff ? 32 : 64
        var payload: [UInt8] = []
        for v in values { payload += littleEndian(v, width / 8) }
        return node(flags: UInt8(width.trailingZeroBitCount + 1), count: values.count, payload: payload)
    }

    /// Elements of `width` bytes each (width type multiply).
    private mutating func fixed(_ elements: [[UInt8]], width: Int) -> Int {
        node(flags: 0x08 | UInt8(width.trailingZeroBitCount + 1), count: elements.count, payload: elements.flatMap { $0 })
    }

    private mutating func fixedBytes(_ elements: [[UInt8]?], elementBytes: Int) -> Int {
        var payload: [UInt8] = []
        for start in stride(from: 0, to: elements.count, by: 8) {
            let block = elements[start..<min(start + 8, elements.count)]
            var nulls: UInt8 = 0
            for (i, e) in block.enumerated() where e == nil { nulls |= 1 << UInt8(i) }
            payload.append(nulls)
            for e in block { payload += e ?? [UInt8](repeating: 0, count: elementBytes) }
        }
        return node(flags: 0x08 | 1, count: payload.count, payload: payload)
    }

    /// A string or binary leaf: short strings (all at most 15 bytes), small blobs (at most 63), or big blobs.
    package mutating func strings(_ elements: [[UInt8]?], isString: Bool) -> Int {
        let longest = elements.map { $0?.count ?? 0 }.max() ?? 0
        if isString && longest <= 15 { return shortStrings(elements) }
        let terminator: [UInt8] = isString ? [0] : []
        if longest <= 63 {
            var ends: [Int64] = [], blob: [UInt8] = [], nulls: [Int64] = []
            for e in elements {
                blob += (e ?? []) + (e == nil ? [] : terminator)
                ends.append(Int64(blob.count))
                nulls.append(e == nil ? 1 : 0)
            }
            let blobRef = node(flags: 0x10, count: blob.count, payload: blob)
            return array([Int64(array(ends)), Int64(blobRef), Int64(array(nulls))], hasRefs: true)
        }
        let refs = elements.map { e -> Int64 in
            guard let e else { return 0 }
            let b = e + terminator
            return Int64(node(flags: 0x10, count: b.count, payload: b))
        }
        return array(refs, hasRefs: true, context: true)
    }

    private mutating func shortStrings(_ elements: [[UInt8]?]) -> Int {
        let longest = elements.map { $0?.count ?? 0 }.max() ?? 0
        var width = 1
        while width < longest + 1 { width *= 2 }
        if elements.allSatisfy({ $0 == nil }) { return node(flags: 0x08, count: elements.count, payload: []) }
        var payload: [UInt8] = []
        for e in elements {
            var block = (e ?? []) + [UInt8](repeating: 0, count: width - (e?.count ?? 0))
            block[width - 1] = UInt8(e.map { width - 1 - $0.count } ?? width)
            payload += block
        }
        return node(flags: 0x08 | UInt8(width.trailingZeroBitCount + 1), count: elements.count, payload: payload)
    }
}
