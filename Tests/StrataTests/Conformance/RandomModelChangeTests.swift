import Foundation
import Strata
import Testing
import TestSupport

// Issue 17's randomized check: one type ("Rec") through random chains of model variants — properties reordered,
// renamed (count <-> total), removed, added back, with and without a version bump — in both migration modes,
// its values compared after every open with a plain Swift model kept by property name.

final class RTag: Object {
    @Persisted(primaryKey: true) var name = ""
}

/// A variant of "Rec": its declared property names, in declaration order.
protocol RecVariant: Object {
    static var fields: [String] { get }
}

extension RecVariant {
    static func all(_ realm: Realm) -> [Object] { Array(realm.objects(Self.self)) }
    static func create(_ realm: Realm, _ values: [Any?]) { realm.create(Self.self, value: values) }
    static func object(_ realm: Realm, _ id: Int) -> Object? { realm.object(ofType: Self.self, forPrimaryKey: id) }
}

enum RV0 {
    final class Rec: Object, RecVariant {
        static let fields = ["id", "count", "title", "score", "nums", "tag"]
        @Persisted(primaryKey: true) var id = 0
        @Persisted var count = 0
        @Persisted var title = ""
        @Persisted var score: Double?
        @Persisted var nums: List<Int>
        @Persisted var tag: RTag?
    }
}

enum RV1 {
    final class Rec: Object, RecVariant {
        static let fields = ["tag", "nums", "score", "title", "count", "id"]
        @Persisted var tag: RTag?
        @Persisted var nums: List<Int>
        @Persisted var score: Double?
        @Persisted var title = ""
        @Persisted var count = 0
        @Persisted(primaryKey: true) var id = 0
    }
}

enum RV2 {
    final class Rec: Object, RecVariant {
        static let fields = ["title", "id", "total", "nums", "when", "score", "tag"]
        @Persisted var title = ""
        @Persisted(primaryKey: true) var id = 0
        @Persisted var total = 0
        @Persisted var nums: List<Int>
        @Persisted var when: Date?
        @Persisted var score: Double?
        @Persisted var tag: RTag?
    }
}

enum RV3 {
    final class Rec: Object, RecVariant {
        static let fields = ["when", "total", "tag", "id", "title"]
        @Persisted var when: Date?
        @Persisted var total = 0
        @Persisted var tag: RTag?
        @Persisted(primaryKey: true) var id = 0
        @Persisted var title = ""
    }
}

enum RV4 {
    final class Rec: Object, RecVariant {
        static let fields = ["score", "id", "title", "count", "when"]
        @Persisted var score: Double?
        @Persisted(primaryKey: true) var id = 0
        @Persisted var title = ""
        @Persisted var count = 0
        @Persisted var when: Date?
    }
}

enum RV5 {
    final class Rec: Object, RecVariant {
        static let fields = ["nums", "tag", "title", "id", "total", "score", "when"]
        @Persisted var nums: List<Int>
        @Persisted var tag: RTag?
        @Persisted var title = ""
        @Persisted(primaryKey: true) var id = 0
        @Persisted var total = 0
        @Persisted var score: Double?
        @Persisted var when: Date?
    }
}

@Suite struct RandomModelChangeTests {
    static let variants: [any RecVariant.Type] = [RV0.Rec.self, RV1.Rec.self, RV2.Rec.self, RV3.Rec.self, RV4.Rec.self, RV5.Rec.self]
    static let tags = ["a", "b", "c"]

    /// The logical field a property name stands for ("count" and "total" are one field, renamed).
    static func logical(_ name: String) -> String { name == "total" ? "count" : name }

    static let defaults: [String: String] = ["count": "0", "title": "", "score": "nil", "when": "nil", "nums": "[]", "tag": "nil"]

    /// A value as the plain model keeps it.
    static func canonical(_ field: String, _ value: Any?) -> String {
        switch field {
        case "count": return "\(value as? Int ?? -1)"
        case "title": return value as? String ?? "?"
        case "score": return (value as? Double).map { "\($0)" } ?? "nil"
        case "when": return (value as? Date).map { "\($0.timeIntervalSince1970)" } ?? "nil"
        case "nums": return "\((value as? List<Int>).map(Array.init) ?? (value as? [Int]) ?? [-1])"
        case "tag": return (value as? RTag)?.name ?? "nil"
        default: return "\(value ?? "nil")"
        }
    }

    /// A random value of a logical field: what is given to Strata, and its canonical form.
    static func randomValue(_ field: String, _ rng: inout SplitMix64, _ realm: Realm) -> (Any?, String) {
        switch field {
        case "count":
            let v = Int.random(in: -1000...1000, using: &rng)
            return (v, "\(v)")
        case "title":
            let v = String((0..<Int.random(in: 0...6, using: &rng)).map { _ in "xyzw".randomElement(using: &rng)! })
            return (v, v)
        case "score":
            if Bool.random(using: &rng) { return (nil, "nil") }
            let v = Double(Int.random(in: 0...100, using: &rng)) / 4
            return (v, "\(v)")
        case "when":
            if Bool.random(using: &rng) { return (nil, "nil") }
            let v = Date(timeIntervalSince1970: Double(Int.random(in: 0...1_000_000, using: &rng)))
            return (v, "\(v.timeIntervalSince1970)")
        case "nums":
            let v = (0..<Int.random(in: 0...3, using: &rng)).map { _ in Int.random(in: 0...9, using: &rng) }
            return (v, "\(v)")
        case "tag":
            guard let name = tags.randomElement(using: &rng), Bool.random(using: &rng) else { return (nil, "nil") }
            return (realm.object(ofType: RTag.self, forPrimaryKey: name), name)
        default:
            fatalError("no field \(field)")
        }
    }

