import Foundation
import Testing
import TestSupport
@testable import RealmFile
import RealmFileTesting

/// Files shaped like real users' files: what realm-core's upgrades leave behind (link lists whose spec says 13 and
/// whose key says 12, node headers without `AAAA`, short table tops, untagged table keys), optional collections of
/// every type and the extreme timestamps, made by the project's writer and read back as the writer's model; and
/// random whole files from `RealmFileGenerator` (`TEST_SEED` picks one seed, `STRATA_TEST_SCALE` makes more files).
@Suite struct RealmFileShapeTests {
    /// The reader's objects of every class of `file`, against the model the file was written from.
    static func expectReadsAsModel(_ bytes: [UInt8], _ tables: [RealmFileWriter.Table], _ what: String) throws {
        let file = try RealmFile(bytes: bytes, name: "\(what).realm")
        #expect(file.classes.map(\.className) == tables.map(\.name), "\(what): classes")
        for (table, model) in zip(file.classes, tables) {
            #expect(table.properties.map(\.name) == model.properties.map(\.name), "\(what): \(model.name) properties")
            #expect(table.objectCount == model.objects.count, "\(what): \(model.name) count")
            #expect(table.isEmbedded == model.isEmbedded)
            for (p, m) in zip(table.properties, model.properties) {
                #expect(p.type == m.type && p.collection == m.collection, "\(what): \(model.name).\(m.name) is \(p.type) \(p.collection)")
                #expect(p.isOptional == m.isOptional, "\(what): \(model.name).\(m.name) optional \(p.isOptional)")
                #expect(p.isPrimaryKey == (model.primaryKey == m.name), "\(what): \(model.name).\(m.name) primary key")
            }
            var objects: [RealmFileObject] = []
            try file.forEachObject(in: table) { objects.append($0) }
            #expect(objects.map(\.key) == model.objects.map(\.key), "\(what): \(model.name) keys")
            var shown = 0
            for (object, expected) in zip(objects, model.objects) {
                for (i, (value, want)) in zip(object.values, expected.values).enumerated() where normalized(value) != normalized(want) {
                    shown += 1
                    if shown <= 5 { Issue.record("\(what): \(model.name)[\(object.key)].\(model.properties[i].name): \(value), expected \(want)") }
                }
            }
        }
    }

