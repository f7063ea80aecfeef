import Foundation
import Testing
import TestSupport

@testable import Strata

/// `Realm.delete(_:)` of a sequence of objects: each object deleted once, in order, as one `delete(_:)` each
/// would.
@Suite struct DeleteSequenceTests {
    static func config(_ dir: TemporaryDirectory) -> Realm.Configuration {
        Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("d.realm")), objectTypes: [Person.self, Dog.self, Note.self])
    }

    static func person(_ id: Int) -> Person {
        let p = Person()
        p.id = id
        p.firstName = "p\(id)"
        return p
    }

    /// Thousands of objects of one type, objects of types whose deletions read their records among them, an
    /// object added in the same write, and an observer's change set of exactly the deleted objects.
    @Test func aSequenceOfSeveralTypesIsDeletedWholeWithItsChangeSet() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: Self.config(dir))
        try realm.write {
            for i in 0..<10_000 { realm.add(Self.person(i)) }
            for i in 0..<3 {
                let d = Dog()
                d.name = "d\(i)"
                realm.add(d)
                let n = Note()
                n.text = "n\(i)"
                realm.add(n)
            }
        }
        let people = realm.objects(Person.self).sorted(byKeyPath: "id")
        var deletions: [[Int]] = []
        let token = people.observe { change in
            if case .update(_, let d, _, _) = change { deletions.append(d) }
        }
        defer { token.invalidate() }
        try realm.write {
            let added = Self.person(20_001)
            realm.add(added)
            var victims: [Object] = Array(people.filter { $0.id % 2 == 0 })
            victims.insert(realm.objects(Dog.self)[0], at: 100)
            victims.insert(realm.objects(Note.self)[0], at: 4_500)
            victims.append(added)
            victims.append(realm.objects(Dog.self)[1])
            realm.delete(victims)
        }
        realm.refresh()
        #expect(realm.objects(Person.self).count == 5_000)
        #expect(realm.objects(Person.self).allSatisfy { $0.id % 2 == 1 })
        #expect(realm.objects(Dog.self).count == 1)
        #expect(realm.objects(Note.self).count == 2)
        #expect(deletions == [Array(stride(from: 0, to: 10_000, by: 2))])
        // Deleted: invalidated, as one by one.
        let reopened = try Realm(configuration: Self.config(dir))
        #expect(reopened.object(ofType: Person.self, forPrimaryKey: 2) == nil)
        #expect(reopened.object(ofType: Person.self, forPrimaryKey: 3) != nil)
    }

    /// The same object twice in one sequence (two instances of it): the second is Realm's error, as deleting it
    /// twice one by one is.
    @Test func anObjectTwiceInOneSequenceIsRealmsError() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = try TemporaryDirectory()
            let realm = try Realm(configuration: DeleteSequenceTests.config(dir))
            try realm.write { for i in 0..<3 { realm.add(DeleteSequenceTests.person(i)) } }
            try realm.write {
                let once = realm.object(ofType: Person.self, forPrimaryKey: 1)!
                let again = realm.object(ofType: Person.self, forPrimaryKey: 1)!
                realm.delete([realm.object(ofType: Person.self, forPrimaryKey: 0)!, once, again])
            }
        }
        let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(text.contains("Object has been deleted or invalidated."))
    }

    /// Outside a write: Realm's error, naming the first object's type.
    @Test func deletingASequenceOutsideAWriteIsRealmsError() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = try TemporaryDirectory()
            let realm = try Realm(configuration: DeleteSequenceTests.config(dir))
            try realm.write { realm.add(DeleteSequenceTests.person(1)) }
            realm.delete(Array(realm.objects(Person.self)))
        }
        let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(text.contains("Cannot modify managed objects outside of a write transaction"))
        #expect(text.contains("deleting a Person"))
    }
}
