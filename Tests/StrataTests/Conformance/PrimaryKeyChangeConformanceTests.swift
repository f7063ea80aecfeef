import Foundation
import Strata
import Testing
import TestSupport

@Suite struct PrimaryKeyChangeConformanceTests {
    func file(_ dir: TemporaryDirectory) throws -> URL {
        let url = Conformance.url(dir)
        let realm = try Conformance.open(url, [MB0.Keyed.self])
        try realm.write { for i in 0...4 { realm.create(MB0.Keyed.self, value: [i, i * 10]) } }
        return url
    }

    @Test(arguments: Conformance.modes)
    func M081_deleteDataThenRecreateTheSameKeys(mode: Realm.Configuration.MigrationMode) throws {
        let dir = try TemporaryDirectory()
        let url = try file(dir)
        let realm = try Conformance.open(url, [MB0.Keyed.self], version: 1, mode: mode) { m, _ in
            #expect(m.deleteData(forType: "Keyed"))
            m.create("Keyed", value: [2, 200])
            m.create("Keyed", value: [4, 400])
        }
        #expect(realm.objects(MB0.Keyed.self).map(\.pk).sorted() == [2, 4])
        #expect(realm.object(ofType: MB0.Keyed.self, forPrimaryKey: 4)?.int == 400)
    }

    @Test(arguments: Conformance.modes)
    func M048_removingThePrimaryKeyKeepsTheObjectsAndNewOnesNeverReplaceThem(mode: Realm.Configuration.MigrationMode) throws {
        let dir = try TemporaryDirectory()
        let url = try file(dir)
        let realm = try Conformance.open(url, [MB2.Keyed.self], version: 1, mode: mode) { m, _ in
            m.create("Keyed", value: [0, -1])
        }
        try realm.write {
            realm.create(MB2.Keyed.self, value: [1, -2])
            realm.create(MB2.Keyed.self, value: [1, -3])
        }
        #expect(realm.objects(MB2.Keyed.self).count == 8)
        #expect(realm.objects(MB2.Keyed.self).filter("int >= 0").map(\.int).sorted() == [0, 10, 20, 30, 40])
        #expect(realm.objects(MB2.Keyed.self).filter("pk == 1").count == 3)
    }
}
