import Foundation
import Strata
import Testing
import TestSupport

final class Tagged: Object {
    @Persisted(primaryKey: true) var name = ""
    @Persisted var n = 0
}

/// `pk == v` and `pk IN {...}` are answered by primary-key lookups instead of a scan; they must give exactly
/// what the scan gives (the same predicate written so that it scans) and what a Swift model gives, in the
/// same order, inside and outside write transactions.
@Suite struct PrimaryKeyQueryTests {
    @Test(arguments: Seeds.environmentOr([11, 12, 13]))
    func pinnedPrimaryKeysAgreeWithAScan(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: .init(fileURL: URL(fileURLWithPath: dir.child("pk.realm")), objectTypes: [Person.self, Tagged.self]))
        var ages: [Int: Int] = [:]
        var tagged: [String: Int] = [:]
        func random(_ n: Int) -> Int { Int(rng.next() % UInt64(n)) }

        func check(_ context: String) {
            let people = realm.objects(Person.self)
            for _ in 0..<8 {
                let x = random(400)
                let a = random(100)
                #expect(people.filter("id == %@", x).map(\.id) == people.filter("id >= %@ AND id <= %@", x, x).map(\.id), "\(context): id == \(x)")
                #expect(people.where { $0.id == x }.map(\.age) == (ages[x].map { [$0] } ?? []), "\(context): where id == \(x)")
                let pinned = people.filter("id == %@ AND age > %@", x, a).map(\.id)
                #expect(pinned == (ages[x].map { $0 > a ? [x] : [] } ?? []), "\(context): id == \(x) AND age > \(a)")
                let set = (0..<random(6)).map { _ in random(400) }
                let expected = ages.keys.filter { set.contains($0) }.sorted()
                let viaIn = people.filter("id IN %@", set).map(\.id)
                #expect(viaIn.sorted() == expected, "\(context): id IN \(set)")
                if !set.isEmpty {
                    let scanned = people.filter(set.map { "id == \($0)" }.joined(separator: " OR ")).map(\.id)
                    #expect(viaIn == scanned, "\(context): IN and OR give the same order")
                }
                let name = "t\(random(60))"
                #expect(realm.objects(Tagged.self).filter("name == %@", name).map(\.n) == (tagged[name].map { [$0] } ?? []), "\(context): name == \(name)")
                // A folded comparison cannot use the key: it scans, and still finds the object.
                #expect(realm.objects(Tagged.self).filter("name ==[c] %@", name.uppercased()).map(\.n) == (tagged[name].map { [$0] } ?? []), "\(context): [c]")
                #expect(people.filter("id == 5.0").count == (ages[5] == nil ? 0 : 1), "\(context): id == 5.0")
            }
        }

        for round in 0..<12 {
            realm.beginWrite()
            for _ in 0..<40 {
                let id = random(400)
                switch random(4) {
                case 0, 1:
                    realm.create(Person.self, value: ["id": id, "age": random(100)], update: .modified)
                    ages[id] = realm.object(ofType: Person.self, forPrimaryKey: id)?.age
                case 2:
                    if let p = realm.object(ofType: Person.self, forPrimaryKey: id) {
                        realm.delete(p)
                        ages[id] = nil
                    }
                default:
                    let name = "t\(random(60))"
                    let n = random(1000)
                    realm.create(Tagged.self, value: ["name": name, "n": n], update: .modified)
                    tagged[name] = n
                }
            }
            check("seed \(seed) round \(round), in the write")
            try realm.commitWrite()
            check("seed \(seed) round \(round), committed")
        }
    }
}
