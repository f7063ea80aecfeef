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

final class TSCompany: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var employees: List<TSEmployee>
    @Persisted var employeeSet: MutableSet<TSEmployee>
}

final class TSEmployee: Object {
    @Persisted var name = ""
    @Persisted(originProperty: "employees") var companies: LinkingObjects<TSCompany>
}

/// Issue 56, item 4: references to every kind RealmSwift's `ThreadSafeReferenceTests` pass, and its misuse
/// messages.
@Suite struct ThreadSafeReferenceKindTests {
    static func config(_ dir: TemporaryDirectory) -> Realm.Configuration {
        Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("k.realm")), objectTypes: [TSCompany.self, TSEmployee.self])
    }

    /// Runs `body` on a new thread and waits for it.
    static func onAnotherThread(_ body: @escaping @Sendable () -> Void) {
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            body()
            done.signal()
        }
        done.wait()
    }

    /// `testPassThreadSafeReferenceToAnyRealmCollection` and `testPassThreadSafeReferenceToLinkingObjects`.
    @Test func anyRealmCollectionsAndLinkingObjectsCrossThreads() throws {
        let dir = try TemporaryDirectory()
        let config = Self.config(dir)
        let realm = try Realm(configuration: config)
        let company = try realm.write {
            realm.create(TSCompany.self, value: ["id": 1, "employees": [["name": "A"], ["name": "B"], ["name": "C"]], "employeeSet": [["name": "D"]]])
        }
        let results = AnyRealmCollection(realm.objects(TSEmployee.self).filter("name != 'C'").sorted(byKeyPath: "name", ascending: false))
        let list = AnyRealmCollection(company.employees)
        let set = AnyRealmCollection(company.employeeSet)
        let owners = company.employees[0].companies
        let refs = (ThreadSafeReference(to: results), ThreadSafeReference(to: list), ThreadSafeReference(to: set), ThreadSafeReference(to: owners))
        let seen = Locked<[String]>([])
        Self.onAnotherThread {
            guard let there = try? Realm(configuration: config) else { return }
            let r = there.resolve(refs.0).map { $0.map(\.name).joined() } ?? "nil"
            let l = there.resolve(refs.1).map { $0.map(\.name).joined() } ?? "nil"
            let s = there.resolve(refs.2).map { $0.map(\.name).joined() } ?? "nil"
            let o = there.resolve(refs.3).map { $0.map { "\($0.id)" }.joined() } ?? "nil"
            seen.withLock { $0 = [r, l, s, o] }
        }
        #expect(seen.withLock { $0 } == ["DBA", "ABC", "D", "1"])
    }

    /// A reference to a collection whose object was deleted since resolves to nil.
    @Test func aCollectionOfADeletedObjectResolvesToNil() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: Self.config(dir))
        let company = try realm.write { realm.create(TSCompany.self, value: ["id": 1, "employees": [["name": "A"]]]) }
        let ref = ThreadSafeReference(to: AnyRealmCollection(company.employees))
        try realm.write { realm.delete(company) }
        #expect(realm.resolve(ref) == nil)
    }

    @Test func aReferenceToAnUnmanagedObjectTrapsWithRealmsWords() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = ThreadSafeReference(to: TSCompany())
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("Cannot construct reference to unmanaged object"))
    }

    @Test func aReferenceToADeletedObjectTrapsWithRealmsWords() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = try TemporaryDirectory()
            let realm = try Realm(configuration: ThreadSafeReferenceKindTests.config(dir))
            let company = try realm.write { realm.create(TSCompany.self, value: ["id": 1]) }
            let list = company.employees
            try realm.write { realm.deleteAll() }
            _ = ThreadSafeReference(to: list)
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("Cannot construct reference to invalidated object"))
    }

    @Test func aReferenceResolvesOnce() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = try TemporaryDirectory()
            let realm = try Realm(configuration: ThreadSafeReferenceKindTests.config(dir))
            let company = try realm.write { realm.create(TSCompany.self, value: ["id": 1]) }
            let ref = ThreadSafeReference(to: company)
            _ = realm.resolve(ref)
            _ = realm.resolve(ref)
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("Can only resolve a thread safe reference once"))
    }
}
