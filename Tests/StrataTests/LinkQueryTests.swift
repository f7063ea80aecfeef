import Foundation
@testable import Strata
import Testing
import TestSupport

final class QVet: Object {
    @Persisted(primaryKey: true) var id: Int
    @Persisted var city = ""
}

final class QDog: Object {
    @Persisted(primaryKey: true) var id: Int
    @Persisted var name = ""
    @Persisted var age = 0
    @Persisted var weight = 0.0
    @Persisted var vet: QVet?
    @Persisted(originProperty: "dogs") var owners: LinkingObjects<QPerson>
}

final class QPerson: Object {
    @Persisted(primaryKey: true) var id: Int
    @Persisted var name = ""
    @Persisted var best: QDog?
    @Persisted var dogs: List<QDog>
    @Persisted var scores: List<Int>
    @Persisted var tags: MutableSet<String>
}

/// The same data as plain Swift values, which the queries are checked against.
struct LinkModel {
    struct Dog { var id: Int, name: String, age: Int, weight: Double, vet: Int? }
    struct Person { var id: Int, name: String, best: Int?, dogs: [Int], scores: [Int], tags: [String] }
    var vets: [Int: String] = [:]
    var dogs: [Int: Dog] = [:]
    var people: [Int: Person] = [:]

    static let names = ["Rex", "Fido", "Ada", "alba", "Bo", "Åsa", "Zed"]
    static let cities = ["Oslo", "Lima", "Pune"]
    static let tags = ["red", "Green", "blue", "reD"]

    init(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        for id in 0..<4 { vets[id] = Self.cities.randomElement(using: &rng)! }
        for id in 0..<40 {
            dogs[id] = Dog(
                id: id, name: Self.names.randomElement(using: &rng)!, age: Int.random(in: 0...15, using: &rng),
                weight: Double(Int.random(in: 10...400, using: &rng)) / 10,
                vet: Bool.random(using: &rng) ? Int.random(in: 0..<4, using: &rng) : nil)
        }
        for id in 0..<60 {
            let dogCount = [0, 0, 1, 2, 3, 5].randomElement(using: &rng)!
            people[id] = Person(
                id: id, name: Self.names.randomElement(using: &rng)!,
                best: Int.random(in: 0..<3, using: &rng) == 0 ? nil : Int.random(in: 0..<40, using: &rng),
                // Lists may hold an object twice.
                dogs: (0..<dogCount).map { _ in Int.random(in: 0..<40, using: &rng) },
                scores: (0..<Int.random(in: 0...4, using: &rng)).map { _ in Int.random(in: -3...9, using: &rng) },
                tags: Array(Set((0..<Int.random(in: 0...3, using: &rng)).map { _ in Self.tags.randomElement(using: &rng)! })).sorted())
        }
    }

    /// Deletes dogs: links to them become nil and lists lose them, as the Realm does.
    mutating func deleteDogs(_ ids: [Int]) {
        for id in ids {
            dogs[id] = nil
            for (pid, var p) in people {
                if p.best == id { p.best = nil }
                p.dogs.removeAll { $0 == id }
                people[pid] = p
            }
        }
    }

    func fill(_ realm: Realm) throws {
        try realm.write {
            var vetObjects: [Int: QVet] = [:]
            for (id, city) in vets {
                let v = QVet()
                v.id = id
                v.city = city
                vetObjects[id] = v
                realm.add(v)
            }
            var dogObjects: [Int: QDog] = [:]
            for d in dogs.values {
                let o = QDog()
                o.id = d.id
                o.name = d.name
                o.age = d.age
                o.weight = d.weight
                o.vet = d.vet.flatMap { vetObjects[$0] }
                dogObjects[d.id] = o
                realm.add(o)
            }
            for p in people.values {
                let o = QPerson()
                o.id = p.id
                o.name = p.name
                o.best = p.best.flatMap { dogObjects[$0] }
                o.dogs.append(objectsIn: p.dogs.compactMap { dogObjects[$0] })
                o.scores.append(objectsIn: p.scores)
                for t in p.tags { o.tags.insert(t) }
                realm.add(o)
            }
        }
    }

