import Foundation
import Strata
import Testing
import TestSupport

@Suite struct MigrationCreateFromObjectTests {
    @Test func M073_createTakesAnUnmanagedObjectWithItsCollections() throws {
        let dir = try TemporaryDirectory()
        let url = Conformance.url(dir)
        _ = try Conformance.open(url, [MO0.Bool0.self, MO0.Holder.self])
        let realm = try Conformance.open(url, [MO0.Bool0.self, MO0.Holder.self], version: 1) { m, _ in
            _ = m.create("Holder", value: MO0.Holder(value: ["scores": ["a": 1.5], "ints": [3, 4], "tags": ["t"]]))
        }
        let holder = try #require(realm.objects(MO0.Holder.self).first)
        #expect(holder.scores["a"] == 1.5)
        #expect(Array(holder.ints) == [3, 4])
        #expect(Array(holder.tags) == ["t"])
    }
}

enum MCreate1 {
    final class Child: Object { @Persisted var boolCol = true }
    final class Parent: Object {
        @Persisted var intCol = 123
        @Persisted var stringCol = "a"
        @Persisted var objectCol: MCreate1.Child? = MCreate1.Child()
    }
}

@Suite struct MigrationCreateDefaultsTests {
    @Test func M074_createAppliesDeclaredDefaultsIncludingANewLinkedObject() throws {
        let dir = try TemporaryDirectory()
        let url = Conformance.url(dir)
        _ = try Conformance.open(url, [MO0.Bool0.self])
        let realm = try Conformance.open(url, [MO0.Bool0.self, MCreate1.Child.self, MCreate1.Parent.self], version: 1) { m, _ in
            _ = m.create("Parent")
            _ = m.create("Parent", value: ["intCol": 5])
            // A value that names the link (nil here) keeps it.
            _ = m.create("Parent", value: ["intCol": 6, "objectCol": NSNull()])
        }
        let parents = realm.objects(MCreate1.Parent.self).sorted(byKeyPath: "intCol")
        #expect(parents.map(\.intCol) == [5, 6, 123])
        #expect(parents.map(\.stringCol) == ["a", "a", "a"])
        #expect(parents[2].objectCol?.boolCol == true)
        #expect(parents[0].objectCol != nil)
        #expect(parents[1].objectCol == nil)
        // A new linked object for each created object.
        #expect(realm.objects(MCreate1.Child.self).count == 2)
    }
}