    static func config(_ url: URL, _ variant: any RecVariant.Type, version: UInt64, mode: Realm.Configuration.MigrationMode,
                       block: Realm.MigrationBlock? = nil) -> Realm.Configuration {
        Conformance.config(url, [variant, RTag.self], version: version, mode: mode, block: block)
    }

    /// Every object read through `variant`, by name, equals the model.
    static func check(_ realm: Realm, _ variant: any RecVariant.Type, _ model: [Int: [String: String]], _ context: String) {
        let objects = variant.all(realm)
        #expect(objects.count == model.count, "\(context): count")
        for object in objects {
            guard let id = object.value(forKey: "id") as? Int, let expected = model[id] else {
                Issue.record("\(context): an object not in the model")
                continue
            }
            for name in variant.fields where name != "id" {
                let field = logical(name)
                let actual = canonical(field, object.value(forKey: name))
                if actual != expected[field] {
                    Issue.record("\(context): Rec \(id).\(name) is \(actual), the model has \(expected[field] ?? "nothing")")
                }
            }
        }
    }

    @Test(arguments: Seeds.environmentOr([1, 2, 3, 4]))
    func randomReorderingsRenamesAndRemovalsKeepEveryValueByName(seed: UInt64) throws {
        let steps = 12 * Seeds.scale
        for mode in Conformance.modes {
            var rng = SplitMix64(seed: seed &* 31 &+ (mode == .online ? 1 : 2))
            let dir = try TemporaryDirectory()
            let url = Conformance.url(dir)
            var variant = Self.variants.randomElement(using: &rng)!
            var version: UInt64 = 0
            var model: [Int: [String: String]] = [:]
            var nextId = 1
            for step in 0...steps {
                let context = "seed \(seed), \(mode), step \(step), \(String(describing: variant)) v\(version)"
                let realm = try Realm(configuration: Self.config(url, variant, version: version, mode: mode))
                if step == 0 {
                    try realm.write { for t in Self.tags { realm.create(RTag.self, value: [t]) } }
                }
                Self.check(realm, variant, model, context)
                // Random writes with this variant: positional creates in its declared order, sets by name, deletes.
                try realm.write {
                    for _ in 0..<Int.random(in: 1...4, using: &rng) {
                        var values: [Any?] = []
                        var row: [String: String] = [:]
                        for name in variant.fields {
                            if name == "id" {
                                values.append(nextId)
                                continue
                            }
                            let (v, c) = Self.randomValue(Self.logical(name), &rng, realm)
                            values.append(v)
                            row[Self.logical(name)] = c
                        }
                        variant.create(realm, values)
                        model[nextId] = row
                        nextId += 1
                    }
                    for id in model.keys.sorted() where Int.random(in: 0..<4, using: &rng) == 0 {
                        guard let object = variant.object(realm, id) else { continue }
                        let name = variant.fields.filter { $0 != "id" }.randomElement(using: &rng)!
                        let (v, c) = Self.randomValue(Self.logical(name), &rng, realm)
                        object.setValue(v, forKey: name)
                        model[id]?[Self.logical(name)] = c
                    }
                    if let id = model.keys.sorted().randomElement(using: &rng), Int.random(in: 0..<3, using: &rng) == 0,
                        let object = variant.object(realm, id)
                    {
                        realm.delete(object)
                        model[id] = nil
                    }
                }
                Self.check(realm, variant, model, context + ", after writes")
                guard step < steps else { break }
                // The next variant: the same property set may keep its version; anything else bumps it.
                let next = Self.variants.randomElement(using: &rng)!
                let sameSet = Set(variant.fields) == Set(next.fields)
                let bump = !sameSet || Bool.random(using: &rng)
                let oldFields = Set(variant.fields), newFields = Set(next.fields)
                let appendBang = bump && Bool.random(using: &rng)
                let block: Realm.MigrationBlock = { migration, _ in
                    if oldFields.contains("count") && newFields.contains("total") && !newFields.contains("count") {
                        migration.renameProperty(onType: "Rec", from: "count", to: "total")
                    }
                    if oldFields.contains("total") && newFields.contains("count") && !newFields.contains("total") {
                        migration.renameProperty(onType: "Rec", from: "total", to: "count")
                    }
                    if appendBang {
                        migration.enumerateObjects(ofType: "Rec") { old, new in
                            new?["title"] = (old?["title"] as? String ?? "") + "!"
                        }
                    }
                }
                // The model follows: fields the next variant lacks are gone, new ones read their defaults.
                let kept = Set(next.fields.map(Self.logical))
                for id in model.keys {
                    model[id] = model[id]!.filter { kept.contains($0.key) }
                    for field in kept where field != "id" && model[id]![field] == nil { model[id]![field] = Self.defaults[field] }
                    if appendBang { model[id]!["title"] = (model[id]!["title"] ?? "") + "!" }
                }
                if bump { version += 1 }
                _ = try Realm(configuration: Self.config(url, next, version: version, mode: mode, block: bump ? block : nil))
                variant = next
            }
        }
    }
}
