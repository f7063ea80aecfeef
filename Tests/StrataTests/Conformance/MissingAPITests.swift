import Foundation
import Strata
import Synchronization
import Testing
import TestSupport

// Issue 18, item 3: RealmSwift API that ported code uses, grouped by the type it belongs to.

final class APIDog: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
}

final class APIOwner: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var dogs: List<APIDog>
    @Persisted var favourites: MutableSet<APIDog>
    @Persisted var byName: Map<String, APIDog?>
    @Persisted var numbers: List<Int>
    @Persisted var tags: MutableSet<String>
}

final class APIDogView: Projection<APIDog> {
    @Projected(\APIDog.name) var name
}

@Suite struct MissingAPITests {
    static func realm(_ dir: TemporaryDirectory) throws -> Realm {
        let types: [ObjectBase.Type] = [APIDog.self, APIOwner.self]
        return try Realm(configuration: .init(fileURL: URL(fileURLWithPath: dir.child("api.realm")), objectTypes: types))
    }

    static func filled(_ realm: Realm) throws -> APIOwner {
        try realm.write {
            let dogs = (1...3).map { realm.create(APIDog.self, value: ["id": $0, "name": "d\($0)"]) }
            return realm.create(APIOwner.self, value: [
                "id": 1, "dogs": dogs, "favourites": [dogs[1], dogs[2]], "byName": ["a": dogs[0]], "numbers": [1, 2, 3, 4], "tags": ["x", "y"],
            ])
        }
    }

