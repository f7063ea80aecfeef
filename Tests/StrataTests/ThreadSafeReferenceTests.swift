import Dispatch
import Engine
import Foundation
import Strata
import Testing
import TestSupport

@Suite struct ThreadSafeReferenceTests {
    @Test func objectsAndResultsCrossThreadsByReference() throws {
        let dir = try TemporaryDirectory()
        let config = Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("t.realm")), objectTypes: [Person.self])
        let realm = try Realm(configuration: config)
        try realm.write {
            for i in 0..<5 { realm.create(Person.self, value: ["id": i, "firstName": "p\(i)", "age": 10 * i]) }
        }
        let objectRef = ThreadSafeReference(to: realm.object(ofType: Person.self, forPrimaryKey: 3)!)
        let resultsRef = ThreadSafeReference(to: realm.objects(Person.self).where { $0.age >= 20 }.sorted(byKeyPath: "age", ascending: false))
        let seen = Locked<[String]>([])
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            defer { done.signal() }
            guard let there = try? Realm(configuration: config) else { return }
            let person = there.resolve(objectRef)
            let adults = there.resolve(resultsRef)
            seen.withLock { $0 = [person?.firstName ?? "nil", adults.map { $0.map { "\($0.id)" }.joined(separator: ",") } ?? "nil"] }
        }
        done.wait()
        #expect(seen.withLock { $0 } == ["p3", "4,3,2"])
        // A deleted object resolves to nil.
        let goneRef = ThreadSafeReference(to: realm.object(ofType: Person.self, forPrimaryKey: 0)!)
        try realm.write { realm.delete(realm.object(ofType: Person.self, forPrimaryKey: 0)!) }
        #expect(realm.resolve(goneRef) == nil)
    }
}
