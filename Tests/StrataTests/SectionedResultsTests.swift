import Foundation
import Strata
import Testing
import TestSupport

/// `Results.sectioned(by:)` and its change sets, as RealmSwift's `SectionedResults`.
@Suite struct SectionedResultsTests {
    static func open(_ dir: TemporaryDirectory) throws -> Realm {
        try Realm(configuration: .init(fileURL: URL(fileURLWithPath: dir.child("s.realm")), objectTypes: [Person.self]))
    }

    static func add(_ realm: Realm, _ people: [(Int, String, Int)]) throws {
        try realm.write {
            for (id, name, age) in people { realm.create(Person.self, value: ["id": id, "firstName": name, "age": age]) }
        }
    }

    @Test func objectsAreGroupedBySectionKeyInSortOrder() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.open(dir)
        try Self.add(realm, [(1, "bob", 30), (2, "ann", 20), (3, "cy", 30), (4, "dot", 10), (5, "eve", 20)])
        let byAge = realm.objects(Person.self).sectioned(by: \.age)
        #expect(byAge.allKeys == [10, 20, 30])
        // Within a section, the results' order (ties of the sort in key order).
        #expect(byAge.map { $0.map(\.firstName) } == [["dot"], ["ann", "eve"], ["bob", "cy"]])
        #expect(byAge[IndexPath(indexes: [2, 1])].firstName == "cy")
        let byInitial = realm.objects(Person.self).sectioned(by: { String($0.firstName.prefix(1)) }, sortDescriptors: [SortDescriptor(keyPath: "firstName")])
        #expect(byInitial.allKeys == ["a", "b", "c", "d", "e"] && byInitial[0].key == "a" && byInitial[0].id == "a")
        let descending = realm.objects(Person.self).sectioned(by: \.age, ascending: false)
        #expect(descending.allKeys == [30, 20, 10])
        // Live: a write moves objects between sections.
        try realm.write { realm.object(ofType: Person.self, forPrimaryKey: 4)?.age = 30 }
        #expect(byAge.allKeys == [20, 30] && byAge[1].count == 3)
        let frozen = byAge.freeze()
        try realm.write { realm.delete(realm.objects(Person.self)) }
        #expect(byAge.isEmpty && frozen.count == 2 && frozen.isFrozen)
    }

    @Test func changesNameIndexPathsAndSections() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.open(dir)
        try Self.add(realm, [(1, "a", 10), (2, "b", 20), (3, "c", 20)])
        let sections = realm.objects(Person.self).sectioned(by: \.age)
        var seen: [SectionedResultsChange<SectionedResults<Int, Person>>] = []
        let token = sections.observe { seen.append($0) }
        defer { token.invalidate() }
        guard case .initial(let initial)? = seen.first else {
            Issue.record("no .initial")
            return
        }
        #expect(initial.allKeys == [10, 20])
        // A new section, an object leaving one, a modification.
        try realm.write {
            realm.create(Person.self, value: ["id": 4, "firstName": "d", "age": 30])
            realm.object(ofType: Person.self, forPrimaryKey: 1)?.age = 20
            realm.object(ofType: Person.self, forPrimaryKey: 3)?.firstName = "cc"
        }
        guard case .update(let now, let deletions, let insertions, let modifications, let inserted, let deleted)? = seen.last else {
            Issue.record("no .update: \(seen.count)")
            return
        }
        #expect(now.allKeys == [20, 30])
        #expect(deleted == IndexSet([0]) && inserted == IndexSet([1]))
        #expect(deletions == [] && insertions == [IndexPath(indexes: [0, 0])], "\(deletions) \(insertions)")
        #expect(modifications == [IndexPath(indexes: [0, 2])], "\(modifications)")
    }

    @Test func aSectionDeliversTheChangesOfItsObjects() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.open(dir)
        try Self.add(realm, [(1, "a", 10), (2, "b", 20), (3, "c", 20)])
        let twenties = realm.objects(Person.self).sectioned(by: \.age)[1]
        var seen: [RealmCollectionChange<ResultsSection<Int, Person>>] = []
        let token = twenties.observe { seen.append($0) }
        defer { token.invalidate() }
        try realm.write { realm.object(ofType: Person.self, forPrimaryKey: 1)?.age = 20 }
        guard case .update(let section, let deletions, let insertions, _)? = seen.last else {
            Issue.record("no update: \(seen.count)")
            return
        }
        #expect(section.map(\.firstName) == ["a", "b", "c"] && deletions.isEmpty && insertions == [0])
        // A change to another section's object is not this section's.
        let before = seen.count
        try realm.write { realm.create(Person.self, value: ["id": 9, "age": 99]) }
        #expect(seen.count == before)
    }

    @Test func aListsObjectsAreSectionedToo() throws {
        let dir = try TemporaryDirectory()
        let realm = try GenericCollectionTests.open(dir)
        let owner = try GenericCollectionTests.fill(realm)
        let byOld = owner.dogs.sectioned(by: { $0.age > 5 }, sortDescriptors: [SortDescriptor(keyPath: "age")])
        #expect(byOld.allKeys == [false, true] && byOld.map(\.count) == [3, 2])
    }
}
