import Foundation
import Strata
import Testing
import TestSupport

final class AVBox: Object {
    @Persisted(primaryKey: true) var id: Int
    @Persisted var value: AnyRealmValue
}

final class AVThing: Object {
    @Persisted var name = ""
}

@Suite struct AnyRealmValueTests {
    func config(_ dir: TemporaryDirectory) -> Realm.Configuration {
        Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("any.realm")), objectTypes: [AVBox.self, AVThing.self])
    }

    static var samples: [AnyRealmValue] { [
        .none, .int(42), .bool(true), .float(1.5), .double(2.25), .string("hello"), .data(Data([1, 2, 3])),
        .date(Date(timeIntervalSince1970: 1000)), .objectId(try! ObjectId(string: "5f1b2c3d4e5f6a7b8c9d0e1f")), .decimal128(Decimal128(value: Decimal(string: "1.25")!)),
        .uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!),
    ] }

    @Test func everyKindOfValueRoundTripsThroughReopen() throws {
        let dir = try TemporaryDirectory()
        do {
            let realm = try Realm(configuration: config(dir))
            try realm.write {
                for (i, v) in Self.samples.enumerated() {
                    let box = AVBox()
                    box.id = i
                    box.value = v
                    realm.add(box)
                }
            }
        }
        let realm = try Realm(configuration: config(dir))
        for (i, v) in Self.samples.enumerated() {
            #expect(realm.object(ofType: AVBox.self, forPrimaryKey: i)?.value == v, "\(v)")
        }
        let boxes = realm.objects(AVBox.self)
        #expect(boxes.filter("value == 42").map(\.id) == [1])
        #expect(boxes.filter("value == 'hello'").map(\.id) == [5])
        #expect(boxes.filter("value == nil").map(\.id) == [0])
        // Numbers compare across kinds; other kinds do not match a number.
        #expect(Set(boxes.filter("value > 2").map(\.id)) == [1, 4])
    }

    @Test func anObjectIsStoredWithItsTypeAndReadsAsNoneOnceDeleted() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: config(dir))
        let thing = AVThing()
        thing.name = "lamp"
        let box = AVBox()
        box.id = 1
        box.value = .object(thing)
        #expect(box.value.objectValue === thing)
        try realm.write { realm.add(box) }
        #expect(thing.realm != nil)
        #expect((box.value.objectValue as? AVThing)?.name == "lamp")
        #expect(box.value == .object(thing))
        // Set on a managed object: an unmanaged object is added.
        try realm.write {
            let other = AVThing()
            other.name = "chair"
            box.value = .object(other)
        }
        #expect((box.value.objectValue as? AVThing)?.name == "chair")
        #expect(realm.objects(AVThing.self).count == 2)
        try realm.write { realm.delete(try #require(box.value.objectValue)) }
        #expect(box.value == .none)
        try realm.write { box.value = .string("back to a value") }
        #expect(box.value.stringValue == "back to a value")
    }
}

final class AVHolder: Object {
    @Persisted(primaryKey: true) var id: Int
    @Persisted var value: AnyRealmValue
    @Persisted var items: List<AnyRealmValue>
    @Persisted var table: Map<String, AnyRealmValue>
}

/// An AnyRealmValue as plain Swift values, objects by their name, for comparisons.
indirect enum PlainAny: Equatable, CustomStringConvertible {
    case scalar(AnyRealmValue)
    case thing(String)
    case list([PlainAny])
    case dictionary([String: PlainAny])

    init(_ v: AnyRealmValue) {
        switch v {
        case .object(let o): self = .thing((o as? AVThing)?.name ?? "?")
        case .list(let l): self = .list(l.map(PlainAny.init))
        case .dictionary(let m): self = .dictionary(Dictionary(uniqueKeysWithValues: m.map { ($0.key, PlainAny($0.value)) }))
        default: self = .scalar(v)
        }
    }

    /// The same value as a new, unmanaged AnyRealmValue (objects: new AVThings).
    var unmanaged: AnyRealmValue {
        switch self {
        case .scalar(let v): return v
        case .thing(let name):
            let t = AVThing()
            t.name = name
            return .object(t)
        case .list(let items):
            let l = List<AnyRealmValue>()
            l.append(objectsIn: items.map(\.unmanaged))
            return .list(l)
        case .dictionary(let d):
            let m = Map<String, AnyRealmValue>()
            for (k, v) in d { m[k] = v.unmanaged }
            return .dictionary(m)
        }
    }

    var description: String {
        switch self {
        case .scalar(let v): "\(v)"
        case .thing(let n): "thing(\(n))"
        case .list(let items): "[\(items.map(\.description).joined(separator: ", "))]"
        case .dictionary(let d): "{\(d.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", "))}"
        }
    }
}

