import Engine
import Foundation
import Strata
import Testing
import TestSupport

// RealmSwift API found missing by compiling typical RealmSwift code against Strata (issue 36), grouped by the
// type it belongs to.

final class APIIdentified: Object, ObjectKeyIdentifiable {
    @Persisted var name = ""
}

@Suite struct ListKeyValueCodingTests {
    @Test func aListReadsAndSetsOnePropertyOfEveryObject() throws {
        let dir = try TemporaryDirectory()
        let realm = try MissingAPITests.realm(dir)
        let owner = try MissingAPITests.filled(realm)
        #expect(owner.dogs.value(forKey: "name") as? [String] == ["d1", "d2", "d3"])
        #expect(owner.dogs.value(forKeyPath: "id") as? [Int] == [1, 2, 3])
        try realm.write { owner.dogs.setValue("same", forKey: "name") }
        #expect(realm.objects(APIDog.self).map(\.name) == ["same", "same", "same"])
        #expect(owner.favourites.value(forKey: "id") as? [Int] == [2, 3])
        // Unmanaged lists too.
        let loose = List<APIDog>()
        loose.append(APIDog(value: ["id": 9, "name": "n"]))
        loose.setValue("m", forKey: "name")
        #expect(loose.value(forKey: "name") as? [String] == ["m"])
    }
}

@Suite struct TypedKeyPathObservationTests {
    @Test func observersTakeKeyPathsAsWellAsNames() throws {
        let dir = try TemporaryDirectory()
        let queue = DispatchQueue(label: "typed-keypaths")
        let config = Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("k.realm")), objectTypes: [APIDog.self, APIOwner.self])
        let seen = Locked<[String]>([])
        nonisolated(unsafe) var tokens: [NotificationToken] = []
        queue.sync {
            let realm = try! Realm(configuration: config, queue: queue)
            let owner = try! MissingAPITests.filled(realm)
            let dog = owner.dogs[0]
            tokens.append(dog.observe(keyPaths: [\APIDog.name], on: queue) { (change: ObjectChange<APIDog>) in
                if case .change(_, let props) = change { seen.withLock { $0.append("dog " + props.map(\.name).joined()) } }
            })
            tokens.append(realm.objects(APIDog.self).observe(keyPaths: [\APIDog.name], on: queue) { change in
                if case .update(_, _, _, let m) = change { seen.withLock { $0.append("results \(m)") } }
            })
            tokens.append(owner.dogs.observe(keyPaths: [\APIDog.name], on: queue) { change in
                if case .update(_, _, _, let m) = change { seen.withLock { $0.append("list \(m)") } }
            })
            tokens.append(owner.favourites.observe(keyPaths: [\APIDog.name], on: queue) { change in
                if case .update(_, _, _, let m) = change { seen.withLock { $0.append("set \(m)") } }
            })
        }
        // A change to a property not observed reports nothing; one to `name` reports it everywhere.
        let writer = try Realm(configuration: config)
        try writer.write { writer.object(ofType: APIOwner.self, forPrimaryKey: 1)!.numbers.append(5) }
        try writer.write { writer.object(ofType: APIDog.self, forPrimaryKey: 1)!.name = "renamed" }
        for _ in 0..<200 where seen.withLock({ $0.count }) < 3 { queue.sync {}; usleep(2_000) }
        queue.sync { tokens.forEach { $0.invalidate() } }
        let events = seen.withLock { $0 }
        #expect(events.contains("dog name"))
        #expect(events.contains("results [0]"))
        #expect(events.contains("list [0]"))
        #expect(!events.contains { $0.hasPrefix("set") })
        #expect(events.count == 3, "\(events)")
    }
}

@Suite struct ObjectKeyIdentifiableTests {
    @Test func aManagedObjectsIdIsTheSameForEveryInstanceAndAnUnmanagedOnesIsItsOwn() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: .init(fileURL: URL(fileURLWithPath: dir.child("i.realm")), objectTypes: [APIIdentified.self]))
        let a = APIIdentified()
        let b = APIIdentified()
        #expect(a.id != b.id)
        #expect(a.id == a.id)
        try realm.write {
            realm.add(a)
            realm.add(b)
        }
        let again = realm.objects(APIIdentified.self)
        #expect(again[0].id == a.id && again[1].id == b.id)
        #expect(a.id != b.id)
        #expect(Set(again.map(\.id)).count == 2)
    }
}

@Suite struct WriteCopyToFileTests {
    @Test func writeCopyToFileWritesAnEqualRealmThere() throws {
        let dir = try TemporaryDirectory()
        let realm = try MissingAPITests.realm(dir)
        _ = try MissingAPITests.filled(realm)
        let copy = URL(fileURLWithPath: dir.child("copy.realm"))
        try realm.writeCopy(toFile: copy)
        var config = realm.configuration
        config.fileURL = copy
        let opened = try Realm(configuration: config)
        #expect(opened.objects(APIDog.self).map(\.name) == ["d1", "d2", "d3"])
        #expect(opened.objects(APIOwner.self).first?.numbers.count == 4)
    }
}

@Suite struct ProjectionThreadSafeReferenceTests {
    @Test func aProjectionIsHandedToAnotherThreadFrozenAndThawed() throws {
        let dir = try TemporaryDirectory()
        let realm = try MissingAPITests.realm(dir)
        _ = try MissingAPITests.filled(realm)
        let view = try #require(realm.objects(APIDogView.self).first)
        let reference = ThreadSafeReference(to: view)
        let config = realm.configuration
        let name = Locked<String?>(nil)
        let thread = Thread {
            let other = try! Realm(configuration: config)
            name.withLock { $0 = other.resolve(reference)?.name }
        }
        thread.start()
        while !thread.isFinished { usleep(1_000) }
        #expect(name.withLock { $0 } == "d1")
        let frozen = view.freeze()
        #expect(frozen.isFrozen && !view.isFrozen)
        #expect(frozen.thaw()?.name == "d1")
        #expect(frozen.thaw()?.isFrozen == false)
        @ThreadSafe var safe = view
        #expect(safe?.name == "d1")
        // A reference to a deleted object's projection resolves to nil.
        let gone = ThreadSafeReference(to: view)
        try realm.write { realm.delete(view.rootObject) }
        #expect(realm.resolve(gone) == nil)
    }
}
