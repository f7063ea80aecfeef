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
