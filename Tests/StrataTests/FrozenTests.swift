import Dispatch
import Engine
import Foundation
import Strata
import Testing
import TestSupport

@Suite struct FrozenTests {
    @Test func frozenViewsKeepTheirVersionAndCanBeReadOnAnotherThread() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: .init(fileURL: URL(fileURLWithPath: dir.child("f.realm")), objectTypes: [Person.self]))
        try realm.write {
            for i in 0..<10 { realm.create(Person.self, value: ["id": i, "firstName": "p\(i)", "age": i]) }
        }
        let frozenResults = realm.objects(Person.self).where { $0.age >= 5 }.freeze()
        let ada = try #require(realm.object(ofType: Person.self, forPrimaryKey: 7))
        let frozenAda = ada.freeze()
        #expect(frozenResults.isFrozen && frozenAda.isFrozen && !ada.isFrozen)
        try realm.write {
            ada.age = 70
            realm.delete(realm.object(ofType: Person.self, forPrimaryKey: 5)!)
            realm.create(Person.self, value: ["id": 20, "age": 50])
        }
        // The live views moved on; the frozen ones did not.
        #expect(realm.objects(Person.self).where { $0.age >= 5 }.map(\.id) == [6, 7, 8, 9, 20])
        #expect(frozenResults.map(\.id) == [5, 6, 7, 8, 9])
        #expect(frozenAda.age == 7 && ada.age == 70)
        #expect(frozenAda.realm?.refresh() == false)
        // Readable from another thread.
        nonisolated(unsafe) let shared = frozenResults
        let ages = Locked<[Int]>([])
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            ages.withLock { $0 = shared.map(\.age) }
            done.signal()
        }
        done.wait()
        #expect(ages.withLock { $0 } == [5, 6, 7, 8, 9])
        // Thawed, they are live again.
        #expect(frozenAda.thaw()?.age == 70)
        #expect(frozenResults.thaw()?.map(\.id) == [6, 7, 8, 9, 20])
    }
}
