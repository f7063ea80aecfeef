import Foundation
import Strata
import Testing
import TestSupport

final class DescBool: Object {
    @Persisted var boolCol = false
}

enum DescEnum: Int, PersistableEnum {
    case one = 1, two
}

final class DescAll: Object {
    @Persisted var boolCol = false
    @Persisted var intCol = 123
    @Persisted var int8Col: Int8 = 123
    @Persisted var int16Col: Int16 = 123
    @Persisted var int32Col: Int32 = 123
    @Persisted var int64Col: Int64 = 123
    @Persisted var intEnumCol = DescEnum.one
    @Persisted var floatCol: Float = 1.23
    @Persisted var doubleCol = 12.3
    @Persisted var stringCol = "a"
    @Persisted var binaryCol = Data("a".utf8)
    @Persisted var dateCol = Date(timeIntervalSince1970: 1)
    @Persisted var decimalCol = Decimal128(number: 1_230_000)
    @Persisted var objectIdCol = ObjectId("1234567890ab1234567890ab")
    @Persisted var objectCol: DescBool? = DescBool()
    @Persisted var uuidCol = UUID(uuidString: "137decc8-b300-4954-a233-f89909f4fd89")!
    @Persisted var anyCol: AnyRealmValue
    @Persisted var arrayCol: List<DescBool>
    @Persisted var setCol: MutableSet<DescBool>
    @Persisted var mapCol: Map<String, DescBool?>
}

final class DescRecursive: Object {
    @Persisted var objects: List<DescRecursive>
    @Persisted var objectSet: MutableSet<DescRecursive>
}

final class DescOwner: Object {
    @Persisted var name = ""
    @Persisted var pet: DescPet?
    @Persisted var tags: List<String>
    @Persisted var scores: Map<String, Int>
}

final class DescPet: Object {
    @Persisted var name = ""
    @Persisted(originProperty: "pet") var owners: LinkingObjects<DescOwner>
}

/// `description` in RealmSwift's format (its `ObjectTests.testDescription` and the collections' ones).
@Suite struct ObjectDescriptionTests {
    static func matches(_ text: String, _ pattern: String) throws -> Bool {
        try Regex(pattern).wholeMatch(in: text) != nil
    }

    @Test func anObjectListsEveryPropertyAsRealmSwiftDoes() throws {
        let object = DescAll()
        #expect(object.objectCol != nil)
        let text = object.description
        let pattern =
            "DescAll \\{\n\tboolCol = 0;\n\tintCol = 123;\n\tint8Col = 123;\n\tint16Col = 123;\n\tint32Col = 123;\n\tint64Col = 123;\n"
            + "\tintEnumCol = 1;\n\tfloatCol = 1\\.23;\n\tdoubleCol = 12\\.3;\n\tstringCol = a;\n\tbinaryCol = <.*61.*>;\n"
            + "\tdateCol = 1970-01-01 00:00:01 \\+0000;\n\tdecimalCol = 1230000;\n\tobjectIdCol = 1234567890ab1234567890ab;\n"
            + "\tobjectCol = DescBool \\{\n\t\tboolCol = 0;\n\t\\};\n\tuuidCol = 137DECC8-B300-4954-A233-F89909F4FD89;\n\tanyCol = \\(null\\);\n"
            + "\tarrayCol = List<DescBool> <0x[0-9a-f]+> \\(\n\t\n\t\\);\n\tsetCol = MutableSet<DescBool> <0x[0-9a-f]+> \\(\n\t\n\t\\);\n"
            + "\tmapCol = Map<string, DescBool> <0x[0-9a-f]+> \\(\n\t\n\t\\);\n\\}"
        #expect(try Self.matches(text, pattern), "\(text)")
        #expect(text.contains("binaryCol = <61 — 1 total bytes>;"))
    }

    @Test func nestingStopsAtFiveLevels() throws {
        let recursive = DescRecursive()
        recursive.objects.append(recursive)
        recursive.objectSet.insert(recursive)
        let inner = "SwiftRecursiveObject \\{\n\t\t\t\t\tobjects = <Maximum depth exceeded>;\n\t\t\t\t\tobjectSet = <Maximum depth exceeded>;\n\t\t\t\t\\}"
            .replacingOccurrences(of: "SwiftRecursiveObject", with: "DescRecursive")
        let level2 = "DescRecursive \\{\n\t\t\tobjects = List<DescRecursive> <0x[0-9a-f]+> \\(\n\t\t\t\t\\[0\\] \(inner)\n\t\t\t\\);\n"
            + "\t\t\tobjectSet = MutableSet<DescRecursive> <0x[0-9a-f]+> \\(\n\t\t\t\t\\[0\\] \(inner)\n\t\t\t\\);\n\t\t\\}"
        let pattern = "DescRecursive \\{\n\tobjects = List<DescRecursive> <0x[0-9a-f]+> \\(\n\t\t\\[0\\] \(level2)\n\t\\);\n"
            + "\tobjectSet = MutableSet<DescRecursive> <0x[0-9a-f]+> \\(\n\t\t\\[0\\] \(level2)\n\t\\);\n\\}"
        #expect(try Self.matches(recursive.description, pattern), "\(recursive.description)")
        // Let the cycle go.
        recursive.objects.removeAll()
        recursive.objectSet.removeAll()
    }

    @Test func managedObjectsResultsAndCollectionsAreDescribedTheSameWay() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: .init(
            fileURL: URL(fileURLWithPath: dir.child("d.realm")), objectTypes: [DescOwner.self, DescPet.self]))
        let pet = DescPet()
        pet.name = "Rex"
        #expect(try Self.matches(pet.owners.description, "LinkingObjects<DescOwner> <0x[0-9a-f]+> \\(\n\n\\)"))
        try realm.write {
            realm.create(DescOwner.self, value: ["name": "Ada", "pet": pet, "tags": ["x", "y"], "scores": ["a": 1]])
        }
        let owner = try #require(realm.objects(DescOwner.self).first)
        let ownerPattern =
            "DescOwner \\{\n\tname = Ada;\n\tpet = DescPet \\{\n\t\tname = Rex;\n\t\\};\n"
            + "\ttags = List<string> <0x[0-9a-f]+> \\(\n\t\t\\[0\\] x,\n\t\t\\[1\\] y\n\t\\);\n"
            + "\tscores = Map<string, int> <0x[0-9a-f]+> \\(\n\t\\[a\\]: 1\n\t\\);\n\\}"
        #expect(try Self.matches(owner.description, ownerPattern), "\(owner.description)")
        let results = realm.objects(DescOwner.self)
        func withoutAddresses(_ s: String) -> String { s.replacing(try! Regex("<0x[0-9a-f]+>"), with: "<0x>") }
        let nested = owner.description.replacingOccurrences(of: "\n", with: "\n\t")
        #expect(withoutAddresses(results.description) == withoutAddresses("Results<DescOwner> <0x1> (\n\t[0] \(nested)\n)"))
        let managedPet = try #require(owner.pet)
        #expect(managedPet.owners.description.hasPrefix("LinkingObjects<DescOwner> <0x"))
        #expect(managedPet.owners.description.contains("\t[0] DescOwner {\n\t\tname = Ada;"))
        try realm.write { realm.delete(owner) }
        #expect(owner.description == "[invalid object]")
    }

    @Test func unmanagedObjectsAreEqualOnlyToThemselves() {
        let a = DescBool()
        let b = DescBool()
        #expect(a != b)
        #expect(!a.isEqual(b))
        #expect(a.isEqual(a))
        #expect(!a.isEqual("DescBool"))
    }
}

