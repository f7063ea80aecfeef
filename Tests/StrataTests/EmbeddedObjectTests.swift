import Foundation
@testable import Strata
import Testing
import TestSupport

final class EGeo: EmbeddedObject {
    @Persisted var lat = 0.0
    @Persisted var lon = 0.0
}

final class EAddress: EmbeddedObject {
    @Persisted var street = ""
    @Persisted var city = ""
    @Persisted var geo: EGeo?
}

final class EPhone: EmbeddedObject {
    @Persisted var number = ""
    @Persisted var kind = "mobile"
}

final class EContact: Object {
    @Persisted(primaryKey: true) var id: Int
    @Persisted var name = ""
    @Persisted var address: EAddress?
    @Persisted var phones: List<EPhone>
}

/// An embedded type with a primary key, which Realm refuses.
final class EBadEmbedded: EmbeddedObject {
    @Persisted(primaryKey: true) var id: Int
}

@Suite struct EmbeddedObjectTests {
    static func config(_ path: String) -> Realm.Configuration {
        Realm.Configuration(fileURL: URL(fileURLWithPath: path), objectTypes: [EContact.self, EAddress.self, EPhone.self, EGeo.self])
    }

    /// How many records of an embedded type the file holds (they cannot be queried).
    static func stored<T: Object>(_ type: T.Type, _ realm: Realm) -> Int {
        var n = 0
        realm.core.forEachRecord(realm.core.binding(for: type)) { _, _ in
            n += 1
            return true
        }
        return n
    }

    func sample(_ id: Int) -> EContact {
        let c = EContact()
        c.id = id
        c.name = "Ada \(id)"
        let a = EAddress()
        a.street = "\(id) Main St"
        a.city = id % 2 == 0 ? "Oslo" : "Lima"
        let g = EGeo()
        g.lat = Double(id)
        a.geo = g
        c.address = a
        for k in 0..<2 {
            let p = EPhone()
            p.number = "555-\(id)-\(k)"
            c.phones.append(p)
        }
        return c
    }

    @Test func embeddedObjectsRoundTripThroughReopenAndAreQueriedThroughTheirParents() throws {
        let dir = try TemporaryDirectory()
        let path = dir.child("e.realm")
        do {
            let realm = try Realm(configuration: Self.config(path))
            try realm.write {
                for i in 0..<4 { realm.add(sample(i)) }
                realm.create(EContact.self, value: ["id": 10, "name": "Bo", "address": ["street": "Elm", "city": "Pune", "geo": ["lat": 1.5]], "phones": [["number": "1"]]])
            }
            #expect(realm.schema["EAddress"]?.isEmbedded == true)
            #expect(realm.schema["EContact"]?.isEmbedded == false)
        }
        let realm = try Realm(configuration: Self.config(path))
        let c = try #require(realm.object(ofType: EContact.self, forPrimaryKey: 3))
        #expect(c.address?.street == "3 Main St")
        #expect(c.address?.geo?.lat == 3)
        #expect(c.phones.map(\.number) == ["555-3-0", "555-3-1"])
        #expect(realm.object(ofType: EContact.self, forPrimaryKey: 10)?.address?.geo?.lat == 1.5)
        let contacts = realm.objects(EContact.self)
        #expect(Set(contacts.filter("address.city == 'Oslo'").map(\.id)) == [0, 2])
        #expect(Set(contacts.where { $0.address.geo.lat > 1 }.map(\.id)) == [2, 3, 10])
        #expect(Set(contacts.filter("ANY phones.number == '555-1-1'").map(\.id)) == [1])
        #expect(Self.stored(EAddress.self, realm) == 5)
        #expect(Self.stored(EPhone.self, realm) == 9)
        #expect(Self.stored(EGeo.self, realm) == 5)
    }