    @Test func objectDynamicCollectionsViewObjectsAsDynamicObjects() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.realm(dir)
        let owner = try Self.filled(realm)
        let dogs = owner.dynamicList("dogs")
        #expect(dogs.map { $0["name"] as? String } == ["d1", "d2", "d3"])
        #expect(owner.dynamicMutableSet("favourites").count == 2)
        let map: Map<String, DynamicObject?> = owner.dynamicMap("byName")
        #expect(map["a"]??["name"] as? String == "d1")
        // Live and writable.
        try realm.write { dogs.remove(at: 0) }
        #expect(owner.dogs.map(\.id) == [2, 3])
    }

    @Test func listIsAMutableRangeReplaceableCollection() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.realm(dir)
        let owner = try Self.filled(realm)
        let numbers = owner.numbers
        try realm.write {
            numbers.replaceSubrange(0..<2, with: [10, 20, 30])
            #expect(Array(numbers) == [10, 20, 30, 3, 4])
            numbers[0] = 11
            numbers.removeFirst()
            #expect(Array(numbers) == [20, 30, 3, 4])
            numbers.remove(atOffsets: IndexSet([0, 2]))
            #expect(Array(numbers) == [30, 4])
            numbers.append(contentsOf: [5, 6])
            numbers.move(fromOffsets: IndexSet([0]), toOffset: 3)
            #expect(Array(numbers) == [4, 5, 30, 6])
            numbers.move(fromOffsets: IndexSet([2, 3]), toOffset: 0)
            #expect(Array(numbers) == [30, 6, 4, 5])
        }
        // Unmanaged lists behave the same.
        let loose = List<Int>()
        loose.append(contentsOf: [1, 2, 3])
        loose.move(fromOffsets: IndexSet([0]), toOffset: 2)
        #expect(Array(loose) == [2, 1, 3])
    }

    @Test func mutableSetHasPositionalAccess() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.realm(dir)
        let owner = try Self.filled(realm)
        #expect(owner.tags[0] == "x")
        #expect(owner.tags.first == "x")
        #expect(owner.tags.last == "y")
        #expect(owner.favourites.first?.id == 2)
    }

    @Test func projectionsAreEqualWhenTheyProjectTheSameObject() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.realm(dir)
        _ = try Self.filled(realm)
        let a = APIDogView(projecting: try #require(realm.object(ofType: APIDog.self, forPrimaryKey: 1)))
        let b = APIDogView(projecting: try #require(realm.objects(APIDog.self).filter("id == 1").first))
        let c = APIDogView(projecting: try #require(realm.object(ofType: APIDog.self, forPrimaryKey: 2)))
        #expect(a == b)
        #expect(a != c)
        #expect(Set([a, b, c]).count == 2)
    }

    @Test func realmErrorDeclaresRealmSwiftsCodes() {
        let codes: [Realm.Error.Code] = [
            Realm.Error.fail, Realm.Error.fileAccess, Realm.Error.filePermissionDenied, Realm.Error.fileExists, Realm.Error.fileNotFound,
            Realm.Error.fileFormatUpgradeRequired, Realm.Error.incompatibleLockFile, Realm.Error.addressSpaceExhausted,
            Realm.Error.schemaMismatch, Realm.Error.alreadyOpen, Realm.Error.invalidInput, Realm.Error.outOfDiskSpace,
            Realm.Error.incompatibleSession, Realm.Error.unsupportedFileFormatVersion, Realm.Error.fileOperationFailed, Realm.Error.invalidDatabase,
        ]
        #expect(codes.map(\.rawValue) == [1, 2, 3, 4, 5, 6, 8, 9, 10, 12, 13, 14, 15, 16, 19, 20])
    }
}

@Suite struct AsyncWriteTests {
    @Test func writeAsyncCommitsAndCallsBack() throws {
        let dir = try TemporaryDirectory()
        let realm = try MissingAPITests.realm(dir)
        let done = Mutex<[Bool]>([])
        realm.writeAsync({ realm.create(APIDog.self, value: ["id": 7, "name": "async"]) }, onComplete: { error in
            done.withLock { $0.append(error == nil) }
        })
        #expect(done.withLock { $0 } == [true])
        #expect(realm.object(ofType: APIDog.self, forPrimaryKey: 7)?.name == "async")
        #expect(!realm.isPerformingAsynchronousWriteOperations)
        // A block that neither commits nor cancels is cancelled.
        realm.beginAsyncWrite { realm.create(APIDog.self, value: ["id": 8]) }
        #expect(realm.object(ofType: APIDog.self, forPrimaryKey: 8) == nil)
        #expect(!realm.isInWriteTransaction)
    }

    @Test func onAQueueTheWorkRunsThereInOrderAndCanBeCancelledBeforeItRuns() throws {
        let dir = try TemporaryDirectory()
        let queue = DispatchQueue(label: "async-writes")
        let config = Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("q.realm")), objectTypes: [APIDog.self, APIOwner.self])
        let order = Mutex<[Int]>([])
        queue.sync {
            let realm = try! Realm(configuration: config, queue: queue)
            realm.writeAsync { realm.create(APIDog.self, value: ["id": 1]) }
            let second = realm.beginAsyncWrite {
                realm.create(APIDog.self, value: ["id": 2])
                realm.commitAsyncWrite()
            }
            realm.writeAsync({ realm.create(APIDog.self, value: ["id": 3]) }, onComplete: { _ in order.withLock { $0.append(3) } })
            try! realm.cancelAsyncWrite(second)
            #expect(realm.isPerformingAsynchronousWriteOperations)
        }
        queue.sync {}
        queue.sync {}
        let realm = try Realm(configuration: config)
        #expect(realm.objects(APIDog.self).map(\.id).sorted() == [1, 3])
        #expect(order.withLock { $0 } == [3])
    }
}

/// A URL stored as its string (RealmSwift's CustomPersistable).
struct StoredURL: CustomPersistable, Equatable {
    let url: URL
    init(persistedValue: String) { url = URL(string: persistedValue) ?? URL(fileURLWithPath: "/") }
    init(_ url: URL) { self.url = url }
    var persistedValue: String { url.absoluteString }
}

/// An even number, refused otherwise (FailableCustomPersistable).
struct Even: FailableCustomPersistable, Equatable {
    let value: Int
    init?(persistedValue: Int) {
        guard persistedValue % 2 == 0 else { return nil }
        value = persistedValue
    }
    var persistedValue: Int { value }
}

final class APISite: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var url: StoredURL
    @Persisted var mirror: StoredURL?
    @Persisted var even: Even
}

