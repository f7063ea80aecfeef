import Foundation
import Strata
import Testing
import TestSupport

@Suite struct LargeCommitNotificationTests {
    @Test func aCommitOfMoreThanSixtyFiveThousandObjectsStillGivesExactChangeSets() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: .init(fileURL: URL(fileURLWithPath: dir.child("big.realm")), objectTypes: [Person.self]))
        try realm.write { for i in 0..<10 { realm.create(Person.self, value: ["id": i * 10, "age": i]) } }
        let results = realm.objects(Person.self).filter("age < 5")
        var before = Array(results.map(\.id))
        var checked = 0
        let token = results.observe { change in
            guard case .update(let r, let deletions, let insertions, _) = change else { return }
            var next = before
            for i in deletions.sorted(by: >) { next.remove(at: i) }
            let now = Array(r.map(\.id))
            for i in insertions.sorted() { next.insert(now[i], at: i) }
            #expect(next == now)
            before = now
            checked += 1
        }
        defer { token.invalidate() }
        try realm.write {
            for i in 0..<70_000 { realm.create(Person.self, value: ["id": 1_000 + i, "age": i % 10], update: .modified) }
            realm.delete(try #require(realm.object(ofType: Person.self, forPrimaryKey: 0)))
        }
        #expect(checked == 1)
        #expect(results.count == 4 + 35_000)
    }
}
