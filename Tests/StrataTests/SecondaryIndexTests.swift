import Foundation
@testable import Strata
import Testing
import TestSupport

enum IndexV0 {
    final class Card: Object {
        @Persisted(primaryKey: true) var id: Int
        @Persisted(indexed: true) var rank = 0
        @Persisted(indexed: true) var suit = ""
        @Persisted(indexed: true) var nick: String?
        @Persisted(indexed: true) var flag = false
        @Persisted(indexed: true) var when = Date(timeIntervalSince1970: 0)
        @Persisted var note = ""
    }
}

/// The same type with one more index (no schema version bump needed).
enum IndexV0More {
    final class Card: Object {
        @Persisted(primaryKey: true) var id: Int
        @Persisted(indexed: true) var rank = 0
        @Persisted(indexed: true) var suit = ""
        @Persisted(indexed: true) var nick: String?
        @Persisted(indexed: true) var flag = false
        @Persisted(indexed: true) var when = Date(timeIntervalSince1970: 0)
        @Persisted(indexed: true) var note = ""
    }
}

/// Version 1: `rank` migrated by a block (every rank times ten), `level` added with an index.
enum IndexV1 {
    final class Card: Object {
        @Persisted(primaryKey: true) var id: Int
        @Persisted(indexed: true) var rank = 0
        @Persisted(indexed: true) var suit = ""
        @Persisted(indexed: true) var nick: String?
        @Persisted(indexed: true) var flag = false
        @Persisted(indexed: true) var when = Date(timeIntervalSince1970: 0)
        @Persisted var note = ""
        @Persisted(indexed: true) var level = 7
    }
}

/// What the cards hold, in plain Swift.
struct CardModel {
    struct Card: Equatable { var rank: Int, suit: String, nick: String?, flag: Bool, when: Date }
    var cards: [Int: Card] = [:]

    // "é" precomposed and decomposed: equal to Swift, different bytes.
    static let suits = ["hearts", "spades", "caf\u{E9}", "cafe\u{301}", ""]
    static let nicks: [String?] = [nil, "ace", "Ace", "x"]

    static func random(_ rng: inout SplitMix64) -> Card {
        Card(
            rank: Int.random(in: -2...6, using: &rng), suit: suits.randomElement(using: &rng)!,
            nick: nicks.randomElement(using: &rng)!, flag: Bool.random(using: &rng),
            when: Date(timeIntervalSince1970: Double(Int.random(in: 0...3, using: &rng))))
    }
}

