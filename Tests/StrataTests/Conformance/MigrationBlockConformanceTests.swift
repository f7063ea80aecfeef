import Engine
import Foundation
import Strata
import Testing
import TestSupport

// Catalogue sections 1.4, 1.5 and 1.7: the migration block, create/delete/deleteData, primary keys.

enum MB0 {
    final class IntObject: Object { @Persisted var intCol = 0 }
    final class StringObject: Object { @Persisted var stringCol = "" }
    final class Keyed: Object {
        @Persisted(primaryKey: true) var pk = 0
        @Persisted var int = 0
    }
    final class Named: Object {
        @Persisted(primaryKey: true) var name = ""
        @Persisted var other = ""
    }
}

enum MB1 {
    final class Fresh: Object { @Persisted var value = 0 }
    final class Parent: Object { @Persisted var child: Child? }
    final class Child: EmbeddedObject { @Persisted var value = 0 }
}

@Suite struct MigrationBlockConformanceTests {
    func file(_ dir: TemporaryDirectory) throws -> URL {
        let url = Conformance.url(dir)
        let realm = try Conformance.open(url, [MB0.IntObject.self, MB0.StringObject.self, MB0.Keyed.self, MB0.Named.self])
        try realm.write {
            realm.create(MB0.IntObject.self, value: [1])
            realm.create(MB0.IntObject.self, value: [2])
            for i in 1...10 { realm.create(MB0.Keyed.self, value: [i, i + 4]) }
            realm.create(MB0.Named.self, value: ["a", "x"])
            realm.create(MB0.Named.self, value: ["b", "y"])
        }
        return url
    }

    @Test(arguments: Conformance.modes)
    func M052_M053_M067_M140_enumerationOfEmptyUnknownAndRemovedTypes(mode: Realm.Configuration.MigrationMode) throws {
        let dir = try TemporaryDirectory()
        let url = try file(dir)
        let calls = Locked<[String]>([])
        let realm = try Conformance.open(url, [MB0.StringObject.self], version: 1, mode: mode) { m, _ in
            m.enumerateObjects(ofType: "StringObject") { _, _ in calls.withLock { $0.append("string") } }
            m.enumerateObjects(ofType: "NoSuchClass") { _, _ in calls.withLock { $0.append("none") } }
            m.enumerateObjects(ofType: "IntObject") { old, new in
                #expect((old?["intCol"] as? Int ?? 0) > 0)
                #expect(new == nil)
                calls.withLock { $0.append("int") }
            }
            #expect(m.oldSchema["IntObject"] != nil)
            #expect(m.newSchema.objectSchema.map(\.className) == ["StringObject"])
        }
        #expect(calls.withLock { $0 } == ["int", "int"])
        #expect(realm.schema.objectSchema.map(\.className) == ["StringObject"])
        // The removed type's data stays in the file (M021).
        #expect(try Conformance.open(url, [MB0.IntObject.self], version: 1).objects(MB0.IntObject.self).count == 2)
    }

    @Test(arguments: Conformance.modes)
    func M054_aNewTypeEnumeratesTheObjectsCreatedEarlierInTheBlock(mode: Realm.Configuration.MigrationMode) throws {
        let dir = try TemporaryDirectory()
        let url = try file(dir)
        let calls = Locked(0)
        let realm = try Conformance.open(url, [MB0.IntObject.self, MB1.Fresh.self], version: 1, mode: mode) { m, _ in
            m.enumerateObjects(ofType: "Fresh") { _, _ in Issue.record("nothing created yet") }
            m.create("Fresh", value: [1])
            m.create("Fresh", value: [2])
            m.enumerateObjects(ofType: "Fresh") { old, new in
                #expect(old == nil)
                new?["value"] = (new?["value"] as? Int ?? 0) * 10
                calls.withLock { $0 += 1 }
            }
        }
        #expect(calls.withLock { $0 } == 2)
        #expect(realm.objects(MB1.Fresh.self).map(\.value).sorted() == [10, 20])
    }

    @Test(arguments: Conformance.modes)
    func M078_afterDeleteDataNothingIsEnumeratedAndLaterCreatesSurvive(mode: Realm.Configuration.MigrationMode) throws {
        let dir = try TemporaryDirectory()
        let url = try file(dir)
        let realm = try Conformance.open(url, [MB0.IntObject.self], version: 1, mode: mode) { m, _ in
            #expect(m.deleteData(forType: "IntObject"))
            m.create("IntObject", value: [5])
            m.enumerateObjects(ofType: "IntObject") { _, _ in Issue.record("enumerated after deleteData") }
            #expect(!m.deleteData(forType: "NoSuchClass"))
        }
        #expect(realm.objects(MB0.IntObject.self).map(\.intCol) == [5])
    }

