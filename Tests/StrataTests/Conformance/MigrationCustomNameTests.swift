import Foundation
import Strata
import Testing
import TestSupport

@Suite struct MigrationCustomNameTests {
    @Test(arguments: Conformance.modes)
    func M071_oldObjectsUseTheStoredNameNewObjectsThePublicOne(mode: Realm.Configuration.MigrationMode) throws {
        let dir = try TemporaryDirectory()
        let url = Conformance.url(dir)
        do {
            let realm = try Conformance.open(url, [CN0.Custom.self])
            try realm.write { realm.create(CN0.Custom.self, value: ["intCol": 123]) }
        }
        let realm = try Conformance.open(url, [CN0.Custom.self], version: 1, mode: mode) { m, _ in
            m.enumerateObjects(ofType: "Custom") { old, new in
                #expect(old?["custom_intCol"] as? Int == 123)
                #expect(new?["intCol"] as? Int == 123)
                new?["intCol"] = 124
            }
        }
        #expect(realm.objects(CN0.Custom.self).first?.intCol == 124)
    }
}
