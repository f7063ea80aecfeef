import Foundation
import RealmFile
import Testing
import TestSupport
@testable import Strata

/// The format-24 all-types fixture (realm-core 14.14, as RealmSwift drives it) converted at open and read through
/// Strata's public API with models of its classes at the next schema version (so the migration drops the
/// properties these models leave out), every object compared with realm-core's JSON dump.
enum AllTypesV8 {
    final class AllTypes: Object {
        @Persisted(primaryKey: true) var _id: ObjectId
        @Persisted var intCol = 0
        @Persisted var optIntCol: Int?
        @Persisted var boolCol = false
        @Persisted var optBoolCol: Bool?
        @Persisted var floatCol: Float = 0
        @Persisted var optFloatCol: Float?
        @Persisted var doubleCol = 0.0
        @Persisted var optDoubleCol: Double?
        @Persisted var stringCol = ""
        @Persisted var optStringCol: String?
        @Persisted var dataCol = Data()
        @Persisted var optDataCol: Data?
        @Persisted var dateCol = Date()
        @Persisted var optDateCol: Date?
        @Persisted var decimalCol: Decimal128 = 0
        @Persisted var optDecimalCol: Decimal128?
        @Persisted var objectIdCol = ObjectId()
        @Persisted var optObjectIdCol: ObjectId?
        @Persisted var uuidCol = UUID()
        @Persisted var optUuidCol: UUID?
        @Persisted var anyCol: AnyRealmValue
        @Persisted var intList: List<Int>
        @Persisted var optIntList: List<Int?>
        @Persisted var stringList: List<String>
        @Persisted var optDoubleSet: MutableSet<Double?>
        @Persisted var intMap: Map<String, Int>
        @Persisted var optStringMap: Map<String, String?>
        @Persisted var anyList: List<AnyRealmValue>
        @Persisted var anyMap: Map<String, AnyRealmValue>
        @Persisted var linkCol: AllTypes?
        @Persisted var owner: Owner?
        @Persisted var linkList: List<Tag>
        @Persisted var linkSet: MutableSet<Tag>
        @Persisted var linkMap: Map<String, Owner?>
        @Persisted var embedded: EmbeddedThing?
        @Persisted var embeddedList: List<EmbeddedThing>
        @Persisted var embeddedMap: Map<String, EmbeddedThing?>
        override class func className() -> String { "AllTypes" }
    }
    final class Owner: Object {
        @Persisted(primaryKey: true) var _id = 0
        @Persisted var name = ""
        @Persisted var score: Double?
        @Persisted var tags: List<Tag>
        @Persisted var favorite: AllTypes?
        @Persisted(originProperty: "owner") var allTypes: LinkingObjects<AllTypes>
        override class func className() -> String { "Owner" }
    }
    final class Tag: Object {
        @Persisted(primaryKey: true) var _id = ""
        @Persisted var label: String?
        @Persisted var color = 0
        @Persisted var owner: Owner?
        @Persisted(originProperty: "linkList") var taggedBy: LinkingObjects<AllTypes>
        override class func className() -> String { "Tag" }
    }
    final class EmbeddedThing: EmbeddedObject {
        @Persisted var name = ""
        @Persisted var value = 0
        @Persisted var optDouble: Double?
        @Persisted var when: Date?
        @Persisted var tag: Tag?
        @Persisted var child: EmbeddedChild?
        @Persisted var children: List<EmbeddedChild>
        @Persisted var numbers: List<Int>
        override class func className() -> String { "EmbeddedThing" }
    }
    final class EmbeddedChild: EmbeddedObject {
        @Persisted var label = ""
        @Persisted var flag = false
        @Persisted var amount: Decimal128?
        @Persisted var anyValue: AnyRealmValue
        override class func className() -> String { "EmbeddedChild" }
    }
    static let types: [ObjectBase.Type] = [AllTypes.self, Owner.self, Tag.self, EmbeddedThing.self, EmbeddedChild.self]
}

