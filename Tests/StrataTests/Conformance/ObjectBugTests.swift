import Foundation
import Strata
import Testing
import TestSupport

// Issue 18, item 4: RealmSwift behaviours its own tests rely on.

final class OBWidths: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var int8: Int8 = 1
    @Persisted var int16: Int16 = 2
    @Persisted var int32: Int32 = 3
    @Persisted var int64: Int64 = 4
    @Persisted var name = ""
    @Persisted var note = "keep"
}

final class OBOptionalKey: Object {
    @Persisted(primaryKey: true) var id: Int?
    @Persisted var value = 0
}

final class OBGenerated: Object {
    @Persisted(primaryKey: true) var _id: ObjectId
    @Persisted var uuid: UUID
    @Persisted var count = 0
}

final class OBChild: EmbeddedObject {
    @Persisted var value = 0
}

final class OBParent: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var child: OBChild?
    @Persisted var children: List<OBChild>
}

final class OBTarget: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted(originProperty: "target") var sources: LinkingObjects<OBSource>
}

final class OBSource: Object {
    @Persisted var target: OBTarget?
}

final class OBMixed: Object {
    @Persisted var any: AnyRealmValue
    @Persisted var optionalInts: List<Int?>
    @Persisted var ints: List<Int>
}

@Suite struct ObjectBugTests {
    static func realm(_ dir: TemporaryDirectory) throws -> Realm {
        try Realm(configuration: .init(
            fileURL: URL(fileURLWithPath: dir.child("o.realm")),
            objectTypes: [OBWidths.self, OBOptionalKey.self, OBGenerated.self, OBChild.self, OBParent.self, OBTarget.self, OBSource.self, OBMixed.self]))
    }

    @Test func O009_newObjectsGetANewObjectIdAndUUID() throws {
        let a = OBGenerated(), b = OBGenerated()
        #expect(a._id != b._id)
        #expect(a.uuid != b.uuid)
        #expect(a._id == a._id)
        let dir = try TemporaryDirectory()
        let realm = try Self.realm(dir)
        try realm.write {
            realm.add(a)
            realm.add(b)
        }
        #expect(realm.objects(OBGenerated.self).count == 2)
        #expect(realm.object(ofType: OBGenerated.self, forPrimaryKey: a._id)?.uuid == a.uuid)
    }

    @Test func valueForKeyGivesTheDeclaredIntegerWidth() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.realm(dir)
        let o = try realm.write { realm.create(OBWidths.self, value: ["id": 1]) }
        #expect(o.value(forKey: "int8") as? Int8 == 1)
        #expect(o.value(forKey: "int16") as? Int16 == 2)
        #expect(o.value(forKey: "int32") as? Int32 == 3)
        #expect(o.value(forKey: "int64") as? Int64 == 4)
        #expect(OBWidths().value(forKey: "int8") as? Int8 == 1)
    }

    @Test func O010_optionalPrimaryKeysTakeNilAndNSNull() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.realm(dir)
        try realm.write {
            realm.create(OBOptionalKey.self, value: ["id": NSNull(), "value": 7])
            realm.create(OBOptionalKey.self, value: ["id": 1, "value": 8])
        }
        #expect(realm.object(ofType: OBOptionalKey.self, forPrimaryKey: nil as Int?)?.value == 7)
        #expect(realm.object(ofType: OBOptionalKey.self, forPrimaryKey: NSNull())?.value == 7)
        #expect(realm.object(ofType: OBOptionalKey.self, forPrimaryKey: 1)?.value == 8)
    }

    @Test func O014_updateModifiedWithAPartialDictionaryKeepsTheOtherProperties() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.realm(dir)
        try realm.write { realm.create(OBWidths.self, value: ["id": 1, "name": "a", "note": "changed"]) }
        try realm.write {
            realm.create(OBWidths.self, value: ["id": 1, "name": "b"], update: .modified)
            realm.create(OBWidths.self, value: ["id": 1, "int8": 9], update: .all)
        }
        let o = try #require(realm.object(ofType: OBWidths.self, forPrimaryKey: 1))
        #expect(o.name == "b")
        #expect(o.note == "changed")
        #expect(o.int8 == 9)
    }

    @Test func embeddedObjectsAreUpdatedThroughTheirParent() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.realm(dir)
        try realm.write { realm.create(OBParent.self, value: ["id": 1, "child": ["value": 1], "children": [["value": 2]]]) }
        try realm.write {
            realm.create(OBParent.self, value: ["id": 1, "child": ["value": 10]], update: .modified)
            realm.add(OBParent(value: ["id": 1, "child": ["value": 20], "children": [["value": 30], ["value": 31]]]), update: .all)
        }
        let p = try #require(realm.object(ofType: OBParent.self, forPrimaryKey: 1))
        #expect(p.child?.value == 20)
        #expect(p.children.map(\.value) == [30, 31])
        #expect(realm.objects(OBParent.self).count == 1)
    }

    @Test func O031_createFromAManagedObjectCopiesItsEmbeddedObjects() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.realm(dir)
        let original = try realm.write { realm.create(OBParent.self, value: ["id": 1, "child": ["value": 1]]) }
        let copy = try realm.write { realm.create(OBParent.self, value: ["id": 2, "child": original.child as Any]) }
        try realm.write { copy.child?.value = 5 }
        #expect(original.child?.value == 1)
        #expect(copy.child?.value == 5)
    }

    @Test func O024_linkingObjectsThroughKeyValueCoding() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.realm(dir)
        let target = try realm.write { () -> OBTarget in
            let t = realm.create(OBTarget.self, value: ["id": 1])
            realm.create(OBSource.self, value: ["target": t])
            return t
        }
        #expect((target.value(forKey: "sources") as? LinkingObjects<OBSource>)?.count == 1)
    }

    @Test func createThroughABaseClassReference() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.realm(dir)
        let type: Object.Type = OBWidths.self
        try realm.write { _ = realm.create(type, value: ["id": 5]) }
        #expect(realm.object(ofType: OBWidths.self, forPrimaryKey: 5) != nil)
    }

    @Test func O002_O058_optionalityInTheSchema() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.realm(dir)
        let schema = try #require(realm.schema["OBMixed"])
        // O058, O002: an AnyRealmValue is never marked optional; a collection is when its elements are.
        #expect(schema["any"]?.isOptional == false)
        #expect(schema["optionalInts"]?.isOptional == true)
        #expect(schema["ints"]?.isOptional == false)
    }
}

class OBAnimal: Object {
    @Persisted var name = ""
}

final class OBDog: OBAnimal {
    @Persisted var barks = false
}

final class OBZoo: Object {
    @Persisted var star: OBAnimal?
    @Persisted var animals: List<OBAnimal>
}
