import Foundation
import Strata
import Testing
import TestSupport

@Suite struct CustomPersistableTests {
    @Test func customTypesAreStoredAsTheirPersistedType() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: .init(fileURL: URL(fileURLWithPath: dir.child("c.realm")), objectTypes: [APISite.self]))
        try realm.write {
            let site = APISite()
            site.id = 1
            site.url = StoredURL(URL(string: "https://example.org/a")!)
            site.even = Even(persistedValue: 4)!
            realm.add(site)
        }
        let site = try #require(realm.object(ofType: APISite.self, forPrimaryKey: 1))
        #expect(site.url.url.absoluteString == "https://example.org/a")
        #expect(site.mirror == nil)
        #expect(site.even.value == 4)
        #expect(realm.objects(APISite.self).filter("url == %@", "https://example.org/a").count == 1)
        #expect(realm.schema["APISite"]?["url"]?.type == .string)
    }
}