    @Test(arguments: Conformance.modes)
    func M102_primaryKeysShiftInPlace(mode: Realm.Configuration.MigrationMode) throws {
        let dir = try TemporaryDirectory()
        let url = try file(dir)
        let realm = try Conformance.open(url, [MB0.Keyed.self, MB0.Named.self], version: 1, mode: mode) { m, _ in
            m.enumerateObjects(ofType: "Keyed") { _, new in new!["pk"] = (new!["pk"] as! Int) + 1 }
            m.enumerateObjects(ofType: "Named") { _, new in new!["name"] = new!["other"] }
        }
        try realm.write { realm.create(MB0.Keyed.self, value: [1, 4]) }
        let all = realm.objects(MB0.Keyed.self)
        #expect(all.count == 11)
        #expect(all.allSatisfy { $0.pk + 3 == $0.int })
        #expect(realm.object(ofType: MB0.Keyed.self, forPrimaryKey: 11)?.int == 14)
        #expect(realm.object(ofType: MB0.Named.self, forPrimaryKey: "y") != nil)
        #expect(realm.object(ofType: MB0.Named.self, forPrimaryKey: "a") == nil)
    }

    @Test(arguments: Conformance.modes)
    func M107_aCreatedDuplicateKeyFailsAtTheEndUnlessTheOldObjectMoves(mode: Realm.Configuration.MigrationMode) throws {
        let dir = try TemporaryDirectory()
        let url = try file(dir)
        let error = try #require(Conformance.openError(url, [MB0.Keyed.self], version: 1, mode: mode) { m, _ in
            m.create("Keyed", value: ["pk": 3, "int": 0])
        })
        #expect(error.code == .fail)
        #expect(error.message == "Primary key property 'Keyed.pk' has duplicate values after migration.")
        #expect(try schemaVersionAtURL(url) == 0)
        let realm = try Conformance.open(url, [MB0.Keyed.self], version: 1, mode: mode) { m, _ in
            m.enumerateObjects(ofType: "Keyed") { old, new in
                if old?["pk"] as? Int == 3 { new!["pk"] = 50 }
            }
            m.create("Keyed", value: ["pk": 3, "int": 0])
        }
        #expect(realm.objects(MB0.Keyed.self).count == 11)
        #expect(realm.object(ofType: MB0.Keyed.self, forPrimaryKey: 50)?.int == 7)
        #expect(realm.object(ofType: MB0.Keyed.self, forPrimaryKey: 3)?.int == 0)
    }

    @Test(arguments: Conformance.modes)
    func M108_placeholderKeysFixedLaterInTheBlock(mode: Realm.Configuration.MigrationMode) throws {
        let dir = try TemporaryDirectory()
        let url = try file(dir)
        let realm = try Conformance.open(url, [MB0.Keyed.self, MB0.Named.self], version: 1, mode: mode) { m, _ in
            let created = (0..<10).map { _ in m.create("Keyed", value: ["pk": 0, "int": 0]) }
            for (i, o) in created.enumerated() { o["pk"] = 100 + i }
            let named = (0..<3).map { _ in m.create("Named", value: ["name": "", "other": ""]) }
            for (i, o) in named.enumerated() { o["name"] = "n\(i)" }
        }
        #expect(realm.objects(MB0.Keyed.self).count == 20)
        #expect(Set(realm.objects(MB0.Keyed.self).map(\.pk)).count == 20)
        #expect(realm.object(ofType: MB0.Keyed.self, forPrimaryKey: 105) != nil)
        #expect(realm.object(ofType: MB0.Named.self, forPrimaryKey: "n2") != nil)
        #expect(realm.objects(MB0.Named.self).count == 5)
    }

    @Test func M075_M076_createOfAnUnknownOrEmbeddedTypeFailsTheMigration() throws {
        let dir = try TemporaryDirectory()
        let url = try file(dir)
        let unknown = try #require(Conformance.openError(url, [MB0.IntObject.self], version: 1) { m, _ in _ = m.create("NoSuchObject") })
        #expect(unknown.message == "Object type 'NoSuchObject' not managed by the Realm")
        let embedded = try #require(Conformance.openError(url, [MB0.IntObject.self, MB1.Parent.self, MB1.Child.self], version: 1) { m, _ in
            _ = m.create("Child", value: ["value": 1])
        })
        #expect(embedded.message.hasPrefix("Embedded objects cannot be created directly"))
        #expect(try schemaVersionAtURL(url) == 0)
    }
}

enum MB2 {
    /// MB0.Keyed without its primary key.
    final class Keyed: Object {
        @Persisted var pk = 0
        @Persisted var int = 0
    }
}

enum PK0 {
    final class Item: Object {
        @Persisted var code = 0
        @Persisted var name = ""
    }
    final class Holder: Object {
        @Persisted var one: PK0.Item?
        @Persisted var many: List<PK0.Item>
        @Persisted var byName: Map<String, PK0.Item?>
        @Persisted var any: AnyRealmValue
    }
}

enum PK1 {
    /// `code` made the primary key.
    final class Item: Object {
        @Persisted(primaryKey: true) var code = 0
        @Persisted var name = ""
    }
    final class Holder: Object {
        @Persisted var one: PK1.Item?
        @Persisted var many: List<PK1.Item>
        @Persisted var byName: Map<String, PK1.Item?>
        @Persisted var any: AnyRealmValue
    }
}