    /// Maps compared by key (the file keeps them sorted), everything else as it is.
    static func normalized(_ v: RealmFileValue) -> RealmFileValue {
        switch v {
        case .map(let entries):
            return .map(entries.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }.map { RealmFileMapEntry(key: $0.key, value: normalized($0.value)) })
        case .list(let items): return .list(items.map(normalized))
        case .set(let items): return .set(items.map(normalized))
        default: return v
        }
    }

    /// An owner with a `List` of dogs, a `MutableSet` of them and a map, as a long-lived app's file holds them.
    static func ownersAndDogs(objects: Int) -> [RealmFileWriter.Table] {
        typealias P = RealmFileWriter.Property
        let dogs = RealmFileWriter.Table(
            name: "Dog", properties: [P("name", .string), P("age", .int, optional: true)],
            objects: (0..<Int64(objects)).map { ($0, [.string("dog \($0)"), $0 % 3 == 0 ? .null : .int($0)]) })
        let dog = { (k: Int64) in RealmFileValue.link(RealmFileLink(table: 2, key: k % Int64(objects))) }
        let owners = RealmFileWriter.Table(
            name: "Owner", properties: [
                P("name", .string), P("dogs", .object, collection: .list, target: 2), P("favorites", .object, collection: .set, target: 2),
                P("byName", .object, optional: true, collection: .map, target: 2), P("best", .object, optional: true, target: 2),
            ],
            objects: (0..<Int64(objects)).map { i in
                (i, [.string("owner \(i)"), .list((0..<(i % 7)).map { dog(i + $0) }), .set((0..<(i % 3)).map { dog(2 * i + $0) }),
                     .map([RealmFileMapEntry(key: "a", value: dog(i)), RealmFileMapEntry(key: "none", value: .null)]), i % 2 == 0 ? .null : dog(i)])
            })
        return [owners, dogs]
    }

    /// realm-core 14 upgrading a file created before format 24 turns each link list's column key from type 13 to
    /// 12 and leaves 13 in the spec (`Spec::migrate_column_keys`): every shape, with and without `AAAA`, reads as
    /// the file it was; so it does with table tops of 12 slots (no flags), and, beyond what realm-core writes
    /// (`Table::init` pads a top to 12 and tags its key), tops of 11 and untagged keys, read as `Table::init`
    /// would read them.
    @Test(arguments: RealmFileWriter.LinkListShape.allCases)
    func linkListsOfEveryUpgradeShapeRead(shape: RealmFileWriter.LinkListShape) throws {
        let tables = Self.ownersAndDogs(objects: 40)
        for signature in RealmFileWriter.NodeSignature.allCases {
            for (slots, tagged) in [(14, true), (12, false), (11, true), (11, false)] {
                var writer = RealmFileWriter()
                writer.linkListShape = shape
                writer.formatVersion = shape == .legacy ? 23 : 24
                writer.nodeSignature = signature
                writer.tableTopSlots = slots
                writer.tagsTableKeys = tagged
                writer.clusterLeafObjects = 8
                writer.bptreeLeafElements = 4
                try Self.expectReadsAsModel(writer.write(tables), tables, "\(shape), \(signature), \(slots) slots, tagged \(tagged)")
            }
        }
    }

    /// The message of a file that `Spec::migrate_column_keys` left: before, "spec type 13 but column key type 12".
    @Test func theUpgradedLinkListShapeIsWhatTheIssueReported() throws {
        var writer = RealmFileWriter()
        writer.linkListShape = .upgraded
        let file = try RealmFile(bytes: writer.write(Self.ownersAndDogs(objects: 3)), name: "upgraded.realm")
        let owner = try #require(file.classes.first { $0.className == "Owner" })
        let dogs = try #require(owner.properties.first { $0.name == "dogs" })
        #expect(dogs.type == .object && dogs.collection == .list && !dogs.isOptional && dogs.columnType == 12 && dogs.specType == 13)
    }

    /// `List<T?>`, `MutableSet<T?>` and `Map<String, T?>` of every value type keep their optionality, and so do
    /// their required forms; nulls read as nulls.
    @Test func collectionsOfEveryTypeKeepTheirElementOptionality() throws {
        typealias P = RealmFileWriter.Property
        var rng = SplitMix64(seed: 54)
        var properties: [P] = []
        var columns: [(Int) -> RealmFileValue] = []
        let types: [RealmFilePropertyType] = [.int, .bool, .string, .data, .date, .float, .double, .decimal128, .objectId, .uuid]
        for type in types {
            for collection in [RealmFileCollectionKind.list, .set, .map] {
                for optional in [false, true] {
                    properties.append(P("\(type)\(collection)\(optional ? "Opt" : "")", type, optional: optional, collection: collection))
                    var values: [RealmFileValue] = []
                    for row in 0..<6 {
                        var items: [RealmFileValue] = []
                        for i in 0..<(row % 4) {
                            let v = optional && i == 1 ? RealmFileValue.null : RealmFileGenerator.value(type, &rng)
                            if collection != .set || !items.contains(v) { items.append(v) }
                        }
                        switch collection {
                        case .map: values.append(.map(items.enumerated().map { RealmFileMapEntry(key: "k\($0.offset)", value: $0.element) }))
                        case .set: values.append(.set(items))
                        default: values.append(.list(items))
                        }
                    }
                    columns.append { values[$0] }
                }
            }
        }
        let table = RealmFileWriter.Table(name: "Collections", properties: properties, objects: (0..<6).map { row in (Int64(row), columns.map { $0(row) }) })
        var writer = RealmFileWriter()
        writer.bptreeLeafElements = 4
        try Self.expectReadsAsModel(writer.write([table]), [table], "optional collections")
    }

    /// Random whole files read as the generator's model.
    @Test(arguments: Seeds.environmentOr([1, 2, 3]))
    func generatedFilesReadAsTheirModel(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        for n in 0..<(8 * Seeds.scale) {
            let file = RealmFileGenerator.make(&rng, objects: 30)
            try Self.expectReadsAsModel(file.bytes, file.tables, "seed \(seed), file \(n)")
        }
    }
}
