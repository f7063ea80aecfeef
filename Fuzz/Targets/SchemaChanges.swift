import Foundation
import Strata

// The schema-change interpreter: the input is read as objects, then a chain of schema versions, writes and
// reopens. One file walks every version with `.blocking` migrations; another jumps versions with `.online`
// ones (transforms pending, finished now and then, closed and reopened mid-way). After every step both must
// hold the same objects with the same values.

/// Four versions of one type, `Item`.
enum SchemaV0 {
    final class Item: Object {
        @Persisted(primaryKey: true) var id: Int
        @Persisted var name = ""
        @Persisted var age = 0
    }
}

/// `name` renamed `fullName`; `email` added with a declared default, and indexed.
enum SchemaV1 {
    final class Item: Object {
        @Persisted(primaryKey: true) var id: Int
        @Persisted var fullName = ""
        @Persisted var age = 0
        @Persisted(indexed: true) var email = "none"
    }
}

/// `age` (Int) becomes `ageText` (String) through a transform; `fullName` gets an index too.
enum SchemaV2 {
    final class Item: Object {
        @Persisted(primaryKey: true) var id: Int
        @Persisted(indexed: true) var fullName = ""
        @Persisted var ageText = ""
        @Persisted(indexed: true) var email = "none"
    }
}

/// `score` added (optional); `email` marked by a transform that reads the new object.
enum SchemaV3 {
    final class Item: Object {
        @Persisted(primaryKey: true) var id: Int
        @Persisted(indexed: true) var fullName = ""
        @Persisted var ageText = ""
        @Persisted(indexed: true) var email = "none"
        @Persisted var score: Int?
    }
}

enum SchemaChangeFuzzing {
    /// The bytes of the input, read one at a time (zeros after the end).
    struct Input {
        let bytes: [UInt8]
        var position = 0
        var atEnd: Bool { position >= bytes.count }
        mutating func next() -> Int {
            defer { position += 1 }
            return position < bytes.count ? Int(bytes[position]) : 0
        }
    }

    static let types: [Object.Type] = [SchemaV0.Item.self, SchemaV1.Item.self, SchemaV2.Item.self, SchemaV3.Item.self]

    /// The migration block of the code at version `target`, as an app keeps it: every step from any older
    /// version up to `target`.
    static func block(upTo target: Int) -> MigrationBlock {
        { migration, oldVersion in
            if oldVersion < 1 { migration.renameProperty(onType: "Item", from: "name", to: "fullName") }
            if oldVersion < 2 && target >= 2 {
                migration.transformObjects(ofType: "Item") { old, new in new["ageText"] = "\(old["age"] as? Int ?? -1) years" }
            }
            if oldVersion < 3 && target >= 3 {
                migration.transformObjects(ofType: "Item") { _, new in new["email"] = (new["email"] as? String ?? "?") + "!" }
            }
        }
    }

    static func configuration(_ path: String, version: Int, online: Bool) -> Realm.Configuration {
        var c = Realm.Configuration(fileURL: URL(fileURLWithPath: path), objectTypes: [types[version]])
        c.schemaVersion = UInt64(version)
        c.migrationBlock = block(upTo: version)
        c.migrationMode = online ? .online : .blocking
        c.backgroundMigration = false
        return c
    }

    /// Every object's values, by id, as text; and, under negative ids, the answers of equality queries on
    /// the indexed properties (an index or a scan must give the same objects).
    static func contents(_ realm: Realm, version: Int) -> [Int: String] {
        func read<T: Object>(_ type: T.Type, _ names: [String]) -> [Int: String] {
            var out: [Int: String] = [:]
            let all = realm.objects(type)
            for o in all {
                let id = o.value(forKey: "id") as? Int ?? -1
                out[id] = names.map { "\($0)=\(String(describing: o.value(forKey: $0) ?? "nil"))" }.joined(separator: " ")
            }
            var q = -1
            for (property, values) in [("email", ["none", "none!", "e0", "e1!", "v2", "v3!"]), ("fullName", ["n1", "n3", "v0"])]
            where names.contains(property) {
                for v in values {
                    let ids = all.filter("%K == %@", property, v).map { $0.value(forKey: "id") as? Int ?? -1 }.sorted()
                    out[q] = "\(property) == \(v): \(ids)"
                    q -= 1
                }
            }
            return out
        }
        switch version {
        case 0: return read(SchemaV0.Item.self, ["name", "age"])
        case 1: return read(SchemaV1.Item.self, ["fullName", "age", "email"])
        case 2: return read(SchemaV2.Item.self, ["fullName", "ageText", "email"])
        default: return read(SchemaV3.Item.self, ["fullName", "ageText", "email", "score"])
        }
    }

    /// The values of a new object at `version`.
    static func newObject(_ id: Int, _ a: Int, _ b: Int, version: Int) -> [String: Any] {
        switch version {
        case 0: return ["id": id, "name": "n\(a % 8)", "age": b - 100]
        case 1: return ["id": id, "fullName": "n\(a % 8)", "age": b - 100, "email": "e\(a % 3)"]
        case 2: return ["id": id, "fullName": "n\(a % 8)", "ageText": "t\(b % 5)", "email": "e\(a % 3)"]
        default: return ["id": id, "fullName": "n\(a % 8)", "ageText": "t\(b % 5)", "email": "e\(a % 3)", "score": b]
        }
    }

