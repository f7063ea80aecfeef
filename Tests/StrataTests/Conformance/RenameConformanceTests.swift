import Foundation
import Strata
import Testing
import TestSupport

// Catalogue section 1.6: renameProperty.

enum RN0 {
    final class Item: Object {
        @Persisted var value = 0
        @Persisted var label = ""
        @Persisted var note: String?
        @Persisted var link: RN0.Item?
    }
    final class Gone: Object { @Persisted var x = 0 }
}

enum RN1 {
    /// `value` renamed to `renamed`.
    final class Item: Object {
        @Persisted var renamed = 0
        @Persisted var label = ""
        @Persisted var note: String?
        @Persisted var link: RN0.Item?
    }
}

enum RN2 {
    /// `label` still exists, `value` became a String, `note` became required, `link` points elsewhere.
    final class Item: Object {
        @Persisted var label = ""
        @Persisted var label2 = ""
        @Persisted var text = ""
        @Persisted var required = ""
        @Persisted var other: RN0.Gone?
    }
}

@Suite struct RenameConformanceTests {
    func file(_ dir: TemporaryDirectory) throws -> URL {
        let url = Conformance.url(dir)
        let realm = try Conformance.open(url, [RN0.Item.self, RN0.Gone.self])
        try realm.write {
            let a = realm.create(RN0.Item.self, value: ["value": 10, "label": "a", "note": "n"])
            a.link = a
        }
        return url
    }

    @Test(arguments: Conformance.modes)
    func M088_renamesChainThroughIntermediateNames(mode: Realm.Configuration.MigrationMode) throws {
        let dir = try TemporaryDirectory()
        let url = try file(dir)
        let realm = try Conformance.open(url, [RN1.Item.self, RN0.Gone.self], version: 1, mode: mode) { m, _ in
            m.renameProperty(onType: "Item", from: "value", to: "a")
            m.renameProperty(onType: "Item", from: "a", to: "b")
            m.renameProperty(onType: "Item", from: "b", to: "renamed")
        }
        #expect(realm.objects(RN1.Item.self).first?.renamed == 10)
        #expect(realm.objects(RN1.Item.self).first?.label == "a")
    }

    @Test func M084_aRenameTakesEffectAtOnceInsideTheBlock() throws {
        let dir = try TemporaryDirectory()
        let url = try file(dir)
        _ = try Conformance.open(url, [RN1.Item.self, RN0.Gone.self], version: 1) { m, _ in
            m.renameProperty(onType: "Item", from: "value", to: "renamed")
            m.enumerateObjects(ofType: "Item") { old, new in
                #expect(new?["renamed"] as? Int == 10)
                #expect(old?["value"] as? Int == 10)
            }
        }
    }

    /// The error a rename gives, and that it leaves the file as it was (M097).
    func renameError(_ url: URL, _ block: @escaping Realm.MigrationBlock) throws -> String {
        let error = try #require(Conformance.openError(url, [RN2.Item.self, RN0.Gone.self], version: 1, block: block))
        #expect(error.code == .fail)
        #expect(try schemaVersionAtURL(url) == 0)
        return error.message
    }

    @Test func M090_to_M097_aFailedRenameFailsWithRealmsMessageAndWritesNothing() throws {
        let dir = try TemporaryDirectory()
        let url = try file(dir)
        // M090: the source still exists in the new model.
        #expect(try renameError(url) { m, _ in m.renameProperty(onType: "Item", from: "label", to: "label2") }
            == "Cannot rename property 'Item.label' to 'label2' because the source property still exists.")
        // M091: the source is not stored.
        #expect(try renameError(url) { m, _ in m.renameProperty(onType: "Item", from: "nonExistent", to: "text") }
            == "Cannot rename property 'Item.nonExistent' because it does not exist.")
        // M092: the target is not in the new model, checked when the block returns.
        #expect(try renameError(url) { m, _ in m.renameProperty(onType: "Item", from: "value", to: "nowhere") }.contains(
            "Renamed property 'Item.nowhere' does not exist."))
        // M093: the value type would change.
        #expect(try renameError(url) { m, _ in m.renameProperty(onType: "Item", from: "value", to: "text") }
            == "Cannot rename property 'Item.value' to 'text' because it would change from type 'int' to 'string'.")
        // M094: the link target would change.
        #expect(try renameError(url) { m, _ in m.renameProperty(onType: "Item", from: "link", to: "other") }
            == "Cannot rename property 'Item.link' to 'other' because it would change from type '<Item>' to '<Gone>'.")
        // M095: optional to required.
        #expect(try renameError(url) { m, _ in m.renameProperty(onType: "Item", from: "note", to: "required") }
            == "Cannot rename property 'Item.note' to 'required' because it would change from optional to required.")
        // M096: a type that does not exist.
        #expect(try renameError(url) { m, _ in m.renameProperty(onType: "Nope", from: "x", to: "y") }
            == "Cannot rename properties for type 'Nope' because it does not exist.")
        // The file is as it was.
        let realm = try Conformance.open(url, [RN0.Item.self, RN0.Gone.self])
        #expect(realm.objects(RN0.Item.self).first?.value == 10)
    }

    @Test func M096_renamingOnATypeRemovedFromTheModel() throws {
        let dir = try TemporaryDirectory()
        let url = try file(dir)
        let error = try #require(Conformance.openError(url, [RN1.Item.self], version: 1) { m, _ in
            m.renameProperty(onType: "Item", from: "value", to: "renamed")
            m.renameProperty(onType: "Gone", from: "x", to: "y")
        })
        #expect(error.code == .fail)
        #expect(error.message == "Cannot rename properties for type 'Gone' because it has been removed from the Realm.")
    }
}
