import Foundation
@testable import Strata
import Testing
import TestSupport

@Suite struct LinkNotificationTests {
    @Test func keyPathsThroughLinksFireForTheLinkedPropertyOnly() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: .init(
            fileURL: URL(fileURLWithPath: dir.child("n.realm")), objectTypes: [QPerson.self, QDog.self, QVet.self]))
        try realm.write {
            realm.create(QPerson.self, value: ["id": 1, "name": "Ada", "best": ["id": 1, "name": "Rex"], "dogs": [["id": 2, "name": "Fido"]]])
            realm.create(QPerson.self, value: ["id": 2, "name": "Bo", "best": ["id": 3, "name": "Max"]])
        }
        let people = realm.objects(QPerson.self)
        var byName: [[Int]] = [], byDefault: [[Int]] = [], byOwn: [[Int]] = [], sortedByName: [[Int]] = []
        let t1 = people.observe(keyPaths: ["best.name"]) { if case .update(_, _, _, let m) = $0 { byName.append(m) } }
        let t2 = people.observe { if case .update(_, _, _, let m) = $0 { byDefault.append(m) } }
        let t3 = people.observe(keyPaths: ["name"]) { if case .update(_, _, _, let m) = $0 { byOwn.append(m) } }
        let t4 = people.sorted(byKeyPath: "name", ascending: false).observe(keyPaths: ["best.name"]) {
            if case .update(_, _, _, let m) = $0 { sortedByName.append(m) }
        }
        defer { [t1, t2, t3, t4].forEach { $0.invalidate() } }
        // Bo's best dog is renamed: the key path sees it (Bo is index 1, or 0 sorted descending by name).
        try realm.write { realm.object(ofType: QDog.self, forPrimaryKey: 3)?.name = "Maximus" }
        // Rex's age changes: only the default observer (every property of linked objects) sees it.
        try realm.write { realm.object(ofType: QDog.self, forPrimaryKey: 1)?.age = 9 }
        // A dog in Ada's list changes: the default observer sees it through the list.
        try realm.write { realm.object(ofType: QDog.self, forPrimaryKey: 2)?.name = "Fidel" }
        #expect(byName == [[1]])
        #expect(sortedByName == [[0]])
        #expect(byDefault == [[1], [0], [0]])
        #expect(byOwn == [])
    }

    @Test func keyPathsThroughSeveralLinksFollowEveryHop() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: .init(
            fileURL: URL(fileURLWithPath: dir.child("n2.realm")), objectTypes: [QPerson.self, QDog.self, QVet.self]))
        try realm.write {
            realm.create(QPerson.self, value: ["id": 1, "best": ["id": 1, "vet": ["id": 1, "city": "Oslo"]]])
            realm.create(QPerson.self, value: ["id": 2, "best": ["id": 2, "vet": ["id": 2, "city": "Lima"]]])
            realm.create(QVet.self, value: ["id": 3, "city": "Pune"])
        }
        var seen: [[Int]] = []
        let token = realm.objects(QPerson.self).observe(keyPaths: ["best.vet.city"]) {
            if case .update(_, _, _, let m) = $0 { seen.append(m) }
        }
        defer { token.invalidate() }
        try realm.write { realm.object(ofType: QVet.self, forPrimaryKey: 2)?.city = "Cusco" }  // person 2
        try realm.write { realm.object(ofType: QVet.self, forPrimaryKey: 3)?.city = "Goa" }  // nobody's
        try realm.write { realm.object(ofType: QDog.self, forPrimaryKey: 1)?.name = "Rex" }  // not watched
        try realm.write {
            realm.object(ofType: QDog.self, forPrimaryKey: 1)?.vet = realm.object(ofType: QVet.self, forPrimaryKey: 3)
        }  // person 1: the path now leads elsewhere
        #expect(seen == [[1], [0]])
    }
}

final class KPDog: Object {
    @Persisted var dogName = ""
    @Persisted var age = 0
    @Persisted(originProperty: "dogs") var owners: LinkingObjects<KPOwner>
}

final class KPOwner: Object {
    @Persisted var name = ""
    @Persisted var dog: KPDog?
    @Persisted var dogs: List<KPDog>
}

/// Issue 56, item 5: an object's key-path notifications through a link or a list
/// (RealmSwift's `testLinkPropertyKeyPathNotifications1`/`2`, `testListPropertyKeyPathNotifications`): a
/// change of what the path reaches is a change of the link or list property.
@Suite struct ObjectKeyPathThroughLinkTests {
    @Test func aChangeAtTheEndOfAPathIsAChangeOfItsFirstProperty() throws {
        let realm = try memoryRealm(types: [KPDog.self, KPOwner.self])
        let (owner, dog, other) = try realm.write { () -> (KPOwner, KPDog, KPDog) in
            let dog = realm.create(KPDog.self)
            let other = realm.create(KPDog.self)
            return (realm.create(KPOwner.self, value: ["dog": dog, "dogs": [dog, other]]), dog, other)
        }
        var viaLink: [[String]] = []
        var viaList: [[String]] = []
        let t1 = owner.observe(keyPaths: ["dog.dogName"]) { (change: ObjectChange<KPOwner>) in
            if case .change(_, let p) = change { viaLink.append(p.map(\.name)) }
        }
        let t2 = owner.observe(keyPaths: ["dogs.age"]) { (change: ObjectChange<KPOwner>) in
            if case .change(_, let p) = change { viaList.append(p.map(\.name)) }
        }
        try realm.write { dog.dogName = "rex" }  // reaches dog.dogName; not dogs.age
        try realm.write { other.age = 3 }  // reaches dogs.age only
        try realm.write { dog.age = 4 }  // reaches dogs.age (dog is in the list too)
        try realm.write { owner.name = "not watched" }
        try realm.write { owner.dog = realm.create(KPDog.self) }  // the link itself changes
        try realm.write { realm.delete(other) }  // leaves the list
        // A path through linking objects is taken too (followed as backlinks, not as a link): no trap.
        let t3 = dog.observe(keyPaths: ["owners.name"]) { (_: ObjectChange<KPDog>) in }
        t3.invalidate()
        #expect(viaLink == [["dog"], ["dog"]])
        #expect(viaList == [["dogs"], ["dogs"], ["dogs"]])
        t1.invalidate()
        t2.invalidate()
    }
}
