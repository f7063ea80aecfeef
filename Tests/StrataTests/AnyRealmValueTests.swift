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
