import Foundation
import Testing
import TestSupport

@testable import Strata

/// The write state (`WriteState`): objects of types holding plain values are encoded into the write's arena
/// when added, and read, queried, changed, deleted and cancelled from there as pending records are; commits
/// build change sets only for observers.
@Suite struct WriteStateTests {
    static func config(_ dir: TemporaryDirectory) -> Realm.Configuration {
        Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("w.realm")), objectTypes: [Person.self, Note.self])
    }

    static func person(_ id: Int, _ name: String, age: Int) -> Person {
        let p = Person()
        p.id = id
        p.firstName = name
        p.age = age
        return p
    }

    @Test func anObjectAddedInAWriteReadsItsValuesBeforeCommit() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: Self.config(dir))
        try realm.write {
            for i in 0..<100 { realm.add(Self.person(i, "p\(i)", age: i % 50)) }
            #expect((realm.core.write?.encodedObjects ?? 0) == 100, "added whole: encoded into the batch")
            let p = try #require(realm.object(ofType: Person.self, forPrimaryKey: 42))
            #expect(p.firstName == "p42")
            #expect(p.age == 42)
            #expect(p.nickname == nil)
            #expect(p.isActive)
            #expect(realm.objects(Person.self).count == 100)
            #expect(realm.objects(Person.self).where { $0.age > 40 }.count == 18)
            #expect(realm.objects(Person.self).filter("firstName BEGINSWITH 'p9'").count == 11)
            #expect(realm.objects(Person.self).sorted(by: \.age, ascending: false).first?.age == 49)
            // Changed and deleted while still pending.
            p.age = 99
            #expect(realm.object(ofType: Person.self, forPrimaryKey: 42)?.age == 99)
            realm.delete(realm.object(ofType: Person.self, forPrimaryKey: 7)!)
            #expect(realm.object(ofType: Person.self, forPrimaryKey: 7) == nil)
            #expect(realm.objects(Person.self).count == 99)
            // The key of a deleted object can be used again in the same write.
            realm.add(Self.person(7, "again", age: 1))
            #expect(realm.object(ofType: Person.self, forPrimaryKey: 7)?.firstName == "again")
            // Added with update: the pending object takes the new values.
            realm.add(Self.person(8, "updated", age: 2), update: .modified)
            #expect(realm.object(ofType: Person.self, forPrimaryKey: 8)?.firstName == "updated")
        }
        #expect(realm.objects(Person.self).count == 100)
        #expect(realm.object(ofType: Person.self, forPrimaryKey: 42)?.age == 99)
        #expect(realm.object(ofType: Person.self, forPrimaryKey: 7)?.firstName == "again")
        #expect(realm.object(ofType: Person.self, forPrimaryKey: 8)?.age == 2)
        #expect(realm.objects(Person.self).sum(of: \.age) == (0..<100).map { $0 % 50 }.reduce(0, +) - 42 + 99 - 7 + 1 - 8 + 2)
    }

    /// A stored object's fixed-width properties are written into a copy of its record in the arena; a string
    /// encodes the record into the arena again (no pending record either); reads in the write, the commit and
    /// a cancel all see the right values.
    @Test func storedObjectsChangedInAWriteArePatchedInPlace() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: Self.config(dir))
        try realm.write { for i in 0..<20 { realm.add(Self.person(i, "p\(i)", age: i)) } }
        try realm.write {
            for p in realm.objects(Person.self) {
                p.age += 100
                p.isActive = p.id % 2 == 0
            }
            #expect((realm.core.write?.encodedObjects ?? 0) == 20, "patched copies of the stored records")
            #expect(realm.objects(Person.self).where { $0.age >= 100 }.count == 20)
            #expect(realm.objects(Person.self).where { $0.isActive == true }.count == 10)
            let p3 = try #require(realm.object(ofType: Person.self, forPrimaryKey: 3))
            #expect(p3.age == 103)
            p3.nickname = "three"  // a string: no slot to patch, the record is encoded again
            p3.age = 7
            p3.firstName = "third"
            #expect(p3.nickname == "three")
            #expect(p3.age == 7)
            #expect(p3.firstName == "third")
            #expect((realm.core.write?.encodedObjects ?? 0) == 20, "still encoded, strings included")
            #expect(realm.objects(Person.self).filter("firstName == 'third'").count == 1)
        }
        #expect(realm.object(ofType: Person.self, forPrimaryKey: 3)?.firstName == "third")
        #expect(realm.objects(Person.self).sum(of: \.age) == (0..<20).map { $0 + 100 }.reduce(0, +) - 103 + 7)
        #expect(realm.object(ofType: Person.self, forPrimaryKey: 3)?.nickname == "three")
        #expect(realm.object(ofType: Person.self, forPrimaryKey: 4)?.isActive == true)
        #expect(realm.object(ofType: Person.self, forPrimaryKey: 5)?.isActive == false)
        realm.beginWrite()
        for p in realm.objects(Person.self) { p.age = -1 }
        realm.cancelWrite()
        #expect(realm.objects(Person.self).where { $0.age == -1 }.isEmpty, "a cancel leaves the stored records")
        // Nil and back for an optional fixed-width property, on a type with one.
        try realm.write {
            let n = Note()
            n.priority = 5
            realm.add(n)
        }
        try realm.write { realm.objects(Note.self).first!.priority = 9 }
        #expect(realm.objects(Note.self).first?.priority == 9)
        // The index on priority followed the patched record.
        #expect(realm.objects(Note.self).where { $0.priority == 9 }.count == 1)
        #expect(realm.objects(Note.self).where { $0.priority == 5 }.count == 0)
    }

    /// Reads in a write through objects read before it (their records current) and through others of the same
    /// object: each reads what the write left, whether the object is untouched, patched in the batch, encoded
    /// again (a string), deleted, spilled, or dropped by deleteAll.
    @Test func readsInAWriteFollowTheWritesChangesThroughEveryObject() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: Self.config(dir))
        try realm.write { for i in 0..<50 { realm.add(Self.person(i, "p\(i)", age: i)) } }
        let held = Array(realm.objects(Person.self))
        #expect(held[7].age == 7)
        realm.core.spillThreshold = 1024
        try realm.write {
            #expect(held[7].age == 7 && held[7].isActive, "untouched: its record as read")
            let other = try #require(realm.object(ofType: Person.self, forPrimaryKey: 7))
            other.age = 70
            other.isActive = false
            #expect(held[7].age == 70 && !held[7].isActive, "patched through another object")
            other.firstName = "seven"
            other.age = 71
            #expect(held[7].age == 71 && held[7].firstName == "seven", "encoded again")
            for p in held[20..<50] { p.age += 1000 }
            #expect(realm.core.write?.hasSpilled == true)
            #expect(held[7].age == 71, "spilled, read from the view")
            #expect(held[30].age == 1030)
            realm.delete(other)
            #expect(held[7].isInvalidated)
            #expect(held[8].age == 8)
        }
        #expect(held[30].age == 1030 && held[8].age == 8)
        realm.beginWrite()
        realm.deleteAll()
        #expect(held[8].isInvalidated)
        realm.cancelWrite()
        #expect(held[8].age == 8)
    }

    /// Objects with links and lists are encoded into the batch once their links and lists are resolved (the
    /// write holds no record for them); they read, change and commit as any other.
    @Test func objectsWithLinksAndListsAreEncodedWhenAdded() throws {
        let dir = try TemporaryDirectory()
        let config = Realm.Configuration(
            fileURL: URL(fileURLWithPath: dir.child("l.realm")), objectTypes: [QPerson.self, QDog.self, QVet.self])
        let realm = try Realm(configuration: config)
        try realm.write {
            for i in 0..<10 {
                let p = QPerson()
                p.id = i
                p.name = "p\(i)"
                let dog = QDog()
                dog.id = 2 * i
                dog.name = "d\(i)"
                let other = QDog()
                other.id = 2 * i + 1
                p.best = dog
                p.dogs.append(dog)
                p.dogs.append(other)
                p.scores.append(objectsIn: [i, i + 1])
                p.tags.insert("t\(i % 3)")
                realm.add(p)
            }
            #expect((realm.core.write?.encodedObjects ?? 0) == 30, "10 people and their 20 dogs")
            let p3 = try #require(realm.object(ofType: QPerson.self, forPrimaryKey: 3))
            #expect(p3.best?.name == "d3")
            #expect(Array(p3.scores) == [3, 4])
            #expect(p3.dogs.count == 2)
            // A change after the add decodes the record back.
            p3.scores.append(99)
            p3.dogs.removeLast()
            p3.name = "three"
            #expect(Array(p3.scores) == [3, 4, 99])
            #expect(realm.objects(QPerson.self).where { $0.scores.contains(99) }.count == 1)
            #expect(realm.objects(QDog.self).count == 20)
        }
        let p3 = try #require(realm.object(ofType: QPerson.self, forPrimaryKey: 3))
        #expect(p3.name == "three")
        #expect(Array(p3.scores) == [3, 4, 99])
        #expect(p3.dogs.count == 1)
        #expect(p3.best?.owners.count == 1)
        #expect(realm.objects(QPerson.self).where { $0.best.name == "d7" }.first?.id == 7)
        #expect(Set(realm.objects(QPerson.self).flatMap { Array($0.tags) }) == ["t0", "t1", "t2"])
    }

    /// A String primary key deleted and added again in one write belongs to the new object, in the write and
    /// after the commit.
    @Test func aStringPrimaryKeyDeletedAndAddedAgainInOneWrite() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: .init(fileURL: URL(fileURLWithPath: dir.child("s.realm")), objectTypes: [Tagged.self]))
        try realm.write { realm.create(Tagged.self, value: ["name": "a", "n": 1]) }
        try realm.write {
            realm.delete(try #require(realm.object(ofType: Tagged.self, forPrimaryKey: "a")))
            realm.create(Tagged.self, value: ["name": "a", "n": 2])
            #expect(realm.object(ofType: Tagged.self, forPrimaryKey: "a")?.n == 2)
            #expect(realm.objects(Tagged.self).count == 1)
        }
        #expect(realm.object(ofType: Tagged.self, forPrimaryKey: "a")?.n == 2)
        #expect(realm.objects(Tagged.self).filter("name == 'a'").count == 1)
        #expect(realm.objects(Tagged.self).count == 1)
    }

    /// Objects with a String primary key are encoded into the batch when added too; their index entries are
    /// written at commit, and a duplicate in the same write is still Realm's error.
    @Test func objectsWithAStringPrimaryKeyAreEncodedWhenAdded() async throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: .init(fileURL: URL(fileURLWithPath: dir.child("s.realm")), objectTypes: [Tagged.self]))
        try realm.write {
            for i in 0..<50 { realm.create(Tagged.self, value: ["name": "k\(i)", "n": i]) }
            #expect((realm.core.write?.encodedObjects ?? 0) == 50)
            #expect(realm.object(ofType: Tagged.self, forPrimaryKey: "k7")?.n == 7)
            realm.object(ofType: Tagged.self, forPrimaryKey: "k8")?.n = 80
            realm.delete(try #require(realm.object(ofType: Tagged.self, forPrimaryKey: "k9")))
        }
        #expect(realm.objects(Tagged.self).count == 49)
        #expect(realm.object(ofType: Tagged.self, forPrimaryKey: "k8")?.n == 80)
        #expect(realm.object(ofType: Tagged.self, forPrimaryKey: "k9") == nil)
        #expect(realm.objects(Tagged.self).filter("name IN {'k1', 'k2', 'k9'}").count == 2)
        let duplicate = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = try TemporaryDirectory()
            let realm = try Realm(configuration: .init(fileURL: URL(fileURLWithPath: dir.child("d.realm")), objectTypes: [Tagged.self]))
            try realm.write {
                realm.create(Tagged.self, value: ["name": "a"])
                realm.create(Tagged.self, value: ["name": "a"])
            }
        }
        let text = String(decoding: duplicate?.standardErrorContent ?? [], as: UTF8.self)
        #expect(text.contains("Attempting to create an object of type 'Tagged' with an existing primary key value"))
    }

    /// Links are nulled only to objects that stay deleted: one whose Int key a new object took in the same
    /// write keeps the links to it; and deleteAll after a delete brings nothing back.
    @Test func linksToAKeyDeletedAndAddedAgainStay() throws {
        let dir = try TemporaryDirectory()
        let config = Realm.Configuration(
            fileURL: URL(fileURLWithPath: dir.child("n.realm")), objectTypes: [QPerson.self, QDog.self, QVet.self])
        let realm = try Realm(configuration: config)
        try realm.write {
            let dog = QDog()
            dog.id = 5
            let p = QPerson()
            p.id = 1
            p.best = dog
            realm.add(p)
        }
        try realm.write {
            realm.delete(try #require(realm.object(ofType: QDog.self, forPrimaryKey: 5)))
            let again = QDog()
            again.id = 5
            again.name = "again"
            realm.add(again)
            realm.object(ofType: QPerson.self, forPrimaryKey: 1)?.best = again
        }
        #expect(realm.object(ofType: QPerson.self, forPrimaryKey: 1)?.best?.name == "again")
        try realm.write {
            realm.delete(try #require(realm.object(ofType: QDog.self, forPrimaryKey: 5)))
            realm.deleteAll()
        }
        #expect(realm.objects(QPerson.self).isEmpty)
        #expect(realm.objects(QDog.self).isEmpty)
    }

    /// A change to an object read before another instance committed starts from the stored record, not from
    /// the older record the object was read with (which would lose the other commit's values).
    @Test func aChangeToAnObjectReadBeforeAnotherCommitKeepsThatCommit() throws {
        let dir = try TemporaryDirectory()
        let config = Self.config(dir)
        let realm = try Realm(configuration: config)
        try realm.write { realm.add(Self.person(1, "one", age: 1)) }
        let p = try #require(realm.object(ofType: Person.self, forPrimaryKey: 1))
        #expect(p.age == 1)
        let done = DispatchSemaphore(value: 0)
        Thread {
            do {
                let r = try Realm(configuration: config)
                try r.write { r.object(ofType: Person.self, forPrimaryKey: 1)?.nickname = "uno" }
            } catch {
                Issue.record("the other thread's write failed: \(error)")
            }
            done.signal()
        }.start()
        done.wait()
        try realm.write { p.age = 2 }
        let q = try #require(realm.object(ofType: Person.self, forPrimaryKey: 1))
        #expect(q.age == 2)
        #expect(q.nickname == "uno")
    }

    /// Enumerating a type's objects in a write streams the write's base snapshot; objects the loop changes or
    /// deletes before the scan reaches them read as the write left them, and objects it adds are not visited
    /// (as when the keys were listed first).
    @Test func iteratingInAWriteSeesObjectsAsTheLoopLeftThem() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: Self.config(dir))
        try realm.write { for i in 0..<10 { realm.add(Self.person(i, "p\(i)", age: i)) } }
        try realm.write {
            var seen: [Int] = [], ages: [Int] = [], invalidated = 0
            for p in realm.objects(Person.self) {
                if p.isInvalidated {
                    invalidated += 1
                    continue
                }
                seen.append(p.id)
                ages.append(p.age)
                if p.id == 2 {
                    realm.object(ofType: Person.self, forPrimaryKey: 7)?.age = 70
                    if let eight = realm.object(ofType: Person.self, forPrimaryKey: 8) { realm.delete(eight) }
                    realm.add(Self.person(100, "new", age: 100))
                }
                p.age += 1000
            }
            #expect(seen == [0, 1, 2, 3, 4, 5, 6, 7, 9])
            #expect(ages == [0, 1, 2, 3, 4, 5, 6, 70, 9])
            #expect(invalidated == 1)
        }
        #expect(realm.objects(Person.self).count == 10)
        #expect(realm.object(ofType: Person.self, forPrimaryKey: 7)?.age == 1070)
        #expect(realm.object(ofType: Person.self, forPrimaryKey: 100)?.age == 100)
        #expect(realm.objects(Person.self).where { $0.age >= 1000 }.count == 9)
    }

    /// The index entries a commit writes from records in the write's batch (new keys without reading old
    /// entries, patched ones replacing theirs, keys deleted and added again in one write): after every write
    /// of a random run, an index lookup finds exactly what a scan finds.
    @Test(arguments: Seeds.environmentOr([0x1D3, 0x77E1]))
    func indexLookupsMatchScansAfterRandomWrites(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let dir = try TemporaryDirectory()
        let config = Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("i.realm")), objectTypes: [WSTagged.self])
        let realm = try Realm(configuration: config)
        let tags = ["a", "b", "c", "d"]
        var model: [Int: String] = [:]
        var nextID = 0
        for _ in 0..<(12 * Seeds.scale) {
            try realm.write {
                for _ in 0..<Int.random(in: 1...40, using: &rng) {
                    let tag = tags.randomElement(using: &rng)!
                    switch Int.random(in: 0..<4, using: &rng) {
                    case 0 where !model.isEmpty:
                        let id = model.keys.randomElement(using: &rng)!
                        realm.object(ofType: WSTagged.self, forPrimaryKey: id)?.tag = tag
                        model[id] = tag
                    case 1 where !model.isEmpty:
                        let id = model.keys.randomElement(using: &rng)!
                        if let o = realm.object(ofType: WSTagged.self, forPrimaryKey: id) { realm.delete(o) }
                        model[id] = nil
                        if Bool.random(using: &rng) {
                            // The same key again, in the same write.
                            let o = WSTagged()
                            o.id = id
                            o.tag = tag
                            realm.add(o)
                            model[id] = tag
                        }
                    default:
                        let o = WSTagged()
                        o.id = nextID
                        o.tag = tag
                        realm.add(o)
                        model[nextID] = tag
                        nextID += 1
                    }
                }
            }
            for tag in tags {
                let found = Set(realm.objects(WSTagged.self).where { $0.tag == tag }.map(\.id))
                let expected = Set(model.filter { $0.value == tag }.keys)
                #expect(found == expected, "tag \(tag), seed \(seed)")
            }
        }
    }

    /// Realm's error for a primary key that exists: added twice in one write (the first still pending, encoded
    /// in the arena) and in a later write.
    @Test func aDuplicatePrimaryKeyIsRealmsErrorInOneWriteAndAcross() async {
        let message = "Attempting to create an object of type 'Person' with an existing primary key value '1'."
        let inOne = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = try TemporaryDirectory()
            let realm = try Realm(configuration: WriteStateTests.config(dir))
            try realm.write {
                realm.add(WriteStateTests.person(1, "a", age: 1))
                realm.add(WriteStateTests.person(1, "b", age: 2))
            }
        }
        let inOneText = String(decoding: inOne?.standardErrorContent ?? [], as: UTF8.self)
        #expect(inOneText.contains(message))
        let across = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = try TemporaryDirectory()
            let realm = try Realm(configuration: WriteStateTests.config(dir))
            try realm.write { realm.add(WriteStateTests.person(1, "a", age: 1)) }
            try realm.write { realm.add(WriteStateTests.person(1, "b", age: 2)) }
        }
        let acrossText = String(decoding: across?.standardErrorContent ?? [], as: UTF8.self)
        #expect(acrossText.contains(message))
    }

    /// What a write read from its pending records (objects made from results, a results cache) does not pass
    /// for current once the write is cancelled.
    @Test func readsInACancelledWriteDoNotOutliveIt() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: Self.config(dir))
        try realm.write { realm.add(Self.person(1, "a", age: 1)) }
        let people = realm.objects(Person.self)
        #expect(people.count == 1)
        realm.beginWrite()
        people[0].age = 99
        let changed = people[0]
        #expect(changed.age == 99)
        realm.add(Self.person(2, "b", age: 2))
        let added = try #require(people.where { $0.id == 2 }.first)
        #expect(people.count == 2)
        realm.cancelWrite()
        #expect(changed.age == 1)
        #expect(people[0].age == 1)
        #expect(people.count == 1)
        #expect(added.isInvalidated)
    }

    /// An instance bound at an older schema version reads records another instance of the file wrote at a
    /// newer one (their layout comes from the file's schema as it is then).
    @Test func anInstanceAtAnOlderVersionReadsRecordsOfANewerOne() throws {
        let dir = try TemporaryDirectory()
        var old = Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("v.realm")), objectTypes: [Person.self])
        old.schemaVersion = 0
        let a = try Realm(configuration: old)
        try a.write { a.add(Self.person(1, "a", age: 1)) }
        var new = old
        new.schemaVersion = 1
        new.migrationMode = .blocking
        let b = try Realm(configuration: new)
        try b.write { b.add(Self.person(2, "b", age: 2)) }
        a.refresh()
        #expect(a.objects(Person.self).map(\.firstName).sorted() == ["a", "b"])
        #expect(a.object(ofType: Person.self, forPrimaryKey: 2)?.age == 2)
    }

    @Test func objectsWithoutAPrimaryKeyGetKeysAndKeepTheirOrder() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: Self.config(dir))
        try realm.write {
            for i in 0..<10 {
                let n = Note()
                n.text = "n\(i)"
                realm.add(n)
            }
            #expect(realm.objects(Note.self).map(\.text) == (0..<10).map { "n\($0)" })
        }
        #expect(realm.objects(Note.self).map(\.text) == (0..<10).map { "n\($0)" })
    }

    /// RealmSwift's `cancelWrite()`: the data goes back to what it was, objects added in the write are
    /// invalidated rather than becoming unmanaged, and a deleted object is not revived.
    @Test func cancelLeavesNothingAndInvalidatesWhatItAdded() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: Self.config(dir))
        try realm.write { realm.add(Self.person(70, "old", age: 70)) }
        let old = try #require(realm.object(ofType: Person.self, forPrimaryKey: 70))
        let kept = Self.person(1, "kept", age: 3)
        let changed = Self.person(60, "changed", age: 1)
        let gone = Self.person(61, "gone", age: 6)
        realm.beginWrite()
        realm.add(kept)
        for i in 2..<50 { realm.add(Self.person(i, "x", age: i)) }
        realm.add(changed)
        changed.age = 2
        realm.add(gone)
        realm.delete(gone)
        realm.delete(old)
        #expect(realm.objects(Person.self).count == 50)
        realm.cancelWrite()
        #expect(realm.objects(Person.self).count == 1)
        #expect(kept.isInvalidated)
        #expect(changed.isInvalidated)
        #expect(gone.isInvalidated)
        #expect(old.isInvalidated, "a deleted instance is not revived")
        // Running the query again finds the object the cancel restored.
        #expect(realm.object(ofType: Person.self, forPrimaryKey: 70)?.firstName == "old")
        // A later object with the key of a cancelled one does not bring that instance back.
        try realm.write { realm.add(Self.person(1, "later", age: 9)) }
        #expect(kept.isInvalidated)
        #expect(realm.object(ofType: Person.self, forPrimaryKey: 1)?.firstName == "later")
    }

    /// Deleting each object of a loop over results, inside one write or one write per object (the loop hands
    /// out its previous object again when nothing else holds it).
    @Test func deletingEveryObjectOfALoop() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: Self.config(dir))
        try realm.write { for i in 0..<20 { realm.add(Self.person(i, "p", age: i)) } }
        try realm.write { for p in realm.objects(Person.self) where p.id < 10 { realm.delete(p) } }
        #expect(realm.objects(Person.self).count == 10)
        for p in realm.objects(Person.self) { try realm.write { realm.delete(p) } }
        #expect(realm.objects(Person.self).isEmpty)
    }

    /// What a cancelled write read from its own changes does not come back as current in the next write, and an
    /// object that was stored before a cancelled write that updated it stays valid.
    @Test func aCancelledWritesReadsStayBehind() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: Self.config(dir))
        try realm.write { realm.add(Self.person(1, "one", age: 1)) }
        realm.beginWrite()
        let people = realm.objects(Person.self)
        people[0].age = 99
        let c = people[0]
        #expect(c.age == 99)
        realm.cancelWrite()
        try realm.write { c.firstName = "z" }
        let stored = try #require(realm.object(ofType: Person.self, forPrimaryKey: 1))
        #expect(stored.age == 1)
        #expect(stored.firstName == "z")
        let update = Self.person(1, "updated", age: 5)
        realm.beginWrite()
        realm.add(update, update: .modified)
        realm.cancelWrite()
        #expect(!update.isInvalidated, "its object was stored before the write")
        #expect(update.firstName == "z")
    }

    /// After `deleteAll` in a write, the rest of the write sees no objects (and what it adds).
    @Test func deleteAllInAWriteLeavesNothingToRead() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: Self.config(dir))
        try realm.write { for i in 0..<10 { realm.add(Self.person(i, "p", age: i)) } }
        let held = try #require(realm.object(ofType: Person.self, forPrimaryKey: 3))
        try realm.write {
            realm.deleteAll()
            #expect(realm.objects(Person.self).count == 0)
            #expect(realm.object(ofType: Person.self, forPrimaryKey: 3) == nil)
            var seen = 0
            for _ in realm.objects(Person.self) { seen += 1 }
            #expect(seen == 0)
            #expect(held.isInvalidated)
            realm.add(Self.person(3, "again", age: 30))
            #expect(realm.objects(Person.self).count == 1)
        }
        #expect(realm.objects(Person.self).count == 1)
        #expect(realm.object(ofType: Person.self, forPrimaryKey: 3)?.firstName == "again")
    }

    /// An object added in a cancelled write, and another object with its primary key committed since.
    static func addedInACancelledWrite(_ dir: TemporaryDirectory) throws -> (Realm, Person) {
        let realm = try Realm(configuration: config(dir))
        let p = person(1, "a", age: 1)
        realm.beginWrite()
        realm.add(p)
        realm.cancelWrite()
        try realm.write { realm.add(person(1, "b", age: 2)) }
        return (realm, p)
    }

    @Test func writingAnObjectAddedInACancelledWriteIsRealmsError() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = try TemporaryDirectory()
            let (realm, p) = try WriteStateTests.addedInACancelledWrite(dir)
            try realm.write { p.age = 42 }
        }
        let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(text.contains("Object has been deleted or invalidated."))
    }

    @Test func readingAnObjectAddedInACancelledWriteIsRealmsError() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = try TemporaryDirectory()
            let (_, p) = try WriteStateTests.addedInACancelledWrite(dir)
            print(p.firstName)
        }
        let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(text.contains("Object has been deleted or invalidated."))
    }

    @Test func aCommitNobodyObservesBuildsNoChangeSet() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: Self.config(dir))
        let counter = realm.core.shared.changeSetsBuilt
        let before = counter.current
        try realm.write { realm.add(Self.person(1, "a", age: 1)) }
        #expect(counter.current == before, "no observer: no change set")
        var seen: [[Int]] = []
        let token = realm.objects(Person.self).observe { change in
            if case .update(_, _, _, let modifications) = change { seen.append(modifications) }
        }
        try realm.write { realm.object(ofType: Person.self, forPrimaryKey: 1)!.age = 2 }
        #expect(counter.current == before + 1, "an observer: a change set")
        #expect(seen == [[0]])
        token.invalidate()
        try realm.write { realm.add(Self.person(2, "b", age: 1)) }
        #expect(counter.current == before + 1, "the observer is gone: no change set")
    }

    /// A commit logged as unknown changes (too large for a key set, as one nobody observed is) still tells an
    /// observer of a linked property which objects it reaches changed.
    @Test func anUnknownChangeSetStillReportsLinkedChanges() throws {
        let dir = try TemporaryDirectory()
        let config = Realm.Configuration(
            fileURL: URL(fileURLWithPath: dir.child("l.realm")), objectTypes: [WSOwner.self, WSPet.self, Note.self])
        let realm = try Realm(configuration: config)
        try realm.write {
            let o = realm.create(WSOwner.self, value: ["name": "o"])
            o.pet = realm.create(WSPet.self, value: ["name": "p"])
            realm.create(WSOwner.self, value: ["name": "no pet"])
        }
        var seen: [[Int]] = []
        let token = realm.objects(WSOwner.self).observe(keyPaths: ["pet.name"]) { change in
            if case .update(_, _, _, let modifications) = change { seen.append(modifications) }
        }
        try realm.write {
            realm.objects(WSPet.self).first!.name = "q"
            for _ in 0...RealmCore.largeCommit { realm.add(Note()) }
        }
        #expect(seen == [[0]])
        token.invalidate()
    }

    /// The first change in a write of an optional fixed-width value of a stored object (its record copied into
    /// the batch with the value written on the way, null bit included): to nil, from nil, and a second change of
    /// the same object, read back in the write, after the commit and after reopening.
    @Test func firstChangesOfOptionalValuesOfStoredObjectsSetTheirNullBits() throws {
        let dir = try TemporaryDirectory()
        let config = Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("r.realm")), objectTypes: [WSReading.self])
        do {
            let realm = try Realm(configuration: config)
            try realm.write {
                for i in 0..<6 {
                    let r = WSReading()
                    r.level = i.isMultiple(of: 2) ? i : nil
                    r.ratio = i.isMultiple(of: 2) ? Double(i) / 2 : nil
                    r.flag = i.isMultiple(of: 2) ? true : nil
                    r.label = "r\(i)"
                    realm.add(r)
                }
            }
            try realm.write {
                for r in realm.objects(WSReading.self) {
                    // Set ones to nil, nil ones to values; the label, a string, changes after (re-encoded).
                    r.level = r.level == nil ? 100 : nil
                    r.ratio = r.ratio == nil ? 0.25 : nil
                    r.flag = r.flag == nil ? false : nil
                    if r.label == "r3" { r.label = "three" }
                }
                let levels = realm.objects(WSReading.self).map(\.level)
                #expect(levels == [nil, 100, nil, 100, nil, 100])
                let first = try #require(realm.objects(WSReading.self).first)
                first.level = 7
                #expect(first.level == 7 && first.ratio == nil && first.flag == nil)
            }
        }
        let realm = try Realm(configuration: config)
        let all = Array(realm.objects(WSReading.self))
        #expect(all.map(\.level) == [7, 100, nil, 100, nil, 100])
        #expect(all.map(\.ratio) == [nil, 0.25, nil, 0.25, nil, 0.25])
        #expect(all.map(\.flag) == [nil, false, nil, false, nil, false])
        #expect(all.map(\.label) == ["r0", "r1", "r2", "three", "r4", "r5"])
        #expect(realm.objects(WSReading.self).where { $0.level == nil }.count == 2)
    }
}

final class WSReading: Object {
    @Persisted var level: Int?
    @Persisted var ratio: Double?
    @Persisted var flag: Bool?
    @Persisted var label = ""
}

final class WSOwner: Object {
    @Persisted var name = ""
    @Persisted var pet: WSPet?
}

final class WSPet: Object {
    @Persisted var name = ""
}

final class WSTagged: Object {
    @Persisted(primaryKey: true) var id: Int
    @Persisted(indexed: true) var tag = ""
}
