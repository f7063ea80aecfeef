import Foundation
import Strata
import Testing
import TestSupport

/// Queries on `Results`: the string and type-safe forms agree; sorting, aggregates and distinct.
@Suite struct ResultsQueryTests {
    @Test func stringAndTypeSafeQueriesAgree() throws {
        let realm = try memoryRealm()
        try addPeople(realm)
        let all = realm.objects(Person.self)
        #expect(all.count == 5)
        #expect(all.filter("age > 40").count == 3)
        #expect(all.where { $0.age > 40 }.count == 3)
        #expect(all.filter("age > %@ AND firstName BEGINSWITH %@", 18, "A").count == 2)
        #expect(all.where { $0.age > 18 && $0.firstName.starts(with: "A") }.count == 2)
        #expect(all.filter("firstName BEGINSWITH[c] 'a'").count == 2)
        #expect(all.where { $0.firstName.starts(with: "a", options: .caseInsensitive) }.count == 2)
        #expect(all.filter("lastName CONTAINS 'o'").count == 3)
        #expect(all.filter("lastName ENDSWITH 'er'").count == 1)
        #expect(all.filter("firstName LIKE 'A*a'").count == 1)
        #expect(all.filter("age BETWEEN {30, 50}").count == 2)
        #expect(all.where { $0.age.contains(30...50) }.count == 2)
        #expect(all.filter("id IN {1, 3, 5}").count == 3)
        #expect(all.where { $0.id.in([1, 3, 5]) }.count == 3)
        #expect(all.filter("NOT (age < 40) OR firstName == 'Ada'").count == 4)
        #expect(all.where { !($0.age < 40) || $0.firstName == "Ada" }.count == 4)
        #expect(all.filter("nickname == nil").count == 5)
        #expect(all.where { $0.nickname == nil }.count == 5)
        #expect(all.where { $0.isActive }.count == 5)
        #expect(all.filter("isActive == false").count == 0)
        #expect(all.filter("age > 40").filter("age < 80").count == 2)
    }

    @Test func sortingAndAggregates() throws {
        let realm = try memoryRealm()
        try addPeople(realm)
        let byAge = realm.objects(Person.self).sorted(byKeyPath: "age")
        #expect(byAge.map(\.firstName) == ["Barbara", "Ada", "Alan", "Edsger", "Grace"])
        let byName = realm.objects(Person.self).sorted(by: \.lastName, ascending: false)
        #expect(byName.first?.lastName == "Turing")
        let all = realm.objects(Person.self)
        #expect(all.min(ofProperty: "age") == 17)
        #expect(all.max(ofProperty: "age") == 85)
        #expect(all.sum(ofProperty: "age") == 251)
        #expect(all.average(ofProperty: "age") == 50.2)
        #expect(all.max(of: \.age) == 85)
        #expect(all.where { $0.age > 100 }.average(ofProperty: "age") as Double? == nil)
    }

    @Test func distinctKeepsTheFirstObjectOfEachValueInSortOrder() throws {
        let realm = try memoryRealm()
        try realm.write {
            for (i, (name, age)) in [("Ada", 36), ("Ada", 20), ("Alan", 41), ("Ada", 50), ("Alan", 30)].enumerated() {
                realm.create(Person.self, value: ["id": i, "firstName": name, "age": age])
            }
        }
        let youngestFirst = realm.objects(Person.self).sorted(byKeyPath: "age").distinct(by: ["firstName"])
        #expect(youngestFirst.map(\.age) == [20, 30])
        #expect(realm.objects(Person.self).distinct(by: ["firstName", "age"]).count == 5)
        #expect(realm.objects(Person.self).where { $0.age > 25 }.distinct(by: ["firstName"]).count == 2)
    }
}

final class QBook: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var readCount = 0
    @Persisted var total = 0
    @Persisted var rating: Double?
    @Persisted var title = ""
    @Persisted var subtitle = ""
}

/// Issue 56, item 7: two properties compared in a type-safe query, as real apps write them (`$0.readCount <=
/// $0.total`); the same results as the string predicate.
@Suite struct PropertyComparisonQueryTests {
    @Test func twoPropertiesCompareInATypeSafeQuery() throws {
        let realm = try memoryRealm(types: [QBook.self])
        try realm.write {
            realm.create(QBook.self, value: ["id": 1, "readCount": 3, "total": 10, "rating": 3.0, "title": "a", "subtitle": "a"])
            realm.create(QBook.self, value: ["id": 2, "readCount": 10, "total": 10, "rating": 12.5, "title": "b", "subtitle": "c"])
            realm.create(QBook.self, value: ["id": 3, "readCount": 11, "total": 10, "title": "d", "subtitle": "d"])
        }
        let books = realm.objects(QBook.self)
        func ids(_ r: Results<QBook>) -> [Int] { r.sorted(byKeyPath: "id").map(\.id) }
        #expect(ids(books.where { $0.readCount <= $0.total }) == [1, 2])
        #expect(ids(books.where { $0.readCount < $0.total }) == [1])
        #expect(ids(books.where { $0.readCount > $0.total }) == [3])
        #expect(ids(books.where { $0.readCount >= $0.total }) == [2, 3])
        #expect(ids(books.where { $0.readCount == $0.total }) == [2])
        #expect(ids(books.where { $0.readCount != $0.total }) == [1, 3])
        #expect(ids(books.where { $0.title == $0.subtitle }) == [1, 3])
        // An Int against a Double? (nil matches no ordering).
        #expect(ids(books.where { $0.rating > $0.total }) == [2])
        #expect(ids(books.where { $0.readCount <= $0.total }) == ids(books.filter("readCount <= total")))
    }
}
