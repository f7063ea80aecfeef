import Engine
import Foundation
import Testing
import TestSupport

@testable import Strata

/// The `strata` tool on an encrypted database: `--key-file` (raw or hex) opens it; without the key, or with
/// another, every command fails naming the file; `verify` opens every block (checking its tag) and `salvage`
/// writes an encrypted copy.
@Suite(.serialized) struct StrataToolEncryptionTests {
    @Test func commandsTakeTheKeyFileAndRefuseWithoutIt() throws {
        let dir = try TemporaryDirectory()
        let path = dir.child("secret.realm")
        do {
            let realm = try Realm(configuration: RealmEncryptionTests.configuration(path, key: RealmEncryptionTests.key))
            try DatabaseFixtureTests.fill(realm)
        }
        let raw = dir.child("key.bin"), hex = dir.child("key.hex"), wrong = dir.child("wrong.bin")
        try RealmEncryptionTests.key.write(to: URL(fileURLWithPath: raw))
        try Data(RealmEncryptionTests.key.map { String(format: "%02x", $0) }.joined().utf8).write(to: URL(fileURLWithPath: hex))
        try RealmEncryptionTests.otherKey.write(to: URL(fileURLWithPath: wrong))

        let info = try StrataToolTests.strata("info", path, "--key-file", raw)
        #expect(info.status == 0, "\(info.err)")
        #expect(info.out.contains("FixtureItem: \(DatabaseFixtureTests.count) objects"), "\(info.out)")
        let verify = try StrataToolTests.strata("verify", path, "--key-file", hex)
        #expect(verify.status == 0, "\(verify.err)")
        #expect(verify.out.contains("no problem found"), "\(verify.out)")
        for args in [["info", path], ["verify", path, "--key-file", wrong]] {
            let r = try StrataToolTests.run("strata", args)
            #expect(r.status == 1, "\(args)")
            #expect(r.err.contains("MANIFEST-"), "\(args): \(r.err)")
        }
        let copy = dir.child("copy.realm")
        let salvage = try StrataToolTests.strata("salvage", path, copy, "--key-file", raw)
        #expect(salvage.status == 0, "\(salvage.err)")
        #expect(try StrataToolTests.strata("info", copy).status == 1, "the salvaged copy is encrypted")
        #expect(try StrataToolTests.strata("verify", copy, "--key-file", raw).status == 0)
    }
}
