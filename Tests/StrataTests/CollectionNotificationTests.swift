import Foundation
import Strata
import Testing
import TestSupport

@Suite struct CollectionNotificationTests {
    func open(_ dir: TemporaryDirectory) throws -> Realm {
        try Realm(configuration: .init(fileURL: URL(fileURLWithPath: dir.child("c.realm")), objectTypes: [QPerson.self, QDog.self, QVet.self]))
    }

    /// Applies a change set to the previous contents: deletions (descending), then insertions (ascending).
    /// Nil when an index is out of range.
    static func apply<T>(_ old: [T], deletions: [Int], insertions: [Int], new: [T]) -> [T]? {
        var out = old
        for i in deletions.sorted(by: >) {
            guard out.indices.contains(i) else { return nil }
            out.remove(at: i)
        }
        for i in insertions.sorted() {
            guard new.indices.contains(i), i <= out.count else { return nil }
            out.insert(new[i], at: i)
        }
        return out
    }

    @Test(arguments: Seeds.environmentOr([1, 2, 3]))
    func randomListChangesReportChangeSetsThatRebuildTheList(seed: UInt64) throws {
        let dir = try TemporaryDirectory()
        let realm = try open(dir)
        var rng = SplitMix64(seed: seed)
        try realm.write {
            for i in 0..<12 { realm.create(QDog.self, value: ["id": i, "name": "d\(i)"]) }
            realm.create(QPerson.self, value: ["id": 1, "scores": [1, 2, 3]])
        }
        let person = try #require(realm.object(ofType: QPerson.self, forPrimaryKey: 1))
        var dogsSeen = Array(person.dogs.map(\.id)), scoresSeen = Array(person.scores)
        var dogChanges: [(d: [Int], i: [Int], m: [Int])] = [], scoreChanges: [(d: [Int], i: [Int])] = []
        let t1 = person.dogs.observe(keyPaths: ["name"]) { change in
            if case .update(_, let d, let i, let m) = change { dogChanges.append((d, i, m)) }
        }
        let t2 = person.scores.observe { change in
            if case .update(_, let d, let i, _) = change { scoreChanges.append((d, i)) }
        }
        defer { t1.invalidate(); t2.invalidate() }
        for round in 0..<(60 * Seeds.scale) {
            dogChanges = []
            scoreChanges = []
            var renamed: Set<Int> = []
            try realm.write {
                for _ in 0..<Int.random(in: 1...3, using: &rng) {
                    let dogs = person.dogs, n = dogs.count
                    switch Int.random(in: 0..<8, using: &rng) {
                    case 0, 1: dogs.append(try #require(realm.object(ofType: QDog.self, forPrimaryKey: Int.random(in: 0..<12, using: &rng))))
                    case 2 where n > 0: dogs.remove(at: Int.random(in: 0..<n, using: &rng))
                    case 3 where n > 1: dogs.move(from: Int.random(in: 0..<n, using: &rng), to: Int.random(in: 0..<n, using: &rng))
                    case 4 where n > 1: dogs.swapAt(Int.random(in: 0..<n, using: &rng), Int.random(in: 0..<n, using: &rng))
                    case 5:
                        let id = Int.random(in: 0..<12, using: &rng)
                        realm.object(ofType: QDog.self, forPrimaryKey: id)?.name = "r\(round)"
                        renamed.insert(id)
                    case 6: person.scores.insert(Int.random(in: 0..<5, using: &rng), at: Int.random(in: 0...person.scores.count, using: &rng))
                    default:
                        if !person.scores.isEmpty { person.scores.remove(at: Int.random(in: 0..<person.scores.count, using: &rng)) }
                        // Ages are not watched: never a modification.
                        realm.object(ofType: QDog.self, forPrimaryKey: Int.random(in: 0..<12, using: &rng))?.age += 1
                    }
                }
            }
            let dogsNow = Array(person.dogs.map(\.id)), scoresNow = Array(person.scores)
            #expect(dogChanges.count <= 1 && scoreChanges.count <= 1, "round \(round): one notification per commit")
            if let c = dogChanges.first {
                #expect(Self.apply(dogsSeen, deletions: c.d, insertions: c.i, new: dogsNow) == dogsNow, "round \(round)")
                // Modifications: kept elements whose watched property changed.
                for j in c.m { #expect(renamed.contains(dogsNow[j]), "round \(round): \(dogsNow[j]) reported modified") }
            } else {
                #expect(dogsSeen == dogsNow, "round \(round): the list changed without a notification")
            }
            if let c = scoreChanges.first {
                #expect(Self.apply(scoresSeen, deletions: c.d, insertions: c.i, new: scoresNow) == scoresNow, "round \(round)")
            } else {
                #expect(scoresSeen == scoresNow, "round \(round)")
            }
            dogsSeen = dogsNow
            scoresSeen = scoresNow
        }
    }

    @Test func deletingTheOwnerReportsEveryElementDeletedOnce() throws {
        let dir = try TemporaryDirectory()
        let realm = try open(dir)
        try realm.write { realm.create(QPerson.self, value: ["id": 1, "dogs": [["id": 1], ["id": 2]], "tags": ["a"]]) }
        let person = try #require(realm.object(ofType: QPerson.self, forPrimaryKey: 1))
        var seen: [[Int]] = [], tagChanges = 0
        let token = person.dogs.observe { if case .update(_, let d, _, _) = $0 { seen.append(d) } }
        let t2 = person.tags.observe { if case .update = $0 { tagChanges += 1 } }
        defer { token.invalidate(); t2.invalidate() }
        try realm.write { realm.delete(person) }
        try realm.write { realm.create(QDog.self, value: ["id": 5]) }
        #expect(seen == [[0, 1]])
        #expect(tagChanges == 1)
    }
}
