import Foundation
import Strata
import Testing
import TestSupport

/// `for o in results` reuses the object of the previous step when the loop body kept no reference to it;
/// whatever the body does keep must be untouched by that.
@Suite struct ResultsIterationTests {
    private func filledRealm(_ dir: TemporaryDirectory, count: Int) throws -> Realm {
        let realm = try Realm(configuration: .init(fileURL: URL(fileURLWithPath: dir.child("i.realm")), objectTypes: [LKennel.self, LDog.self]))
        try realm.write {
            for i in 0..<count {
                realm.create(LKennel.self, value: ["id": i, "name": "kennel \(i)", "scores": [i, i + 1]])
            }
        }
        return realm
    }

    @Test func objectsKeptByTheLoopKeepTheirOwnRecords() throws {
        let dir = try TemporaryDirectory()
        let realm = try filledRealm(dir, count: 200)
        var kept: [LKennel] = []
        var seen: [Int] = []
        for (i, k) in realm.objects(LKennel.self).enumerated() {
            seen.append(k.id)
            if i % 3 == 0 { kept.append(k) }
        }
        #expect(seen == Array(0..<200))
        #expect(kept.map(\.id) == Array(stride(from: 0, to: 200, by: 3)))
        #expect(kept.allSatisfy { $0.name == "kennel \($0.id)" })
        // Kept objects are distinct objects, each the one it was when kept.
        #expect(Set(kept.map { ObjectIdentifier($0) }).count == kept.count)
    }

    @Test func aListTakenFromAnObjectOutlivesTheReuseOfThatObject() throws {
        let dir = try TemporaryDirectory()
        let realm = try filledRealm(dir, count: 50)
        var lists: [List<Int>] = []
        var names: [String] = []
        for k in realm.objects(LKennel.self) {
            // The object itself is not kept (it is reused next step); the list view of it is.
            lists.append(k.scores)
            names.append(k.name)
        }
        #expect(lists.map { Array($0) } == (0..<50).map { [$0, $0 + 1] })
        #expect(names == (0..<50).map { "kennel \($0)" })
    }

    @Test func reusedObjectsReadTheirRecordAfterTheRealmMoves() throws {
        let dir = try TemporaryDirectory()
        let realm = try filledRealm(dir, count: 20)
        var total = 0
        for k in realm.objects(LKennel.self) {
            // A write in the loop body moves the Realm to a new version; the next objects still read the
            // records of their own keys, at the version they are read.
            if k.id == 5 { try realm.write { realm.object(ofType: LKennel.self, forPrimaryKey: 10)?.name = "renamed" } }
            total += k.name == "renamed" ? 1 : 0
            #expect(k.name == (k.id == 10 ? "renamed" : "kennel \(k.id)"), "kennel \(k.id)")
        }
        #expect(total == 1)
    }
}