/// A JSON dump value, as the Swift value RealmSwift would have handed out.
struct DumpValues {
    static func date(_ j: JSON) -> Date {
        Date(timeIntervalSinceReferenceDate: Double(j["seconds"]!.int!) - 978_307_200.0 + Double(j["nanoseconds"]!.int!) / 1e9)
    }
    static func data(_ j: JSON) -> Data { Data(base64Encoded: j["base64"]!.string!)! }
    static func float(_ j: JSON) -> Float { Float(bitPattern: UInt32(j["bits"]!.string!.dropFirst(2), radix: 16)!) }
    static func double(_ j: JSON) -> Double { Double(bitPattern: UInt64(j["bits"]!.string!.dropFirst(2), radix: 16)!) }
    static func objectId(_ j: JSON) -> ObjectId { try! ObjectId(string: j.string!) }
    static func uuid(_ j: JSON) -> UUID { UUID(uuidString: j.string!)! }
    /// The decimal realm-core printed (`Decimal128::to_string`: "+1000…E+6111", "-0", "NaN", "-Inf").
    static func decimal(_ j: JSON) -> Decimal128 { try! Decimal128(string: j["value"]!.string!) }
    /// Equal and printed the same: NaN's sign and negative zero count.
    static func same(_ a: Decimal128?, _ b: Decimal128?) -> Bool { a == b && a?.description == b?.description }

    /// The Date RealmSwift hands out for a timestamp (`RLMTimestampToNSDate`), bit for bit.
    static func sameDate(_ a: Date?, _ b: Date?) -> Bool {
        a?.timeIntervalSinceReferenceDate.bitPattern == b?.timeIntervalSinceReferenceDate.bitPattern
    }

    /// Whether an AnyRealmValue holds what the dump says.
    static func same(_ value: AnyRealmValue, _ j: JSON) -> Bool {
        let v = j["value"] ?? .null
        switch (j["type"]?.string, value) {
        case ("null", .none): return true
        case ("int", .int(let x)): return Int64(x) == v.int
        case ("bool", .bool(let x)): return x == v.bool
        case ("string", .string(let x)): return x == v.string
        case ("binary", .data(let x)): return x == data(v)
        case ("date", .date(let x)): return sameDate(x, date(v))
        case ("float", .float(let x)): return x.bitPattern == float(v).bitPattern
        case ("double", .double(let x)): return x.bitPattern == double(v).bitPattern
        case ("decimal128", .decimal128(let x)): return same(x, decimal(v))
        case ("objectId", .objectId(let x)): return x == objectId(v)
        case ("uuid", .uuid(let x)): return x == uuid(v)
        case ("link", .object(let o)): return className(o) == v["class"]!.string && primaryKey(o) == v["primary_key"]
        case ("list", .list(let l)): return l.count == v.array.count && zip(l, v.array).allSatisfy { same($0, $1) }
        case ("dictionary", .dictionary(let m)):
            let entries = v.array
            return m.count == entries.count && entries.allSatisfy { e in m[e["key"]!.string!].map { same($0, e["value"]!) } ?? false }
        default: return false
        }
    }

    static func className(_ o: Object) -> String { type(of: o).className() }
    static func primaryKey(_ o: Object) -> JSON {
        switch o {
        case let t as AllTypesV8.AllTypes: return .string(t._id.hex)
        case let t as AllTypesV8.Owner: return .int(Int64(t._id))
        case let t as AllTypesV8.Tag: return .string(t._id)
        default: return .null
        }
    }
}