    // Realm's rules, written out plainly.
    func bestDog(_ p: Person) -> Dog? { p.best.flatMap { dogs[$0] } }
    func dogList(_ p: Person) -> [Dog] { p.dogs.compactMap { dogs[$0] } }
    func owners(_ d: Dog) -> [Person] { people.values.filter { $0.dogs.contains(d.id) } }
    static func avg(_ xs: [Double]) -> Double? { xs.isEmpty ? nil : xs.reduce(0, +) / Double(xs.count) }
}

/// A query over people or dogs: the string form with its arguments, and the same test in Swift.
struct LinkCase {
    let format: String
    let args: [Any]
    let person: ((LinkModel, LinkModel.Person) -> Bool)?
    let dog: ((LinkModel, LinkModel.Dog) -> Bool)?
}

@Suite struct LinkQueryTests {
    func open(_ dir: TemporaryDirectory) throws -> Realm {
        try Realm(configuration: .init(
            fileURL: URL(fileURLWithPath: dir.child("q.realm")), objectTypes: [QPerson.self, QDog.self, QVet.self]))
    }

    /// Random conditions through links, lists, sets, lists of values and linking objects.
    static func randomCase(_ rng: inout SplitMix64) -> LinkCase {
        let name = LinkModel.names.randomElement(using: &rng)!
        let n = Int.random(in: -1...12, using: &rng)
        let city = LinkModel.cities.randomElement(using: &rng)!
        let tag = LinkModel.tags.randomElement(using: &rng)!
        let w = Double(Int.random(in: 10...400, using: &rng)) / 10
        typealias M = LinkModel
        let people: [LinkCase] = [
            LinkCase(format: "best.age > %@", args: [n], person: { m, p in (m.bestDog(p)?.age ?? .min) > n }, dog: nil),
            LinkCase(format: "best.name == %@", args: [name], person: { m, p in m.bestDog(p)?.name == name }, dog: nil),
            LinkCase(format: "best.name BEGINSWITH[c] %@", args: [String(name.prefix(1))], person: { m, p in
                m.bestDog(p).map { $0.name.lowercased().hasPrefix(name.prefix(1).lowercased()) } ?? false }, dog: nil),
            LinkCase(format: "best == nil", args: [], person: { m, p in m.bestDog(p) == nil }, dog: nil),
            LinkCase(format: "best.vet.city == %@", args: [city], person: { m, p in
                m.bestDog(p)?.vet.flatMap { m.vets[$0] } == city }, dog: nil),
            // A to-one path through a nil link reaches nil.
            LinkCase(format: "best.vet.city == nil", args: [], person: { m, p in
                m.bestDog(p)?.vet.flatMap { m.vets[$0] } == nil }, dog: nil),
            LinkCase(format: "dogs.age > %@", args: [n], person: { m, p in m.dogList(p).contains { $0.age > n } }, dog: nil),
            LinkCase(format: "ANY dogs.name == %@", args: [name], person: { m, p in m.dogList(p).contains { $0.name == name } }, dog: nil),
            LinkCase(format: "ALL dogs.age >= %@", args: [n], person: { m, p in m.dogList(p).allSatisfy { $0.age >= n } }, dog: nil),
            LinkCase(format: "NONE dogs.weight < %@", args: [w], person: { m, p in !m.dogList(p).contains { $0.weight < w } }, dog: nil),
            LinkCase(format: "ANY dogs.vet.city == %@", args: [city], person: { m, p in
                m.dogList(p).contains { $0.vet.flatMap { m.vets[$0] } == city } }, dog: nil),
            LinkCase(format: "dogs.@count == %@", args: [n % 4], person: { m, p in m.dogList(p).count == n % 4 }, dog: nil),
            LinkCase(format: "dogs.@count > %@", args: [n % 4], person: { m, p in m.dogList(p).count > n % 4 }, dog: nil),
            LinkCase(format: "dogs.@sum.age > %@", args: [n * 2], person: { m, p in m.dogList(p).reduce(0) { $0 + $1.age } > n * 2 }, dog: nil),
            LinkCase(format: "dogs.@avg.weight < %@", args: [w], person: { m, p in
                M.avg(m.dogList(p).map(\.weight)).map { $0 < w } ?? false }, dog: nil),
            LinkCase(format: "dogs.@max.age >= %@", args: [n], person: { m, p in (m.dogList(p).map(\.age).max() ?? .min) >= n }, dog: nil),
            LinkCase(format: "dogs.@min.age <= %@", args: [n], person: { m, p in (m.dogList(p).map(\.age).min() ?? .max) <= n }, dog: nil),
            LinkCase(format: "scores.@sum > %@", args: [n], person: { _, p in p.scores.reduce(0, +) > n }, dog: nil),
            LinkCase(format: "scores.@avg >= %@", args: [n], person: { _, p in
                M.avg(p.scores.map(Double.init)).map { $0 >= Double(n) } ?? false }, dog: nil),
            LinkCase(format: "%@ IN scores", args: [n], person: { _, p in p.scores.contains(n) }, dog: nil),
            LinkCase(format: "ALL scores < %@", args: [n], person: { _, p in p.scores.allSatisfy { $0 < n } }, dog: nil),
            LinkCase(format: "scores.@count == 0", args: [], person: { _, p in p.scores.isEmpty }, dog: nil),
            LinkCase(format: "ANY tags ==[c] %@", args: [tag], person: { _, p in p.tags.contains { $0.lowercased() == tag.lowercased() } }, dog: nil),
            LinkCase(format: "NONE tags == %@", args: [tag], person: { _, p in !p.tags.contains(tag) }, dog: nil),
            LinkCase(format: "tags.@count >= 2", args: [], person: { _, p in p.tags.count >= 2 }, dog: nil),
            LinkCase(format: "SUBQUERY(best.owners, $o, $o.scores.@count > 1).@count >= 1", args: [], person: { m, p in
                m.bestDog(p).map { d in m.owners(d).contains { $0.scores.count > 1 } } ?? false }, dog: nil),
            LinkCase(format: "SUBQUERY(dogs, $d, $d.age > %@ AND $d.name BEGINSWITH[c] %@).@count >= 1", args: [n, String(name.prefix(1))], person: { m, p in
                m.dogList(p).filter { $0.age > n && $0.name.lowercased().hasPrefix(name.prefix(1).lowercased()) }.count >= 1 }, dog: nil),
            LinkCase(format: "SUBQUERY(dogs, $dog, $dog.vet.city == %@).@count == %@", args: [city, n % 3], person: { m, p in
                m.dogList(p).filter { $0.vet.flatMap { m.vets[$0] } == city }.count == n % 3 }, dog: nil),
        ]
        let dogs: [LinkCase] = [
            LinkCase(format: "vet.city == %@", args: [city], person: nil, dog: { m, d in d.vet.flatMap { m.vets[$0] } == city }),
            LinkCase(format: "vet != nil", args: [], person: nil, dog: { _, d in d.vet != nil }),
            LinkCase(format: "owners.@count > %@", args: [n % 3], person: nil, dog: { m, d in m.owners(d).count > n % 3 }),
            LinkCase(format: "owners.@count == 0", args: [], person: nil, dog: { m, d in m.owners(d).isEmpty }),
            LinkCase(format: "ANY owners.name BEGINSWITH %@", args: [String(name.prefix(1))], person: nil, dog: { m, d in
                m.owners(d).contains { $0.name.hasPrefix(name.prefix(1)) } }),
            LinkCase(format: "ALL owners.scores.@count > 1", args: [], person: nil, dog: { m, d in m.owners(d).allSatisfy { $0.scores.count > 1 } }),
            LinkCase(format: "owners.@sum.id < %@", args: [n * 10], person: nil, dog: { m, d in m.owners(d).reduce(0) { $0 + $1.id } < n * 10 }),
            LinkCase(format: "SUBQUERY(owners, $o, $o.scores.@count > 2).@count > 0", args: [], person: nil, dog: { m, d in
                m.owners(d).contains { $0.scores.count > 2 } }),
        ]
        let pool = Bool.random(using: &rng) ? people : dogs
        let a = pool.randomElement(using: &rng)!
        switch Int.random(in: 0..<4, using: &rng) {
        case 0:
            let b = pool.randomElement(using: &rng)!
            return LinkCase(
                format: "(\(a.format)) AND (\(b.format))", args: a.args + b.args,
                person: a.person.map { f in { m, p in f(m, p) && b.person!(m, p) } },
                dog: a.dog.map { f in { m, d in f(m, d) && b.dog!(m, d) } })
        case 1:
            let b = pool.randomElement(using: &rng)!
            return LinkCase(
                format: "(\(a.format)) OR age > 3 OR (\(b.format))".replacingOccurrences(of: "age > 3 OR ", with: a.dog != nil ? "age > 3 OR " : "name == 'Zed' OR "),
                args: a.args + b.args,
                person: a.person.map { f in { m, p in f(m, p) || p.name == "Zed" || b.person!(m, p) } },
                dog: a.dog.map { f in { m, d in f(m, d) || d.age > 3 || b.dog!(m, d) } })
        case 2:
            return LinkCase(
                format: "NOT (\(a.format))", args: a.args,
                person: a.person.map { f in { m, p in !f(m, p) } }, dog: a.dog.map { f in { m, d in !f(m, d) } })
        default:
            return a
        }
    }

