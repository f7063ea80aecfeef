import Foundation
import Strata
import Testing
import TestSupport

@Suite struct MigrationAnyValueTests {
    @Test(arguments: Conformance.modes)
    func M060_M064_anAnyRealmValueOfANewObjectTakesValuesAndObjects(mode: Realm.Configuration.MigrationMode) throws {
        let dir = try TemporaryDirectory()
        let url = Conformance.url(dir)
        do {
            let realm = try Conformance.open(url, [MO0.Bool0.self, MO0.Holder.self])
            try realm.write {
                realm.create(MO0.Holder.self, value: ["ints": [1]])
                realm.create(MO0.Holder.self, value: ["ints": [2]])
            }
        }
        let realm = try Conformance.open(url, [MO0.Bool0.self, MO0.Holder.self], version: 1, mode: mode) { m, _ in
            m.enumerateObjects(ofType: "Holder") { old, new in
                if (old?["ints"] as? List<Int>)?.first == 1 {
                    new?["any"] = "text"
                } else {
                    new?["any"] = m.create("Bool0", value: [true])
                }
            }
        }
        let values = realm.objects(MO0.Holder.self).sorted { ($0.ints.first ?? 0) < ($1.ints.first ?? 0) }.map(\.any)
        #expect(values.first == .string("text"))
        #expect((values.last?.objectValue as? MO0.Bool0)?.boolCol == true)
    }
}
