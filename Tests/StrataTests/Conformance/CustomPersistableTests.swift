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

final class FailableHolder: Object {
    @Persisted var int: Even
    @Persisted var optInt: Even?
}

/// RealmSwift's `testCreateFailable`: stored values that a `FailableCustomPersistable` refuses read as nil where
/// nil is allowed, and trap with RealmSwift's texts where it is not. (Its collection cases need refused values
/// stored in a List or Map, which Strata's create converts and refuses before storing; the element texts are
/// in `FailableConversion.checkElement`.)
@Suite struct FailableCustomPersistableTests {
    /// A holder created from raw values that `Even` refuses (1), in a write left open.
    static func holder(_ dir: TemporaryDirectory) throws -> FailableHolder {
        let realm = try Realm(configuration: .init(fileURL: URL(fileURLWithPath: dir.child("f.realm")), objectTypes: [FailableHolder.self]))
        realm.beginWrite()
        // Written by name (RealmSwift's test writes them through `create`, which stores persisted values as
        // given; Strata's typed `create` converts them first and refuses them).
        realm.dynamicCreate("FailableHolder", value: ["int": 1, "optInt": 1] as [String: Any])
        return try #require(realm.objects(FailableHolder.self).first)
    }

    @Test func refusedValuesReadAsNilWhereNilIsAllowed() throws {
        let dir = try TemporaryDirectory()
        let obj = try Self.holder(dir)
        #expect(obj.optInt == nil)
        obj.realm?.cancelWrite()
    }

    @Test func aRefusedValueOfAPropertyTrapsWithRealmSwiftsText() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = try FailableCustomPersistableTests.holder(TemporaryDirectory()).int
        }
        let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(text.contains("Failed to convert persisted value '1' to type 'Even' in a non-optional context."))
    }
}
