import Engine
import Foundation
import Strata
import Testing
import TestSupport

// Catalogue section 1.9: converting a type to embedded.

enum EC0 {
    final class Parent: Object {
        @Persisted var child: Child?
        @Persisted var mixed: AnyRealmValue
    }
    final class Child: Object { @Persisted var value = 0 }
}

enum EC1 {
    final class Parent: Object {
        @Persisted var child: Child?
        @Persisted var mixed: AnyRealmValue
    }
    final class Child: EmbeddedObject { @Persisted var value = 0 }
}

@Suite struct EmbeddedConversionConformanceTests {
    @Test(arguments: Conformance.modes)
    func M120_aLinkFromAnAnyRealmValueBlocksTheConversionUntilCleared(mode: Realm.Configuration.MigrationMode) throws {
        let dir = try TemporaryDirectory()
        let url = Conformance.url(dir)
        do {
            let realm = try Conformance.open(url, [EC0.Parent.self, EC0.Child.self])
            try realm.write {
                let child = realm.create(EC0.Child.self, value: ["value": 1])
                let parent = realm.create(EC0.Parent.self, value: ["child": child])
                parent.mixed = .object(child)
            }
        }
        let error = try #require(Conformance.openError(url, [EC1.Parent.self, EC1.Child.self], version: 1, mode: mode))
        #expect(error.code == .fail)
        #expect(error.message == "Cannot convert 'Child' to embedded: there is an incoming link from the Mixed property 'Parent.mixed', "
            + "which does not support linking to embedded objects.")
        #expect(try schemaVersionAtURL(url) == 0)
        // Cleared in the block, the same conversion goes through.
        let realm = try Conformance.open(url, [EC1.Parent.self, EC1.Child.self], version: 1, mode: mode) { m, _ in
            m.enumerateObjects(ofType: "Parent") { _, new in new?["mixed"] = nil }
        }
        #expect(realm.objects(EC1.Parent.self).first?.child?.value == 1)
    }

    @Test func M118_theBlockCanGiveAParentANewChildFromADictionary() throws {
        let dir = try TemporaryDirectory()
        let url = Conformance.url(dir)
        do {
            let realm = try Conformance.open(url, [EC0.Parent.self, EC0.Child.self])
            try realm.write {
                let child = realm.create(EC0.Child.self, value: ["value": 42])
                realm.create(EC0.Parent.self, value: ["child": child])
                realm.create(EC0.Parent.self, value: ["child": child])
            }
        }
        let first = Locked(true)
        let realm = try Conformance.open(url, [EC1.Parent.self, EC1.Child.self], version: 1, mode: .blocking) { m, _ in
            m.enumerateObjects(ofType: "Parent") { _, new in
                if !first.withLock({ $0 }) { new?["child"] = ["value": 43] }
                first.withLock { $0 = false }
            }
        }
        #expect(realm.objects(EC1.Parent.self).compactMap(\.child?.value).sorted() == [42, 43])
    }
}
