import Foundation
import Testing
import TestSupport

@testable import Strata

enum MisuseV0 {
    final class Item: Object {
        @Persisted(primaryKey: true) var id: Int
        @Persisted var value = 0
        override class func className() -> String { "MisuseItem" }
    }
}

enum MisuseV1 {
    final class Item: Object {
        @Persisted(primaryKey: true) var id: Int
        @Persisted var value = 0
        @Persisted var label = ""
        override class func className() -> String { "MisuseItem" }
    }
}

/// A transform that creates objects is refused where it runs: at open (the probe, tested in
/// `OnlineMigrationKillTests`) and, once the open is over, when a read runs it (the migration is sealed, so
/// reads need not mark their thread).
@Suite struct TransformMisuseTests {
    @Test func aTransformThatCreatesObjectsOnARead() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = try TemporaryDirectory()
            let url = URL(fileURLWithPath: dir.child("misuse.realm"))
            do {
                let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [MisuseV0.Item.self]))
                try realm.write { for i in 1...3 { realm.create(MisuseV0.Item.self, value: ["id": i, "value": i]) } }
            }
            var config = Realm.Configuration(fileURL: url, schemaVersion: 1, migrationBlock: { m, _ in
                m.transformObjects(ofType: "MisuseItem") { old, new in
                    // The probe at open reads object 1 only; object 2 is read later.
                    if old["id"] as? Int == 2 { m.create("MisuseItem", value: ["id": 99]) }
                    new["label"] = "migrated"
                }
            }, objectTypes: [MisuseV1.Item.self])
            config.migrationMode = .online
            config.backgroundMigration = false
            let realm = try Realm(configuration: config)
            print(realm.object(ofType: MisuseV1.Item.self, forPrimaryKey: 1)?.label ?? "")
            print(realm.object(ofType: MisuseV1.Item.self, forPrimaryKey: 2)?.label ?? "")
        }
        let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(text.contains("Migration.create was called inside transformObjects(ofType: \"MisuseItem\")"), "\(text.suffix(600))")
    }
}
