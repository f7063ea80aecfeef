import Foundation
import Testing
import TestSupport
@testable import RealmFile

/// realm-core's upgrade-test files (formats 11, 20, 22, 23; trees of node size 4 and 1000), its sync metadata file
/// and RealmSwift's Migration example templates, read and checked against what the tests that wrote them state
/// (realm-core `test/test_upgrade_database.cpp`, `test/object-store/sync/metadata.cpp`; realm-swift
/// `examples/ios/swift/Migration`).
@Suite(.enabled(if: SharedFixtures.realmFixturesPresent, "../shared/realm-fixtures is absent: the Realm fixture tests are skipped"))
struct OlderFormatFixtureTests {
    static func open(_ name: String) throws -> RealmFile { try RealmFile(path: SharedFixtures.realmFixture(name)) }

    static func objects(_ file: RealmFile, _ table: String) throws -> [RealmFileObject] {
        var out: [RealmFileObject] = []
        try file.forEachObject(in: try #require(file.tables.first { $0.name == table })) { out.append($0) }
        return out
    }

    static func table(_ file: RealmFile, _ name: String) -> Int { file.tables.first { $0.name == name }!.index }

    static let ids: [Int64] = [0, 2, 3, 15, 42, 100, 7000]
    static let names = ["adam", "bart", "carlo", "david", "eric", "frank", "gary"]
    /// realm-core's keys for string primary keys before format 22: SHA-1 of the value, masked.
    static let nameKeys: [String: Int64] = [
        "adam": 3171638181778167822, "bart": 4312485330124262958, "carlo": 1701952207782086761,
        "david": 1727069631941342378, "eric": 949022904415482262, "frank": 477706491332307078, "gary": 2626610073328157433,
    ]

    /// `Upgrade_Database_11`: foo (Int primary key), bar (String primary key), origin linking to each.
    @Test func format11() throws {
        let file = try Self.open("realm-core/test_upgrade_database_11.realm")
        #expect(file.formatVersion == 11 && file.isStreamingForm && file.schemaVersion == nil)
        #expect(file.tables.map(\.name) == ["foo", "bar", "origin"])
        let foo = try Self.objects(file, "foo"), bar = try Self.objects(file, "bar"), origin = try Self.objects(file, "origin")
        #expect(foo.map { $0.values[0] } == Self.ids.map(RealmFileValue.int))
        #expect(Set(bar.map { "\($0.values[0])" }) == Set(Self.names.map { "\(RealmFileValue.string($0))" }))
        for b in bar { if case .string(let n) = b.values[0] { #expect(Self.nameKeys[n] == b.key) } }
        #expect(origin.count == 14)
        for (i, o) in origin.enumerated() {
            if i < 7 {
                #expect(o.values == [.link(RealmFileLink(table: 0, key: foo[i].key)), .null])
            } else {
                #expect(o.values == [.null, .link(RealmFileLink(table: 1, key: Self.nameKeys[Self.names[i - 7]]!))])
            }
        }
    }

    /// `Upgrade_Database_20`: as format 11, with primary-key-derived keys and one tombstone in each target (42,
    /// "eric"): the links to them (origin 4 and 11) read as null, and the tombstones are not objects.
    @Test func format20() throws {
        let file = try Self.open("realm-core/test_upgrade_database_20.realm")
        #expect(file.formatVersion == 20)
        let foo = try Self.objects(file, "foo"), bar = try Self.objects(file, "bar"), origin = try Self.objects(file, "origin")
        #expect(foo.map(\.key) == [0, 2, 3, 15, 100, 7000])
        #expect(foo.map { $0.values[0] } == [0, 2, 3, 15, 100, 7000].map(RealmFileValue.int))
        #expect(Set(bar.map(\.key)) == Set(Self.names.filter { $0 != "eric" }.map { Self.nameKeys[$0]! }))
        #expect(file.tables[0].objectCount == 6, "tombstones live in a tree of their own")
        #expect(origin[4].values == [.null, .null])
        #expect(origin[11].values == [.null, .null])
        for i in [0, 1, 2, 3, 5, 6] { #expect(origin[i].values[0] == .link(RealmFileLink(table: 0, key: Self.ids[i]))) }
    }

    /// `Upgrade_Database_22`: a map and a set of mixed values in formats 21-22's layouts (the map a cluster tree in
    /// hash order), at node sizes 4 and 1000.
    @Test(arguments: ["realm-core/test_upgrade_database_1000_22.realm", "realm-core/test_upgrade_database_4_22.realm"])
    func format22(name: String) throws {
        let file = try Self.open(name)
        #expect(file.formatVersion == 22)
        let table = try Self.objects(file, "table"), target = try Self.objects(file, "target")
        #expect(table.count == 1 && target.count == 1)
        // Since format 22 object keys come from a counter, not from the primary key.
        #expect(target[0].key == 0 && target[0].values == [.int(47)])
        let link = RealmFileValue.link(RealmFileLink(table: Self.table(file, "target"), key: 0))
        guard case .map(let entries) = table[0].values[1], case .set(let set) = table[0].values[2] else {
            Issue.record("dict and set are not a map and a set: \(table[0].values)")
            return
        }
        let expected: [String: RealmFileValue] = [
            "one": .int(1), "two": .double(2), "three": .string("John"), "four": .string("Paul"), "five": .string("George"),
            "six": .string("Ringo"), "seven": .string("Morgan"), "eight": .timestamp(RealmFileTimestamp(seconds: 4, nanoseconds: 5)),
            "nine": link,
        ]
        #expect(entries.count == 9)
        #expect(Dictionary(uniqueKeysWithValues: entries.map { ($0.key, $0.value) }) == expected)
        // The test wrote `BinaryData("Paul")`, whose size counts the literal's terminating NUL.
        let setValues: [RealmFileValue] = [.int(1), .double(2), .string("John"), .string("Ringo"), .data(Array("Paul\u{0}".utf8)), .data(Array("George\u{0}".utf8)), .string("Beatles"), link]
        #expect(set.count == 8)
        for v in setValues { #expect(set.contains(v), "\(v)") }
    }

    /// `Upgrade_Database_23`: 10 x node size objects linking to one target; sets of mixed, strings and binaries;
    /// a table keyed by nullable strings, at node sizes 4 (a deep cluster tree of 4-object leaves) and 1000.
    @Test(arguments: [("realm-core/test_upgrade_database_1000_23.realm", 10_000), ("realm-core/test_upgrade_database_4_23.realm", 40)])
    func format23(name: String, count: Int) throws {
        let file = try Self.open(name)
        #expect(file.formatVersion == 23)
        let table = try Self.objects(file, "table")
        let target = Self.table(file, "target")
        let targets = try Self.objects(file, "target")
        #expect(targets.map(\.values) == [[.int(1)]])
        #expect(table.count == count)
        #expect(table.map(\.key) == (0..<Int64(count)).map { $0 })
        #expect(table.allSatisfy { $0.values == [.int($0.key), .link(RealmFileLink(table: target, key: targets[0].key))] })
        let base = String(repeating: "a", count: 200)
        var strings: [RealmFileValue] = ["Æ", "æ", "ÿ", "ʄ", "Beatles", "john", "ringo", "John", "Ringo", "", "\u{0}", "\u{0}\u{1}", "\u{0}\u{0}\u{1}", "\u{1}\u{0}"].map { .string($0) }
        strings += ["aaaaa", "aaaaA", "aaaaʄ", "aaaaÆ", "aaaaæ"].map { .string(base + $0) }
        let binaries: [RealmFileValue] = [.data(Array("Paul\u{0}".utf8)), .data(Array("George\u{0}".utf8))]
            + ["aaaaa", "aaaaA", "aaaaʄ", "aaaaÆ", "aaaaæ"].map { .data(Array((base + $0).utf8)) }
        let mixedRow = try Self.objects(file, "table_for_mixed")
        #expect(mixedRow.count == 1)
        guard case .set(let mixedSet) = mixedRow[0].values[1], case .set(let stringSet) = mixedRow[0].values[2],
              case .set(let binarySet) = mixedRow[0].values[3] else {
            Issue.record("not sets: \(mixedRow[0].values)")
            return
        }
        #expect(mixedSet.count == 32)
        #expect(stringSet.count == 20 && binarySet.count == 8)
        for s in strings { #expect(mixedSet.contains(s) && stringSet.contains(s), "\(s)") }
        for b in binaries { #expect(mixedSet.contains(b) && binarySet.contains(b), "\(b)") }
        #expect(stringSet.contains(.null) && binarySet.contains(.null) && mixedSet.contains(.null))
        for v: RealmFileValue in [.int(1), .double(2), .timestamp(RealmFileTimestamp(seconds: 0, nanoseconds: 0)),
                                  .objectId(Array([0xab, 0xcd, 0xef, 0xab, 0xcd, 0xef, 0xab, 0xcd, 0xef, 0xab, 0xcd, 0xef])),
                                  .uuid(Array(repeating: 0, count: 16))] {
            #expect(mixedSet.contains(v), "\(v)")
        }
        let table2 = try Self.objects(file, "table2")
        #expect(table2.count == 20)
        #expect(table2.allSatisfy { $0.values[0] == $0.values[1] })
        #expect(Set(table2.map { "\($0.values[0])" }) == Set((strings + [.null]).map { "\($0)" }))
        #expect(file.tables.first { $0.name == "table2" }!.properties.allSatisfy { $0.isIndexed })
    }

    /// The object store's sync metadata at schema version 6: `class_` tables, lists of links, sets of strings.
    @Test func syncMetadataVersion6() throws {
        let file = try Self.open("realm-core/sync-metadata-v6.realm")
        #expect(file.formatVersion == 23 && file.schemaVersion == 6)
        #expect(Set(file.classes.compactMap(\.className)) == ["AppMetadata", "FileActionMetadata", "UserIdentity", "UserMetadata", "current_user_identity"])
        let identities = try Self.objects(file, "class_UserIdentity")
        #expect(identities.map(\.values) == [
            [.string("identity 1"), .string("a")], [.string("shared identity"), .string("shared")], [.string("identity 2"), .string("b")],
        ])
        let users = try Self.objects(file, "class_UserMetadata")
        #expect(users.count == 13)
        #expect(users.map { $0.values[1] } == (0..<13).map { .string("\($0)") })
        #expect(users[0].values[0] == .string("removed user") && users[0].values[7] == .int(2) && users[0].values[3] == .null)
        let identityTable = Self.table(file, "class_UserIdentity")
        for user in users.dropFirst() {
            let isA = user.values[4] == .string("a")
            #expect(user.values[6] == .list([
                .link(RealmFileLink(table: identityTable, key: identities[isA ? 0 : 2].key)),
                .link(RealmFileLink(table: identityTable, key: identities[1].key)),
            ]))
            #expect(user.values[10] == .set(isA ? [.string("file 1"), .string("file 2")] : [.string("file 2"), .string("file 3")]))
        }
        let current = try Self.objects(file, "class_current_user_identity")
        #expect(current.map(\.values) == [[.string("both logged in, second newer")]])
        let actions = try Self.objects(file, "class_FileActionMetadata")
        #expect(actions.isEmpty)
    }

    /// RealmSwift's Migration example templates (format 20, written by RealmSwift 10): the schema of each version
    /// and its objects (`exampleData`).
    @Test func migrationExampleTemplates() throws {
        let people: [[RealmFileValue]] = [[.string("John"), .string("Doe"), .int(42)], [.string("Jane"), .string("Doe"), .int(43)], [.string("John"), .string("Smith"), .int(44)]]
        let v0 = try Self.open("realm-swift/migration-example-default-v0.realm")
        #expect(v0.formatVersion == 20 && v0.schemaVersion == 0 && !v0.isStreamingForm)
        let v0People = try Self.objects(v0, "class_Person")
        #expect(v0People.map(\.values) == people)
        let v2 = try Self.open("realm-swift/migration-example-default-v2.realm")
        #expect(v2.schemaVersion == 2)
        let dogs = try Self.objects(v2, "class_Dog")
        #expect(dogs.map(\.values) == [["Slinkey"], ["Marley"], ["Lassie"], ["Toto"]].map { $0.map(RealmFileValue.string) })
        for version in 3...5 {
            let file = try Self.open("realm-swift/migration-example-default-v\(version).realm")
            #expect(file.schemaVersion == UInt64(version))
            let pets = try Self.objects(file, "class_Pet")
            #expect(pets.map(\.values) == ["Marley", "Lassie", "Toto", "Slinkey"].map { [.string($0), .int(1)] })
            let person = file.classes.first { $0.className == "Person" }!
            #expect(person.properties.first { $0.name == "pets" }?.collection == .list)
            if version >= 4 {
                let address = file.classes.first { $0.className == "Address" }!
                #expect(address.isEmbedded == (version == 5))
                let addresses = try Self.objects(file, "class_Address")
                #expect(addresses.map(\.values) == [[.string("Broadway"), .string("New York")]])
            }
        }
        let empty = try Self.open("realm-swift/file-format-version-21.realm")
        #expect(empty.tables.isEmpty && empty.schemaVersion == nil)
    }
}
