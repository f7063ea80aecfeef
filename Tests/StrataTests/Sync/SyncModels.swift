import Foundation
import TestSupport

@testable import Strata

/// The object graph the sync tests edit: every kind of property change capture records.
final class SyncItem: Object {
    @Persisted(primaryKey: true) var id: String
    @Persisted var title = ""
    @Persisted var count = 0
    @Persisted var score = 0.0
    @Persisted var owner: SyncItem?
    @Persisted var tags: List<String>
    @Persisted var related: List<SyncItem>
    @Persisted var labels: MutableSet<String>
    @Persisted var attributes: Map<String, Int>
    @Persisted var address: SyncAddress?
    @Persisted var places: List<SyncAddress>
    @Persisted var extra: AnyRealmValue

    convenience init(_ id: String, title: String = "") {
        self.init()
        self.id = id
        self.title = title
    }
}

final class SyncAddress: EmbeddedObject {
    @Persisted var city = ""
    @Persisted var zip = 0
}

/// `SyncItem` as a newer schema declares it: one more property (`note`), which older clients do not know.
final class SyncItemV2: Object {
    @Persisted(primaryKey: true) var id: String
    @Persisted var title = ""
    @Persisted var count = 0
    @Persisted var score = 0.0
    @Persisted var owner: SyncItemV2?
    @Persisted var tags: List<String>
    @Persisted var related: List<SyncItemV2>
    @Persisted var labels: MutableSet<String>
    @Persisted var attributes: Map<String, Int>
    @Persisted var address: SyncAddress?
    @Persisted var places: List<SyncAddress>
    @Persisted var extra: AnyRealmValue
    @Persisted var note = ""
    override class func className() -> String { "SyncItem" }
}

/// A type of plain values with an Int primary key: capture's direct path.
final class SyncPlain: Object {
    @Persisted(primaryKey: true) var id: Int
    @Persisted var name = ""
    @Persisted var size = 0
    @Persisted var ratio = 0.0
    @Persisted var when: Date?
    @Persisted var tag: UUID?
}

/// A type of plain values keyed by a String: capture's direct path takes its changes, not its creates.
final class SyncPlainByName: Object {
    @Persisted(primaryKey: true) var name = ""
    @Persisted var score = 0
}

/// A type without a primary key: a file that captures changes refuses it.
final class SyncUnkeyed: Object {
    @Persisted var name = ""
}

enum SyncTesting {
    static func config(_ dir: TemporaryDirectory, _ name: String = "s.realm", captures: Bool = true) -> Realm.Configuration {
        var c = Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child(name)), objectTypes: [SyncItem.self, SyncAddress.self])
        c.capturesChanges = captures
        return c
    }

    static func ref(_ id: String) -> ObjectReference { ObjectReference(type: "SyncItem", primaryKey: .string(id)) }
}
