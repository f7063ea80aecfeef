import Foundation
import Testing
import TestSupport
@testable import RealmFile

/// The format-24 files realm-core 14.14 wrote through its object store, as RealmSwift drives it, each read and
/// compared, object by object and value by value, with the JSON dump realm-core made of it
/// (`../shared/realm-fixtures/format-24/README-format-24.md`).
@Suite(.enabled(if: SharedFixtures.realmFixturesPresent, "../shared/realm-fixtures is absent: the Realm fixture tests are skipped"))
struct Format24FixtureTests {
    static let encryptionKey: [UInt8] = (0..<64).map { UInt8(0x10 + 3 * $0) }

    @Test(arguments: ["all-types", "all-types-compacted", "all-types-encrypted", "empty-v0"])
    func everyObjectMatchesRealmCoresDump(name: String) throws {
        let key = name.hasSuffix("encrypted") ? Self.encryptionKey : nil
        let file = try RealmFile(path: SharedFixtures.realmFixture("format-24/\(name).realm"), encryptionKey: key)
        let dump = try JSON.load(SharedFixtures.realmFixture("format-24/\(name).json"))
        #expect(file.formatVersion == 24)
        #expect(file.isStreamingForm == (name == "all-types-compacted"))
        #expect(file.isEncrypted == (key != nil))
        #expect(file.schemaVersion == dump["schema_version"]?.int.map(UInt64.init))
        try expectSameSchema(file, dump)
        try expectSameObjects(file, dump)
    }

    func expectSameSchema(_ file: RealmFile, _ dump: JSON) throws {
        let classes = dump["schema"]!.array
        #expect(file.classes.map(\.className) == classes.map { $0["name"]!.string })
        for cls in classes {
            let table = try #require(file.classes.first { $0.className == cls["name"]!.string })
            #expect(table.isEmbedded == cls["embedded"]!.bool!, "\(table.name)")
            #expect(table.objectCount == Int(cls["object_count"]!.int!), "\(table.name)")
            let primary = table.primaryKeyIndex.map { table.properties[$0].name }
            #expect(primary == cls["primary_key"]?.string, "\(table.name)")
            let expected = cls["properties"]!.array
            #expect(table.properties.map(\.name) == expected.map { $0["name"]!.string! }, "\(table.name)")
            for (property, json) in zip(table.properties, expected) {
                let label = "\(table.name).\(property.name)"
                let type = property.type == .mixed ? "mixed" : property.type.rawValue
                #expect(type == json["type"]!.string!, "\(label)")
                #expect(property.isOptional == json["optional"]!.bool!, "\(label)")
                let collection = property.collection == .map ? "dictionary" : property.collection.rawValue
                #expect(collection == json["collection"]!.string!, "\(label)")
                #expect(property.isIndexed == json["indexed"]!.bool!, "\(label)")
                #expect(property.isPrimaryKey == json["primary_key"]!.bool!, "\(label)")
                #expect(property.targetTable.flatMap { file.tables[$0].className } == json["object_type"]?.string, "\(label)")
            }
        }
    }

    func expectSameObjects(_ file: RealmFile, _ dump: JSON) throws {
        let decoder = DumpDecoder(file: file)
        for tableJSON in dump["tables"]!.array {
            let table = try #require(file.tables.first { $0.name == tableJSON["name"]!.string })
            var objects: [RealmFileObject] = []
            try file.forEachObject(in: table) { objects.append($0) }
            let expected = tableJSON["objects"]!.array
            #expect(objects.map(\.key) == expected.map { $0["$key"]!.int! }, "\(table.name): keys")
            var mismatches = 0, compared = 0
            for (object, json) in zip(objects, expected) {
                for (index, property) in table.properties.enumerated() {
                    let want = decoder.value(json[property.name] ?? .null, property)
                    compared += 1
                    if object.values[index] != want {
                        mismatches += 1
                        if mismatches <= 20 {
                            Issue.record("\(table.name)[\(object.key)].\(property.name): read \(object.values[index]), dump has \(want)")
                        }
                    }
                }
            }
            #expect(mismatches == 0, "\(table.name): \(mismatches) values differ")
            #expect(compared == expected.count * table.properties.count)
            // Random access by key (how embedded objects are read) gives the same objects.
            for object in objects.prefix(300) {
                let again = try file.object(in: table, key: object.key)
                #expect(again?.values == object.values, "\(table.name)[\(object.key)] by key")
            }
        }
    }
}