@Suite struct SecondaryIndexTests {
    func config(_ dir: TemporaryDirectory, _ types: [Object.Type] = [IndexV0.Card.self]) -> Realm.Configuration {
        Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("index.realm")), objectTypes: types)
    }

    /// Queries that an index answers, with their Swift form.
    static func randomQuery(_ rng: inout SplitMix64) -> (String, [Any], String, (CardModel.Card) -> Bool) {
        let r = Int.random(in: -2...6, using: &rng)
        let r2 = Int.random(in: -2...6, using: &rng)
        let suit = CardModel.suits.randomElement(using: &rng)!
        let nick = CardModel.nicks.randomElement(using: &rng)!
        let b = Bool.random(using: &rng)
        let when = Date(timeIntervalSince1970: Double(Int.random(in: 0...3, using: &rng)))
        switch Int.random(in: 0..<8, using: &rng) {
        case 0: return ("rank == %@", [r], "rank", { $0.rank == r })
        case 1: return ("rank IN %@", [[r, r2]], "rank", { $0.rank == r || $0.rank == r2 })
        case 2: return ("suit == %@", [suit], "suit", { $0.suit == suit })
        case 3:
            if let nick { return ("nick == %@", [nick], "nick", { $0.nick == nick }) }
            return ("nick == nil", [], "nick", { $0.nick == nil })
        case 4: return ("flag == %@", [b], "flag", { $0.flag == b })
        case 5: return ("when == %@", [when], "when", { $0.when == when })
        case 6: return ("rank == %@ AND flag == %@", [r, b], "rank", { $0.rank == r && $0.flag == b })
        default: return ("note == 'n' OR suit == %@ AND rank == %@", [suit, r], "", { $0.suit == suit && $0.rank == r })
        }
    }

    func check(_ realm: Realm, _ model: CardModel, _ rng: inout SplitMix64, _ label: String) throws {
        let cards = realm.objects(IndexV0.Card.self)
        for _ in 0..<25 {
            let (format, args, property, want) = Self.randomQuery(&rng)
            let results = try cards.filter(format, arguments: args)
            if !property.isEmpty { #expect(results.plan == .index(type: "Card", property: property), "\(format)") }
            let got = Set(results.map(\.id))
            let expected = Set(model.cards.filter { want($0.value) }.map(\.key))
            #expect(got == expected, "\(label): \(format) \(args)")
        }
        if !realm.isInWriteTransaction {
            #expect(realm.core.checkIndexes(realm.core.binding(for: IndexV0.Card.self)) == [], "\(label)")
        }
    }

    @Test(arguments: Seeds.environmentOr([1, 2, 3]))
    func indexedQueriesAgreeWithAModelThroughWritesDeletesAndReopens(seed: UInt64) throws {
        let dir = try TemporaryDirectory()
        var rng = SplitMix64(seed: seed)
        var model = CardModel()
        var realm: Realm? = try Realm(configuration: config(dir))
        var nextID = 0
        for round in 0..<(30 * Seeds.scale) {
            let r = try #require(realm)
            try r.write {
                for _ in 0..<Int.random(in: 1...12, using: &rng) {
                    switch Int.random(in: 0..<10, using: &rng) {
                    case 0..<4:
                        let c = CardModel.random(&rng)
                        r.create(IndexV0.Card.self, value: ["id": nextID, "rank": c.rank, "suit": c.suit, "nick": c.nick as Any, "flag": c.flag, "when": c.when])
                        model.cards[nextID] = c
                        nextID += 1
                    case 4..<8:
                        guard let id = model.cards.keys.randomElement(using: &rng), let o = r.object(ofType: IndexV0.Card.self, forPrimaryKey: id) else { break }
                        let c = CardModel.random(&rng)
                        switch Int.random(in: 0..<5, using: &rng) {
                        case 0: o.rank = c.rank; model.cards[id]!.rank = c.rank
                        case 1: o.suit = c.suit; model.cards[id]!.suit = c.suit
                        case 2: o.nick = c.nick; model.cards[id]!.nick = c.nick
                        case 3: o.flag = c.flag; model.cards[id]!.flag = c.flag
                        default: o.when = c.when; model.cards[id]!.when = c.when
                        }
                    case 8:
                        guard let id = model.cards.keys.randomElement(using: &rng), let o = r.object(ofType: IndexV0.Card.self, forPrimaryKey: id) else { break }
                        r.delete(o)
                        model.cards[id] = nil
                    default:
                        // An update by primary key, replacing every value.
                        guard let id = model.cards.keys.randomElement(using: &rng) else { break }
                        let c = CardModel.random(&rng)
                        r.create(IndexV0.Card.self, value: ["id": id, "rank": c.rank, "suit": c.suit, "nick": c.nick as Any, "flag": c.flag, "when": c.when], update: .modified)
                        model.cards[id] = c
                    }
                }
                // Inside the write, objects it touched are found too.
                try check(r, model, &rng, "round \(round), in the write")
            }
            if round % 13 == 12 {
                try r.write { r.deleteAll() }
                model.cards = [:]
            }
            try check(r, model, &rng, "round \(round)")
            if round % 7 == 6 {
                realm = nil
                realm = try Realm(configuration: config(dir))
                try check(try #require(realm), model, &rng, "round \(round), reopened")
            }
        }
    }

    @Test func anIndexAddedToAnExistingPropertyIsBuiltAtOpenWithoutAVersionBump() throws {
        let dir = try TemporaryDirectory()
        do {
            let realm = try Realm(configuration: config(dir))
            try realm.write {
                for i in 0..<200 { realm.create(IndexV0.Card.self, value: ["id": i, "note": "n\(i % 10)"]) }
            }
            #expect(realm.objects(IndexV0.Card.self).filter("note == 'n3'").plan == .scan)
        }
        do {
            let realm = try Realm(configuration: config(dir, [IndexV0More.Card.self]))
            let found = realm.objects(IndexV0More.Card.self).filter("note == 'n3'")
            #expect(found.plan == .index(type: "Card", property: "note"))
            #expect(found.count == 20)
            #expect(realm.core.checkIndexes(realm.core.binding(for: IndexV0More.Card.self)) == [])
        }
        // Dropped again when the model no longer declares it.
        let realm = try Realm(configuration: config(dir))
        #expect(realm.objects(IndexV0.Card.self).filter("note == 'n3'").plan == .scan)
        #expect(realm.objects(IndexV0.Card.self).filter("note == 'n3'").count == 20)
    }

    @Test(arguments: [Realm.Configuration.MigrationMode.blocking, .online])
    func migrationsThatRewriteIndexedValuesLeaveIndexesRight(mode: Realm.Configuration.MigrationMode) throws {
        let dir = try TemporaryDirectory()
        do {
            let realm = try Realm(configuration: config(dir))
            try realm.write {
                for i in 0..<300 { realm.create(IndexV0.Card.self, value: ["id": i, "rank": i % 5, "suit": i % 2 == 0 ? "even" : "odd"]) }
            }
        }
        var c = config(dir, [IndexV1.Card.self])
        c.schemaVersion = 1
        c.migrationMode = mode
        c.backgroundMigration = false
        c.migrationBlock = { m, _ in
            m.transformObjects(ofType: "Card") { old, new in new["rank"] = (old["rank"] as? Int ?? 0) * 10 }
        }
        do {
            let realm = try Realm(configuration: c)
            let cards = realm.objects(IndexV1.Card.self)
            // While an online migration is pending, queries scan and see transformed values.
            #expect(cards.filter("rank == 30").plan == (mode == .online ? .scan : .index(type: "Card", property: "rank")))
            #expect(cards.filter("rank == 30").count == 60)
            #expect(cards.filter("rank == 3").count == 0)
            #expect(cards.filter("level == 7").count == 300)
            try realm.write { realm.create(IndexV1.Card.self, value: ["id": 1000, "rank": 30, "level": 8]) }
            #expect(cards.filter("rank == 30").count == 61)
            try realm.finishMigrations()
            #expect(cards.filter("rank == 30").count == 61)
        }
        let realm = try Realm(configuration: c)
        let cards = realm.objects(IndexV1.Card.self)
        #expect(cards.filter("rank == 30").plan == .index(type: "Card", property: "rank"))
        #expect(cards.filter("rank == 30").count == 61)
        #expect(cards.filter("level == 7").count == 300)
        #expect(cards.filter("level == 8").map(\.id) == [1000])
        #expect(cards.filter("suit == 'odd'").count == 150)
        #expect(realm.core.checkIndexes(realm.core.binding(for: IndexV1.Card.self)) == [])
    }
}
