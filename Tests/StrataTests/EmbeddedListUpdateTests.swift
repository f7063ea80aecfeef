import Foundation
@testable import Strata
import Testing
import TestSupport

/// Updating a parent whose list of embedded objects grows or shrinks (`add(_:update:)`, `create(_:value:update:)`).
@Suite struct EmbeddedListUpdateTests {
    @Test(arguments: [Realm.UpdatePolicy.modified, .all])
    func O031_aParentsEmbeddedListGrowsAndShrinksThroughAnUpdate(policy: Realm.UpdatePolicy) throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: EmbeddedObjectTests.config(dir.child("e.realm")))
        try realm.write { realm.create(EContact.self, value: ["id": 1, "name": "ann", "phones": [["number": "1"], ["number": "2"]]]) }
        // Grows: an unmanaged parent with three phones.
        let grown = EContact()
        grown.id = 1
        grown.name = "ann"
        grown.phones.append(objectsIn: ["1", "2", "3"].map { EPhone(value: ["number": $0]) })
        try realm.write { realm.add(grown, update: policy) }
        var stored = try #require(realm.object(ofType: EContact.self, forPrimaryKey: 1))
        #expect(stored.phones.map(\.number) == ["1", "2", "3"])
        // Shrinks, through create.
        try realm.write { realm.create(EContact.self, value: ["id": 1, "phones": [["number": "9"]]], update: policy) }
        stored = try #require(realm.object(ofType: EContact.self, forPrimaryKey: 1))
        #expect(stored.phones.map(\.number) == ["9"] && stored.name == "ann")
        // Grows again, through create, with an address.
        try realm.write { realm.create(EContact.self, value: ["id": 1, "phones": [["number": "7"], ["number": "8"]], "address": ["city": "Oslo"]], update: policy) }
        stored = try #require(realm.object(ofType: EContact.self, forPrimaryKey: 1))
        #expect(stored.phones.map(\.number) == ["7", "8"] && stored.address?.city == "Oslo")
        #expect(EmbeddedObjectTests.stored(EPhone.self, realm) == 2)
        // Shrinks through add, to none, then grows from none.
        let none = EContact(value: ["id": 1, "name": "ann"])
        try realm.write { realm.add(none, update: policy) }
        #expect(realm.object(ofType: EContact.self, forPrimaryKey: 1)?.phones.isEmpty == true)
        let again = EContact(value: ["id": 1, "name": "ann", "phones": [["number": "5"], ["number": "6"], ["number": "7"]]])
        try realm.write { realm.add(again, update: policy) }
        #expect(realm.object(ofType: EContact.self, forPrimaryKey: 1)?.phones.map(\.number) == ["5", "6", "7"])
        #expect(EmbeddedObjectTests.stored(EPhone.self, realm) == 3)
    }

    /// Objects made from a managed object holding embedded ones (`init(value:)`, `create(_:value:)`, in the same
    /// Realm or another) copy the embedded objects; linking a managed embedded object is refused.
    @Test func O031_O028_embeddedObjectsAreCopiedFromManagedOnesAndNeverShared() async throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: EmbeddedObjectTests.config(dir.child("a.realm")))
        let other = try Realm(configuration: EmbeddedObjectTests.config(dir.child("b.realm")))
        let source = try realm.write {
            realm.create(EContact.self, value: ["id": 1, "name": "ann", "address": ["city": "Oslo", "geo": ["lat": 1.5]], "phones": [["number": "1"]]])
        }
        let copy = EContact(value: source)
        copy.id = 2
        try realm.write { realm.add(copy) }
        let copied = try #require(realm.object(ofType: EContact.self, forPrimaryKey: 2))
        #expect(copied.address?.city == "Oslo" && copied.address?.geo?.lat == 1.5 && copied.phones.map(\.number) == ["1"])
        try realm.write { copied.address?.city = "Bergen" }
        #expect(source.address?.city == "Oslo")
        try other.write { other.create(EContact.self, value: source) }
        #expect(other.object(ofType: EContact.self, forPrimaryKey: 1)?.address?.geo?.lat == 1.5)
        let address = EAddress(value: source.address!)
        #expect(address.realm == nil && address.city == "Oslo")
        #expect(EmbeddedObjectTests.stored(EAddress.self, realm) == 2)
        let shared = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = try TemporaryDirectory()
            let realm = try Realm(configuration: EmbeddedObjectTests.config(dir.child("c.realm")))
            try realm.write {
                let a = realm.create(EContact.self, value: ["id": 1, "address": ["city": "Oslo"]])
                let b = realm.create(EContact.self, value: ["id": 2])
                b.address = a.address
            }
        }
        let text = String(decoding: shared?.standardErrorContent ?? [], as: UTF8.self)
        #expect(text.contains("Can't set link to existing managed embedded object"), "\(text.suffix(300))")
    }
}
