import Foundation
import Testing
import TestSupport

@testable import Strata

/// Queries of any size run or throw a clear error; none overflows the stack (chains of `OR` and `AND` are
/// parsed into balanced trees, nesting has a limit that the error states).
@Suite struct QuerySizeTests {
    static func realm(_ dir: TemporaryDirectory) throws -> Realm {
        let realm = try Realm(configuration: .init(fileURL: URL(fileURLWithPath: dir.child("q.realm")), objectTypes: [Person.self]))
        try realm.write {
            for i in 0..<20 {
                let p = Person()
                p.id = i
                p.firstName = "p\(i)"
                p.age = i
                realm.add(p)
            }
        }
        return realm
    }

    @Test func aHundredThousandOrTermsRun() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.realm(dir)
        let terms = (0..<100_000).map { "age == \($0 * 2)" }.joined(separator: " OR ")
        #expect(realm.objects(Person.self).filter(terms).count == 10)
        let ands = (0..<100_000).map { _ in "age >= 10" }.joined(separator: " AND ")
        #expect(realm.objects(Person.self).filter(ands).count == 10)
    }

    /// The same in the type-safe API: a loop joining 100,000 conditions with `||` (or `&&`).
    @Test func aHundredThousandTypeSafeTermsRun() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.realm(dir)
        let ors = realm.objects(Person.self).where { q in (1..<100_000).reduce(q.age == 0) { acc, i in acc || q.age == i * 2 } }
        #expect(ors.count == 10)
        let ands = realm.objects(Person.self).where { q in (1..<100_000).reduce(q.age >= 0) { acc, _ in acc && q.age >= 10 } }
        #expect(ands.count == 10)
        // Prefixes of one chain stay what they were when another query extends them.
        let people = realm.objects(Person.self)
        #expect(people.where { q in
            let base = q.age == 1 || q.age == 2
            _ = base || q.age == 3
            return base || q.age == 4
        }.count == 3)
    }

    @Test func anInListOfAHundredThousandValuesRuns() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.realm(dir)
        let values = Array(stride(from: 1, to: 200_000, by: 2))
        #expect(values.count == 100_000)
        #expect(realm.objects(Person.self).filter("age IN %@", values).count == 10)
        let literal = "age IN {" + values.map(String.init).joined(separator: ", ") + "}"
        #expect(realm.objects(Person.self).filter(literal).count == 10)
    }

    @Test func deepNestingIsAnErrorThatStatesTheLimit() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.realm(dir)
        let results = realm.objects(Person.self)
        let nested = String(repeating: "(", count: 100_000) + "age == 1" + String(repeating: ")", count: 100_000)
        do {
            _ = try results.filter(nested, arguments: [])
            Issue.record("100,000 nested parentheses parsed")
        } catch {
            #expect("\(error)".contains("deeper than \(QueryParser.maxDepth) levels"))
        }
        let nots = String(repeating: "NOT ", count: 100_000) + "age == 1"
        #expect(throws: (any Error).self) { _ = try results.filter(nots, arguments: []) }
        // Up to the limit, nesting works.
        let fine = String(repeating: "(", count: QueryParser.maxDepth - 1) + "age == 1" + String(repeating: ")", count: QueryParser.maxDepth - 1)
        #expect(try results.filter(fine, arguments: []).count == 1)
    }

    /// A predicate of a megabyte parses (in time linear in its length: no timing asserted here).
    @Test func aMegabyteLongPredicateRuns() throws {
        let dir = try TemporaryDirectory()
        let realm = try Self.realm(dir)
        let term = "firstName == 'p7' OR "
        let text = String(repeating: term, count: 1_000_000 / term.utf8.count) + "age == 8"
        #expect(text.utf8.count >= 1_000_000)
        #expect(realm.objects(Person.self).filter(text).count == 2)
    }
}