    @Test(arguments: Seeds.environmentOr([1, 2, 3]))
    func queriesThroughLinksAgreeWithAPlainSwiftModel(seed: UInt64) throws {
        let dir = try TemporaryDirectory()
        var model = LinkModel(seed: seed)
        let realm = try open(dir)
        try model.fill(realm)
        var rng = SplitMix64(seed: seed &+ 99)
        func check(_ round: String) throws {
            for _ in 0..<(150 * Seeds.scale) {
                let c = Self.randomCase(&rng)
                if let f = c.person {
                    let got = Set(try realm.objects(QPerson.self).filter(c.format, arguments: c.args).map(\.id))
                    let want = Set(model.people.values.filter { f(model, $0) }.map(\.id))
                    #expect(got == want, "\(round): \(c.format) \(c.args) (seed \(seed))")
                } else if let f = c.dog {
                    let got = Set(try realm.objects(QDog.self).filter(c.format, arguments: c.args).map(\.id))
                    let want = Set(model.dogs.values.filter { f(model, $0) }.map(\.id))
                    #expect(got == want, "\(round): \(c.format) \(c.args) (seed \(seed))")
                }
            }
        }
        try check("after insert")
        // Deleting dogs nils links and shortens lists; inside a write the pending state is queried.
        let doomed = (0..<8).map { _ in Int.random(in: 0..<40, using: &rng) }
        realm.beginWrite()
        for id in Set(doomed) {
            if let d = realm.object(ofType: QDog.self, forPrimaryKey: id) { realm.delete(d) }
        }
        model.deleteDogs(Array(Set(doomed)))
        try check("inside the write that deletes")
        try realm.commitWrite()
        try check("after deletes")
    }

