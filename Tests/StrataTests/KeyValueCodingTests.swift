import Foundation
import Strata
import Testing
import TestSupport

/// Key-value coding and descriptions of objects and results.
@Suite struct KeyValueCodingTests {
    @Test func keyValueCodingAndDescription() throws {
        let realm = try memoryRealm()
        try addPeople(realm)
        let p = try #require(realm.object(ofType: Person.self, forPrimaryKey: 2))
        #expect(p["firstName"] as? String == "Alan")
        #expect(p.value(forKey: "age") as? Int == 41)
        try realm.write { p["age"] = 42 }
        #expect(p.age == 42)
        #expect(p.description.contains("firstName = Alan;"))
        let unmanaged = Person(value: ["id": 9, "firstName": "Unmanaged"])
        #expect(unmanaged.firstName == "Unmanaged")
        unmanaged.firstName = "Changed"
        #expect(unmanaged.firstName == "Changed")
        #expect(realm.objects(Person.self).value(forKey: "firstName").count == 5)
        try realm.write { realm.objects(Person.self).where { $0.age > 40 }.setValue("older", forKey: "nickname") }
        #expect(realm.objects(Person.self).filter("nickname == 'older'").count == 3)  // Alan (42), Grace, Edsger
    }
}

final class KVCTyped: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var int8: Int8 = 8
    @Persisted var int16: Int16 = 16
    @Persisted var int32: Int32 = 32
    @Persisted var int64: Int64 = 64
    @Persisted var float: Float = 1.5
    @Persisted var optInt8: Int8? = 9
    @Persisted var optFloat: Float?
    @Persisted var decimal = Decimal128(number: 5)
    @Persisted var objectId = ObjectId("0123456789abcdef01234567")
    let legacyInt8 = RealmProperty<Int8?>()
    @Persisted var bools: List<Bool?>
    @Persisted var int8s: List<Int8>
    @Persisted var set: MutableSet<Int16?>
    @Persisted var map: Map<String, Int32?>
    @Persisted var links: List<KVCTyped>
    @Persisted var link: KVCTyped?
    @Persisted var any: AnyRealmValue
}

/// Issue 56, item 2: `value(forKey:)` and the collections' `value(forKey:)` give the declared types, as
/// RealmSwift's key-value coding does (its tests cast with `as!`): an `Int8` is an `Int8`, a `List<Bool?>` a
/// `List<Bool?>`, a map a `Map`.
@Suite struct KeyValueCodingTypeTests {
    static func check(_ o: KVCTyped) {
        #expect(o.value(forKey: "int8") as? Int8 == 8)
        #expect(o.value(forKey: "int16") as? Int16 == 16)
        #expect(o.value(forKey: "int32") as? Int32 == 32)
        #expect(o.value(forKey: "int64") as? Int64 == 64)
        #expect(o.value(forKey: "float") as? Float == 1.5)
        #expect(o.value(forKey: "optInt8") as? Int8 == 9)
        #expect(o.value(forKey: "optFloat") == nil || (o.value(forKey: "optFloat") as? Float?) == .some(nil))
        #expect(o.value(forKey: "decimal") as? Decimal128 == Decimal128(number: 5))
        #expect(o.value(forKey: "objectId") as? ObjectId == ObjectId("0123456789abcdef01234567"))
        #expect(o.value(forKey: "legacyInt8") as? Int8 == 3)
        #expect((o.value(forKey: "bools") as? List<Bool?>).map(Array.init) == [true, nil])
        #expect((o.value(forKey: "int8s") as? List<Int8>).map(Array.init) == [1, 2])
        #expect((o.value(forKey: "set") as? MutableSet<Int16?>)?.count == 2)
        #expect((o.value(forKey: "map") as? Map<String, Int32?>)?["a"] == .some(1))
        #expect((o.value(forKey: "links") as? List<KVCTyped>)?.count == 0)
        // RealmSwift bridges a mixed value to what it holds (an NSNumber for an int).
        #expect(o.value(forKey: "any") as? Int == 4)
    }

    static func make() -> KVCTyped {
        let o = KVCTyped()
        o.id = 1
        o.legacyInt8.value = 3
        o.bools.append(objectsIn: [true, nil])
        o.int8s.append(objectsIn: [1, 2])
        o.set.insert(objectsIn: [1, nil])
        o.map["a"] = 1
        o.any = .int(4)
        return o
    }

    @Test func anUnmanagedObjectGivesTheDeclaredTypes() {
        Self.check(Self.make())
    }

    @Test func aManagedObjectGivesTheDeclaredTypes() throws {
        let realm = try memoryRealm(types: [KVCTyped.self])
        let o = Self.make()
        try realm.write { realm.add(o) }
        Self.check(o)
        let results = realm.objects(KVCTyped.self)
        #expect(results.value(forKey: "int8") as? [Int8] == [8])
        #expect(results.value(forKey: "optInt8") as? [Int8?] == [9])
        #expect(results.value(forKeyPath: "legacyInt8") as? [Int8?] == [3])
        #expect((results.value(forKey: "bools") as? [List<Bool?>])?.first.map(Array.init) == [true, nil])
        // The dynamic API gives the same types for a type this Realm binds.
        let dynamic = try #require(realm.dynamicObjects("KVCTyped").first)
        #expect(dynamic.value(forKey: "int8") as? Int8 == 8)
        #expect(dynamic["optInt8"] as? Int8 == 9)
        #expect((dynamic.value(forKey: "int8s") as? List<Int8>).map(Array.init) == [1, 2])
        let holder = try realm.write { realm.create(KVCTyped.self, value: ["id": 2, "links": [o]]) }
        #expect((holder.links.value(forKey: "int16") as? [Int16]) == [16])
        #expect((realm.objects(KVCTyped.self).filter("id == 2").value(forKeyPath: "links") as? [List<KVCTyped>])?.first?.count == 1)
    }
}

/// Issue 56, item 7: `value(forKeyPath:)` through links and collections, as real apps call it on objects and
/// results.
@Suite struct KeyPathValueTests {
    @Test func dottedPathsGoThroughLinksAndCollections() throws {
        let realm = try memoryRealm(types: [KVCTyped.self])
        let (a, b) = try realm.write {
            let b = realm.create(KVCTyped.self, value: ["id": 2, "int16": 22])
            let a = realm.create(KVCTyped.self, value: ["id": 1, "link": b, "links": [b, b]])
            return (a, b)
        }
        #expect(a.value(forKeyPath: "link.int16") as? Int16 == 22)
        #expect(a.value(forKeyPath: "link.link.int16") == nil)
        #expect((a.value(forKeyPath: "links.id") as? [Any?])?.compactMap { $0 as? Int } == [2, 2])
        #expect(a.value(forKeyPath: "id") as? Int == 1)
        #expect(b.value(forKeyPath: "link.id") == nil)
        let all = realm.objects(KVCTyped.self).sorted(byKeyPath: "id")
        #expect(all.value(forKeyPath: "link.id").map { $0 as? Int } == [2, nil])
        #expect(a.links.value(forKeyPath: "int16").compactMap { $0 as? Int16 } == [22, 22])
    }
}
