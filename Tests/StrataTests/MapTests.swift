import Foundation
import Strata
import Testing
import TestSupport

final class MStudent: Object {
    @Persisted(primaryKey: true) var id: Int
    @Persisted var name = ""
    @Persisted var grades: Map<String, Int>
    @Persisted var notes: Map<String, String?>
}

/// A Map of required objects, which Realm refuses (a deleted object leaves its value nil).
final class MBadMap: Object {
    @Persisted var students: Map<String, MStudent>
}

final class MClass: Object {
    @Persisted(primaryKey: true) var id: Int
    @Persisted var byRole: Map<String, MStudent?>
}

enum MapV0 {
    final class Student: Object {
        @Persisted(primaryKey: true) var id: Int
        @Persisted var math = 0
        @Persisted var art = 0
    }
}

enum MapV1 {
    final class Student: Object {
        @Persisted(primaryKey: true) var id: Int
        @Persisted var grades: Map<String, Int>
    }
}

@Suite struct MapTests {
    func config(_ dir: TemporaryDirectory) -> Realm.Configuration {
        Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("map.realm")), objectTypes: [MStudent.self])
    }

    @Test func mapsKeepTheirEntriesThroughWritesAndReopen() throws {
        let dir = try TemporaryDirectory()
        do {
            let realm = try Realm(configuration: config(dir))
            let s = MStudent()
            s.id = 1
            s.grades["math"] = 5
            s.grades["art"] = 3
            s.notes["art"] = "messy"
            s.notes["gym"] = .some(nil)
            // Unmanaged: the map holds its entries.
            #expect(s.grades.keys == ["art", "math"])
            try realm.write {
                realm.add(s)
                realm.create(MStudent.self, value: ["id": 2, "grades": ["math": 2, "bio": 4]])
            }
            #expect(s.grades["math"] == 5)
            try realm.write {
                s.grades["math"] = 6
                s.grades["bio"] = 1
                s.grades.removeObject(for: "art")
                s.grades["none"] = nil
            }
            #expect(s.grades.keys == ["bio", "math"])
            #expect(s.grades.values == [1, 6])
        }
        let realm = try Realm(configuration: config(dir))
        let s = try #require(realm.object(ofType: MStudent.self, forPrimaryKey: 1))
        #expect(Dictionary(uniqueKeysWithValues: s.grades.map { ($0.key, $0.value) }) == ["bio": 1, "math": 6])
        #expect(s.notes["art"] == "messy")
        #expect(s.notes.keys == ["art", "gym"])
        #expect(s.grades.count == 2)
        #expect(realm.object(ofType: MStudent.self, forPrimaryKey: 2)?.grades["bio"] == 4)
        #expect(realm.schema["MStudent"]?["grades"]?.isMap == true)
        #expect(realm.schema["MStudent"]?["grades"]?.isArray == false)
        try realm.write { s.grades.removeAll() }
        #expect(s.grades.isEmpty)
    }

    @Test func queriesReadTheValuesOfAMap() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: config(dir))
        try realm.write {
            realm.create(MStudent.self, value: ["id": 1, "grades": ["math": 5, "art": 3]])
            realm.create(MStudent.self, value: ["id": 2, "grades": ["math": 2]])
            realm.create(MStudent.self, value: ["id": 3])
        }
        let students = realm.objects(MStudent.self)
        #expect(Set(students.filter("ANY grades > 4").map(\.id)) == [1])
        #expect(Set(students.filter("ALL grades >= 2").map(\.id)) == [1, 2, 3])
        #expect(Set(students.filter("grades.@count == 0").map(\.id)) == [3])
        #expect(Set(students.filter("grades.@sum == 8").map(\.id)) == [1])
        #expect(Set(students.filter("grades.@max < 4").map(\.id)) == [2])
        #expect(Set(students.where { $0.grades.count == 1 }.map(\.id)) == [2])
        #expect(Set(students.where { $0.grades.contains(3) }.map(\.id)) == [1])
        #expect(Set(students.where { $0.grades.avg > 3 }.map(\.id)) == [1])
    }

    @Test func aMapOfObjectsLinksThemAndADeletedOneLeavesItsKeyWithNil() throws {
        let dir = try TemporaryDirectory()
        var c = config(dir)
        c.objectTypes = [MClass.self, MStudent.self]
        do {
            let realm = try Realm(configuration: c)
            try realm.write {
                let ada = realm.create(MStudent.self, value: ["id": 1, "name": "Ada"])
                let cls = MClass()
                cls.id = 1
                cls.byRole["lead"] = ada
                // An unmanaged object is added with its map.
                let bo = MStudent()
                bo.id = 2
                bo.name = "Bo"
                cls.byRole["second"] = bo
                realm.add(cls)
                realm.create(MClass.self, value: ["id": 2, "byRole": ["lead": ["id": 3, "name": "Cy"]]])
            }
        }
        let realm = try Realm(configuration: c)
        let cls = try #require(realm.object(ofType: MClass.self, forPrimaryKey: 1))
        #expect(cls.byRole["lead"]??.name == "Ada")
        #expect(cls.byRole["second"]??.name == "Bo")
        #expect(realm.object(ofType: MClass.self, forPrimaryKey: 2)?.byRole["lead"]??.name == "Cy")
        let bo = try #require(realm.object(ofType: MStudent.self, forPrimaryKey: 2))
        #expect(realm.objects(MClass.self).filter("ANY byRole == %@", bo).map(\.id) == [1])
        try realm.write { realm.delete(bo) }
        #expect(cls.byRole.keys == ["lead", "second"])
        #expect(cls.byRole["second"].map { $0 == nil } == true)
        try realm.write { cls.byRole["second"] = realm.object(ofType: MStudent.self, forPrimaryKey: 3) }
        #expect(cls.byRole["second"]??.name == "Cy")
    }

    @Test func aMapOfObjectsIsRefusedWithAMessage() throws {
        let dir = try TemporaryDirectory()
        var c = config(dir)
        c.objectTypes = [MBadMap.self, MStudent.self]
        do {
            _ = try Realm(configuration: c)
            Issue.record("a Map of objects was accepted")
        } catch {
            #expect("\(error)".contains("Map<String, MStudent> property 'students' must be marked as optional."))
        }
    }

    @Test func aMigrationFillsAMapFromOldProperties() throws {
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("m.realm"))
        do {
            let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [MapV0.Student.self]))
            try realm.write {
                realm.create(MapV0.Student.self, value: ["id": 1, "math": 5, "art": 2])
            }
        }
        var c = Realm.Configuration(fileURL: url, objectTypes: [MapV1.Student.self])
        c.schemaVersion = 1
        c.migrationBlock = { migration, _ in
            migration.enumerateObjects(ofType: "Student") { old, new in
                new?["grades"] = ["math": old?["math"] as? Int ?? 0, "art": old?["art"] as? Int ?? 0]
                #expect((new?["grades"] as? Map<String, Int>)?.count == 2)
            }
        }
        let realm = try Realm(configuration: c)
        let s = try #require(realm.object(ofType: MapV1.Student.self, forPrimaryKey: 1))
        #expect(s.grades["math"] == 5)
        #expect(s.grades["art"] == 2)
    }
}