@Suite struct CustomPersistableTests {
    @Test func customTypesAreStoredAsTheirPersistedType() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: .init(fileURL: URL(fileURLWithPath: dir.child("c.realm")), objectTypes: [APISite.self]))
        try realm.write {
            let site = APISite()
            site.id = 1
            site.url = StoredURL(URL(string: "https://example.org/a")!)
            site.even = Even(persistedValue: 4)!
            realm.add(site)
        }
        let site = try #require(realm.object(ofType: APISite.self, forPrimaryKey: 1))
        #expect(site.url.url.absoluteString == "https://example.org/a")
        #expect(site.mirror == nil)
        #expect(site.even.value == 4)
        #expect(realm.objects(APISite.self).filter("url == %@", "https://example.org/a").count == 1)
        #expect(realm.schema["APISite"]?["url"]?.type == .string)
    }
}

@Suite struct WriteCopyTests {
    @Test func writeCopyWritesEveryObjectToANewFile() throws {
        let dir = try TemporaryDirectory()
        let realm = try MissingAPITests.realm(dir)
        _ = try MissingAPITests.filled(realm)
        let copyURL = URL(fileURLWithPath: dir.child("copy.realm"))
        let config = Realm.Configuration(fileURL: copyURL, objectTypes: [APIDog.self, APIOwner.self])
        try realm.writeCopy(configuration: config)
        #expect(throws: Realm.Error.self) { try realm.writeCopy(configuration: config) }
        let copy = try Realm(configuration: config)
        #expect(copy.objects(APIDog.self).count == 3)
        let owner = try #require(copy.object(ofType: APIOwner.self, forPrimaryKey: 1))
        #expect(owner.dogs.map(\.name) == ["d1", "d2", "d3"])
        #expect(owner.byName["a"]??.id == 1)
        try copy.write { copy.create(APIDog.self, value: ["id": 9]) }
        #expect(realm.objects(APIDog.self).count == 3)
    }
}

@Suite struct LoggerAndCancellationTests {
    @Test func loggerReceivesStrataWarningsAtItsLevel() throws {
        let messages = Mutex<[String]>([])
        let previous = Logger.shared
        Logger.shared = Logger(level: .warn) { level, message in
            if level == .warn { messages.withLock { $0.append(message) } }
        }
        defer { Logger.shared = previous }
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("l.realm"))
        do {
            let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [APIDog.self]))
            try realm.write { realm.create(APIDog.self, value: ["id": 1]) }
        }
        var reset = Realm.Configuration(fileURL: url, schemaVersion: 1, objectTypes: [APIDog.self])
        reset.deleteRealmIfMigrationNeeded = true
        _ = try Realm(configuration: reset)
        #expect(messages.withLock { $0 }.contains { $0.contains("deleteRealmIfMigrationNeeded") && $0.contains("l.realm") })
        let quiet = Logger(level: .error) { _, _ in Issue.record("a warning passed an error-level logger") }
        quiet.log(level: .warn, message: "dropped")
    }

    @Test func asyncWriteInACancelledTaskWritesNothing() async throws {
        let dir = try TemporaryDirectory()
        let config = Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("c.realm")), objectTypes: [APIDog.self, APIOwner.self])
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            let realm = try await Realm.open(configuration: config)
            try await realm.asyncWrite { realm.create(APIDog.self, value: ["id": 1]) }
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        let realm = try Realm(configuration: config)
        #expect(realm.objects(APIDog.self).isEmpty)
    }
}

@Suite struct PartialUpdateTests {
    @Test func O014_aPartialUpdateWithNestedObjectsUpdatesThemAndKeepsTheRest() throws {
        let dir = try TemporaryDirectory()
        let realm = try MissingAPITests.realm(dir)
        _ = try MissingAPITests.filled(realm)
        try realm.write {
            realm.create(APIOwner.self, value: ["id": 1, "dogs": [["id": 1, "name": "renamed"], ["id": 9, "name": "new"]]], update: .modified)
        }
        let owner = try #require(realm.object(ofType: APIOwner.self, forPrimaryKey: 1))
        #expect(owner.dogs.map(\.id) == [1, 9])
        #expect(realm.object(ofType: APIDog.self, forPrimaryKey: 1)?.name == "renamed")
        #expect(Array(owner.numbers) == [1, 2, 3, 4])
        #expect(owner.byName["a"]??.id == 1)
        #expect(realm.objects(APIDog.self).count == 4)
    }
}
