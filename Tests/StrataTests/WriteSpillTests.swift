import Engine
import Foundation
import Testing
import TestSupport

@testable import Strata

final class SpillOwner: Object {
    @Persisted(primaryKey: true) var id: Int
    @Persisted var name = ""
    @Persisted var pet: SpillPet?
    @Persisted var pets: List<SpillPet>
    @Persisted var address: SpillAddress?
}

final class SpillPet: Object {
    @Persisted var name = ""
    @Persisted(indexed: true) var rank = 0
    @Persisted(originProperty: "pets") var owners: LinkingObjects<SpillOwner>
}

final class SpillAddress: EmbeddedObject {
    @Persisted var city = ""
}

/// Large write transactions (`RealmCore+Spill`): past a threshold of pending bytes a write spills its records
/// to segments of its own and forgets them; reads, queries, indexes, links, deletions, the commit, a cancel
/// and a failed spill behave as in a write that never spills. The threshold is lowered to a few kilobytes so
/// that every test spills many times.
@Suite struct WriteSpillTests {
    static let threshold = 2048

    static func config(_ dir: TemporaryDirectory, _ name: String = "s.realm") -> Realm.Configuration {
        Realm.Configuration(
            fileURL: URL(fileURLWithPath: dir.child(name)),
            objectTypes: [Person.self, Note.self, Dog.self, SpillOwner.self, SpillPet.self, SpillAddress.self])
    }

    static func open(_ config: Realm.Configuration) throws -> Realm {
        let realm = try Realm(configuration: config)
        realm.core.spillThreshold = threshold
        return realm
    }

    static func person(_ id: Int, age: Int) -> Person {
        let p = Person()
        p.id = id
        p.firstName = "p\(id)"
        p.age = age
        return p
    }

    static func spilled(_ realm: Realm) -> Bool { realm.core.write?.hasSpilled ?? false }

    /// A bulk insert spills many times and holds little pending; everything it added reads back in the write
    /// (lookups, counts, queries, sorts) and after the commit, and after the file is opened again.
    @Test func aBulkInsertSpillsAndReadsEverythingBack() throws {
        let dir = try TemporaryDirectory()
        let config = Self.config(dir)
        let n = 3000
        do {
            let realm = try Self.open(config)
            try realm.write {
                for i in 0..<n { realm.add(Self.person(i, age: i % 70)) }
                #expect(Self.spilled(realm))
                #expect((realm.core.write?.pendingCount ?? .max) < 200, "spilled objects are forgotten")
                #expect(realm.objects(Person.self).count == n)
                #expect(realm.object(ofType: Person.self, forPrimaryKey: 17)?.firstName == "p17")
                #expect(realm.object(ofType: Person.self, forPrimaryKey: n - 1)?.age == (n - 1) % 70)
                #expect(realm.object(ofType: Person.self, forPrimaryKey: n) == nil)
                #expect(realm.objects(Person.self).where { $0.age == 3 }.count == (0..<n).filter { $0 % 70 == 3 }.count)
                #expect(realm.objects(Person.self).sorted(by: \.id, ascending: false).first?.id == n - 1)
                #expect(Set(realm.objects(Person.self).map(\.id)) == Set(0..<n))
            }
            #expect(realm.objects(Person.self).count == n)
            #expect(realm.objects(Person.self).sum(of: \.age) == (0..<n).map { $0 % 70 }.reduce(0, +))
        }
        let realm = try Realm(configuration: config)
        #expect(realm.objects(Person.self).count == n)
        #expect(realm.object(ofType: Person.self, forPrimaryKey: 2999)?.firstName == "p2999")
        // What the spill worker wrote passes the verifier (every block and record checked).
        let inspector = try DatabaseInspector(path: try #require(config.fileURL).path)
        defer { _ = try? inspector.close() }  // try?: a read-only inspector's close loses nothing.
        let problems = inspector.verify()
        #expect(problems.isEmpty, "verify: \(problems.prefix(5))")
    }

    /// Objects changed across spills read their latest values (an object read before a spill reads again),
    /// whether the loop changes them once or twice, and adding an existing primary key is caught after its
    /// object was spilled.
    @Test func changesAcrossSpillsReadTheirLatestValues() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.open(Self.config(dir))
        try realm.write { for i in 0..<1000 { realm.add(Self.person(i, age: 1)) } }
        let kept = try #require(realm.object(ofType: Person.self, forPrimaryKey: 5))
        try realm.write {
            for p in realm.objects(Person.self) { p.age += 1 }
            #expect(Self.spilled(realm))
            #expect(kept.age == 2, "an object read before the spills reads the spilled value")
            for p in realm.objects(Person.self) { p.age += 10 }
            for p in realm.objects(Person.self) where p.id % 100 == 0 { p.firstName = "renamed \(p.id)" }
            #expect(kept.age == 12)
            #expect(realm.objects(Person.self).where { $0.age == 12 }.count == 1000)
            #expect(realm.object(ofType: Person.self, forPrimaryKey: 300)?.firstName == "renamed 300")
            // An object spilled before is updated, not added again.
            realm.add(Self.person(7, age: 70), update: .modified)
            #expect(realm.object(ofType: Person.self, forPrimaryKey: 7)?.age == 70)
        }
        #expect(realm.objects(Person.self).where { $0.age == 12 }.count == 999)
        #expect(realm.object(ofType: Person.self, forPrimaryKey: 7)?.age == 70)
        #expect(realm.objects(Person.self).filter("firstName BEGINSWITH 'renamed'").count == 10)
    }

