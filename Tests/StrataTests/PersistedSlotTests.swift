import Foundation
import Strata
import Testing
import TestSupport

/// Issue 41, decision 1: a property's getter and setter find the property by the index its storage holds
/// (`Persisted.slot`), which the first read of an object writes into all of its storages, at the field offsets
/// the runtime gives for its class.
@Suite struct PersistedSlotTests {
    static func realm(_ dir: TemporaryDirectory) throws -> Realm {
        try Realm(configuration: .init(
            fileURL: URL(fileURLWithPath: dir.child("slots.realm")), objectTypes: [SlotMixed.self, SlotReplaced.self, LPet.self, LPetOwner.self, LShelter.self]))
    }

    @Test func everyPropertyReadsItsOwnValueWhicheverIsReadFirst() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.realm(dir)
        try realm.write {
            for i in 0..<3 {
                let o = SlotMixed()
                o.id = i
                o.name = "n\(i)"
                o.score = Double(i) / 2
                o.nickname = i == 1 ? nil : "k\(i)"
                o.tags.append(objectsIn: ["t\(i)", "u\(i)"])
                o.flag = i % 2 == 0
                o.count = i * 10
                realm.add(o)
            }
        }
        func check(_ o: SlotMixed, _ i: Int, reversed: Bool) {
            // Each object's first read fills its slots: start from the last property, then from the first.
            if reversed {
                #expect(o.count == i * 10)
                #expect(o.flag == (i % 2 == 0))
                #expect(Array(o.tags) == ["t\(i)", "u\(i)"])
                #expect(o.nickname == (i == 1 ? nil : "k\(i)"))
                #expect(o.score == Double(i) / 2)
                #expect(o.name == "n\(i)")
                #expect(o.id == i)
            } else {
                #expect(o.id == i)
                #expect(o.name == "n\(i)")
                #expect(o.score == Double(i) / 2)
                #expect(o.nickname == (i == 1 ? nil : "k\(i)"))
                #expect(Array(o.tags) == ["t\(i)", "u\(i)"])
                #expect(o.flag == (i % 2 == 0))
                #expect(o.count == i * 10)
            }
        }
        for i in 0..<3 {
            check(try #require(realm.object(ofType: SlotMixed.self, forPrimaryKey: i)), i, reversed: i % 2 == 0)
            check(try #require(realm.object(ofType: SlotMixed.self, forPrimaryKey: i)), i, reversed: i % 2 == 1)
        }
        // A loop's reused object keeps its slots from one record to the next.
        var seen = 0
        for o in realm.objects(SlotMixed.self).sorted(byKeyPath: "id") {
            check(o, seen, reversed: seen == 1)
            seen += 1
        }
        #expect(seen == 3)
        // Setters of a managed object find their property the same way.
        let o = try #require(realm.object(ofType: SlotMixed.self, forPrimaryKey: 2))
        try realm.write {
            o.count = 99
            o.nickname = nil
        }
        #expect(realm.objects(SlotMixed.self).where { $0.count == 99 }.map(\.id) == [2])
        #expect(realm.object(ofType: SlotMixed.self, forPrimaryKey: 2)?.nickname == nil)
    }

    @Test func aStorageAnInitializerReplacesIsToldItsPropertyAgain() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.realm(dir)
        // The initializer assigns a new storage after `super.init()`: it starts unset again.
        let unmanaged = SlotReplaced()
        #expect(unmanaged.name == "replaced" && unmanaged.age == 7)
        unmanaged.id = 1
        try realm.write { realm.add(unmanaged) }
        #expect(unmanaged.name == "replaced")
        try realm.write { realm.create(SlotReplaced.self, value: ["id": 2, "name": "given", "age": 3]) }
        // Strata makes the objects it reads through the same initializer.
        let read = realm.objects(SlotReplaced.self).sorted(byKeyPath: "id").map { "\($0.id) \($0.name) \($0.age)" }
        #expect(read == ["1 replaced 7", "2 given 3"])
    }

    @Test func anUnmanagedLinkingObjectsNamesItsOriginProperty() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.realm(dir)
        let pet = LPet()
        #expect(pet.owners.propertyName == "pet" && pet.owners.isEmpty)
        #expect(pet.shelters.propertyName == "pets")
        pet.id = 5
        try realm.write {
            realm.add(pet)
            realm.create(LPetOwner.self, value: ["id": 1, "pet": pet])
        }
        #expect(pet.owners.map(\.id) == [1])
        // Queries through a LinkingObjects property record it by its slot.
        #expect(realm.objects(LPet.self).where { $0.owners.id == 1 }.map(\.id) == [5])
    }

    @Test func aFrozenObjectReadOnSeveralThreadsAtOnceReadsItsOwnValues() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.realm(dir)
        try realm.write {
            for i in 0..<8 { realm.create(SlotMixed.self, value: ["id": i, "name": "n\(i)", "count": i * 3]) }
        }
        // Made frozen, never read before: every thread's first read finds the slots already filled.
        nonisolated(unsafe) let frozen = Array(realm.freeze().objects(SlotMixed.self).sorted(byKeyPath: "id"))
        let wrong = SlotTally()
        DispatchQueue.concurrentPerform(iterations: 64) { t in
            let o = frozen[t % frozen.count]
            let i = t % frozen.count
            if o.count != i * 3 || o.name != "n\(i)" || o.id != i { wrong.add() }
        }
        #expect(wrong.count == 0)
    }

    @Test func frozenDynamicObjectsRead() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.realm(dir)
        try realm.write { realm.create(SlotMixed.self, value: ["id": 1, "name": "dyn", "count": 4]) }
        let frozen = realm.freeze()
        #expect(frozen.dynamicObjects("SlotMixed").map { $0["name"] as? String } == ["dyn"])
        let live = try #require(realm.dynamicObject(ofType: "SlotMixed", forPrimaryKey: 1))
        #expect(live.freeze()["count"] as? Int == 4)
        #expect(frozen.dynamicObject(ofType: "SlotMixed", forPrimaryKey: 1)?["count"] as? Int == 4)
    }
}

final class SlotMixed: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
    @Persisted var score = 0.0
    @Persisted var nickname: String?
    @Persisted var tags: List<String>
    @Persisted var flag = false
    @Persisted var count = 0
}

final class SlotReplaced: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
    @Persisted var age = 0

    override init() {
        super.init()
        _name = Persisted(wrappedValue: "replaced")
        _age = Persisted(wrappedValue: 7)
    }
}

/// A count kept by several threads.
final class SlotTally: @unchecked Sendable {
    private let lock = NSLock()
    private var n = 0
    func add() {
        lock.lock()
        n += 1
        lock.unlock()
    }
    var count: Int {
        lock.lock()
        defer { lock.unlock() }
        return n
    }
}
