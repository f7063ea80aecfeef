import Foundation
import Strata
import Testing
import TestSupport

@Suite struct ProjectionCheckTests {
    @Test func O055_aProjectedKeyPathOutsideThePersistedModelTrapsAtFirstUse() async throws {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = try TemporaryDirectory()
            let realm = try Realm(configuration: Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("p.realm")), objectTypes: [SVPerson.self]))
            try realm.write { realm.create(SVPerson.self, value: ["name": "a"]) }
            // Counting needs no projection; making the first one checks the type.
            guard realm.objects(SVIgnoredProjection.self).count == 1 else { return }
            _ = realm.objects(SVIgnoredProjection.self).first
        }
        let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(text.contains("@Projected property 'ignored' must be a part of Realm object"))
    }

    @Test func aTransformingKeyPathOfAPersistedPropertyIsValid() throws {
        let dir = try TemporaryDirectory()
        let realm = try Conformance.open(Conformance.url(dir), [SVPerson.self])
        try realm.write { realm.create(SVPerson.self, value: ["name": "ann"]) }
        #expect(realm.objects(SVGoodProjection.self).first?.shout == "ANN")
    }
}
