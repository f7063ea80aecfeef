import Foundation
import Strata
import Testing
import TestSupport

/// A model with designated initializers of its own, written as RealmSwift requires: `override init()` beside them.
final class InitDog: Object {
    @Persisted var name = "unnamed"
    @Persisted var age = 0
    @Persisted var toys: List<String>

    override init() {
        super.init()
    }

    init(name: String, age: Int) {
        self.name = name
        self.age = age
        super.init()
    }
}

/// The same with a `Codable` decoding initializer and a convenience one.
final class InitCat: Object, Codable {
    @Persisted var name = ""
    @Persisted var lives = 9

    override init() { super.init() }

    convenience init(name: String) {
        self.init()
        self.name = name
    }
}

/// A subclass of a model with its own initializer chain.
class InitAnimal: Object {
    @Persisted var legs = 4
    override init() { super.init() }
    init(legs: Int) {
        self.legs = legs
        super.init()
    }
}

final class InitBird: InitAnimal {
    @Persisted var wings = 2
    override init() { super.init(legs: 2) }
}

/// Models compile and work as they do against RealmSwift: `Object.init()` is not `required`, and Strata makes
/// the objects it reads through each class's own `init()`.
@Suite struct ModelInitializerTests {
    static func configuration(_ dir: TemporaryDirectory, _ types: [Object.Type]) -> Realm.Configuration {
        .init(fileURL: URL(fileURLWithPath: dir.child("i.realm")), objectTypes: types)
    }

    @Test func modelsWithTheirOwnInitializersAreStoredAndReadBack() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: Self.configuration(dir, [InitDog.self, InitCat.self, InitBird.self]))
        let dog = InitDog(name: "rex", age: 3)
        dog.toys.append("ball")
        try realm.write {
            realm.add(dog)
            realm.add(InitCat(name: "tom"))
            realm.add(InitBird())
            realm.create(InitDog.self, value: ["name": "bo"])
        }
        #expect(realm.objects(InitDog.self).map(\.name).sorted() == ["bo", "rex"])
        #expect(realm.objects(InitDog.self).filter("name == 'bo'").first?.age == 0)
        #expect(realm.objects(InitDog.self).filter("name == 'rex'").first?.toys.first == "ball")
        #expect(realm.objects(InitCat.self).first?.lives == 9)
        let bird = try #require(realm.objects(InitBird.self).first)
        #expect(bird.legs == 2 && bird.wings == 2)
        let decoded = try JSONDecoder().decode(InitCat.self, from: Data(#"{"name": "kit", "lives": 3}"#.utf8))
        try realm.write { realm.add(decoded) }
        #expect(realm.objects(InitCat.self).filter("name == 'kit'").first?.lives == 3)
        #expect(InitDog.sharedSchema()?.properties.map(\.name) == ["name", "age", "toys"])
    }
    // A model with initializers of its own and no `init()` traps with Swift's text: `ReleaseTrapTests` (in a
    // child process, as every model class of this module is discovered by the Realms other tests open).
}