    @Test func replacingRemovingAndDeletingParentsDeleteTheEmbeddedObjects() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: Self.config(dir.child("e.realm")))
        try realm.write {
            for i in 0..<3 { realm.add(sample(i)) }
        }
        let c0 = try #require(realm.object(ofType: EContact.self, forPrimaryKey: 0))
        let oldAddress = try #require(c0.address)
        // Replacing an embedded object deletes the old one, and what it embeds.
        try realm.write {
            let a = EAddress()
            a.city = "Rome"
            c0.address = a
        }
        #expect(oldAddress.isInvalidated)
        #expect(c0.address?.city == "Rome")
        #expect(Self.stored(EAddress.self, realm) == 3)
        #expect(Self.stored(EGeo.self, realm) == 2)
        // Setting it to nil deletes it.
        try realm.write { c0.address = nil }
        #expect(Self.stored(EAddress.self, realm) == 2)
        // Removing from a list deletes; moving within it keeps.
        let c1 = try #require(realm.object(ofType: EContact.self, forPrimaryKey: 1))
        try realm.write {
            c1.phones.move(from: 0, to: 1)
            c1.phones.append(EPhone())
        }
        #expect(c1.phones.map(\.number) == ["555-1-1", "555-1-0", ""])
        #expect(Self.stored(EPhone.self, realm) == 7)
        try realm.write { c1.phones.remove(at: 0) }
        #expect(c1.phones.map(\.number) == ["555-1-0", ""])
        #expect(Self.stored(EPhone.self, realm) == 6)
        // Deleting a parent deletes everything it embeds, at every depth.
        let c2 = try #require(realm.object(ofType: EContact.self, forPrimaryKey: 2))
        try realm.write { realm.delete(c2) }
        #expect(Self.stored(EAddress.self, realm) == 1)
        #expect(Self.stored(EGeo.self, realm) == 1)
        #expect(Self.stored(EPhone.self, realm) == 4)
        // Deleting an embedded object itself clears its parent's link.
        let address = try #require(c1.address)
        try realm.write { realm.delete(address) }
        #expect(c1.address == nil)
        #expect(Self.stored(EAddress.self, realm) == 0)
        #expect(Self.stored(EGeo.self, realm) == 0)
        // Cancelling leaves nothing behind.
        realm.beginWrite()
        c1.address = EAddress()
        realm.cancelWrite()
        #expect(Self.stored(EAddress.self, realm) == 0)
        // An update by primary key that replaces the embedded object deletes the old one.
        try realm.write { realm.add(sample(1), update: .modified) }
        #expect(Self.stored(EAddress.self, realm) == 1)
        #expect(Self.stored(EPhone.self, realm) == 4)
    }

    @Test func anEmbeddedTypeWithAPrimaryKeyIsRefusedNamingIt() throws {
        let dir = try TemporaryDirectory()
        var config = Self.config(dir.child("e.realm"))
        config.objectTypes = [EBadEmbedded.self]
        #expect(throws: Realm.Error.self) { try Realm(configuration: config) }
        do {
            _ = try Realm(configuration: config)
        } catch {
            #expect("\(error)".contains("Embedded object type 'EBadEmbedded' cannot have a primary key."))
        }
    }

    @Test func misusesTrapWithAMessage() async {
        // An embedded object added on its own.
        await #expect(processExitsWith: .failure) {
            let dir = try TemporaryDirectory()
            let realm = try Realm(configuration: EmbeddedObjectTests.config(dir.child("e.realm")))
            try realm.write { realm.add(EAddress()) }
        }
        // One embedded object given to two parents.
        await #expect(processExitsWith: .failure) {
            let dir = try TemporaryDirectory()
            let realm = try Realm(configuration: EmbeddedObjectTests.config(dir.child("e.realm")))
            try realm.write {
                let a = realm.create(EContact.self, value: ["id": 1, "address": ["city": "x"]])
                let b = realm.create(EContact.self, value: ["id": 2])
                b.address = a.address
            }
        }
        // Embedded objects queried on their own.
        await #expect(processExitsWith: .failure) {
            let dir = try TemporaryDirectory()
            let realm = try Realm(configuration: EmbeddedObjectTests.config(dir.child("e.realm")))
            _ = realm.objects(EAddress.self).count
        }
    }
}
