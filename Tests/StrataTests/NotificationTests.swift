import Dispatch
import Engine
import Foundation
import Strata
import Testing
import TestSupport

/// A person as the observed collections show it.
struct Seen: Equatable, CustomStringConvertible {
    var id: Int
    var firstName: String
    var age: Int
    var description: String { "\(id):\(firstName):\(age)" }
    init(_ p: Person) {
        id = p.id
        firstName = p.firstName
        age = p.age
    }
}

/// Records what an observer delivered.
final class Deliveries<T>: @unchecked Sendable {
    var changes: [RealmCollectionChange<T>] = []
}

@Suite struct NotificationTests {
    func openRealm(_ dir: TemporaryDirectory, queue: DispatchQueue? = nil) throws -> Realm {
        try Realm(configuration: .init(fileURL: URL(fileURLWithPath: dir.child("n.realm")), objectTypes: [Person.self]), queue: queue)
    }

    func add(_ realm: Realm, _ ids: some Sequence<Int>, age: (Int) -> Int = { $0 }) throws {
        try realm.write {
            for i in ids { realm.create(Person.self, value: ["id": i, "firstName": "p\(i)", "age": age(i)]) }
        }
    }

    @Test func resultsReportInitialThenIndexedChanges() throws {
        let dir = try TemporaryDirectory()
        let realm = try openRealm(dir)
        try add(realm, 0..<5)
        let seen = Deliveries<Results<Person>>()
        let adults = realm.objects(Person.self).where { $0.age >= 2 }
        let token = adults.observe { seen.changes.append($0) }
        guard case .initial(let initial)? = seen.changes.first else {
            Issue.record("no .initial")
            return
        }
        #expect(initial.map(\.id) == [2, 3, 4])
        try realm.write {
            realm.delete(realm.object(ofType: Person.self, forPrimaryKey: 3)!)
            realm.object(ofType: Person.self, forPrimaryKey: 4)!.firstName = "four"
            realm.object(ofType: Person.self, forPrimaryKey: 1)!.age = 10
            realm.create(Person.self, value: ["id": 9, "age": 1])
        }
        guard case .update(let r, let deletions, let insertions, let modifications)? = seen.changes.last else {
            Issue.record("no .update: \(seen.changes.count) deliveries")
            return
        }
        #expect(r.map(\.id) == [1, 2, 4])
        #expect(deletions == [1])
        #expect(insertions == [0])
        #expect(modifications == [2])
        // A change outside the results reports nothing.
        let before = seen.changes.count
        try realm.write { realm.object(ofType: Person.self, forPrimaryKey: 9)!.firstName = "nine" }
        #expect(seen.changes.count == before)
        token.invalidate()
        try realm.write { realm.object(ofType: Person.self, forPrimaryKey: 2)!.age = 50 }
        #expect(seen.changes.count == before)
    }

    @Test func keyPathsFilterModificationsAndWithoutNotifyingSkipsAToken() throws {
        let dir = try TemporaryDirectory()
        let realm = try openRealm(dir)
        try add(realm, 0..<3)
        var ageChanges = 0
        var allChanges = 0
        let people = realm.objects(Person.self)
        let ageToken = people.observe(keyPaths: ["age"]) { if case .update = $0 { ageChanges += 1 } }
        let allToken = people.observe { if case .update = $0 { allChanges += 1 } }
        try realm.write { realm.object(ofType: Person.self, forPrimaryKey: 1)!.firstName = "x" }
        #expect(ageChanges == 0 && allChanges == 1)
        try realm.write { realm.object(ofType: Person.self, forPrimaryKey: 1)!.age = 77 }
        #expect(ageChanges == 1 && allChanges == 2)
        try realm.write(withoutNotifying: [allToken]) { realm.object(ofType: Person.self, forPrimaryKey: 2)!.age = 5 }
        #expect(ageChanges == 2 && allChanges == 2)
        _ = (ageToken, allToken)
    }

    @Test func objectsReportPropertyChangesThenDeletion() throws {
        let dir = try TemporaryDirectory()
        let realm = try openRealm(dir)
        try add(realm, 0..<2)
        let ada = try #require(realm.object(ofType: Person.self, forPrimaryKey: 1))
        var changes: [[PropertyChange]] = []
        var deleted = 0
        let token = ada.observe { (change: ObjectChange<Person>) in
            switch change {
            case .change(let object, let properties):
                #expect(object.id == 1)
                changes.append(properties)
            case .deleted: deleted += 1
            case .error(let e): Issue.record("\(e)")
            }
        }
        try realm.write {
            ada.age = 36
            ada.nickname = "Countess"
        }
        #expect(changes.count == 1)
        let byName = Dictionary(uniqueKeysWithValues: (changes.first ?? []).map { ($0.name, $0) })
        #expect(Set(byName.keys) == ["age", "nickname"])
        #expect(byName["age"]?.oldValue as? Int == 1 && byName["age"]?.newValue as? Int == 36)
        #expect(byName["nickname"]?.newValue as? String == "Countess")
        try realm.write { realm.object(ofType: Person.self, forPrimaryKey: 0)!.age = 3 }
        #expect(changes.count == 1)
        try realm.write { realm.delete(ada) }
        #expect(deleted == 1)
        _ = token
    }

    @Test func realmObserversHearEveryNewVersion() throws {
        let dir = try TemporaryDirectory()
        let realm = try openRealm(dir)
        var count = 0
        let token = realm.observe { notification, _ in
            #expect(notification == .didChange)
            count += 1
        }
        try add(realm, 0..<2)
        try add(realm, 2..<3)
        #expect(count == 2)
        _ = token
    }

