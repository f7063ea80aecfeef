import Engine
import Foundation
import Strata
import Testing
import TestSupport

// Issue 18, item 2 (O049): with no `objectTypes`, every model class of the program is in the schema at open.
// These two classes are named nowhere in code but by string.

final class DiscoveredOnlyThing: Object {
    @Persisted var value = 0
    @Persisted var parts: List<DiscoveredOnlyPart>
}

final class DiscoveredOnlyPart: EmbeddedObject {
    @Persisted var label = ""
}

@Suite struct ModelDiscoveryTests {
    @Test func O049_anOpenWithNoObjectTypesFindsAModelClassNothingReferencedBefore() throws {
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("d.realm"))
        do {
            let realm = try Realm(configuration: .init(fileURL: url, schemaVersion: 3))
            #expect(realm.schema["DiscoveredOnlyThing"]?.properties.map(\.name) == ["value", "parts"])
            #expect(realm.schema["DiscoveredOnlyPart"]?.isEmbedded == true)
            try realm.write { realm.dynamicCreate("DiscoveredOnlyThing", value: ["value": 1, "parts": [["label": "a"]]]) }
        }
        #expect(try schemaVersionAtURL(url) == 3)
        // The migration block sees it at open, though no code has used the class.
        let calls = Locked(0)
        let realm = try Realm(configuration: .init(fileURL: url, schemaVersion: 4, migrationBlock: { m, old in
            #expect(old == 3)
            m.enumerateObjects(ofType: "DiscoveredOnlyThing") { old, new in
                new?["value"] = (old?["value"] as? Int ?? 0) + 10
                calls.withLock { $0 += 1 }
            }
        }))
        #expect(calls.withLock { $0 } == 1)
        #expect(realm.dynamicObjects("DiscoveredOnlyThing").first?["value"] as? Int == 11)
    }
}
