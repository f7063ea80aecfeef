import Foundation
@testable import Strata
import Testing
import TestSupport

/// `filter(_: NSPredicate)`. Each tree below is what `PredicateTree(_:)` reads from the `NSPredicate(format:)`
/// beside it on an Apple platform (that reading is the part an Apple build alone compiles); it must select
/// what the same format selects as a string query. `NSPredicate(value:)` and compound predicates are real
/// Foundation predicates on every platform.
@Suite struct NSPredicateQueryTests {
    typealias E = ExpressionTree

    static func compare(_ left: E, _ op: ComparisonOperator, _ right: E, _ modifier: ComparisonModifier = .direct, _ options: StringOptions = [])
        -> PredicateTree
    {
        .comparison(left: left, operator: op, right: right, modifier: modifier, options: options)
    }

    /// `SUBQUERY(collection, $variable, …).@count`, with the predicate's key paths as substitution leaves them.
    static func subqueryCount(_ collection: String, _ variable: String, _ predicate: PredicateTree) -> E {
        .function(name: "valueForKeyPath:", operand: .subquery(collection: .keyPath(collection), variable: variable, predicate: predicate), arguments: [.keyPath("@count")])
    }

    /// A key path inside a SUBQUERY after its variable was replaced by the evaluated object.
    static func selfPath(_ path: String) -> E { .function(name: "valueForKeyPath:", operand: .evaluatedObject, arguments: [.keyPath(path)]) }

    static var cases: [(format: String, args: [Any], tree: PredicateTree)] { [
        ("name == %@", ["Rex"], compare(.keyPath("name"), .equal, .constant("Rex"))),
        ("name != %@", ["Rex"], compare(.keyPath("name"), .notEqual, .constant("Rex"))),
        ("name ==[c] %@", ["rex"], compare(.keyPath("name"), .equal, .constant("rex"), .direct, .caseInsensitive)),
        ("name BEGINSWITH[cd] %@", ["a"], compare(.keyPath("name"), .beginsWith, .constant("a"), .direct, [.caseInsensitive, .diacriticInsensitive])),
        ("name ENDSWITH %@", ["o"], compare(.keyPath("name"), .endsWith, .constant("o"))),
        ("name CONTAINS %@", ["e"], compare(.keyPath("name"), .contains, .constant("e"))),
        ("name LIKE %@", ["?o*"], compare(.keyPath("name"), .like, .constant("?o*"))),
        ("id < %@", [20], compare(.keyPath("id"), .less, .constant(Int64(20)))),
        ("id <= %@", [20], compare(.keyPath("id"), .lessOrEqual, .constant(Int64(20)))),
        ("id > %@", [20], compare(.keyPath("id"), .greater, .constant(Int64(20)))),
        ("id >= %@", [20], compare(.keyPath("id"), .greaterOrEqual, .constant(Int64(20)))),
        // A constant on the left is compared the other way round.
        ("%@ > id", [20], compare(.constant(Int64(20)), .greater, .keyPath("id"))),
        ("best.age > %@", [5], compare(.keyPath("best.age"), .greater, .constant(Int64(5)))),
        ("best.weight > %@", [12.5], compare(.keyPath("best.weight"), .greater, .constant(12.5))),
        ("best == nil", [], compare(.keyPath("best"), .equal, .constant(nil))),
        ("name == best.name", [], compare(.keyPath("name"), .equal, .keyPath("best.name"))),
        ("ANY dogs.age > %@", [8], compare(.keyPath("dogs.age"), .greater, .constant(Int64(8)), .any)),
        ("ALL scores < %@", [5], compare(.keyPath("scores"), .less, .constant(Int64(5)), .all)),
        ("ANY tags ==[c] %@", ["red"], compare(.keyPath("tags"), .equal, .constant("red"), .any, .caseInsensitive)),
        ("dogs.@count > %@", [1], compare(.keyPath("dogs.@count"), .greater, .constant(Int64(1)))),
        ("dogs.@sum.age > %@", [10], compare(.keyPath("dogs.@sum.age"), .greater, .constant(Int64(10)))),
        // IN with an array given as %@ (a constant) and written as { } (an aggregate).
        ("id IN %@", [[1, 5, 9, 30]], compare(.keyPath("id"), .in, .constant([Int64(1), Int64(5), Int64(9), Int64(30)]))),
        ("name IN {'Rex', 'Ada'}", [], compare(.keyPath("name"), .in, .aggregate([.constant("Rex"), .constant("Ada")]))),
        // "%@ IN key.path" is "ANY key.path == %@".
        ("ANY scores == %@", [3], compare(.constant(Int64(3)), .in, .keyPath("scores"))),
        ("id BETWEEN {10, 20}", [], compare(.keyPath("id"), .between, .aggregate([.constant(Int64(10)), .constant(Int64(20))]))),
        ("id BETWEEN %@", [[10, 20]], compare(.keyPath("id"), .between, .constant([Int64(10), Int64(20)]))),
        ("SUBQUERY(dogs, $d, $d.age > %@ AND $d.name BEGINSWITH[c] %@).@count >= 1", [3, "r"],
         compare(
            subqueryCount("dogs", "d", .and([
                compare(selfPath("age"), .greater, .constant(Int64(3))), compare(selfPath("name"), .beginsWith, .constant("r"), .direct, .caseInsensitive),
            ])), .greaterOrEqual, .constant(Int64(1)))),
        // Substitution may also leave plain key paths.
        ("SUBQUERY(dogs, $d, $d.vet.city == %@).@count == 0", ["Oslo"],
         compare(subqueryCount("dogs", "d", compare(.keyPath("vet.city"), .equal, .constant("Oslo"))), .equal, .constant(Int64(0)))),
        ("name BEGINSWITH 'A' AND id < 30", [], .and([compare(.keyPath("name"), .beginsWith, .constant("A")), compare(.keyPath("id"), .less, .constant(Int64(30)))])),
        ("name == 'Rex' OR name == 'Bo' OR id == 3", [], .or([
            compare(.keyPath("name"), .equal, .constant("Rex")), compare(.keyPath("name"), .equal, .constant("Bo")), compare(.keyPath("id"), .equal, .constant(Int64(3))),
        ])),
        ("NOT (name == 'Rex')", [], .not([compare(.keyPath("name"), .equal, .constant("Rex"))])),
        ("TRUEPREDICATE", [], .value(true)),
        ("FALSEPREDICATE", [], .value(false)),
        // An AND of nothing is true, an OR of nothing false.
        ("TRUEPREDICATE", [], .and([])),
        ("FALSEPREDICATE", [], .or([])),
    ] }

