import Foundation
import Testing
import TestSupport

@testable import Strata

final class ErrKennel: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
    @Persisted var dogs: List<ErrDog>
}

final class ErrDog: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
}

/// A storage error met while computing what changed for an observer reaches the observer as its `.error`
/// case, naming the file and what to run, and the observer gets nothing more: never a change computed from
/// what could be read.
@Suite struct NotificationErrorTests {
    @Test func aDamagedBlockReadForAnObserverIsItsErrorCase() throws {
        let dir = try TemporaryDirectory()
        let config = Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("k.realm")), objectTypes: [ErrKennel.self, ErrDog.self])
        do {
            let realm = try Realm(configuration: config)
            try realm.write {
                let kennel = realm.create(ErrKennel.self, value: ["id": 1, "name": "k"])
                for i in 0..<1200 { kennel.dogs.append(realm.create(ErrDog.self, value: ["id": i, "name": String(repeating: "d", count: 40) + "\(i)"])) }
            }
        }
        // Reopened, the objects are in segments, one file per type; nothing has read the dogs' blocks yet.
        let realm = try Realm(configuration: config)
        let kennel = try #require(realm.object(ofType: ErrKennel.self, forPrimaryKey: 1))
        var seen: [String] = []
        let token = kennel.dogs.observe { change in
            switch change {
            case .initial: seen.append("initial")
            case .update: seen.append("update")
            case .error(let e): seen.append("error: \(e)")
            }
        }
        defer { token.invalidate() }
        // Damage a block in the middle of the largest segment (the dogs'), in place.
        let segments = try FileManager.default.contentsOfDirectory(atPath: dir.child("k.realm")).filter { $0.hasSuffix(".seg") }
        let sizes = try segments.map { ($0, try FileManager.default.attributesOfItem(atPath: dir.child("k.realm/\($0)"))[.size] as! Int) }
        let (name, size) = try #require(sizes.max { $0.1 < $1.1 })
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: dir.child("k.realm/\(name)")))
        try handle.seek(toOffset: UInt64(size / 2))
        let byte = try #require(try handle.read(upToCount: 1)).first!
        try handle.seek(toOffset: UInt64(size / 2))
        try handle.write(contentsOf: Data([byte ^ 0x20]))
        try handle.close()
        // A change to the kennel: its observer reads the dogs of the list in both versions.
        try realm.write { kennel.name = "changed" }
        try realm.write { kennel.name = "again" }
        let errors = seen.filter { $0.hasPrefix("error") }
        #expect(errors.count == 1, "\(seen)")
        #expect(!seen.contains("update"), "\(seen)")
        #expect(errors.first?.contains(name) == true, "\(errors)")
        #expect(errors.first?.contains("strata salvage") == true, "\(errors)")
    }
}
