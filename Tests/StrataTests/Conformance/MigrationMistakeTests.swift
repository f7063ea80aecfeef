import Foundation
import Strata
import Testing
import TestSupport

@Suite struct MigrationMistakeTests {
    @Test func M058_M061_mistakesInTheBlockUseRealmsTexts() throws {
        let dir = try TemporaryDirectory()
        let url = Conformance.url(dir)
        do {
            let realm = try Conformance.open(url, [RN0.Item.self, RN0.Gone.self])
            try realm.write { realm.create(RN0.Item.self, value: ["value": 1]) }
        }
        let wrongType = try #require(Conformance.openError(url, [RN0.Item.self, RN0.Gone.self], version: 1) { m, _ in
            m.enumerateObjects(ofType: "Item") { _, new in new?["label"] = 5 }
        })
        #expect(wrongType.code == .fail)
        #expect(wrongType.message == "Invalid value '5' of type 'Int' for 'string' property 'Item.label'.")
        let unknown = try #require(Conformance.openError(url, [RN0.Item.self, RN0.Gone.self], version: 1) { m, _ in
            m.enumerateObjects(ofType: "Item") { old, _ in _ = old?["nothing"] }
        })
        #expect(unknown.message.hasPrefix("Invalid property name 'nothing' for class 'Item'."))
        #expect(try schemaVersionAtURL(url) == 0)
    }
}
