import Engine
import Foundation
import Testing
import TestSupport

@testable import Strata

/// Damaged files against the public API: every kind of damage is a typed `Realm.Error` from a throwing call
/// or a trap naming the file and offset from a non-throwing one (exit tests), never a wrong answer.
@Suite struct DamagedFileTests {
    static let count = 2000

    /// The key of the encrypted variants (the damage tests run on encrypted files too).
    static let key = Data((0..<64).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 1) })

    static func config(_ path: String, encrypted: Bool = false) -> Realm.Configuration {
        Realm.Configuration(
            fileURL: URL(fileURLWithPath: path), encryptionKey: encrypted ? key : nil, schemaVersion: 3, objectTypes: [SalvageItem.self, SalvageTag.self])
    }

    /// A closed database of items in several blocks (plus, with `inLog`, commits only in the log, the
    /// process having died), then one kind of damage. Returns the path and the damaged file's name.
    static func damaged(_ kind: String, in dir: TemporaryDirectory, encrypted: Bool = false) throws -> (path: String, file: String) {
        let path = dir.child("db.realm")
        do {
            let realm = try Realm(configuration: config(path, encrypted: encrypted))
            try realm.write {
                for i in 0..<count { realm.create(SalvageItem.self, value: ["code": "c\(i)", "group": i % 10, "payload": String(repeating: "p", count: 30)]) }
            }
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: path)
        let segments = try names.filter { $0.hasSuffix(".seg") }.map { ($0, try FileManager.default.attributesOfItem(atPath: path + "/" + $0)[.size] as! Int) }
        let (segment, size) = segments.max { $0.1 < $1.1 }!
        let url = URL(fileURLWithPath: path + "/" + segment)
        var bytes = [UInt8](try Data(contentsOf: url))
        switch kind {
        case "data block": bytes[size / 3] ^= 0x10
        case "index": bytes[size - 100] ^= 0x10
        case "footer": bytes[size - 30] ^= 0x10
        case "cut segment": bytes.removeLast(size / 2)
        case "missing segment":
            try FileManager.default.removeItem(at: url)
            return (path, segment)
        case "missing log":
            let log = names.filter { $0.hasSuffix(".log") }.sorted().last!
            try FileManager.default.removeItem(atPath: path + "/" + log)
            return (path, log)
        case "another database's segment":
            let other = try TemporaryDirectory()
            _ = try damaged("none", in: other, encrypted: encrypted)
            bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: other.child("db.realm/" + segment))))
        default: return (path, segment)
        }
        try Data(bytes).write(to: url)
        return (path, segment)
    }

    /// Damage found at open: `Realm(configuration:)` throws a `Realm.Error` naming the file.
    @Test(arguments: ["footer", "cut segment", "missing segment", "missing log", "another database's segment"], [false, true])
    func damageFoundAtOpenIsATypedError(kind: String, encrypted: Bool) throws {
        let dir = try TemporaryDirectory()
        let (path, file) = try Self.damaged(kind, in: dir, encrypted: encrypted)
        do {
            _ = try Realm(configuration: Self.config(path, encrypted: encrypted))
            Issue.record("\(kind): the damaged database opened")
        } catch let error as Realm.Error {
            #expect("\(error)".contains(file), "\(kind): \(error)")
        }
    }

    // Damage found when a block is first read: the read that meets it stops the process naming the file and
    // offset (non-throwing APIs), as Realm does on a corrupted file.

    static func expectTrap(_ result: ExitTest.Result?, _ kind: String) {
        let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(text.contains(".seg"), "\(kind): \(text.suffix(800))")
        #expect(text.contains("offset"), "\(kind): \(text.suffix(800))")
        #expect(text.contains("strata salvage"), "\(kind): \(text.suffix(800))")
    }

    @Test func aDamagedDataBlockStopsCountIterationQueriesAndLookups() async {
        let count = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = try TemporaryDirectory()
            let realm = try Realm(configuration: DamagedFileTests.config(try DamagedFileTests.damaged("data block", in: dir).path))
            print(realm.objects(SalvageItem.self).count)
        }
        Self.expectTrap(count, "count")
        let loop = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = try TemporaryDirectory()
            let realm = try Realm(configuration: DamagedFileTests.config(try DamagedFileTests.damaged("data block", in: dir).path))
            var n = 0
            for item in realm.objects(SalvageItem.self) { n += item.payload.count }
            print(n)
        }
        Self.expectTrap(loop, "iteration")
        let query = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = try TemporaryDirectory()
            let realm = try Realm(configuration: DamagedFileTests.config(try DamagedFileTests.damaged("data block", in: dir).path))
            print(realm.objects(SalvageItem.self).filter("payload == 'x'").count)
        }
        Self.expectTrap(query, "query")
        let lookups = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = try TemporaryDirectory()
            let realm = try Realm(configuration: DamagedFileTests.config(try DamagedFileTests.damaged("data block", in: dir).path))
            var found = 0
            for i in 0..<DamagedFileTests.count where realm.object(ofType: SalvageItem.self, forPrimaryKey: "c\(i)") != nil { found += 1 }
            print(found)
        }
        Self.expectTrap(lookups, "lookups")
    }

    @Test func aDamagedEncryptedBlockOrIndexStopsTheFirstRead() async {
        let block = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = try TemporaryDirectory()
            let path = try DamagedFileTests.damaged("data block", in: dir, encrypted: true).path
            let realm = try Realm(configuration: DamagedFileTests.config(path, encrypted: true))
            var n = 0
            for item in realm.objects(SalvageItem.self) { n += item.payload.count }
            print(n)
        }
        Self.expectTrap(block, "encrypted block")
        let index = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = try TemporaryDirectory()
            let path = try DamagedFileTests.damaged("index", in: dir, encrypted: true).path
            let realm = try Realm(configuration: DamagedFileTests.config(path, encrypted: true))
            print(realm.object(ofType: SalvageItem.self, forPrimaryKey: "c7") as Any)
        }
        Self.expectTrap(index, "encrypted index")
    }

    @Test func aDamagedIndexStopsTheFirstRead() async {
        let count = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = try TemporaryDirectory()
            let realm = try Realm(configuration: DamagedFileTests.config(try DamagedFileTests.damaged("index", in: dir).path))
            print(realm.objects(SalvageItem.self).count)
        }
        Self.expectTrap(count, "count")
        let lookup = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = try TemporaryDirectory()
            let realm = try Realm(configuration: DamagedFileTests.config(try DamagedFileTests.damaged("index", in: dir).path))
            print(realm.object(ofType: SalvageItem.self, forPrimaryKey: "c7") as Any)
        }
        Self.expectTrap(lookup, "lookup")
    }
}

final class DecodeItem: Object {
    @Persisted(primaryKey: true) var id: Int
    @Persisted var name = ""
}
