import Foundation
import Strata
import Testing
import TestSupport

final class PJAddress: EmbeddedObject {
    @Persisted var city = ""
}

final class PJPerson: Object {
    @Persisted(primaryKey: true) var id: Int
    @Persisted var firstName = ""
    @Persisted var lastName = ""
    @Persisted var address: PJAddress?
    @Persisted var friends: List<PJPerson>
}

/// A projection, as seed 004 describes it: a subset of properties, through a link and into a list.
final class PersonView: Projection<PJPerson> {
    @Projected(\PJPerson.firstName) var firstName
    @Projected(\PJPerson.address?.city) var homeCity
    @Projected(\PJPerson.friends.projectTo.firstName) var friendNames: ProjectedCollection<String>
}

@Suite struct ProjectionTests {
    @Test func projectionsAreLiveWritableQueryableAndObservable() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: .init(
            fileURL: URL(fileURLWithPath: dir.child("p.realm")), objectTypes: [PJPerson.self, PJAddress.self]))
        try realm.write {
            let bo = realm.create(PJPerson.self, value: ["id": 2, "firstName": "Bo"])
            let ada = realm.create(PJPerson.self, value: ["id": 1, "firstName": "Ada", "address": ["city": "Oslo"]])
            ada.friends.append(bo)
        }
        let views = realm.objects(PersonView.self)
        #expect(views.count == 2)
        let ada = try #require(views.where { $0.id == 1 }.first)
        #expect(ada.firstName == "Ada")
        #expect(ada.homeCity == "Oslo")
        #expect(Array(ada.friendNames) == ["Bo"])
        #expect(views.filter("address.city == 'Oslo'").map(\.firstName) == ["Ada"])
        #expect(views.sorted(byKeyPath: "firstName", ascending: false).map(\.firstName) == ["Bo", "Ada"])
        var updates: [[Int]] = []
        let token = views.observe { if case .update(_, _, _, let m) = $0 { updates.append(m) } }
        var objectChanges: [String] = []
        let objectToken = ada.observe { change in
            if case .change(_, let properties) = change { objectChanges += properties.map(\.name) }
        }
        defer { token.invalidate(); objectToken.invalidate() }
        // Writes through the projection go to the object; the projection shows them.
        try realm.write { ada.firstName = "Ada L." }
        #expect(ada.rootObject.firstName == "Ada L.")
        #expect(realm.object(ofType: PJPerson.self, forPrimaryKey: 1)?.firstName == "Ada L.")
        try realm.write { realm.object(ofType: PJPerson.self, forPrimaryKey: 2)?.firstName = "Bob" }
        #expect(Array(ada.friendNames) == ["Bob"])
        #expect(updates.first == [views.index(of: ada) ?? -1])
        #expect(objectChanges.contains("firstName"))
    }
}
