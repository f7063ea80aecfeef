import Foundation
import Strata

final class Person: Object {
    @Persisted(primaryKey: true) var id: Int
    @Persisted var firstName = ""
    @Persisted var lastName = ""
    @Persisted var age = 0
    @Persisted var nickname: String?
    @Persisted var isActive = true
}

enum Color: String, PersistableEnum {
    case red, green, blue
}

final class Dog: Object {
    @Persisted(primaryKey: true) var _id: ObjectId
    @Persisted var name = ""
    @Persisted var breed: String?
    @Persisted var weight = 0.0
    @Persisted var color = Color.green
    @Persisted var born = Date(timeIntervalSince1970: 0)
    @Persisted var tag: UUID?
}

final class Note: Object {
    @Persisted var text = ""
    @Persisted(indexed: true) var priority: Int8 = 1
    @Persisted var payload = Data()
}

/// Versions of one model side by side: each class's schema name is its own name.
enum V0 {
    final class Item: Object {
        @Persisted(primaryKey: true) var id: Int
        @Persisted var name = ""
    }
}

enum V1 {
    final class Item: Object {
        @Persisted(primaryKey: true) var id: Int
        @Persisted var name = ""
        @Persisted var email = "none"
        @Persisted var score: Int?
    }
}

enum V2Changed {
    final class Item: Object {
        @Persisted(primaryKey: true) var id: Int
        @Persisted var name = 0
    }
}

/// An in-memory Realm of its own for a test (named after the test).
func memoryRealm(_ name: String = #function, types: [Object.Type]? = [Person.self, Dog.self, Note.self]) throws -> Realm {
    try Realm(configuration: .init(inMemoryIdentifier: name + UUID().uuidString, objectTypes: types))
}

/// Five people with ids 1 to 5, in one write.
func addPeople(_ realm: Realm) throws {
    try realm.write {
        for (i, (f, l, a)) in [("Ada", "Lovelace", 36), ("Alan", "Turing", 41), ("Grace", "Hopper", 85), ("Edsger", "Dijkstra", 72), ("Barbara", "Liskov", 17)].enumerated() {
            realm.add(Person(value: ["id": i + 1, "firstName": f, "lastName": l, "age": a]))
        }
    }
}
