import Engine
import Foundation
import Strata
import Testing
import TestSupport

@Suite struct ConfigurationTests {
    /// A key is never ignored: the file it creates needs it (the key used to be refused; `RealmEncryptionTests`
    /// covers encryption itself).
    @Test func anEncryptionKeyIsNeverIgnored() throws {
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("e.realm"))
        do {
            let realm = try Realm(configuration: .init(fileURL: url, encryptionKey: Data(repeating: 1, count: 64), objectTypes: [Note.self]))
            try realm.write { realm.add(Note(value: ["text": "secret"])) }
        }
        #expect {
            _ = try Realm(configuration: .init(fileURL: url, objectTypes: [Note.self]))
        } throws: { error in "\(error)".contains("Realm file decryption failed") }
    }

    @Test func aSeedFileIsCopiedForANewRealm() throws {
        let dir = try TemporaryDirectory()
        let seed = URL(fileURLWithPath: dir.child("seed.realm"))
        do {
            let realm = try Realm(configuration: .init(fileURL: seed, objectTypes: [Note.self]))
            try realm.write { realm.add(Note(value: ["text": "from the seed"])) }
        }
        let url = URL(fileURLWithPath: dir.child("app.realm"))
        let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [Note.self], seedFilePath: seed))
        #expect(realm.objects(Note.self).first?.text == "from the seed")
    }

    @Test func shouldCompactOnLaunchIsAskedWithTotalAndUsedBytes() throws {
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("c.realm"))
        // Two sessions: 300 objects, then 140 of them overwritten: two segments, 140 records superseded. (The
        // second is under half the first, so the close's own merge of small segments leaves them apart.)
        for (round, count) in [(0, 300), (1, 140)] {
            let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [Person.self]))
            try realm.write {
                for i in 0..<count {
                    // Four UUIDs: names LZ4 can hardly shorten, so stored bytes follow the records stored.
                    let name = "r\(round)-" + (0..<4).map { _ in UUID().uuidString }.joined()
                    realm.create(Person.self, value: ["id": i, "firstName": name], update: .modified)
                }
            }
        }
        let asked = Locked<(Int, Int)?>(nil)
        var config = Realm.Configuration(fileURL: url, objectTypes: [Person.self])
        config.shouldCompactOnLaunch = { total, used in
            asked.withLock { $0 = (total, used) }
            return true
        }
        do {
            let realm = try Realm(configuration: config)
            #expect(realm.objects(Person.self).count == 300)
            #expect(realm.objects(Person.self).allSatisfy { $0.firstName.hasPrefix($0.id < 140 ? "r1-" : "r0-") })
        }
        // Used bytes are uncompressed, total bytes compressed; 440 records still take more than 300.
        let (total, used) = try #require(asked.withLock { $0 })
        #expect(total > used, "440 records stored, 300 live: total \(total), used \(used)")
        // The compaction it asked for left one copy.
        _ = try Realm(configuration: config)
        let (after, _) = try #require(asked.withLock { $0 })
        // (Background merges at the earlier opens may have dropped some copies already.)
        #expect(after < total, "after compaction: \(after) bytes, before: \(total)")
    }
}
