import Foundation
import Testing
import TestSupport

@testable import Strata

/// A query constant of the wrong type, an aggregate of a property that has none and a primary key of the
/// wrong type are Realm's errors with Realm's messages, not empty answers.
@Suite struct QueryTypeErrorTests {
    static func config(_ dir: TemporaryDirectory) -> Realm.Configuration {
        Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("t.realm")), objectTypes: [Person.self])
    }

    static func realm(_ dir: TemporaryDirectory) throws -> Realm {
        let realm = try Realm(configuration: config(dir))
        try realm.write {
            let p = Person()
            p.id = 1
            p.firstName = "abc"
            p.age = 3
            realm.add(p)
        }
        return realm
    }

    static func message(_ body: () throws -> Any) -> String {
        do {
            _ = try body()
            return "no error"
        } catch {
            return "\(error)"
        }
    }

    @Test func aConstantOfAnotherTypeIsRealmsError() throws {
        let dir = try TemporaryDirectory()
        let people = try Self.realm(dir).objects(Person.self)
        let wrongInt = Self.message { try people.filter("age == 'abc'", arguments: []) }
        #expect(wrongInt.contains("Expected object of type int for property 'age' on object of type 'Person', but received: abc"))
        let wrongString = Self.message { try people.filter("firstName == 1", arguments: []) }
        #expect(wrongString.contains("Expected object of type string for property 'firstName' on object of type 'Person', but received: 1"))
        let wrongIn = Self.message { try people.filter("age IN %@", arguments: [[1, "x"]]) }
        #expect(wrongIn.contains("for property 'age'"))
        let wrongBetween = Self.message { try people.filter("age BETWEEN {1, 'z'}", arguments: []) }
        #expect(wrongBetween.contains("for property 'age'"))
        // Numbers of another kind compare with numeric properties, and nil with optional ones, as in Realm.
        #expect(try people.filter("age == 3.0", arguments: []).count == 1)
        #expect(try people.filter("age < %@", arguments: [3.5]).count == 1)
        #expect(try people.filter("nickname == nil", arguments: []).count == 1)
    }

    @Test func misusesTrapWithRealmsMessages() async {
        let filter = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = try TemporaryDirectory()
            _ = try QueryTypeErrorTests.realm(dir).objects(Person.self).filter("age == 'abc'").count
        }
        let filterText = String(decoding: filter?.standardErrorContent ?? [], as: UTF8.self)
        #expect(filterText.contains("Expected object of type int for property 'age' on object of type 'Person', but received: abc"))
        let sum = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = try TemporaryDirectory()
            let total: Int = try QueryTypeErrorTests.realm(dir).objects(Person.self).sum(ofProperty: "firstName")
            print(total)
        }
        let sumText = String(decoding: sum?.standardErrorContent ?? [], as: UTF8.self)
        #expect(sumText.contains("Cannot sum property 'firstName': operation not supported for 'string' properties"))
        let key = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = try TemporaryDirectory()
            _ = try QueryTypeErrorTests.realm(dir).object(ofType: Person.self, forPrimaryKey: "x")
        }
        let keyText = String(decoding: key?.standardErrorContent ?? [], as: UTF8.self)
        #expect(keyText.contains("Invalid value 'x' of type 'String' for 'int' property 'Person.id'."))
    }
}
