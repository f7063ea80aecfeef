import Foundation
import Strata
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
