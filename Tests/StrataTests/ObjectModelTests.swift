import Foundation
import Strata
import Testing
import TestSupport

/// The object layer against a plain Swift model: random adds, updates, deletes, cancelled writes, queries,
/// sorts and aggregates, inside and outside write transactions, with reopens.
@Suite struct ObjectModelTests {
    struct Row: Equatable {
        var id: Int
        var firstName: String
        var age: Int
        var nickname: String?
    }

    @Test(arguments: Seeds.environmentOr([5, 6, 7]))
    func objectLayerMatchesASwiftModel(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let dir = try TemporaryDirectory()
        let config = Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("m.realm")), objectTypes: [Person.self])
        var realm: Realm? = try Realm(configuration: config)
        var model: [Int: Row] = [:]
        let names = ["Ada", "Alan", "Grace", "Edsger", "Barbara", "Ken", "Dennis"]

        func check(_ r: Realm, _ m: [Int: Row], _ context: String) {
            let all = r.objects(Person.self)
            #expect(all.count == m.count, "\(context): count")
            let seen = Dictionary(uniqueKeysWithValues: all.map { ($0.id, Row(id: $0.id, firstName: $0.firstName, age: $0.age, nickname: $0.nickname)) })
            #expect(seen == m, "\(context): contents")
            let threshold = Int(rng.next() % 100)
            let prefix = String(names[Int(rng.next() % UInt64(names.count))].prefix(1))
            let expected = m.values.filter { $0.age > threshold && $0.firstName.hasPrefix(prefix) }.map(\.id).sorted()
            #expect(all.where { $0.age > threshold && $0.firstName.starts(with: prefix) }.map(\.id).sorted() == expected, "\(context): where")
            #expect(all.filter("age > %@ AND firstName BEGINSWITH %@", threshold, prefix).map(\.id).sorted() == expected, "\(context): filter")
            let sorted = all.sorted(byKeyPath: "age", ascending: false).map(\.age)
            #expect(sorted == m.values.map(\.age).sorted(by: >), "\(context): sort")
            #expect(all.sum(ofProperty: "age") as Int == m.values.reduce(0) { $0 + $1.age }, "\(context): sum")
            #expect(all.filter("nickname == nil").count == m.values.filter { $0.nickname == nil }.count, "\(context): nil")
        }

        for step in 0..<(150 * Seeds.scale) {
            let r = try #require(realm)
            let context = "seed \(seed), step \(step)"
            switch rng.next() % 10 {
            case 0...3:
                var next = model
                let cancel = rng.next() % 5 == 0
                try r.write {
                    for _ in 0..<Int(rng.next() % 8 + 1) {
                        let id = Int(rng.next() % 60)
                        switch rng.next() % 4 {
                        case 0, 1:
                            let row = Row(id: id, firstName: names[Int(rng.next() % UInt64(names.count))], age: Int(rng.next() % 100),
                                          nickname: rng.next() % 3 == 0 ? "n\(id)" : nil)
                            r.create(Person.self, value: ["id": row.id, "firstName": row.firstName, "age": row.age, "nickname": row.nickname as Any? ?? NSNull()], update: .modified)
                            next[id] = row
                        case 2:
                            if let p = r.object(ofType: Person.self, forPrimaryKey: id) {
                                p.age = (p.age + 7) % 100
                                next[id]?.age = p.age
                            }
                        default:
                            if let p = r.object(ofType: Person.self, forPrimaryKey: id) {
                                r.delete(p)
                                next[id] = nil
                            }
                        }
                        // Inside the write, queries see its changes.
                        #expect(r.objects(Person.self).count == next.count, "\(context): count inside the write")
                    }
                    if cancel { r.cancelWrite() }
                }
                if !cancel { model = next }
            case 4:
                realm = nil
                realm = try Realm(configuration: config)
            default:
                break
            }
            check(try #require(realm), model, context)
        }
    }
}
