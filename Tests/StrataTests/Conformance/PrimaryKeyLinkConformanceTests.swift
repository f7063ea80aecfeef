import Foundation
import Strata
import Testing
import TestSupport

@Suite struct PrimaryKeyLinkConformanceTests {
    @Test(arguments: Conformance.modes)
    func M047_M110_makingAnIntPropertyThePrimaryKeyKeepsEveryLinkToItsObjects(mode: Realm.Configuration.MigrationMode) throws {
        let dir = try TemporaryDirectory()
        let url = Conformance.url(dir)
        do {
            let realm = try Conformance.open(url, [PK0.Item.self, PK0.Holder.self])
            try realm.write {
                let items = [(70, "a"), (80, "b"), (90, "c")].map { realm.create(PK0.Item.self, value: [$0.0, $0.1]) }
                let h = realm.create(PK0.Holder.self, value: ["one": items[0], "many": [items[1], items[2]], "byName": ["k": items[2]]])
                h.any = .object(items[1])
            }
        }
        let realm = try Conformance.open(url, [PK1.Item.self, PK1.Holder.self], version: 1, mode: mode)
        let h = try #require(realm.objects(PK1.Holder.self).first)
        #expect(h.one?.name == "a")
        #expect(h.many.map(\.name) == ["b", "c"])
        #expect(h.byName["k"]??.name == "c")
        #expect((h.any.objectValue as? PK1.Item)?.name == "b")
        #expect(realm.object(ofType: PK1.Item.self, forPrimaryKey: 80)?.name == "b")
    }

    @Test(arguments: Conformance.modes)
    func M102_shiftedKeysKeepTheirLinks(mode: Realm.Configuration.MigrationMode) throws {
        let dir = try TemporaryDirectory()
        let url = Conformance.url(dir)
        do {
            let realm = try Conformance.open(url, [PK1.Item.self, PK1.Holder.self])
            try realm.write {
                let items = (1...3).map { realm.create(PK1.Item.self, value: [$0, "n\($0)"]) }
                realm.create(PK1.Holder.self, value: ["one": items[0], "many": items])
            }
        }
        let realm = try Conformance.open(url, [PK1.Item.self, PK1.Holder.self], version: 1, mode: mode) { m, _ in
            m.enumerateObjects(ofType: "Item") { _, new in new!["code"] = (new!["code"] as! Int) + 1 }
        }
        let h = try #require(realm.objects(PK1.Holder.self).first)
        #expect(h.one?.code == 2)
        #expect(h.many.map(\.name) == ["n1", "n2", "n3"])
        #expect(h.many.map(\.code) == [2, 3, 4])
    }
}