    @Test func eachPredicateSelectsWhatItsFormatSelects() throws {
        let dir = try TemporaryDirectory()
        let model = LinkModel(seed: 11)
        let realm = try LinkQueryTests().open(dir)
        try model.fill(realm)
        let people = realm.objects(QPerson.self)
        for (format, args, tree) in Self.cases {
            let expected = try people.filter(format, arguments: args)
            let found = try people.filter(tree.query())
            #expect(Array(found.map(\.id)) == Array(expected.map(\.id)), "\(format)")
        }
        // The sample data makes most of them select some people and not all.
        let selective = try Self.cases.filter { c in
            let n = try people.filter(c.tree.query()).count
            return n > 0 && n < people.count
        }
        #expect(selective.count >= Self.cases.count - 8)
    }

    @Test func foundationsCompoundAndConstantPredicatesAreQueriesOnEveryPlatform() throws {
        let dir = try TemporaryDirectory()
        let model = LinkModel(seed: 11)
        let realm = try LinkQueryTests().open(dir)
        try model.fill(realm)
        let people = realm.objects(QPerson.self)
        #expect(people.filter(NSPredicate(value: true)).count == people.count)
        #expect(people.filter(NSPredicate(value: false)).isEmpty)
        let notFalse = NSCompoundPredicate(notPredicateWithSubpredicate: NSPredicate(value: false))
        #expect(people.filter(NSCompoundPredicate(andPredicateWithSubpredicates: [NSPredicate(value: true), notFalse])).count == people.count)
        #expect(people.filter(NSCompoundPredicate(orPredicateWithSubpredicates: [NSPredicate(value: false)])).isEmpty)
        #expect(people.filter(NSCompoundPredicate(orPredicateWithSubpredicates: [])).isEmpty)
        // On a List, LinkingObjects, AnyRealmCollection and projections, in the collection's order.
        let owner = try #require(people.first { $0.dogs.count > 1 })
        #expect(Array(owner.dogs.filter(NSPredicate(value: true)).map(\.id)) == Array(owner.dogs.map(\.id)))
        #expect(owner.dogs.index(matching: NSPredicate(value: true)) == 0)
        #expect(owner.dogs.index(matching: NSPredicate(value: false)) == nil)
        let dog = owner.dogs[0]
        #expect(dog.owners.filter(NSPredicate(value: true)).count == dog.owners.count)
        #expect(AnyRealmCollection(people).filter(NSPredicate(value: false)).isEmpty)
    }

    @Test func predicatesThatAreNoQueryGiveRealmSwiftsReasons() throws {
        func reason(_ tree: PredicateTree) -> String {
            do {
                _ = try tree.query()
                return ""
            } catch {
                return "\(error)"
            }
        }
        #expect(reason(.unsupported("BLOCKPREDICATE")).contains("only compound, comparison, and constant predicates are supported"))
        #expect(reason(Self.compare(.keyPath("name"), .matches, .constant("R.*"))).contains("operator 'MATCHES' not supported"))
        #expect(reason(Self.compare(.keyPath("id"), .in, .keyPath("scores"))).contains("IN operator must compare a KeyPath with an aggregate"))
        #expect(reason(Self.compare(.keyPath("id"), .between, .constant([Int64(1)]))).contains("BETWEEN operator must compare a KeyPath with an aggregate with two values"))
        #expect(reason(Self.compare(.function(name: "uppercase:", operand: .keyPath("name"), arguments: []), .equal, .constant("A"))).contains("'uppercase:' function is not supported"))
        #expect(reason(Self.compare(.evaluatedObject, .equal, .constant(nil))).contains("must compare a keypath and another keypath or a constant value"))
        let subqueryTimesTwo = E.function(
            name: "valueForKeyPath:", operand: .subquery(collection: .keyPath("dogs"), variable: "d", predicate: .value(true)), arguments: [.keyPath("@sum")])
        #expect(reason(Self.compare(subqueryTimesTwo, .greater, .constant(Int64(1)))).contains("immediately followed by .@count"))
        #expect(reason(.not([])).contains("NOT predicate has no subpredicate"))
    }

    @Test func aBlockPredicateTrapsNamingWhatToUseInstead() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = try TemporaryDirectory()
            let realm = try LinkQueryTests().open(dir)
            _ = realm.objects(QPerson.self).filter(NSPredicate { _, _ in true }).count
        }
        let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(text.contains("Invalid predicate"))
        #expect(text.contains("a predicate made with a block cannot be run as a query"))
    }
}