@Suite struct NestedAnyRealmValueTests {
    func config(_ dir: TemporaryDirectory) -> Realm.Configuration {
        Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("nested.realm")), objectTypes: [AVHolder.self, AVThing.self])
    }

    static var sample: PlainAny { .list([
        .scalar(.int(1)), .scalar(.string("a")), .thing("lamp"),
        .list([.scalar(.bool(true)), .dictionary(["k": .scalar(.double(2.5)), "o": .thing("chair"), "empty": .list([])])]),
    ]) }

    @Test func nestedListsAndDictionariesRoundTripThroughReopenWithTheirObjects() throws {
        let dir = try TemporaryDirectory()
        let items: [PlainAny] = [.list([.scalar(.int(1)), .scalar(.int(2))]), .thing("rug"), .dictionary(["z": .scalar(.none)])]
        let table: [String: PlainAny] = ["x": .dictionary(["y": .list([.scalar(.int(3)), .thing("desk")])]), "n": .scalar(.int(7))]
        do {
            let realm = try Realm(configuration: config(dir))
            let holder = AVHolder()
            holder.id = 1
            holder.value = Self.sample.unmanaged
            // Unmanaged, the value is what was set.
            #expect(PlainAny(holder.value) == Self.sample)
            holder.items.append(objectsIn: items.map(\.unmanaged))
            for (k, v) in table { holder.table[k] = v.unmanaged }
            try realm.write { realm.add(holder) }
            // The objects inside the nested collections were added with the holder.
            #expect(Set(realm.objects(AVThing.self).map(\.name)) == ["lamp", "chair", "rug", "desk"])
            #expect(PlainAny(holder.value) == Self.sample)
        }
        let realm = try Realm(configuration: config(dir))
        let holder = try #require(realm.object(ofType: AVHolder.self, forPrimaryKey: 1))
        #expect(PlainAny(holder.value) == Self.sample)
        #expect(holder.items.map(PlainAny.init) == items)
        #expect(Dictionary(uniqueKeysWithValues: holder.table.map { ($0.key, PlainAny($0.value)) }) == table)
        // A list is not a value of its own: no comparison matches it, whatever it holds.
        #expect(realm.objects(AVHolder.self).filter("value == 1").isEmpty)
        #expect(realm.objects(AVHolder.self).filter("value == nil").isEmpty)
    }

    @Test func managedNestedCollectionsAreLiveViewsChangedInWrites() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: config(dir))
        let holder = AVHolder()
        holder.id = 1
        holder.value = Self.sample.unmanaged
        try realm.write { realm.add(holder) }
        let inner = try #require(holder.value.listValue?[3].listValue)
        let dictionary = try #require(inner[1].dictionaryValue)
        #expect(inner.realm != nil && dictionary.realm != nil)
        try realm.write {
            inner.append(.string("new"))
            dictionary["k"] = .int(9)
            dictionary["o"] = nil
            // A nested collection set inside a nested collection, holding a new object.
            let deeper = List<AnyRealmValue>()
            let stool = AVThing()
            stool.name = "stool"
            deeper.append(.object(stool))
            dictionary["deeper"] = .list(deeper)
        }
        let expected: PlainAny = .list([
            .scalar(.int(1)), .scalar(.string("a")), .thing("lamp"),
            .list([.scalar(.bool(true)), .dictionary(["k": .scalar(.int(9)), "empty": .list([]), "deeper": .list([.thing("stool")])]),
                .scalar(.string("new"))]),
        ])
        #expect(PlainAny(holder.value) == expected)
        // Another Realm of the same file sees the committed change.
        let other = try Realm(configuration: config(dir))
        #expect(PlainAny(try #require(other.object(ofType: AVHolder.self, forPrimaryKey: 1)).value) == expected)
        // A managed nested collection assigned elsewhere is copied, and the copy is independent.
        try realm.write {
            holder.table["copy"] = .list(inner)
            inner.removeAll()
        }
        #expect(holder.table["copy"].map(PlainAny.init) == .list([.scalar(.bool(true)), expected.listAt(3).listAt(1), .scalar(.string("new"))]))
        #expect(holder.value.listValue?[3].listValue?.count == 0)
        // Cancelled changes leave nothing.
        realm.beginWrite()
        holder.value.listValue?.append(.int(100))
        realm.cancelWrite()
        #expect(holder.value.listValue?.count == 4)
        // Replacing the value leaves older views of its collections empty, not wrong.
        try realm.write { holder.value = .int(5) }
        #expect(inner.isEmpty && dictionary.isEmpty)
        #expect(holder.value == .int(5))
    }

    /// Random changes at random depths, each checked against a plain Swift model, then through a reopen.
    @Test func randomNestedChangesMatchAPlainModel() throws {
        let dir = try TemporaryDirectory()
        var rng = SplitMix64(seed: 0x4E57)
        var model: PlainAny = .list([])
        let steps = 150 * Seeds.scale
        do {
            let realm = try Realm(configuration: config(dir))
            let holder = AVHolder()
            holder.id = 1
            holder.value = model.unmanaged
            try realm.write { realm.add(holder) }
            for step in 0..<steps {
                try realm.write { Self.randomChange(holder.value, &model, path: [], &rng) }
                #expect(PlainAny(holder.value) == model, "step \(step)")
                if PlainAny(holder.value) != model { return }
            }
        }
        let realm = try Realm(configuration: config(dir))
        #expect(PlainAny(try #require(realm.object(ofType: AVHolder.self, forPrimaryKey: 1)).value) == model)
    }

    static func randomScalar(_ rng: inout SplitMix64) -> PlainAny {
        switch Int.random(in: 0..<6, using: &rng) {
        case 0: .scalar(.int(Int.random(in: -50...50, using: &rng)))
        case 1: .scalar(.string("s\(Int.random(in: 0..<20, using: &rng))"))
        case 2: .thing("t\(Int.random(in: 0..<20, using: &rng))")
        case 3: .list([.scalar(.bool(Bool.random(using: &rng)))])
        case 4: .dictionary(["a": .scalar(.double(1.5))])
        default: .scalar(.none)
        }
    }

    /// Changes the collection `value` (a live view) and the model's collection at `path` the same way, or
    /// descends into a nested collection.
    static func randomChange(_ value: AnyRealmValue, _ model: inout PlainAny, path: [PlainAny.Step], _ rng: inout SplitMix64) {
        let here = model.at(path)
        switch (value, here) {
        case (.list(let l), .list(let items)):
            let nested = items.indices.filter { items[$0].isCollection }
            if !nested.isEmpty, Int.random(in: 0..<3, using: &rng) == 0 {
                let i = nested.randomElement(using: &rng)!
                randomChange(l[i], &model, path: path + [.index(i)], &rng)
                return
            }
            var new = items
            switch Int.random(in: 0..<4, using: &rng) {
            case 0 where !items.isEmpty:
                let i = Int.random(in: 0..<items.count, using: &rng)
                l.remove(at: i)
                new.remove(at: i)
            case 1 where !items.isEmpty:
                let i = Int.random(in: 0..<items.count, using: &rng)
                let v = randomScalar(&rng)
                l[i] = v.unmanaged
                new[i] = v
            case 2:
                let i = Int.random(in: 0...items.count, using: &rng)
                let v = randomScalar(&rng)
                l.insert(v.unmanaged, at: i)
                new.insert(v, at: i)
            default:
                let v = randomScalar(&rng)
                l.append(v.unmanaged)
                new.append(v)
            }
            model.set(path, .list(new))
        case (.dictionary(let m), .dictionary(let entries)):
            let nested = entries.keys.sorted().filter { entries[$0]!.isCollection }
            if !nested.isEmpty, Int.random(in: 0..<3, using: &rng) == 0 {
                let k = nested.randomElement(using: &rng)!
                randomChange(m[k]!, &model, path: path + [.key(k)], &rng)
                return
            }
            var new = entries
            let k = "k\(Int.random(in: 0..<6, using: &rng))"
            if Int.random(in: 0..<4, using: &rng) == 0 {
                m[k] = nil
                new[k] = nil
            } else {
                let v = randomScalar(&rng)
                m[k] = v.unmanaged
                new[k] = v
            }
            model.set(path, .dictionary(new))
        default:
            Issue.record("the stored value \(PlainAny(value)) and the model \(here) differ in kind")
        }
    }
}

extension PlainAny {
    enum Step { case index(Int), key(String) }

    var isCollection: Bool {
        switch self {
        case .list, .dictionary: true
        default: false
        }
    }

    func listAt(_ i: Int) -> PlainAny { if case .list(let items) = self { items[i] } else { .scalar(.none) } }

    func at(_ path: [Step]) -> PlainAny {
        guard let step = path.first else { return self }
        switch (self, step) {
        case (.list(let items), .index(let i)): return items[i].at(Array(path.dropFirst()))
        case (.dictionary(let d), .key(let k)): return (d[k] ?? .scalar(.none)).at(Array(path.dropFirst()))
        default: return .scalar(.none)
        }
    }

    mutating func set(_ path: [Step], _ new: PlainAny) {
        guard let step = path.first else {
            self = new
            return
        }
        switch (self, step) {
        case (.list(var items), .index(let i)):
            items[i].set(Array(path.dropFirst()), new)
            self = .list(items)
        case (.dictionary(var d), .key(let k)):
            var inner = d[k] ?? .scalar(.none)
            inner.set(Array(path.dropFirst()), new)
            d[k] = inner
            self = .dictionary(d)
        default: break
        }
    }
}
