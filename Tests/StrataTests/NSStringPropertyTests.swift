import Foundation
import Strata
import Testing
import TestSupport

final class NSSItem: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name: NSString = "A"
    @Persisted var nickname: NSString?
}

/// Issue 56, item 7: `NSString` as a persisted value, as models ported from RealmSwift's Objective-C-era
/// declarations have it (RealmSwift's own test models: `optNSStringCol: NSString?`). It is a string property.
@Suite struct NSStringPropertyTests {
    @Test func nsStringPropertiesStoreAndReadStrings() throws {
        let dir = try TemporaryDirectory()
        let config = Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("s.realm")), objectTypes: [NSSItem.self])
        let realm = try Realm(configuration: config)
        let unmanaged = NSSItem()
        #expect(unmanaged.name == "A")
        #expect(unmanaged.nickname == nil)
        unmanaged.nickname = NSString(format: "%d", 7)
        try realm.write { realm.add(unmanaged) }
        let item = try #require(realm.object(ofType: NSSItem.self, forPrimaryKey: 0))
        #expect(item.name == "A")
        #expect(item.nickname == "7")
        try realm.write {
            item.name = "B"
            item.nickname = nil
        }
        #expect(item.name == "B" && item.nickname == nil)
        #expect(realm.objects(NSSItem.self).filter("name == 'B'").count == 1)
        #expect(realm.schema["NSSItem"]?.properties.first { $0.name == "nickname" }?.type == .string)
        #expect(realm.schema["NSSItem"]?.properties.first { $0.name == "nickname" }?.isOptional == true)
    }
}
