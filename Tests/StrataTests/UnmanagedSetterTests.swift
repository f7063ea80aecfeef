import Engine
import Foundation
import Observation
import Strata
import Testing
import TestSupport

/// Issue 55: an unmanaged object's setters record plain values in an array its first property access makes, and
/// `add` hands that array back to the type for its next object. Each object still has its own values: those set,
/// and the declared defaults of those not set.
@Suite struct UnmanagedSetterTests {
    static func realm(_ name: String) throws -> Realm {
        try Realm(configuration: .init(inMemoryIdentifier: "\(name)-\(UUID().uuidString)", objectTypes: [SetterPerson.self]))
    }

    @Test func anObjectMadeAfterAnAddHasItsOwnDefaults() throws {
        let realm = try Self.realm("defaults")
        try realm.write {
            let first = SetterPerson()
            first.id = 1
            first.name = "Ada"
            first.age = 36
            first.score = 2.5
            realm.add(first)
            // Made after the first was added (the array the first one's setters filled is handed on).
            let second = SetterPerson()
            second.id = 2
            #expect(second.name == "unnamed")
            #expect(second.age == 7)
            #expect(second.score == nil)
            realm.add(second)
            let third = SetterPerson()
            third.id = 3
            third.score = 1.5
            third.name = "Grace"
            #expect(third.age == 7)
            #expect(third.name == "Grace")
            third.age = 85
            #expect(third.age == 85)
            realm.add(third)
        }
        let stored = realm.objects(SetterPerson.self).sorted(byKeyPath: "id").map { [$0.name, "\($0.age)", "\($0.score.map { "\($0)" } ?? "nil")"] }
        #expect(Array(stored) == [["Ada", "36", "2.5"], ["unnamed", "7", "nil"], ["Grace", "85", "1.5"]])
    }

    @Test func anObjectReadBeforeItIsSetReadsItsStorage() throws {
        let o = SetterPerson()
        // The first access is a read: it makes the array, with nothing set. (A read also makes the object's
        // part in Observation, so the setters below take the general path.)
        #expect(o.name == "unnamed")
        o.age = 40
        #expect(o.age == 40)
        #expect(o.name == "unnamed")
        let realm = try Self.realm("read-first")
        try realm.write { realm.add(o) }
        #expect(o.age == 40)
        #expect(o.name == "unnamed")
        // A managed object's setter.
        try realm.write { o.age += 1 }
        #expect(realm.object(ofType: SetterPerson.self, forPrimaryKey: 0)?.age == 41)
    }

    @Test func valuesSetBeforeAnyReadAreObservedOnceRead() {
        let o = SetterPerson()
        o.id = 4
        o.name = "four"
        o.score = 1.5
        o.score = nil
        #expect(o.score == nil)
        let fired = Locked(0)
        _ = withObservationTracking { o.name } onChange: { fired.withLock { $0 += 1 } }
        o.age = 30
        #expect(fired.withLock { $0 } == 0)
        o.name = "vier"
        #expect(fired.withLock { $0 } == 1)
        #expect(o.name == "vier" && o.age == 30 && o.id == 4)
    }

    @Test func objectsMadeAndAddedOnSeveralThreadsAtOnceKeepTheirOwnValues() throws {
        let threads = 4, each = 2_000
        let failures = SlotTally()
        DispatchQueue.concurrentPerform(iterations: threads) { t in
            do {
                let realm = try Self.realm("threads-\(t)")
                try realm.write {
                    for i in 0..<each {
                        let o = SetterPerson()
                        o.id = t * each + i
                        if i % 3 != 0 { o.name = "p\(t)-\(i)" }
                        o.age = i
                        // Every property set (two in three objects): the path that encodes the record from the
                        // setters' array and hands the array back, on every thread at once.
                        if i % 3 != 0 { o.score = Double(i) }
                        if o.age != i || o.name != (i % 3 != 0 ? "p\(t)-\(i)" : "unnamed") || o.score != (i % 3 != 0 ? Double(i) : nil) {
                            failures.add()
                        }
                        realm.add(o)
                    }
                }
                for o in realm.objects(SetterPerson.self) {
                    let i = o.id - t * each
                    if o.age != i || o.name != (i % 3 != 0 ? "p\(t)-\(i)" : "unnamed") || o.score != (i % 3 != 0 ? Double(i) : nil) {
                        failures.add()
                    }
                }
                if realm.objects(SetterPerson.self).count != each { failures.add() }
            } catch {
                failures.add()
            }
        }
        #expect(failures.count == 0)
    }
}

final class SetterPerson: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = "unnamed"
    @Persisted var age = 7
    @Persisted var score: Double?
}
