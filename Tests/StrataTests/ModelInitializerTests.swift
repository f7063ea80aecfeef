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

final class IVMixed: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var any: AnyRealmValue
    @Persisted var count = 0
    @Persisted var ratio = 0.0
    @Persisted var link: IVMixed?
    @Persisted var list: List<IVMixed>
}

/// Issue 56, item 3: `init(value:)` and `create(_:value:)` take what RealmSwift takes.
@Suite struct ValueInitializerAcceptanceTests {
    static func config(_ dir: TemporaryDirectory, _ name: String) -> Realm.Configuration {
        Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child(name)), objectTypes: [IVMixed.self])
    }

    /// A plain value for an `AnyRealmValue` property is that value (RealmSwift bridges it to a mixed).
    @Test func plainValuesForAnAnyRealmValueProperty() throws {
        #expect(IVMixed(value: ["id": 1, "any": 5]).any == .int(5))
        #expect(IVMixed(value: ["id": 1, "any": "text"]).any == .string("text"))
        #expect(IVMixed(value: ["id": 1, "any": 2.5]).any == .double(2.5))
        #expect(IVMixed(value: ["id": 1, "any": true]).any == .bool(true))
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: Self.config(dir, "a.realm"))
        let made = try realm.write { realm.create(IVMixed.self, value: [2, "managed"]) }
        #expect(made.any == .string("managed"))
    }

    /// A Bool for a numeric property is 0 or 1, as an NSNumber holding a Bool is in RealmSwift.
    @Test func O035_aBoolForANumericPropertyIsZeroOrOne() throws {
        #expect(IVMixed(value: ["id": 1, "count": true]).count == 1)
        #expect(IVMixed(value: ["id": 1, "count": false]).count == 0)
        #expect(IVMixed(value: ["id": 1, "ratio": true]).ratio == 1)
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: Self.config(dir, "b.realm"))
        let made = try realm.write { realm.create(IVMixed.self, value: ["id": 3, "count": true]) }
        #expect(made.count == 1)
    }

    /// Objects of another Realm given as nested values are copied into this one, as RealmSwift's `create` does.
    @Test func nestedObjectsOfAnotherRealmAreCopied() throws {
        let dir = try TemporaryDirectory()
        let source = try Realm(configuration: Self.config(dir, "source.realm"))
        let target = try Realm(configuration: Self.config(dir, "target.realm"))
        let (a, b) = try source.write {
            (source.create(IVMixed.self, value: ["id": 10, "count": 7]), source.create(IVMixed.self, value: ["id": 11, "any": "b"]))
        }
        let made = try target.write { target.create(IVMixed.self, value: ["id": 1, "link": a, "list": [a, b]]) }
        #expect(made.link?.realm == target)
        #expect(made.link?.count == 7)
        #expect(made.list.map(\.id) == [10, 11])
        #expect(target.objects(IVMixed.self).count == 3)
        // The source's objects are untouched.
        #expect(a.realm == source && source.objects(IVMixed.self).count == 2)
        // A whole object of another Realm, copied.
        let copy = try target.write { target.create(IVMixed.self, value: b, update: .modified) }
        #expect(copy.realm == target && copy.any == .string("b"))
    }

    /// A stored object reached twice (two instances of one row) or through a cycle is copied once.
    @Test func objectsReachedTwiceOrInACycleAreCopiedOnce() throws {
        let dir = try TemporaryDirectory()
        let source = try Realm(configuration: Self.config(dir, "cycle-source.realm"))
        let target = try Realm(configuration: Self.config(dir, "cycle-target.realm"))
        try source.write {
            let a = source.create(IVMixed.self, value: ["id": 1])
            let b = source.create(IVMixed.self, value: ["id": 2, "link": a])
            a.link = b  // a cycle: 1 -> 2 -> 1
        }
        let first = try #require(source.object(ofType: IVMixed.self, forPrimaryKey: 1))
        let again = try #require(source.object(ofType: IVMixed.self, forPrimaryKey: 1))
        let made = try target.write { target.create(IVMixed.self, value: ["id": 3, "link": first, "list": [again]]) }
        #expect(target.objects(IVMixed.self).count == 3)
        #expect(made.link?.id == 1 && made.list.first?.id == 1)
        #expect(made.link?.link?.link?.id == 1)
        // The whole cycle from its own start.
        let other = try Realm(configuration: Self.config(dir, "cycle-other.realm"))
        let copy = try other.write { other.create(IVMixed.self, value: first) }
        #expect(other.objects(IVMixed.self).count == 2)
        #expect(copy.link?.link == copy)
    }

    /// `add` of an object whose link is managed by another Realm is RealmSwift's programmer error.
    @Test func addingAnObjectLinkingIntoAnotherRealmTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = try TemporaryDirectory()
            let source = try Realm(configuration: ValueInitializerAcceptanceTests.config(dir, "s.realm"))
            let target = try Realm(configuration: ValueInitializerAcceptanceTests.config(dir, "t.realm"))
            let a = try source.write { source.create(IVMixed.self, value: ["id": 10]) }
            let o = IVMixed(value: ["id": 1])
            o.link = a
            try target.write { target.add(o) }
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("Object is already managed by another Realm. Use create instead to copy it into this Realm."))
    }
}
