import Foundation
import Testing
import TestSupport
@testable import RealmFile
import RealmFileTesting

/// Files made by this project's writer of the Realm format, read back: every leaf kind in every width, nulls, dense
/// and sparse keys, cluster trees of several levels (the node-size-4 trees of realm-core's test builds), B+trees with
/// inner nodes, maps, mixed values with nested collections, links of each kind.
@Suite struct RealmFileRoundTripTests {
    /// A model of every kind of property the reader reads.
    static func tables(objects: Int, sparse: Bool, rng: inout SplitMix64) -> [RealmFileWriter.Table] {
        typealias P = RealmFileWriter.Property
        let scalarTypes: [RealmFilePropertyType] = [.int, .bool, .string, .data, .date, .float, .double, .decimal128, .objectId, .uuid]
        var properties: [P] = []
        for type in scalarTypes {
            properties.append(P("\(type)", type, indexed: type == .int))
            properties.append(P("opt\(type)", type, optional: true))
            properties.append(P("\(type)List", type, collection: .list))
            properties.append(P("opt\(type)Set", type, optional: true, collection: .set))
            properties.append(P("\(type)Map", type, optional: true, collection: .map))
        }
        properties += [
            P("any", .mixed, optional: true), P("anyList", .mixed, optional: true, collection: .list),
            P("anyMap", .mixed, optional: true, collection: .map),
            P("link", .object, optional: true, target: 2), P("links", .object, collection: .list, target: 2),
            P("linkMap", .object, optional: true, collection: .map, target: 2),
            P("embedded", .object, optional: true, target: 3),
        ]
        var keys: [Int64] = []
        var next: Int64 = 0
        for _ in 0..<objects {
            keys.append(next)
            next += sparse ? Int64(rng.next() % 300 + 1) : 1
        }
        let targets = 5
        var rows: [(key: Int64, values: [RealmFileValue])] = []
        for (i, key) in keys.enumerated() {
            var values: [RealmFileValue] = []
            for p in properties {
                switch (p.collection, p.type) {
                case (.none, .object):
                    values.append(p.target == 3 ? .link(RealmFileLink(table: 3, key: Int64(i))) : rng.next() % 3 == 0 ? .null : .link(RealmFileLink(table: 2, key: Int64(rng.next() % UInt64(targets)))))
                case (.none, .mixed): values.append(mixed(&rng, depth: 0))
                case (.none, _): values.append(p.isOptional && rng.next() % 4 == 0 ? .null : scalar(p.type, &rng, size: i))
                case (.list, _), (.set, _):
                    let count = Int(rng.next() % (i % 17 == 0 ? 40 : 6))
                    let elements: [RealmFileValue] = (0..<count).map { _ in
                        if p.type == .object { return .link(RealmFileLink(table: 2, key: Int64(rng.next() % UInt64(targets)))) }
                        if p.type == .mixed { return mixed(&rng, depth: 1) }
                        return p.isOptional && rng.next() % 5 == 0 ? .null : scalar(p.type, &rng, size: i)
                    }
                    values.append(p.collection == .set ? .set(elements) : .list(elements))
                case (.map, _):
                    let count = Int(rng.next() % 6)
                    var entries: [RealmFileMapEntry] = []
                    for k in 0..<count {
                        let value: RealmFileValue
                        if p.type == .object { value = rng.next() % 4 == 0 ? .null : .link(RealmFileLink(table: 2, key: Int64(rng.next() % UInt64(targets)))) }
                        else if p.type == .mixed { value = mixed(&rng, depth: 1) }
                        else { value = rng.next() % 5 == 0 ? .null : scalar(p.type, &rng, size: i) }
                        entries.append(RealmFileMapEntry(key: k == 0 ? "" : "key\(rng.next() % 1000)-\(k)", value: value))
                    }
                    values.append(.map(entries.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }))
                }
            }
            rows.append((key, values))
        }
        let target = RealmFileWriter.Table(
            name: "Target", primaryKey: "id", properties: [P("id", .int), P("name", .string, optional: true)],
            objects: (0..<targets).map { (Int64($0), [.int(Int64($0) * 7), $0 == 2 ? .null : .string("t\($0)")]) })
        let embedded = RealmFileWriter.Table(
            name: "Inner", isEmbedded: true, properties: [P("n", .int)], objects: keys.indices.map { (Int64($0), [.int(Int64($0))]) })
        return [RealmFileWriter.Table(name: "Thing", properties: properties, objects: rows), target, embedded]
    }

    static func scalar(_ type: RealmFilePropertyType, _ rng: inout SplitMix64, size: Int) -> RealmFileValue {
        let r = rng.next()
        switch type {
        case .int:
            let edges: [Int64] = [0, 1, -1, 3, 15, 16, 127, -128, 255, 32767, -32768, Int64(Int32.max), Int64(Int32.min), .max, .min]
            return .int(r % 3 == 0 ? edges[Int(r / 3 % UInt64(edges.count))] : Int64(bitPattern: r) >> (r % 60))
        case .bool: return .bool(r & 1 == 1)
        case .string:
            let lengths = [0, 1, 7, 15, 16, 63, 64, 200, 70_000]
            let length = lengths[Int(r % UInt64(size % 50 == 3 ? 9 : 7))]
            var text = ""
            var piece = Int(r % 5)
            while text.utf8.count < length {
                text += ["a", "é", "\u{0}", "🎉", "z"][piece % 5]
                piece += 1
            }
            return .string(text)
        case .data:
            let lengths = [0, 1, 8, 63, 64, 65, 1000]
            return .data(rng.bytes(lengths[Int(r % 7)]))
        case .date: return .timestamp(RealmFileTimestamp(seconds: Int64(bitPattern: r) >> 20, nanoseconds: Int32(truncatingIfNeeded: r % 999_999_999) * (r & 1 == 0 ? 1 : -1)))
        case .float: return .float([Float(1.5), -0.0, .nan, .infinity, Float(bitPattern: 0x7fc1_2345), Float(bitPattern: UInt32(truncatingIfNeeded: r))][Int(r % 6)])
        case .double: return .double([1.5, -0.0, .nan, -.infinity, Double(bitPattern: 0x7ff8_0000_0001_2345), Double(bitPattern: r)][Int(r % 6)])
        case .decimal128: return .decimal128(RealmFileDecimal128(low: rng.next(), high: rng.next() & 0x7fff_ffff_ffff_ffff))
        case .objectId: return .objectId(rng.bytes(12))
        case .uuid: return .uuid(rng.bytes(16))
        case .mixed, .object: return .null
        }
    }

    static func mixed(_ rng: inout SplitMix64, depth: Int) -> RealmFileValue {
        let kinds: [RealmFilePropertyType] = [.int, .bool, .string, .data, .date, .float, .double, .decimal128, .objectId, .uuid]
        switch rng.next() % 14 {
        case 0: return .null
        case 1: return .link(RealmFileLink(table: 2, key: Int64(rng.next() % 5)))
        case 2 where depth < 4: return .list((0..<Int(rng.next() % 4)).map { _ in mixed(&rng, depth: depth + 1) })
        case 3 where depth < 4:
            let n = Int(rng.next() % 4)
            return .map((0..<n).map { RealmFileMapEntry(key: "k\($0)", value: mixed(&rng, depth: depth + 1)) })
        default:
            return scalar(kinds[Int(rng.next() % UInt64(kinds.count))], &rng, size: 1)
        }
    }

    @Test(arguments: Seeds.environmentOr([1, 2, 3]))
    func whatTheWriterWroteIsReadBack(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        for (objects, sparse, leaf) in [(0, false, 256), (1, false, 256), (300, false, 256), (70, false, 4), (70, true, 4), (600, true, 256)] {
            let tables = Self.tables(objects: objects, sparse: sparse, rng: &rng)
            var writer = RealmFileWriter()
            writer.clusterLeafObjects = leaf
            writer.bptreeLeafElements = leaf == 4 ? 4 : 1000
            writer.schemaVersion = 3
            writer.streamingForm = sparse
            let bytes = writer.write(tables)
            let file = try RealmFile(bytes: bytes, name: "seed \(seed), \(objects) objects")
            #expect(file.schemaVersion == 3)
            #expect(file.isStreamingForm == sparse)
            #expect(file.classes.map(\.className) == ["Thing", "Target", "Inner"])
            #expect(file.classes[2].isEmbedded)
            #expect(file.classes[1].primaryKeyIndex == 0)
            for (table, written) in zip(file.classes, tables) {
                #expect(table.properties.map(\.name) == written.properties.map(\.name))
                #expect(table.objectCount == written.objects.count, "\(table.name)")
                var read: [RealmFileObject] = []
                try file.forEachObject(in: table) { read.append($0) }
                #expect(read.map(\.key) == written.objects.map(\.key), "\(table.name), seed \(seed)")
                for (object, expected) in zip(read, written.objects) {
                    for (i, p) in table.properties.enumerated() where object.values[i] != expected.values[i] {
                        Issue.record("seed \(seed), \(table.name)[\(object.key)].\(p.name): read \(object.values[i]), wrote \(expected.values[i])")
                    }
                }
                for expected in written.objects.prefix(50) {
                    #expect(try file.object(in: table, key: expected.key)?.values == expected.values)
                }
                #expect(try file.object(in: table, key: -5) == nil)
            }
        }
    }
}