    /// Deletions spill as tombstones: deleted objects are gone in the write and after it, a deleted primary
    /// key can be used again after its deletion spilled, and links to deleted objects become nil.
    @Test func deletionsAcrossSpills() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.open(Self.config(dir))
        try realm.write {
            for i in 0..<300 {
                let o = SpillOwner()
                o.id = i
                o.name = "o\(i)"
                let pet = SpillPet()
                pet.name = "pet\(i)"
                pet.rank = i % 10
                o.pet = pet
                o.pets.append(pet)
                realm.add(o)
            }
        }
        let held = try #require(realm.object(ofType: SpillOwner.self, forPrimaryKey: 2))
        #expect(held.name == "o2")
        try realm.write {
            let even = realm.objects(SpillOwner.self).filter { $0.id % 2 == 0 }
            realm.delete(even)
            #expect(Self.spilled(realm))
            #expect(held.isInvalidated, "an object read before its deletion spilled")
            #expect(realm.objects(SpillOwner.self).count == 150)
            #expect(realm.object(ofType: SpillOwner.self, forPrimaryKey: 4) == nil)
            // Every pet of an odd owner goes: the links of the (odd) owners become nil at commit.
            realm.delete(realm.objects(SpillPet.self).filter { ($0.owners.first?.id ?? 0) % 2 == 1 })
            let again = SpillOwner()
            again.id = 4
            again.name = "again"
            realm.add(again)
            #expect(realm.object(ofType: SpillOwner.self, forPrimaryKey: 4)?.name == "again")
        }
        #expect(realm.objects(SpillOwner.self).count == 151)
        #expect(realm.object(ofType: SpillOwner.self, forPrimaryKey: 4)?.name == "again")
        #expect(realm.objects(SpillOwner.self).where { $0.pet != nil }.count == 0)
        #expect(realm.objects(SpillOwner.self).allSatisfy { $0.pets.isEmpty })
        #expect(realm.objects(SpillPet.self).count == 150)
    }

    /// Links, lists, embedded objects and a non-Int primary key (looked up through the primary-key index) added
    /// in bulk read back in the write and after it; a secondary index answers for objects that spilled and
    /// for their changed values.
    @Test func linksIndexesAndPrimaryKeysAcrossSpills() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.open(Self.config(dir))
        var ids: [ObjectId] = []
        try realm.write {
            for i in 0..<500 {
                let o = SpillOwner()
                o.id = i
                for j in 0..<3 {
                    let pet = SpillPet()
                    pet.name = "pet\(i).\(j)"
                    pet.rank = (i + j) % 7
                    o.pets.append(pet)
                }
                o.pet = o.pets[1]
                let a = SpillAddress()
                a.city = "c\(i)"
                o.address = a
                realm.add(o)
                let dog = Dog()
                ids.append(dog._id)
                dog.name = "d\(i)"
                realm.add(dog)
            }
            #expect(Self.spilled(realm))
            #expect(realm.object(ofType: SpillOwner.self, forPrimaryKey: 3)?.pets.map(\.name) == ["pet3.0", "pet3.1", "pet3.2"])
            #expect(realm.object(ofType: SpillOwner.self, forPrimaryKey: 3)?.pet?.name == "pet3.1")
            #expect(realm.object(ofType: SpillOwner.self, forPrimaryKey: 499)?.address?.city == "c499")
            #expect(realm.object(ofType: Dog.self, forPrimaryKey: ids[10])?.name == "d10")
            let rank3 = (0..<1500).filter { n in (n / 3 + n % 3) % 7 == 3 }.count
            #expect(realm.objects(SpillPet.self).where { $0.rank == 3 }.count == rank3)
            // Changed indexed values, some spilled again.
            for pet in realm.objects(SpillPet.self).where({ $0.rank == 0 }) { pet.rank = 100 }
            #expect(realm.objects(SpillPet.self).where { $0.rank == 0 }.isEmpty)
            #expect(realm.objects(SpillPet.self).where { $0.rank == 100 }.count == realm.objects(SpillPet.self).filter { $0.rank == 100 }.count)
        }
        let rank100 = realm.objects(SpillPet.self).filter { $0.rank == 100 }.count
        #expect(rank100 > 0)
        #expect(realm.objects(SpillPet.self).where { $0.rank == 100 }.count == rank100)
        #expect(realm.objects(SpillPet.self).where { $0.rank == 0 }.isEmpty)
        #expect(realm.objects(SpillOwner.self).count == 500)
        #expect(realm.objects(SpillPet.self).count == 1500)
        #expect(realm.objects(SpillOwner.self).filter { $0.address?.city == "c\($0.id)" }.count == 500)
        #expect(realm.object(ofType: Dog.self, forPrimaryKey: ids[499])?.name == "d499")
        #expect(realm.object(ofType: SpillOwner.self, forPrimaryKey: 250)?.pet?.owners.first?.id == 250)
        // A primary key used again after its object was deleted in a write that spilled.
        try realm.write {
            realm.delete(realm.object(ofType: Dog.self, forPrimaryKey: ids[0])!)
            for i in 0..<200 { realm.add(Self.person(i, age: i)) }
            let dog = Dog()
            dog._id = ids[0]
            dog.name = "back"
            realm.add(dog)
        }
        #expect(realm.object(ofType: Dog.self, forPrimaryKey: ids[0])?.name == "back")
        #expect(realm.objects(Dog.self).count == 500)
    }

    /// Deleting a query's results spills as it goes, as a loop of deletions does: a large delete holds
    /// bounded memory too; links to the deleted objects become nil at commit.
    @Test func deletingResultsSpillsAsItGoes() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.open(Self.config(dir))
        try realm.write {
            for i in 0..<400 {
                let o = SpillOwner()
                o.id = i
                let pet = SpillPet()
                pet.rank = i % 10
                o.pet = pet
                realm.add(o)
            }
        }
        try realm.write {
            realm.delete(realm.objects(SpillOwner.self).where { $0.id >= 100 })
            #expect(Self.spilled(realm), "the delete itself spilled")
            #expect(realm.objects(SpillOwner.self).count == 100)
            realm.delete(realm.objects(SpillPet.self).where { $0.rank < 5 })
            #expect(realm.objects(SpillPet.self).count == 200)
        }
        #expect(realm.objects(SpillOwner.self).count == 100)
        #expect(realm.objects(SpillOwner.self).where { $0.pet != nil }.count == 50)
        #expect(realm.objects(SpillPet.self).count == 200)
    }

    /// deleteAll, then a bulk insert that spills: the write sees only the new objects, as does the commit.
    @Test func deleteAllThenABulkInsert() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.open(Self.config(dir))
        try realm.write { for i in 0..<800 { realm.add(Self.person(i, age: 1)) } }
        try realm.write {
            realm.deleteAll()
            for i in 500..<1500 { realm.add(Self.person(i, age: 2)) }
            #expect(Self.spilled(realm))
            #expect(realm.objects(Person.self).count == 1000)
            #expect(realm.object(ofType: Person.self, forPrimaryKey: 10) == nil)
            #expect(realm.object(ofType: Person.self, forPrimaryKey: 600)?.age == 2)
            #expect(!realm.isEmpty)
        }
        #expect(realm.objects(Person.self).count == 1000)
        #expect(realm.objects(Person.self).where { $0.age == 1 }.isEmpty)
    }

    /// An indexed query after deleteAll in the same write finds only the objects added since (the index of
    /// the last commit still lists the deleted ones).
    @Test func anIndexedQueryAfterDeleteAllInTheSameWrite() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: Self.config(dir))
        try realm.write {
            for i in 0..<10 {
                let note = Note()
                note.text = "old \(i)"
                note.priority = 3
                realm.add(note)
            }
        }
        try realm.write {
            realm.deleteAll()
            let note = Note()
            note.text = "new"
            note.priority = 3
            realm.add(note)
            #expect(realm.objects(Note.self).where { $0.priority == 3 }.map(\.text) == ["new"])
        }
        #expect(realm.objects(Note.self).where { $0.priority == 3 }.map(\.text) == ["new"])
    }

    /// A cancelled write that spilled leaves the file as it was and its spilled files removed; objects it
    /// added are invalidated.
    @Test func aCancelledWriteThatSpilledLeavesNothing() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.open(Self.config(dir))
        try realm.write { for i in 0..<10 { realm.add(Self.person(i, age: 1)) } }
        let before = try FileManager.default.contentsOfDirectory(atPath: dir.path).count
        realm.beginWrite()
        let added = Self.person(100, age: 5)
        realm.add(added)
        for i in 1000..<3000 { realm.add(Self.person(i, age: 5)) }
        for p in realm.objects(Person.self) where p.id < 10 { p.age = 9 }
        #expect(Self.spilled(realm))
        realm.cancelWrite()
        #expect(added.isInvalidated)
        #expect(realm.objects(Person.self).count == 10)
        #expect(realm.objects(Person.self).where { $0.age == 1 }.count == 10)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).count == before)
    }

    /// An observer of a type learns of a commit that spilled (as a change it re-evaluates) with the right
    /// objects.
    @Test func observersSeeACommitThatSpilled() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.open(Self.config(dir))
        try realm.write { for i in 0..<10 { realm.add(Self.person(i, age: 1)) } }
        let results = realm.objects(Person.self)
        var counts: [Int] = []
        let token = results.observe { change in
            switch change {
            case .initial(let r): counts.append(r.count)
            case .update(let r, _, _, _): counts.append(r.count)
            case .error: break
            }
        }
        defer { token.invalidate() }
        realm.refresh()
        try realm.write { for i in 10..<2000 { realm.add(Self.person(i, age: 1)) } }
        realm.refresh()
        #expect(counts == [10, 2000])
    }

    /// A spill that fails (the disk is full: in the flush of the memtable below it, in a spilled segment, or
    /// later) leaves the write going on in memory, reading right; its commit throws the error and the file
    /// keeps what it had.
    @Test(arguments: [1, 2, 3, 5, 8])
    func aFailedSpillFailsTheCommitAndLosesNothing(failingAppend: Int) throws {
        let dir = try TemporaryDirectory()
        let faulty = FaultyFileSystem(base: PosixFileSystem())
        var config = Self.config(dir)
        config.fileSystem = faulty
        let realm = try Self.open(config)
        try realm.write { for i in 0..<10 { realm.add(Self.person(i, age: 1)) } }
        faulty.addFault(.failAppend(at: faulty.appendCount + failingAppend, errno: ENOSPC))
        #expect {
            try realm.write {
                for i in 10..<1000 { realm.add(Self.person(i, age: 2)) }
                #expect(realm.core.write?.spillError != nil)
                #expect(realm.objects(Person.self).count == 1000)
                for i in stride(from: 0, to: 1000, by: 37) { #expect(realm.object(ofType: Person.self, forPrimaryKey: i)?.age == (i < 10 ? 1 : 2)) }
                #expect(realm.object(ofType: Person.self, forPrimaryKey: 999)?.age == 2)
            }
        } throws: { error in
            "\(error)".contains("No space left on device")
        }
        #expect(realm.objects(Person.self).count == 10)
        faulty.clearFaults()
        try realm.write { for i in 10..<1000 { realm.add(Self.person(i, age: 3)) } }
        #expect(realm.objects(Person.self).count == 1000)
        let reopened = try Realm(configuration: config)
        #expect(reopened.objects(Person.self).where { $0.age == 3 }.count == 990)
    }
}
