import Foundation
import Strata
import Testing
import TestSupport

/// Key-value coding and descriptions of objects and results.
@Suite struct KeyValueCodingTests {
    @Test func keyValueCodingAndDescription() throws {
        let realm = try memoryRealm()
        try addPeople(realm)
        let p = try #require(realm.object(ofType: Person.self, forPrimaryKey: 2))
        #expect(p["firstName"] as? String == "Alan")
        #expect(p.value(forKey: "age") as? Int == 41)
        try realm.write { p["age"] = 42 }
        #expect(p.age == 42)
        #expect(p.description.contains("firstName = Alan;"))
        let unmanaged = Person(value: ["id": 9, "firstName": "Unmanaged"])
        #expect(unmanaged.firstName == "Unmanaged")
        unmanaged.firstName = "Changed"
        #expect(unmanaged.firstName == "Changed")
        #expect(realm.objects(Person.self).value(forKey: "firstName").count == 5)
        try realm.write { realm.objects(Person.self).where { $0.age > 40 }.setValue("older", forKey: "nickname") }
        #expect(realm.objects(Person.self).filter("nickname == 'older'").count == 3)  // Alan (42), Grace, Edsger
    }
}