    @Test func theTypeSafeFormsMatchTheStringForms() throws {
        let dir = try TemporaryDirectory()
        let model = LinkModel(seed: 7)
        let realm = try open(dir)
        try model.fill(realm)
        let people = realm.objects(QPerson.self)
        let dogs = realm.objects(QDog.self)
        func same(_ a: Results<QPerson>, _ format: String, _ args: Any...) throws {
            let b = try people.filter(format, arguments: args)
            #expect(Set(a.map(\.id)) == Set(b.map(\.id)), "\(format)")
            #expect(!b.isEmpty || format.contains("@count > 4"), "\(format) matches nothing in the sample data")
        }
        try same(people.where { $0.best.name == "Rex" }, "best.name == 'Rex'")
        try same(people.where { $0.best.vet.city == "Oslo" }, "best.vet.city == 'Oslo'")
        try same(people.where { $0.best == nil }, "best == nil")
        try same(people.where { $0.dogs.age > 10 }, "ANY dogs.age > 10")
        try same(people.where { $0.dogs.name.starts(with: "a", options: .caseInsensitive) }, "ANY dogs.name BEGINSWITH[c] 'a'")
        try same(people.where { $0.dogs.count > 2 }, "dogs.@count > 2")
        try same(people.where { $0.scores.contains(3) }, "3 IN scores")
        try same(people.where { $0.scores.sum > 10 }, "scores.@sum > 10")
        try same(people.where { $0.scores.avg > 2 }, "scores.@avg > 2")
        try same(people.where { $0.scores.max >= 8 }, "scores.@max >= 8")
        try same(people.where { $0.tags.contains("red") }, "ANY tags == 'red'")
        try same(people.where { $0.tags.count >= 2 && $0.name != "Bo" }, "tags.@count >= 2 AND name != 'Bo'")
        let rex = try #require(dogs.first)
        try same(people.where { $0.dogs.contains(rex) }, "ANY dogs == %@", rex)
        try same(people.where { $0.best == rex || $0.dogs.contains(rex) }, "best == %@ OR ANY dogs == %@", rex, rex)
        #expect(Set(dogs.where { $0.owners.count == 0 }.map(\.id)) == Set(dogs.filter("owners.@count == 0").map(\.id)))
        #expect(Set(dogs.where { $0.owners.name == "Bo" }.map(\.id)) == Set(dogs.filter("ANY owners.name == 'Bo'").map(\.id)))
        #expect(Set(dogs.where { $0.owners.count > 0 }.map(\.id)) == Set(dogs.filter("owners.@count > 0").map(\.id)))
    }

