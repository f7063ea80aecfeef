import Foundation
import Testing
import TestSupport

@testable import Strata

/// Deleting what a query or a collection holds (`Realm.delete(_: Results)`, by key, no object made for each
/// match), and deletions of objects of plain-value types without a primary-key index, which a write keeps as a mark
/// without a record: reads, queries, indexes, links, cancel, spills and the commit see them deleted.
@Suite struct DeletionTests {
    static func config(_ dir: TemporaryDirectory) -> Realm.Configuration {
        Realm.Configuration(
            fileURL: URL(fileURLWithPath: dir.child("d.realm")),
            objectTypes: [Person.self, Note.self, Dog.self, SpillOwner.self, SpillPet.self, SpillAddress.self])
    }

    static func note(_ i: Int) -> Note {
        let n = Note()
        n.text = "n\(i)"
        n.priority = Int8(i % 5)
        return n
    }

    /// A query's matches are deleted in the write and for good; an object the program holds among them is
    /// invalidated, the others stay; the indexed property answers without the deleted.
    @Test func deletingAQuerysResultsDeletesEveryMatch() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: Self.config(dir))
        try realm.write { for i in 0..<200 { realm.add(Self.note(i)) } }
        let held = try #require(realm.objects(Note.self).where { $0.priority == 3 }.first)
        let kept = try #require(realm.objects(Note.self).where { $0.priority == 1 }.first)
        try realm.write {
            let threes = realm.objects(Note.self).where { $0.priority == 3 }
            #expect(threes.count == 40)
            realm.delete(threes)
            #expect(threes.isEmpty)
            #expect(held.isInvalidated)
            #expect(!kept.isInvalidated)
            #expect(realm.objects(Note.self).count == 160)
            #expect(realm.objects(Note.self).filter("priority == 3").count == 0)
            #expect(realm.objects(Note.self).filter("priority == 2").count == 40)
            #expect(!realm.objects(Note.self).contains { $0.text == "n3" })
        }
        #expect(realm.objects(Note.self).count == 160)
        #expect(realm.objects(Note.self).filter("priority == 3").isEmpty)
        #expect(realm.objects(Note.self).filter("priority IN {2, 3, 4}").count == 80)
        let reopened = try Realm(configuration: Self.config(dir))
        #expect(reopened.objects(Note.self).count == 160)
        #expect(reopened.objects(Note.self).filter("priority == 3").isEmpty)
    }

    /// A list that names one object twice is deleted through its results once; the lists and links that named
    /// the deleted objects lose them at commit.
    @Test func deletingACollectionsResultsDeletesEachObjectOnce() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: Self.config(dir))
        let owner = SpillOwner()
        owner.id = 1
        try realm.write {
            let a = SpillPet(), b = SpillPet(), c = SpillPet()
            a.name = "a"; b.name = "b"; c.name = "c"
            owner.pets.append(objectsIn: [a, b, a, c])
            owner.pet = b
            realm.add(owner)
        }
        try realm.write { realm.delete(owner.pets.filter("name != 'c'")) }
        #expect(realm.objects(SpillPet.self).map(\.name) == ["c"])
        #expect(owner.pets.map(\.name) == ["c"])
        #expect(owner.pet == nil)
    }

    /// Deletion marks read as deleted in the write, are forgotten by a cancel, survive a spill, and a
    /// deleted object's key is not read back by a scan, a count or an index lookup.
    @Test func deletionsWithoutARecordReadAsDeletedEverywhere() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: Self.config(dir))
        try realm.write { for i in 0..<100 { realm.add(Self.note(i)) } }
        let notes = Array(realm.objects(Note.self))
        realm.beginWrite()
        for n in notes where n.priority == 0 { realm.delete(n) }
        #expect(notes[0].isInvalidated)
        #expect(realm.objects(Note.self).count == 80)
        realm.cancelWrite()
        #expect(realm.objects(Note.self).count == 100)
        #expect(realm.objects(Note.self).filter("priority == 0").count == 20)
        #expect(realm.objects(Note.self).contains { $0.text == "n0" })

        // Objects passed to a cancelled delete stay deleted to the program (`ObjectAccessor.removed`): fresh ones.
        let again = Array(realm.objects(Note.self))
        realm.core.spillThreshold = 512
        try realm.write {
            for n in again where n.priority == 0 { realm.delete(n) }
            // A changed object, then deleted: its pending record says deleted.
            again[1].text = "changed"
            realm.delete(again[1])
            for i in 100..<150 { realm.add(Self.note(i)) }
            #expect(realm.core.write?.hasSpilled == true)
            #expect(again[0].isInvalidated && again[1].isInvalidated)
            #expect(realm.objects(Note.self).count == 129)
            #expect(realm.objects(Note.self).filter("priority == 0").count == 10)
            #expect(realm.objects(Note.self).filter("priority == 1").count == 29)
        }
        #expect(realm.objects(Note.self).count == 129)
        #expect(realm.objects(Note.self).filter("priority == 0").count == 10)
        #expect(realm.objects(Note.self).filter("priority == 1").count == 29)
        #expect(!realm.objects(Note.self).contains { $0.text == "changed" })
    }

    /// Deleting results outside a write is Realm's error, even when they match nothing.
    @Test func deletingResultsOutsideAWriteTraps() async throws {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let realm = try memoryRealm("deletingResultsOutsideAWriteTraps")
            realm.delete(realm.objects(Note.self))
        }
        let message = String(decoding: try #require(result).standardErrorContent, as: UTF8.self)
        #expect(message.contains("Cannot modify managed objects outside of a write transaction"))
    }
}
