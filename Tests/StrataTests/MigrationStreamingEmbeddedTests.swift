import Foundation
import Testing
import TestSupport
@testable import Strata

/// An embedded type that was embedded before streams its enumerated objects (nothing of the whole type is
/// needed at the end); their parents still reach them.
@Suite struct MigrationStreamingEmbeddedTests {
    @Test func enumeratedEmbeddedObjectsStreamAndStayWithTheirParents() throws {
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("homes.realm"))
        do {
            let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [SE1.Home.self, SE1.Address.self]))
            try realm.write {
                for i in 0..<100 { realm.create(SE1.Home.self, value: ["name": "h\(i)", "address": ["street": "s\(i)"]]) }
            }
        }
        var c = Realm.Configuration(fileURL: url, schemaVersion: 2, migrationBlock: { m, _ in
            m.enumerateObjects(ofType: "Address") { old, new in new!["city"] = "c-" + (old!["street"] as! String) }
        }, objectTypes: [SE2.Home.self, SE2.Address.self])
        c.migrationSpillBytes = 800
        let realm = try Realm(configuration: c)
        #expect(realm.core.shared.objectsStreamed.current == 100)
        let homes = realm.objects(SE2.Home.self)
        #expect(homes.count == 100)
        for home in homes {
            let i = home.name.dropFirst()
            #expect(home.address?.street == "s\(i)" && home.address?.city == "c-s\(i)", "\(home.name)")
        }
    }
}
