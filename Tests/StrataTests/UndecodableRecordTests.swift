import Engine
import Foundation
import Testing
import TestSupport
@testable import Strata

/// A record that passed its block checksum but does not decode (a writer's bug or a forged file): a getter,
/// which cannot throw, traps naming the type, the property, the object key, the file and where the record is
/// stored (segment and block offset); `strata verify` reports the same record.
@Suite struct UndecodableRecordTests {
    /// Object 7's record with its name's length made longer than the record, flushed to a segment.
    static func openWithAnUndecodableRecord(_ dir: TemporaryDirectory) throws -> Realm {
        let realm = try Realm(configuration: .init(fileURL: URL(fileURLWithPath: dir.child("db.realm")), objectTypes: [DecodeItem.self]))
        try realm.write { realm.create(DecodeItem.self, value: ["id": 7, "name": "seven"]) }
        let shared = realm.core.shared
        let partition = try #require(shared.storedSchema.withLock { $0?.type(named: "DecodeItem")?.partition })
        var record = try #require(try shared.database.snapshot().get(ObjectKey.bytes(7), in: partition))
        // Header (4 bytes), the id (8), then the name: its tag, then its length.
        record[13] = 0x7F
        let tx = try shared.database.beginWrite()
        try tx.put(ObjectKey.bytes(7), record, in: partition)
        try tx.commit()
        try shared.database.flush()
        realm.refresh()
        return realm
    }

    @Test func aGetterTrapsNamingTypePropertyKeyFileAndBlock() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = try TemporaryDirectory()
            let realm = try UndecodableRecordTests.openWithAnUndecodableRecord(dir)
            print(realm.object(ofType: DecodeItem.self, forPrimaryKey: 7)?.name ?? "none")
        }
        let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        for part in ["DecodeItem", "'name'", "object 7", "db.realm", "stored in segment", ".seg, the block at offset", "strata verify"] {
            #expect(text.contains(part), "\(part): \(text.suffix(800))")
        }
    }

    @Test func verifyReportsTheSameRecord() throws {
        let dir = try TemporaryDirectory()
        _ = try Self.openWithAnUndecodableRecord(dir)
        let inspector = try DatabaseInspector(path: dir.child("db.realm"))
        let problems = inspector.verify()
        try inspector.close()
        #expect(problems.contains { $0.contains("DecodeItem object 7: the record cannot be read") }, "\(problems)")
    }
}
