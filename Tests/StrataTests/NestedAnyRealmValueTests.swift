import Foundation
import Strata
import Testing
import TestSupport

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