@Suite(.enabled(if: SharedFixtures.realmFixturesPresent, "../shared/realm-fixtures is absent: the Realm file conversion tests are skipped"))
struct RealmFileAllTypesConversionTests {
    @Test(arguments: ["all-types", "all-types-compacted", "all-types-encrypted"])
    func everyObjectReadsAsRealmCoreDumpedIt(name: String) throws {
        let (dir, url) = try RealmFileConversionTests.copy("format-24/\(name).realm")
        _ = dir
        let dump = try JSON.load(SharedFixtures.realmFixture("format-24/\(name).json"))
        var config = Realm.Configuration(fileURL: url, schemaVersion: 8, migrationBlock: { _, old in #expect(old == 7) }, objectTypes: AllTypesV8.types)
        if name.hasSuffix("encrypted") { config.encryptionKey = Data((0..<64).map { UInt8(0x10 + 3 * $0) }) }
        let realm = try Realm(configuration: config)
        func objects(_ table: String) -> [JSON] { dump["tables"]!.array.first { $0["name"]!.string == table }!["objects"]!.array }

        let allTypes = objects("class_AllTypes")
        #expect(realm.objects(AllTypesV8.AllTypes.self).count == allTypes.count)
        var checked = 0
        for j in allTypes {
            let o = try #require(realm.object(ofType: AllTypesV8.AllTypes.self, forPrimaryKey: DumpValues.objectId(j["_id"]!)))
            let label = "AllTypes[\(j["$key"]!.int!)]"
            #expect(o.intCol == Int(j["intCol"]!.int!), "\(label)")
            #expect(o.optIntCol.map(Int64.init) == j["optIntCol"]!.int, "\(label)")
            #expect(o.boolCol == j["boolCol"]!.bool!, "\(label)")
            #expect(o.optBoolCol == j["optBoolCol"]!.bool, "\(label)")
            #expect(o.floatCol.bitPattern == DumpValues.float(j["floatCol"]!).bitPattern, "\(label)")
            #expect(o.optFloatCol?.bitPattern == (j["optFloatCol"]! == .null ? nil : DumpValues.float(j["optFloatCol"]!).bitPattern), "\(label)")
            #expect(o.doubleCol.bitPattern == DumpValues.double(j["doubleCol"]!).bitPattern, "\(label)")
            #expect(o.optDoubleCol?.bitPattern == (j["optDoubleCol"]! == .null ? nil : DumpValues.double(j["optDoubleCol"]!).bitPattern), "\(label)")
            #expect(o.stringCol == j["stringCol"]!.string!, "\(label)")
            #expect(o.optStringCol == j["optStringCol"]!.string, "\(label)")
            #expect(o.dataCol == DumpValues.data(j["dataCol"]!), "\(label)")
            #expect(o.optDataCol == (j["optDataCol"]! == .null ? nil : DumpValues.data(j["optDataCol"]!)), "\(label)")
            #expect(DumpValues.sameDate(o.dateCol, DumpValues.date(j["dateCol"]!)), "\(label): \(o.dateCol)")
            #expect(DumpValues.sameDate(o.optDateCol, j["optDateCol"]! == .null ? nil : DumpValues.date(j["optDateCol"]!)), "\(label)")
            #expect(DumpValues.same(o.decimalCol, DumpValues.decimal(j["decimalCol"]!)), "\(label): \(o.decimalCol)")
            #expect(DumpValues.same(o.optDecimalCol, j["optDecimalCol"]! == .null ? nil : DumpValues.decimal(j["optDecimalCol"]!)), "\(label)")
            #expect(o.objectIdCol == DumpValues.objectId(j["objectIdCol"]!), "\(label)")
            #expect(o.optObjectIdCol == (j["optObjectIdCol"]! == .null ? nil : DumpValues.objectId(j["optObjectIdCol"]!)), "\(label)")
            #expect(o.uuidCol == DumpValues.uuid(j["uuidCol"]!), "\(label)")
            #expect(o.optUuidCol == (j["optUuidCol"]! == .null ? nil : DumpValues.uuid(j["optUuidCol"]!)), "\(label)")
            #expect(DumpValues.same(o.anyCol, j["anyCol"]!), "\(label): anyCol \(o.anyCol)")
            #expect(Array(o.intList).map(Int64.init) == j["intList"]!.array.map { $0.int! }, "\(label)")
            #expect(Array(o.optIntList).map { $0.map(Int64.init) } == j["optIntList"]!.array.map(\.int), "\(label)")
            #expect(Array(o.stringList) == j["stringList"]!.array.map { $0.string! }, "\(label)")
            #expect(Set(o.optDoubleSet.map { $0?.bitPattern }) == Set(j["optDoubleSet"]!.array.map { $0 == .null ? nil : DumpValues.double($0).bitPattern }), "\(label)")
            #expect(o.intMap.count == j["intMap"]!.array.count, "\(label)")
            for e in j["intMap"]!.array { #expect(o.intMap[e["key"]!.string!].map(Int64.init) == e["value"]!.int, "\(label)") }
            for e in j["optStringMap"]!.array { #expect(o.optStringMap[e["key"]!.string!] == .some(e["value"]!.string), "\(label)") }
            #expect(o.anyList.count == j["anyList"]!.array.count && zip(o.anyList, j["anyList"]!.array).allSatisfy { DumpValues.same($0, $1) }, "\(label): anyList")
            for e in j["anyMap"]!.array { #expect(o.anyMap[e["key"]!.string!].map { DumpValues.same($0, e["value"]!) } == true, "\(label): anyMap[\(e["key"]!.string!)]") }
            #expect(o.linkCol.map { JSON.string($0._id.hex) } == j["linkCol"]!["primary_key"], "\(label)")
            #expect(o.owner.map { JSON.int(Int64($0._id)) } == j["owner"]!["primary_key"], "\(label)")
            #expect(o.linkList.map(\._id) == j["linkList"]!.array.map { $0["primary_key"]!.string! }, "\(label)")
            #expect(Set(o.linkSet.map(\._id)) == Set(j["linkSet"]!.array.map { $0["primary_key"]!.string! }), "\(label)")
            for e in j["linkMap"]!.array {
                #expect(o.linkMap[e["key"]!.string!].map { $0.map { JSON.int(Int64($0._id)) } ?? .null } == e["value"]!["primary_key"] ?? .null, "\(label)")
            }
            #expect(o.embeddedList.count == j["embeddedList"]!.array.count, "\(label)")
            #expect((o.embedded == nil) == (j["embedded"]! == .null), "\(label)")
            checked += 1
        }
        #expect(checked == 303)

        // Embedded objects: each one's values, reached through its owner.
        let things = Dictionary(uniqueKeysWithValues: objects("class_EmbeddedThing").map { ($0["$key"]!.int!, $0) })
        let children = Dictionary(uniqueKeysWithValues: objects("class_EmbeddedChild").map { ($0["$key"]!.int!, $0) })
        var embeddedChecked = 0
        for j in allTypes {
            let o = realm.object(ofType: AllTypesV8.AllTypes.self, forPrimaryKey: DumpValues.objectId(j["_id"]!))!
            let pairs = zip([o.embedded].compactMap { $0 } + Array(o.embeddedList), ([j["embedded"]!].filter { $0 != .null } + j["embeddedList"]!.array).map { things[$0["key"]!.int!]! })
            for (thing, t) in pairs {
                #expect(thing.name == t["name"]!.string! && thing.value == Int(t["value"]!.int!))
                #expect(thing.optDouble?.bitPattern == (t["optDouble"]! == .null ? nil : DumpValues.double(t["optDouble"]!).bitPattern))
                #expect(DumpValues.sameDate(thing.when, t["when"]! == .null ? nil : DumpValues.date(t["when"]!)))
                #expect(thing.tag?._id == t["tag"]!["primary_key"]?.string)
                #expect(thing.numbers.map(Int64.init) == t["numbers"]!.array.map { $0.int! })
                let kids = ([t["child"]!].filter { $0 != .null } + t["children"]!.array).map { children[$0["key"]!.int!]! }
                let mine = [thing.child].compactMap { $0 } + Array(thing.children)
                #expect(mine.count == kids.count)
                for (kid, k) in zip(mine, kids) {
                    #expect(kid.label == k["label"]!.string! && kid.flag == k["flag"]!.bool!)
                    #expect(DumpValues.same(kid.anyValue, k["anyValue"]!), "child \(k["$key"]!.int!): \(kid.anyValue)")
                    #expect(DumpValues.same(kid.amount, k["amount"]! == .null ? nil : DumpValues.decimal(k["amount"]!)))
                    embeddedChecked += 1
                }
            }
        }
        #expect(embeddedChecked > 0)

        let owners = objects("class_Owner")
        #expect(realm.objects(AllTypesV8.Owner.self).count == owners.count)
        for j in owners {
            let owner = try #require(realm.object(ofType: AllTypesV8.Owner.self, forPrimaryKey: Int(j["_id"]!.int!)))
            #expect(owner.name == j["name"]!.string!)
            #expect(owner.score?.bitPattern == (j["score"]! == .null ? nil : DumpValues.double(j["score"]!).bitPattern))
            #expect(owner.tags.map(\._id) == j["tags"]!.array.map { $0["primary_key"]!.string! })
            #expect(owner.favorite.map { JSON.string($0._id.hex) } == j["favorite"]!["primary_key"])
            // LinkingObjects are recomputed from the links: as many as the dump's backlinks from AllTypes.owner.
            #expect(owner.allTypes.count == (j["$backlinks"]?["AllTypes.owner"]?.array.count ?? 0))
        }
        let tags = objects("class_Tag")
        #expect(realm.objects(AllTypesV8.Tag.self).count == tags.count)
        for j in tags {
            let tag = try #require(realm.object(ofType: AllTypesV8.Tag.self, forPrimaryKey: j["_id"]!.string!))
            #expect(tag.label == j["label"]!.string && tag.color == Int(j["color"]!.int!))
            #expect(tag.owner.map { JSON.int(Int64($0._id)) } == j["owner"]!["primary_key"])
            #expect(Set(tag.taggedBy.map(\._id)).count == Set(j["$backlinks"]?["AllTypes.linkList"]?.array.map { $0.int! } ?? []).count)
        }
    }
}
