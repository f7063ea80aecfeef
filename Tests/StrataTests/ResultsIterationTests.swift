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

    /// Records read in place from segment blocks (compacted on open): objects kept from the loop, one kept at
    /// a `break`, and two iterators over one scan all read their own records after the scan has moved on to
    /// other blocks, or ended.
    @Test func objectsKeptFromAScanOfSegmentsReadTheirOwnRecordsAfterItMovesOn() throws {
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("blocks.realm"))
        let count = 20_000 * Seeds.scale
        let padding = String(repeating: "x", count: 120)
        do {
            let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [LKennel.self, LDog.self]))
            for start in stride(from: 0, to: count, by: 5_000) {
                try realm.write {
                    for i in start..<(start + 5_000) {
                        realm.create(LKennel.self, value: ["id": i, "name": "kennel \(i) \(padding)", "scores": [i]])
                    }
                }
            }
        }
        var config = Realm.Configuration(fileURL: url, objectTypes: [LKennel.self, LDog.self])
        config.shouldCompactOnLaunch = { _, _ in true }
        let realm = try Realm(configuration: config)
        var kept: [LKennel] = []
        var lists: [List<Int>] = []
        var stopped: LKennel? = nil
        for k in realm.objects(LKennel.self) {
            if k.id % 997 == 0 { kept.append(k) }
            // A list view holds the object's accessor, not the object: the object is reused, the view keeps
            // reading its own record.
            lists.append(k.scores)
            if k.id == count - 3 {
                stopped = k
                break
            }
        }
        #expect(kept.map(\.id) == Array(stride(from: 0, to: count - 3, by: 997)))
        #expect(kept.allSatisfy { $0.name == "kennel \($0.id) \(padding)" && Array($0.scores) == [$0.id] })
        #expect(stopped?.name == "kennel \(count - 3) \(padding)")
        #expect(lists.count == count - 2)
        #expect(lists.enumerated().allSatisfy { Array($0.element) == [$0.offset] })
        // A copied iterator shares the scan: what one returned stays right while the other moves it on.
        var first = realm.objects(LKennel.self).makeIterator()
        let a = first.next()
        var second = first
        var last: LKennel? = nil
        while let k = second.next() { last = k }
        #expect(a?.id == 0 && a?.name == "kennel 0 \(padding)")
        #expect(last?.id == count - 1)
        // Copied before the first step: the copies share one scan, so either moving it protects the other's.
        var third = realm.objects(LKennel.self).makeIterator()
        var fourth = third
        let b = third.next()
        while fourth.next() != nil {}
        #expect(b?.id == 0 && b?.name == "kennel 0 \(padding)")
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

final class AllocPerson: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
    @Persisted var age = 0
}
