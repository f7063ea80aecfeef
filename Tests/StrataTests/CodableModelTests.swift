import Foundation
import Strata
import Testing
import TestSupport

final class CodableToy: Object, Codable {
    @Persisted var label = ""
}

final class CodableDog: Object, Codable {
    @Persisted(primaryKey: true) var name = ""
    @Persisted var age = 0
    @Persisted var nickname: String?
    @Persisted var tags: List<String>
    @Persisted var toys: List<CodableToy>
    @Persisted var scores: Map<String, Int>
    @Persisted var seen: MutableSet<Int>
    @Persisted var id = ObjectId("0123456789abcdef01234567")
}

@Suite struct CodableModelTests {
    static let json = """
        {"name": "rex", "age": 3, "nickname": null, "tags": ["a", "b"], "toys": [{"label": "ball"}],
         "scores": {"x": 1, "y": 2}, "seen": [5, 5, 6], "id": "0123456789abcdef01234567"}
        """

    @Test func aCodableModelWithCollectionsDecodesEncodesAndIsAdded() throws {
        let dog = try JSONDecoder().decode(CodableDog.self, from: Data(Self.json.utf8))
        #expect(dog.name == "rex" && dog.age == 3 && dog.nickname == nil)
        #expect(Array(dog.tags) == ["a", "b"] && dog.toys.map(\.label) == ["ball"])
        #expect(dog.scores["y"] == 2 && dog.seen.count == 2)
        let encoded = try JSONEncoder().encode(dog)
        let again = try JSONDecoder().decode(CodableDog.self, from: encoded)
        #expect(again.name == "rex" && Array(again.tags) == ["a", "b"] && again.scores.count == 2)
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: .init(fileURL: URL(fileURLWithPath: dir.child("c.realm")), objectTypes: [CodableDog.self, CodableToy.self]))
        try realm.write { realm.add(dog) }
        let stored = try #require(realm.object(ofType: CodableDog.self, forPrimaryKey: "rex"))
        #expect(stored.toys.first?.label == "ball" && stored.scores["x"] == 1 && Array(stored.tags) == ["a", "b"])
    }

    @Test func realmPropertiesEncodeTheirValue() throws {
        let property = RealmProperty<Int?>()
        property.value = 5
        #expect(String(decoding: try JSONEncoder().encode([property]), as: UTF8.self) == "[5]")
        let decoded = try JSONDecoder().decode([RealmProperty<Int?>].self, from: Data("[null, 3]".utf8))
        #expect(decoded.map(\.value) == [nil, 3])
    }

    @Test func objectIdsAreSpelledAsInRealmSwift() throws {
        let literal = ObjectId("0123456789abcdef01234567")
        #expect(literal == (try ObjectId(string: "0123456789abcdef01234567")))
        let when = Date(timeIntervalSince1970: 1_700_000_000.75)
        let made = ObjectId(timestamp: when, machineId: 0x0A0B0C, processId: 0x0102)
        #expect(made.timestamp == Date(timeIntervalSince1970: 1_700_000_000))
        #expect(Array(made.bytes[4..<9]) == [0x0C, 0x0B, 0x0A, 0x02, 0x01])
        #expect(ObjectId.generate() != ObjectId.generate())
    }
}