    @Test func anotherInstancesCommitReachesARealmOnItsQueue() throws {
        let dir = try TemporaryDirectory()
        let queue = DispatchQueue(label: "observer")
        let done = DispatchSemaphore(value: 0)
        let received = Locked<[String]>([])
        // The observing Realm lives on `queue`; a writer on this thread commits.
        nonisolated(unsafe) var token: NotificationToken?
        nonisolated(unsafe) var observing: Realm?
        queue.sync {
            observing = try? openRealm(dir, queue: queue)
            token = observing?.objects(Person.self).observe { change in
                switch change {
                case .initial(let r): received.withLock { $0.append("initial \(r.count)") }
                case .update(let r, _, let insertions, _):
                    received.withLock { $0.append("update \(r.count) \(insertions)") }
                    done.signal()
                case .error: break
                }
            }
        }
        let writer = try openRealm(dir)
        try add(writer, 0..<3)
        #expect(done.wait(timeout: .now() + 10) == .success)
        queue.sync {
            #expect(received.withLock { $0 } == ["initial 0", "update 3 [0, 1, 2]"])
            token?.invalidate()
            token = nil
            observing = nil
        }
    }

    /// Random writes against observed collections with random filters and sorts: applying every change set to
    /// the previous contents gives the new contents, and a key-path observer reports exactly the age changes.
    @Test(arguments: Seeds.environmentOr([51, 52, 53]))
    func changeSetsTurnTheOldContentsIntoTheNew(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let dir = try TemporaryDirectory()
        let realm = try openRealm(dir)
        try add(realm, 0..<40) { _ in Int(rng.next() % 60) }
        let base = realm.objects(Person.self)
        let views: [(String, Results<Person>)] = [
            ("all", base),
            ("age < 30", base.filter("age < 30")),
            ("by age", base.sorted(byKeyPath: "age")),
            ("name desc, age > 10", base.where { $0.age > 10 }.sorted(by: [SortDescriptor(keyPath: "firstName", ascending: false)])),
            ("by age then id", base.sorted(by: [SortDescriptor(keyPath: "age"), SortDescriptor(keyPath: "id", ascending: false)])),
        ]
        var contents: [[Seen]] = views.map { $0.1.map(Seen.init) }
        var failures: [String] = []
        var tokens: [NotificationToken] = []
        for (v, view) in views.enumerated() {
            tokens.append(view.1.observe { change in
                guard case .update(let r, let deletions, let insertions, let modifications) = change else { return }
                var next = contents[v]
                for i in deletions.reversed() { next.remove(at: i) }
                let now = r.map(Seen.init)
                for i in insertions { next.insert(now[i], at: i) }
                for i in modifications { next[i] = now[i] }
                if next != now { failures.append("\(view.0): applying the change set gives \(next), the results are \(now)") }
                if Set(deletions).count != deletions.count || Set(insertions).count != insertions.count {
                    failures.append("\(view.0): repeated indices")
                }
                contents[v] = now
            })
        }
        // The key-path observer over all people, in key order.
        var expectedAgeChanges: Set<Int> = []
        var reportedAgeChanges: Set<Int>? = nil
        let ageToken = base.observe(keyPaths: ["age"]) { change in
            guard case .update(let r, _, _, let modifications) = change else { return }
            reportedAgeChanges = Set(modifications.map { r[$0].id })
        }
        var nextId = 40
        for round in 0..<(60 * Seeds.scale) {
            expectedAgeChanges = []
            reportedAgeChanges = nil
            let existing = base.map(\.id)
            let agesBefore = Dictionary(uniqueKeysWithValues: base.map { ($0.id, $0.age) })
            try realm.write {
                for _ in 0..<(1 + Int(rng.next() % 4)) {
                    switch rng.next() % 5 {
                    case 0:
                        realm.create(Person.self, value: ["id": nextId, "firstName": "n\(rng.next() % 100)", "age": Int(rng.next() % 60)])
                        nextId += 1
                    case 1:
                        if let id = existing.randomElement(using: &rng), let p = realm.object(ofType: Person.self, forPrimaryKey: id) {
                            realm.delete(p)
                        }
                    case 2:
                        if let id = existing.randomElement(using: &rng), let p = realm.object(ofType: Person.self, forPrimaryKey: id) {
                            p.firstName = "r\(rng.next() % 100)"
                        }
                    default:
                        if let id = existing.randomElement(using: &rng), let p = realm.object(ofType: Person.self, forPrimaryKey: id) {
                            p.age = Int(rng.next() % 60)
                        }
                    }
                }
            }
            // Net changes only: an age set twice in one write and back where it was is no change.
            for p in base where agesBefore[p.id].map({ $0 != p.age }) == true { expectedAgeChanges.insert(p.id) }
            #expect((reportedAgeChanges ?? []) == expectedAgeChanges, "seed \(seed) round \(round)")
            #expect(failures.isEmpty, "seed \(seed) round \(round): \(failures.prefix(2))")
            if !failures.isEmpty { break }
            for (v, view) in views.enumerated() where contents[v] != view.1.map(Seen.init) {
                Issue.record("seed \(seed) round \(round): \(view.0) was not notified of a change")
                contents[v] = view.1.map(Seen.init)
            }
        }
        _ = (tokens, ageToken)
    }
}
