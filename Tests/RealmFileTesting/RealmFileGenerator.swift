import RealmFile

/// Whole Realm files made at random, for the conversion's randomized test: a random schema (top-level classes
/// with and without primary keys of every kind, an embedded class, properties of every type, optional or not,
/// as values, `List`, `MutableSet` and `Map`, links of every kind, `AnyRealmValue` with nested collections), random
/// objects with values at the edges (the extreme integers, NaN, the infinities, negative zero, empty and long
/// strings and data, strings with NUL, the extreme timestamps realm-core and Realm's Java SDK write), and random
/// writer shapes (leaf sizes, streaming form, the link-list shapes of upgraded files, node headers without
/// `AAAA`, short table tops, untagged table keys).
///
/// The tables it returns are the model: what a reader of the bytes must find, object for object (links name
/// their target's index in `RealmFile.tables`, as the reader's do).
package enum RealmFileGenerator {
    package struct File {
        package init(tables: [RealmFileWriter.Table], writer: RealmFileWriter, bytes: [UInt8]) {
            self.tables = tables
            self.writer = writer
            self.bytes = bytes
        }

        /// The classes, in the order written; ``tableIndex(_:)`` gives each one's index in `RealmFile.tables`.
        package var tables: [RealmFileWriter.Table]
        package var writer: RealmFileWriter
        package var bytes: [UInt8]

        /// The index in `RealmFile.tables` of `tables[i]` (the `metadata` table comes first).
        package func tableIndex(_ i: Int) -> Int { writer.schemaVersion == nil ? i : i + 1 }
    }

    /// A random file of up to `objects` objects per class.
    package static func make<R: RandomNumberGenerator>(_ rng: inout R, objects: Int) -> File {
        var builder = Builder(objects: objects)
        return builder.make(&rng)
    }

    /// A random value of `type` (links and nested collections aside), at the edges a third of the time.
    package static func value<R: RandomNumberGenerator>(_ type: RealmFilePropertyType, _ rng: inout R) -> RealmFileValue {
        Values.scalar(type, &rng, depth: 0, links: [])
    }

    private enum Kind {
        case value(RealmFilePropertyType, optional: Bool, RealmFileCollectionKind)
        case link(target: Int, RealmFileCollectionKind)
        case embedded(RealmFileCollectionKind)
    }

    private struct Builder {
        let objects: Int
        var classCount = 0
        var hasEmbedded = false
        var kinds: [[Kind]] = []
        var primaryKeys: [RealmFilePropertyType?] = []
        var keys: [[Int64]] = []
        /// Objects of the embedded class, made as their owners need them.
        var embeddedObjects: [(key: Int64, values: [RealmFileValue])] = []
        var embeddedKinds: [Kind] = []
        /// The depth mixed values start at: 0 lets them hold nested lists and maps (format 24 only), 2 not.
        var mixedDepth = 0

        init(objects: Int) { self.objects = objects }

        static let scalarTypes: [RealmFilePropertyType] = [.int, .bool, .string, .data, .date, .float, .double, .decimal128, .objectId, .uuid]
        static let primaryKeyTypes: [RealmFilePropertyType?] = [nil, .int, .string, .objectId, .uuid]

        mutating func make<R: RandomNumberGenerator>(_ rng: inout R) -> File {
            var writer = RealmFileWriter()
            writer.schemaVersion = UInt64.random(in: 0...40, using: &rng)
            writer.clusterLeafObjects = [4, 8, 256].randomElement(using: &rng)!
            writer.bptreeLeafElements = [4, 1000].randomElement(using: &rng)!
            writer.streamingForm = Bool.random(using: &rng)
            writer.linkListShape = RealmFileWriter.LinkListShape.allCases.randomElement(using: &rng)!
            // Link lists of key type 13 are what formats up to 23 hold; format 24 holds the other two shapes.
            writer.formatVersion = writer.linkListShape == .legacy ? 23 : 24
            // Collections nested in a mixed value came with format 24 (realm-core 14).
            mixedDepth = writer.formatVersion >= 24 ? 0 : 2
            writer.nodeSignature = RealmFileWriter.NodeSignature.allCases.randomElement(using: &rng)!
            // realm-core's `Table::init` pads a top to 12 slots and tags its key whenever it opens a table for
            // writing, as every upgrade does: only tops of 12 (no flags) to 14 slots, and tagged keys, are real.
            writer.tagsTableKeys = true
            classCount = Int.random(in: 1...4, using: &rng)
            hasEmbedded = Bool.random(using: &rng)
            primaryKeys = (0..<classCount).map { _ in Self.primaryKeyTypes.randomElement(using: &rng)! }
            // Below 13 slots no embedded class (its flag is slot 12).
            writer.tableTopSlots = hasEmbedded ? [13, 14].randomElement(using: &rng)! : [12, 13, 14].randomElement(using: &rng)!
            for c in 0..<classCount {
                var k: [Kind] = []
                if let pk = primaryKeys[c] { k.append(.value(pk, optional: false, .none)) }
                for _ in 0..<Int.random(in: 1...10, using: &rng) { k.append(randomKind(&rng, embedded: false)) }
                kinds.append(k)
            }
            embeddedKinds = (0..<Int.random(in: 1...4, using: &rng)).map { _ in randomKind(&rng, embedded: true) }
            for c in 0..<classCount {
                let count = Int.random(in: 0...objects, using: &rng)
                if primaryKeys[c] == .int {
                    keys.append(Array(0..<Int64(count)))  // realm-core's keys of Int primary keys: a counter too
                } else if Bool.random(using: &rng) {
                    keys.append(Array(0..<Int64(count)))
                } else {
                    var set = Set<Int64>()
                    let range: Int64 = Bool.random(using: &rng) ? Int64(4 * count + 4) : 1 << 40
                    while set.count < count { set.insert(Int64.random(in: 0..<range, using: &rng)) }
                    keys.append(set.sorted())
                }
            }
            var tables: [RealmFileWriter.Table] = []
            for c in 0..<classCount {
                var properties: [RealmFileWriter.Property] = []
                for (i, kind) in kinds[c].enumerated() {
                    let name = primaryKeys[c] != nil && i == 0 ? "_id" : "p\(i)"
                    properties.append(property(name, kind, writer))
                }
                var pkValues = Set<String>()
                let rows = keys[c].map { key -> (key: Int64, values: [RealmFileValue]) in
                    var values: [RealmFileValue] = []
                    for (i, kind) in kinds[c].enumerated() {
                        if i == 0, primaryKeys[c] != nil {
                            values.append(primaryKey(key, &rng, &pkValues, type: primaryKeys[c]!))
                        } else {
                            values.append(value(kind, &rng))
                        }
                    }
                    return (key, values)
                }
                tables.append(RealmFileWriter.Table(
                    name: "C\(c)", primaryKey: primaryKeys[c] != nil ? "_id" : nil, properties: properties, objects: rows))
            }
            if hasEmbedded {
                tables.append(RealmFileWriter.Table(
                    name: "E0", isEmbedded: true, properties: embeddedKinds.enumerated().map { property("e\($0.offset)", $0.element, writer) },
                    objects: embeddedObjects))
            }
            let bytes = writer.write(tables)
            return File(tables: tables, writer: writer, bytes: bytes)
        }

        /// The file's tables: `metadata` (the generator always writes a schema version), then the classes.
        func tableIndex(_ c: Int, _ writer: RealmFileWriter) -> Int { c + 1 }

        func property(_ name: String, _ kind: Kind, _ writer: RealmFileWriter) -> RealmFileWriter.Property {
            switch kind {
            case .value(let type, let optional, let collection):
                return .init(name, type, optional: optional, collection: collection)
            case .link(let target, let collection):
                return .init(name, .object, optional: collection == .none || collection == .map, collection: collection, target: tableIndex(target, writer))
            case .embedded(let collection):
                return .init(name, .object, optional: collection == .none || collection == .map, collection: collection, target: tableIndex(classCount, writer))
            }
        }

        mutating func randomKind<R: RandomNumberGenerator>(_ rng: inout R, embedded: Bool) -> Kind {
            let collection = [RealmFileCollectionKind.none, .none, .list, .set, .map].randomElement(using: &rng)!
            switch Int.random(in: 0..<10, using: &rng) {
            case 0 where !embedded:
                return .link(target: Int.random(in: 0..<classCount, using: &rng), collection)
            case 1 where !embedded && hasEmbedded && collection != .set:
                return .embedded(collection)
            case 2:
                return .value(.mixed, optional: true, collection)
            default:
                return .value(Self.scalarTypes.randomElement(using: &rng)!, optional: Bool.random(using: &rng), collection)
            }
        }

        mutating func primaryKey<R: RandomNumberGenerator>(_ key: Int64, _ rng: inout R, _ used: inout Set<String>, type: RealmFilePropertyType) -> RealmFileValue {
            while true {
                let v: RealmFileValue
                switch type {
                case .int: v = .int(Bool.random(using: &rng) ? key : Int64.random(in: Int64.min...Int64.max, using: &rng))
                case .string: v = .string(Values.string(&rng))
                case .objectId: v = .objectId(Values.bytes(12, &rng))
                default: v = .uuid(Values.bytes(16, &rng))
                }
                if used.insert("\(v)").inserted { return v }
            }
        }

        mutating func value<R: RandomNumberGenerator>(_ kind: Kind, _ rng: inout R) -> RealmFileValue {
            switch kind {
            case .value(let type, let optional, let collection):
                let count = Int.random(in: 0...6, using: &rng)
                let targets = linkTargets
                let depth = mixedDepth
                let one = { (rng: inout R) -> RealmFileValue in
                    optional && Int.random(in: 0..<5, using: &rng) == 0 ? .null : Values.scalar(type, &rng, depth: depth, links: targets)
                }
                switch collection {
                case .none: return one(&rng)
                case .list: return .list((0..<count).map { _ in one(&rng) })
                case .set: return .set(Values.distinct(count, &rng, one))
                case .map: return .map(Values.mapKeys(count, &rng).map { RealmFileMapEntry(key: $0, value: one(&rng)) })
                }
            case .link(let target, let collection):
                let targets = keys[target]
                let count = targets.isEmpty ? 0 : Int.random(in: 0...5, using: &rng)
                let link = { (rng: inout R) -> RealmFileValue in
                    .link(RealmFileLink(table: target + 1, key: targets.randomElement(using: &rng)!))
                }
                switch collection {
                case .none: return targets.isEmpty || Bool.random(using: &rng) ? .null : link(&rng)
                case .list: return .list((0..<count).map { _ in link(&rng) })
                case .set: return .set(Values.distinct(count, &rng, link))
                case .map:
                    return .map(Values.mapKeys(count, &rng).map { RealmFileMapEntry(key: $0, value: Bool.random(using: &rng) ? link(&rng) : .null) })
                }
            case .embedded(let collection):
                switch collection {
                case .none: return Bool.random(using: &rng) ? .null : newEmbedded(&rng)
                case .map:
                    return .map(Values.mapKeys(Int.random(in: 0...3, using: &rng), &rng).map {
                        RealmFileMapEntry(key: $0, value: Int.random(in: 0..<4, using: &rng) == 0 ? .null : newEmbedded(&rng))
                    })
                default: return .list((0..<Int.random(in: 0...3, using: &rng)).map { _ in newEmbedded(&rng) })
                }
            }
        }

        /// Targets of links in mixed values: each class's table index and keys.
        var linkTargets: [(table: Int, keys: [Int64])] { keys.indices.map { ($0 + 1, keys[$0]) } }

        /// A new object of the embedded class, owned by the link that is returned.
        mutating func newEmbedded<R: RandomNumberGenerator>(_ rng: inout R) -> RealmFileValue {
            let key = Int64(embeddedObjects.count)
            embeddedObjects.append((key, []))
            let values = embeddedKinds.map { value($0, &rng) }
            embeddedObjects[Int(key)].values = values
            return .link(RealmFileLink(table: classCount + 1, key: key))
        }
    }

    /// Values at the edges and at random.
    package enum Values {
        static func bytes<R: RandomNumberGenerator>(_ count: Int, _ rng: inout R) -> [UInt8] {
            (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) }
        }

        static func string<R: RandomNumberGenerator>(_ rng: inout R) -> String {
            let edges = ["", "a", "ünïcødé 🐍", "a\u{0}b", String(repeating: "x", count: 15), String(repeating: "y", count: 16),
                         String(repeating: "z", count: 63), String(repeating: "w", count: 64), String(repeating: "éa", count: 70)]
            if Bool.random(using: &rng) { return edges.randomElement(using: &rng)! }
            return String((0..<Int.random(in: 1...20, using: &rng)).map { _ in Character(Unicode.Scalar(UInt8.random(in: 97...122, using: &rng))) })
        }

        /// Up to `count` values of `make`, each once (a set's elements).
        static func distinct<R: RandomNumberGenerator>(_ count: Int, _ rng: inout R, _ make: (inout R) -> RealmFileValue) -> [RealmFileValue] {
            var items: [RealmFileValue] = []
            for _ in 0..<count {
                let v = make(&rng)
                if !items.contains(v) { items.append(v) }
            }
            return items
        }

        static func mapKeys<R: RandomNumberGenerator>(_ count: Int, _ rng: inout R) -> [String] {
            var keys: [String] = []
            while keys.count < count {
                let k = ["a", "b", "key", "ü", "Zebra", "z\(Int.random(in: 0..<1000, using: &rng))"].randomElement(using: &rng)!
                if !keys.contains(k) { keys.append(k) }
            }
            return keys
        }

        /// The extreme timestamps: realm-core's own limits and Java's `Long.MIN_VALUE` and `Long.MAX_VALUE`
        /// milliseconds.
        package static let edgeTimestamps: [RealmFileTimestamp] = [
            RealmFileTimestamp(seconds: 0, nanoseconds: 0),
            RealmFileTimestamp(seconds: Int64.max, nanoseconds: 999_999_999),
            RealmFileTimestamp(seconds: Int64.min, nanoseconds: -999_999_999),
            RealmFileTimestamp(seconds: -9_223_372_036_854_776, nanoseconds: -808_000_000),
            RealmFileTimestamp(seconds: 9_223_372_036_854_775, nanoseconds: 807_000_000),
            RealmFileTimestamp(seconds: -1, nanoseconds: -1),
        ]

        static func scalar<R: RandomNumberGenerator>(
            _ type: RealmFilePropertyType, _ rng: inout R, depth: Int, links: [(table: Int, keys: [Int64])]
        ) -> RealmFileValue {
            let edge = Int.random(in: 0..<3, using: &rng) == 0
            switch type {
            case .int:
                return .int(edge ? [0, -1, 1, Int64.min, Int64.max, Int64(Int32.min) - 1].randomElement(using: &rng)! : Int64.random(in: -1_000_000...1_000_000, using: &rng))
            case .bool: return .bool(Bool.random(using: &rng))
            case .float:
                return .float(edge ? [0, -0.0, .nan, .infinity, -.infinity, .greatestFiniteMagnitude, .leastNonzeroMagnitude].randomElement(using: &rng)! : Float.random(in: -1e6...1e6, using: &rng))
            case .double:
                return .double(edge ? [0, -0.0, .nan, .infinity, -.infinity, .greatestFiniteMagnitude, .leastNonzeroMagnitude].randomElement(using: &rng)! : Double.random(in: -1e12...1e12, using: &rng))
            case .string: return .string(string(&rng))
            case .data: return .data(edge ? [[], [0], bytes(64, &rng), bytes(300, &rng)].randomElement(using: &rng)! : bytes(Int.random(in: 1...40, using: &rng), &rng))
            case .date:
                if edge { return .timestamp(edgeTimestamps.randomElement(using: &rng)!) }
                let negative = Bool.random(using: &rng)
                let seconds = Int64.random(in: 0...4_000_000_000, using: &rng), nanos = Int32.random(in: 0..<1_000_000_000, using: &rng)
                return .timestamp(RealmFileTimestamp(seconds: negative ? -seconds : seconds, nanoseconds: negative ? -nanos : nanos))
            case .decimal128:
                // Finite values: a coefficient below 10^18 and an exponent of -30 to 30, either sign.
                let coefficient = edge ? 0 : UInt64.random(in: 0..<1_000_000_000_000_000_000, using: &rng)
                let exponent = Int.random(in: -30...30, using: &rng)
                let sign: UInt64 = Bool.random(using: &rng) ? 1 << 63 : 0
                return .decimal128(RealmFileDecimal128(low: coefficient, high: sign | UInt64(exponent + 6176) << 49))
            case .objectId: return .objectId(bytes(12, &rng))
            case .uuid: return .uuid(bytes(16, &rng))
            case .mixed:
                switch Int.random(in: 0..<14, using: &rng) {
                case 0: return .null
                case 1 where depth < 2: return .list((0..<Int.random(in: 0...3, using: &rng)).map { _ in scalar(.mixed, &rng, depth: depth + 1, links: links) })
                case 2 where depth < 2:
                    return .map(mapKeys(Int.random(in: 0...3, using: &rng), &rng).map { RealmFileMapEntry(key: $0, value: scalar(.mixed, &rng, depth: depth + 1, links: links) ) })
                case 3:
                    guard let target = links.filter({ !$0.keys.isEmpty }).randomElement(using: &rng) else { return .null }
                    return .link(RealmFileLink(table: target.table, key: target.keys.randomElement(using: &rng)!))
                default:
                    return scalar(scalarTypes.randomElement(using: &rng)!, &rng, depth: depth, links: links)
                }
            case .object: return .null
            }
        }

        static let scalarTypes: [RealmFilePropertyType] = [.int, .bool, .string, .data, .date, .float, .double, .decimal128, .objectId, .uuid]
    }
}
