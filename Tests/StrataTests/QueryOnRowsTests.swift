import Foundation
@testable import Strata
import Testing
import TestSupport

final class QRItem: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var score = 0
    @Persisted var rank: Int?
    @Persisted var name = ""
}

/// Queries read integers and ASCII text where they lie in the records; every other case goes through values.
/// Both must give what Swift gives for the same test on the objects, and `count` what the results hold.
@Suite struct QueryOnRowsTests {
    static let names = [
        "", "a", "ab", "abc", "Abc", "abd", "b", "ba", "zab", "xxabxx", "é", "e\u{301}", "e\u{301}tude", "étude", "ab\u{301}",
        "日本", "ab日本", String(repeating: "ab", count: 100), "x\r\ny", "x\r", "\ny", "a\r\n",
    ]

    @Test func thePlannerPinsThePrimaryKeyAndScansTheRest() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: .init(fileURL: URL(fileURLWithPath: dir.child("p.realm")), objectTypes: [QRItem.self]))
        try realm.write { for i in 0..<10 { realm.create(QRItem.self, value: ["id": i, "score": i * 10]) } }
        let items = realm.objects(QRItem.self)
        #expect(items.where { $0.id == 5 }.plan == .primaryKey(property: "id"))
        #expect(items.filter("id IN {1, 2} AND score > 0").plan == .primaryKey(property: "id"))
        #expect(items.filter("id IN {1, 2} AND score > 0").count == 2)
        #expect(items.filter("score > 30").plan == .scan)
        #expect(items.filter("id == 5 OR score > 80").plan == .scan)
        #expect(items.filter("id == 5 OR score > 80").count == 2)
        // A key that no object has: the planner's candidate is read and skipped.
        #expect(items.where { $0.id == 42 }.first == nil)
        #expect(items.where { $0.id == 42 }.isEmpty)
        #expect(items.where { $0.id == 7 }.first?.score == 70)
    }

    /// Comparisons of an Int primary key read only the keys in range, in a write too (its added, changed and
    /// deleted objects, before and after a spill), and give what a scan gives.
    @Test func primaryKeyRangesReadOnlyTheirKeysAndAgreeWithAScan() throws {
        let dir = try TemporaryDirectory()
        var config = Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("r.realm")), objectTypes: [QRItem.self])
        config.schemaVersion = 1
        let realm = try Realm(configuration: config)
        try realm.write { for i in -20..<200 { realm.create(QRItem.self, value: ["id": i, "score": i % 7]) } }
        let items = realm.objects(QRItem.self)
        #expect(items.where { $0.id > 5 }.plan == .primaryKeyRange(property: "id"))
        #expect(items.filter("id BETWEEN {3, 9} AND score > 2").plan == .primaryKeyRange(property: "id"))
        #expect(items.filter("id > 5 OR score > 2").plan == .scan)
        #expect(items.filter("id > 5.5").plan == .scan)
        let cases: [(String, [Any], (QRItem) -> Bool)] = [
            ("id > %@", [150], { $0.id > 150 }),
            ("id >= %@", [150], { $0.id >= 150 }),
            ("id < %@", [-5], { $0.id < -5 }),
            ("id <= %@ AND id > %@", [10, 3], { $0.id <= 10 && $0.id > 3 }),
            ("id BETWEEN {%@, %@} AND score == 2", [-10, 60], { (-10...60).contains($0.id) && $0.score == 2 }),
            ("id > %@ AND id < %@", [50, 40], { _ in false }),
            ("id > %@", [Int.max], { _ in false }),
            ("id < %@", [Int.min], { _ in false }),
            ("id >= %@", [Int.max], { $0.id == .max }),
        ]
        func check(_ realm: Realm, _ when: String) {
            let all = Array(realm.objects(QRItem.self))
            for (format, args, reference) in cases {
                let results = realm.objects(QRItem.self).filter(format, args)
                #expect(results.map(\.id).sorted() == all.filter(reference).map(\.id).sorted(), "\(when): \(format) \(args)")
                #expect(results.count == all.filter(reference).count, "\(when): count of \(format) \(args)")
            }
        }
        check(realm, "committed")
        // Spills every few operations: the write's objects are in spilled segments and in its batch.
        realm.core.spillThreshold = 512
        try realm.write {
            // Added (in and out of range), changed and deleted objects of the write.
            for i in 300..<320 { realm.create(QRItem.self, value: ["id": i, "score": 2]) }
            realm.create(QRItem.self, value: ["id": Int.max, "score": 2])
            realm.delete(realm.objects(QRItem.self).where { $0.id >= 150 && $0.id < 160 })
            for item in realm.objects(QRItem.self).where({ $0.id > 40 && $0.id < 50 }) { item.score = 2 }
            check(realm, "in a write")
        }
        check(realm, "after the write")
    }

    @Test(arguments: Seeds.environmentOr([1, 2, 3]))
    func directReadsAgreeWithSwift(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: .init(fileURL: URL(fileURLWithPath: dir.child("q.realm")), objectTypes: [QRItem.self]))
        let count = 300 * Seeds.scale
        try realm.write {
            for i in 0..<count {
                let item = QRItem()
                item.id = i
                item.score = Int(truncatingIfNeeded: rng.next() % 2001) - 1000
                item.rank = rng.next() % 4 == 0 ? nil : Int(rng.next() % 100)
                item.name = Self.names[Int(rng.next() % UInt64(Self.names.count))]
                realm.add(item)
            }
        }
        let all = Array(realm.objects(QRItem.self))
        func check(_ format: String, _ args: [Any], _ reference: (QRItem) -> Bool) {
            let results = realm.objects(QRItem.self).filter(format, args)
            let expected = all.filter(reference).map(\.id)
            #expect(results.map(\.id).sorted() == expected.sorted(), "\(format) \(args)")
            #expect(results.count == expected.count, "count of \(format) \(args)")
        }
        for c in [-1000, -1, 0, 1, 500, 1000] {
            check("score > %@", [c]) { $0.score > c }
            check("score >= %@", [c]) { $0.score >= c }
            check("score < %@", [c]) { $0.score < c }
            check("score <= %@", [c]) { $0.score <= c }
            check("score == %@", [c]) { $0.score == c }
            check("score != %@", [c]) { $0.score != c }
            check("rank > %@", [c]) { $0.rank.map { $0 > c } ?? false }
            check("rank == %@", [c]) { $0.rank == c }
            check("rank != %@", [c]) { $0.rank != c }
        }
        check("rank == nil", []) { $0.rank == nil }
        for p in ["", "a", "ab", "b", "é", "e", "日", "abab", "x\r", "\ny", "\r", "\n", "x\r\n", "\r\ny"] {
            check("name BEGINSWITH %@", [p]) { $0.name.hasPrefix(p) }
            check("name ENDSWITH %@", [p]) { $0.name.hasSuffix(p) }
            check("name CONTAINS %@", [p]) { p.isEmpty || $0.name.contains(p) }
            check("score > 0 AND name BEGINSWITH %@", [p]) { $0.score > 0 && $0.name.hasPrefix(p) }
        }
        // The typed query builds the same predicates.
        #expect(realm.objects(QRItem.self).where { $0.score > 50 && $0.name.starts(with: "ab") }.count
            == all.filter { $0.score > 50 && $0.name.hasPrefix("ab") }.count)
    }
}
