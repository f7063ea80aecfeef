import Foundation
@testable import Strata
import Testing
import TestSupport

final class MapQOwner: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var scores: Map<String, Int>
    @Persisted var settings: Map<String, AnyRealmValue>
    @Persisted var labels: Map<String, String?>
}

/// Queries on a Map's value for a key (`map['key']`, `$0.map["key"]`), its keys (`map.@keys`,
/// `$0.map.keys`) and its values (`map.@values`, `$0.map.values`), as RealmSwift's, each checked against the
/// plain Swift dictionaries.
@Suite struct MapQueryTests {
    static func open(_ dir: TemporaryDirectory) throws -> Realm {
        let realm = try Realm(configuration: .init(fileURL: URL(fileURLWithPath: dir.child("m.realm")), objectTypes: [MapQOwner.self]))
        try realm.write {
            realm.create(MapQOwner.self, value: ["id": 1, "scores": ["a": 1, "b": 7], "settings": ["theme": AnyRealmValue.string("dark")], "labels": ["x": "1"]])
            realm.create(MapQOwner.self, value: ["id": 2, "scores": ["a": 5], "settings": ["theme": AnyRealmValue.string("light"), "size": AnyRealmValue.int(3)], "labels": ["x": nil]])
            realm.create(MapQOwner.self, value: ["id": 3, "scores": [String: Int](), "settings": ["size": AnyRealmValue.int(9)]])
        }
        return realm
    }

    @Test func stringQueriesReadAValueByKeyTheKeysAndTheValues() throws {
        let dir = try TemporaryDirectory()
        let owners = try Self.open(dir).objects(MapQOwner.self)
        func ids(_ format: String, _ args: Any...) throws -> [Int] {
            Array(try owners.filter(format, arguments: args.map { Optional($0) }).map(\.id)).sorted()
        }
        #expect(try ids("scores['a'] > 2") == [2])
        #expect(try ids("scores[\"b\"] == 7") == [1])
        #expect(try ids("scores[%@] == %@", "a", 1) == [1])
        // A key the map does not have reads nil.
        #expect(try ids("scores['zz'] == nil") == [1, 2, 3])
        #expect(try ids("scores['a'] == nil") == [3])
        #expect(try ids("settings['theme'] == 'dark'") == [1])
        #expect(try ids("settings['size'] > 5") == [3])
        #expect(try ids("labels['x'] == nil") == [2, 3])
        #expect(try ids("scores.@keys == 'b'") == [1])
        #expect(try ids("ANY settings.@keys == 'size'") == [2, 3])
        #expect(try ids("scores.@values > 6") == [1])
        #expect(try ids("ALL scores.@values < 6") == [2, 3])
        #expect(try ids("scores.@count == 0") == [3])
        // A subscript on what is not a Map is an error naming it.
        #expect(throws: (any Error).self) { try owners.filter("id['a'] == 1", arguments: []) }
    }

    @Test func typeSafeQueriesSayTheSame() throws {
        let dir = try TemporaryDirectory()
        let owners = try Self.open(dir).objects(MapQOwner.self)
        func ids(_ r: Results<MapQOwner>) -> [Int] { Array(r.map(\.id)).sorted() }
        #expect(ids(owners.where { $0.scores["a"] > 2 }) == [2])
        #expect(ids(owners.where { $0.scores["b"] == 7 }) == [1])
        #expect(ids(owners.where { $0.settings["theme"] == .string("dark") }) == [1])
        #expect(ids(owners.where { $0.scores.keys == "b" }) == [1])
        #expect(ids(owners.where { $0.scores.values > 6 }) == [1])
        #expect(ids(owners.where { $0.labels["x"] == nil }) == [2, 3])
    }
}