    /// One property change at `version`.
    static func change(_ a: Int, _ b: Int, version: Int) -> (String, Any) {
        let names = [["name", "age"], ["fullName", "age", "email"], ["fullName", "ageText", "email"], ["fullName", "ageText", "email", "score"]][version]
        let name = names[a % names.count]
        switch name {
        case "age": return (name, b - 100)
        case "score": return (name, b)
        default: return (name, "v\(b % 6)")
        }
    }

    static func create(_ realm: Realm, _ values: [String: Any], version: Int) {
        switch version {
        case 0: realm.create(SchemaV0.Item.self, value: values, update: .modified)
        case 1: realm.create(SchemaV1.Item.self, value: values, update: .modified)
        case 2: realm.create(SchemaV2.Item.self, value: values, update: .modified)
        default: realm.create(SchemaV3.Item.self, value: values, update: .modified)
        }
    }

    static func delete(_ realm: Realm, _ id: Int, version: Int) {
        let object: Object? = switch version {
        case 0: realm.object(ofType: SchemaV0.Item.self, forPrimaryKey: id)
        case 1: realm.object(ofType: SchemaV1.Item.self, forPrimaryKey: id)
        case 2: realm.object(ofType: SchemaV2.Item.self, forPrimaryKey: id)
        default: realm.object(ofType: SchemaV3.Item.self, forPrimaryKey: id)
        }
        if let object { realm.delete(object) }
    }

    nonisolated(unsafe) static var counter = 0

    static func run(_ bytes: [UInt8]) -> String? {
        counter += 1
        let dir = NSTemporaryDirectory() + "strata-schema-fuzz-\(getpid())-\(counter)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            return try interpret(Input(bytes: bytes), reference: dir + "/blocking.realm", online: dir + "/online.realm")
        } catch {
            return "an operation failed: \(error)"
        }
    }

    static func interpret(_ input: Input, reference: String, online: String) throws -> String? {
        var input = input
        var version = 0
        var a: Realm? = try Realm(configuration: configuration(reference, version: 0, online: false))
        var b: Realm? = try Realm(configuration: configuration(online, version: 0, online: true))
        var ids: [Int] = []
        let count = input.next() % 24
        for realm in [a, b].compactMap({ $0 }) {
            try realm.write {
                for id in 0..<count { create(realm, newObject(id, id * 7, id * 13, version: 0), version: 0) }
            }
        }
        ids = Array(0..<count)
        var nextID = count
        var steps = 0
        while !input.atEnd && steps < 12 {
            steps += 1
            switch input.next() % 5 {
            case 0 where version < 3:
                // A version bump: the reference walks each version, the online file jumps.
                let target = version + 1 + input.next() % (3 - version)
                a = nil
                for v in (version + 1)...target { a = try Realm(configuration: configuration(reference, version: v, online: false)) }
                b = nil
                b = try Realm(configuration: configuration(online, version: target, online: input.next() % 4 != 0))
                version = target
                if input.next() % 2 == 0 { try b?.finishMigrations() }
            case 1, 2:
                // Writes, decided once and applied the same to both files.
                var ops: [(kind: Int, id: Int, values: [String: Any])] = []
                for _ in 0..<(1 + input.next() % 4) {
                    let kind = input.next() % 3, x = input.next(), y = input.next(), z = input.next()
                    switch kind {
                    case 0:
                        ops.append((0, nextID, newObject(nextID, x, y, version: version)))
                        ids.append(nextID)
                        nextID += 1
                    case 1:
                        guard !ids.isEmpty else { continue }
                        let id = ids[x % ids.count]
                        let (name, value) = change(y, z, version: version)
                        ops.append((1, id, ["id": id, name: value]))
                    default:
                        guard !ids.isEmpty else { continue }
                        ops.append((2, ids.remove(at: x % ids.count), [:]))
                    }
                }
                for realm in [a, b].compactMap({ $0 }) {
                    try realm.write {
                        for op in ops {
                            if op.kind == 2 { delete(realm, op.id, version: version) } else { create(realm, op.values, version: version) }
                        }
                    }
                }
            case 3:
                // The online file closed and opened again (a new process's view), its migration maybe finished.
                b = nil
                b = try Realm(configuration: configuration(online, version: version, online: true))
                if input.next() % 3 == 0 { try b?.finishMigrations() }
            default:
                if input.next() % 2 == 0 { try b?.finishMigrations() }
            }
            guard let ra = a, let rb = b else { return "a Realm was not open" }
            let left = contents(ra, version: version), right = contents(rb, version: version)
            if left != right {
                let differing = Set(left.keys).union(right.keys).sorted().first { left[$0] != right[$0] }
                return "step \(steps), version \(version): the online file differs from the blocking one at id \(differing ?? -1): "
                    + "\(differing.flatMap { right[$0] } ?? "absent") instead of \(differing.flatMap { left[$0] } ?? "absent")"
            }
            let objects = left.keys.filter { $0 >= 0 }.count
            if objects != ids.count { return "step \(steps): \(objects) objects instead of \(ids.count)" }
        }
        return nil
    }

    /// Inputs for the corpus: a jump to the last version, a walk with writes, reopens mid-migration.
    static let seeds: [[UInt8]] = [
        [10, 0, 2, 0],
        [16, 1, 3, 0, 5, 9, 1, 2, 7, 3, 0, 0, 0, 1, 3, 1, 1, 4, 1, 2, 2, 0],
        [23, 0, 0, 1, 3, 1, 1, 3, 1, 0, 0, 1, 2, 2, 0, 1, 4, 9, 9, 3, 0, 4, 0],
        [5, 2, 2, 0, 1, 2, 3, 2, 9, 7, 5, 0, 1, 0, 1, 3, 2, 0, 0, 1, 1, 4, 1],
    ]
}