    @Test func sortingThroughLinksAndComparingTwoKeyPaths() throws {
        let dir = try TemporaryDirectory()
        let model = LinkModel(seed: 11)
        let realm = try open(dir)
        try model.fill(realm)
        let people = realm.objects(QPerson.self)
        // Sorted by the best dog's name (nil first), then by id to make ties deterministic.
        let sorted = people.sorted(by: [SortDescriptor(keyPath: "best.name"), SortDescriptor(keyPath: "id")]).map(\.id)
        let expected = model.people.values.sorted { a, b in
            let x = model.bestDog(a)?.name, y = model.bestDog(b)?.name
            if x != y {
                guard let x else { return true }
                guard let y else { return false }
                return x < y
            }
            return a.id < b.id
        }.map(\.id)
        #expect(Array(sorted) == expected)
        // Distinct through a link: one person per best dog's name (nil counts as one value).
        let distinctNames = people.sorted(byKeyPath: "id").distinct(by: ["best.name"]).map { model.bestDog(model.people[$0.id]!)?.name }
        #expect(distinctNames.count == Set(model.people.values.map { model.bestDog($0)?.name }).count)
        #expect(Set(distinctNames).count == distinctNames.count)
        #expect(people.distinct(by: [\QPerson.best?.name]).count == distinctNames.count)
        // The typed form names the same key path.
        #expect(Array(people.sorted(by: \.best?.name).map { $0.best?.name }) == Array(people.sorted(byKeyPath: "best.name").map { $0.best?.name }))
        let byVetCity = people.sorted(byKeyPath: "best.vet.city", ascending: false).map { model.bestDog(model.people[$0.id]!)?.vet.flatMap { model.vets[$0] } }
        #expect(Array(byVetCity) == byVetCity.sorted { ($0 ?? "") > ($1 ?? "") })
        // Two key paths compared with each other.
        #expect(Set(people.filter("name == best.name").map(\.id)) == Set(model.people.values.filter { $0.name == model.bestDog($0)?.name }.map(\.id)))
        #expect(Set(people.filter("ANY dogs.age > best.age").map(\.id)) == Set(model.people.values.filter { p in
            guard let b = model.bestDog(p) else { return false }
            return model.dogList(p).contains { $0.age > b.age }
        }.map(\.id)))
        let dogs = realm.objects(QDog.self)
        #expect(Set(dogs.filter("weight > age").map(\.id)) == Set(model.dogs.values.filter { $0.weight > Double($0.age) }.map(\.id)))
        #expect(Set(dogs.filter("age == age").map(\.id)).count == model.dogs.count)
    }

    @Test func quantifiersOverEmptyCollectionsFollowRealm() throws {
        let dir = try TemporaryDirectory()
        let realm = try open(dir)
        try realm.write {
            realm.create(QPerson.self, value: ["id": 1, "name": "Empty"])
            realm.create(QPerson.self, value: ["id": 2, "name": "Two", "scores": [1, 5], "dogs": [["id": 1, "name": "Rex", "age": 3]]])
        }
        let people = realm.objects(QPerson.self)
        // ALL of nothing holds; ANY of nothing does not; NONE of nothing holds.
        #expect(people.filter("ALL scores > 100").map(\.id) == [1])
        #expect(people.filter("ANY scores > 0").map(\.id) == [2])
        #expect(people.filter("NONE scores > 100").map(\.id) == [1, 2])
        // Sum of nothing is 0; the average, minimum and maximum of nothing are nil.
        #expect(people.filter("scores.@sum == 0").map(\.id) == [1])
        #expect(people.filter("scores.@avg == nil").map(\.id) == [1])
        #expect(people.filter("dogs.@max.age == nil").map(\.id) == [1])
        #expect(people.filter("dogs.@avg.age == 3").map(\.id) == [2])
        #expect(people.filter("scores.@avg == 3").map(\.id) == [2])
    }

    @Test func badKeyPathsGiveErrorsNamingTheTypeAndProperty() throws {
        let dir = try TemporaryDirectory()
        let realm = try open(dir)
        _ = realm.objects(QPerson.self)
        func message(_ format: String) -> String {
            do {
                _ = try realm.objects(QPerson.self).filter(format, arguments: [])
                return ""
            } catch {
                return "\(error)"
            }
        }
        #expect(message("best.color == 'red'").contains("'QDog' has no property 'color'"))
        #expect(message("name.first == 'x'").contains("'QPerson.name' is not a link"))
        #expect(message("ANY name == 'x'").contains("ANY needs a key path through a List"))
        #expect(message("ANY best.name == 'x'").contains("reaches a single value"))
        #expect(message("dogs.@sum.name > 1").contains("'@sum' needs a numeric property; 'QDog.name' is String"))
        #expect(message("dogs.@avg > 1").contains("needs one property of 'QDog' after it"))
        #expect(message("dogs.@median.age > 1").contains("unknown collection operator '@median'"))
        #expect(message("scores.value > 1").contains("collection of values"))
        #expect(message("name > best.age").contains("cannot compare 'name' (String) with 'best.age' (Int)"))
        #expect(message("SUBQUERY(dogs, $d, age > 1).@count > 0").contains("key paths start with $d."))
        #expect(message("SUBQUERY(name, $d, $d.age > 1).@count > 0").contains("SUBQUERY needs a List, MutableSet or LinkingObjects"))
        #expect(message("SUBQUERY(dogs, $d, $d.age > 1) > 0").contains("expected .@count after SUBQUERY"))
        #expect(message("best.name == 'Rex'") == "")
    }

    @Test func observersOfALinkQuerySeeChangesToTheLinkedObjects() throws {
        let dir = try TemporaryDirectory()
        let realm = try open(dir)
        try realm.write {
            realm.create(QPerson.self, value: ["id": 1, "name": "Ada", "best": ["id": 1, "name": "Rex"]])
            realm.create(QPerson.self, value: ["id": 2, "name": "Bo", "best": ["id": 2, "name": "Fido"]])
        }
        var changes: [String] = []
        let token = realm.objects(QPerson.self).where { $0.best.name == "Rex" }.observe { change in
            switch change {
            case .initial(let r): changes.append("initial \(r.map(\.id))")
            case .update(let r, let d, let i, _): changes.append("update \(r.map(\.id)) -\(d) +\(i)")
            case .error: changes.append("error")
            }
        }
        defer { token.invalidate() }
        // Only the dogs change: the people's records are untouched.
        try realm.write { realm.object(ofType: QDog.self, forPrimaryKey: 2)?.name = "Rex" }
        try realm.write { realm.object(ofType: QDog.self, forPrimaryKey: 1)?.name = "Max" }
        #expect(changes == ["initial [1]", "update [1, 2] -[] +[1]", "update [2] -[0] +[]"])
    }
}
