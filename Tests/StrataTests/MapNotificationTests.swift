import Foundation
import Strata
import Testing
import TestSupport

@Suite struct MapNotificationTests {
    @Test func mapObserversSeeKeysRemovedAddedAndChanged() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: .init(fileURL: URL(fileURLWithPath: dir.child("mn.realm")), objectTypes: [MStudent.self]))
        try realm.write { realm.create(MStudent.self, value: ["id": 1, "grades": ["math": 5, "art": 3]]) }
        let s = try #require(realm.object(ofType: MStudent.self, forPrimaryKey: 1))
        var seen: [String] = []
        let token = s.grades.observe { change in
            if case .update(_, let d, let i, let m) = change { seen.append("-\(d) +\(i) ~\(m)") }
        }
        defer { token.invalidate() }
        try realm.write {
            s.grades["math"] = 6
            s.grades["bio"] = 1
            s.grades.removeObject(for: "art")
        }
        try realm.write { s.name = "not the map" }
        try realm.write { realm.delete(s) }
        #expect(seen == ["-[\"art\"] +[\"bio\"] ~[\"math\"]", "-[\"bio\", \"math\"] +[] ~[]"])
    }
}
