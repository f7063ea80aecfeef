import BenchKit
import Foundation
import Testing

/// The Bench's migrations leave the superseded records of the rewritten type behind until a merge drops
/// them (background merges, size-tiered, may have dropped some already); the compaction that
/// `shouldCompactOnLaunch` asks for must then leave one copy of each object.
@Suite struct CompactionAfterMigrationTests {
    @Test func compactingAfterTheMigrationsReclaimsTheRewrittenRecords() throws {
        let dir = NSTemporaryDirectory() + "strata-compact-after-migrate-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let data = Dataset(count: 20_000, lookups: 10)
        let peer = StrataObjectPeer()
        try peer.create(in: dir)
        try peer.insertAll(data.people)
        try peer.close()
        let inserted = try peer.sizeOnDisk(in: dir)
        _ = try peer.migrateCombine(in: dir)()
        _ = try peer.migrateRename(in: dir)()
        _ = try peer.migrateRetype(in: dir)()
        let migrated = try peer.sizeOnDisk(in: dir)
        let compacted = try peer.compactedSize(in: dir)
        let files = (try? FileManager.default.contentsOfDirectory(atPath: dir + "/strata.realm").sorted()) ?? []
        // Whatever the background merges left, compaction keeps one copy of each object.
        #expect(migrated >= compacted, "the migrations took \(migrated) bytes, \(compacted) compacted")
        #expect(compacted < inserted * 3 / 2, "after compaction \(compacted) bytes, \(inserted) after insert: \(files)")
    }
}
