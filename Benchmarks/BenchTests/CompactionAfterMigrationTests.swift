import BenchKit
import Foundation
import Testing

/// The Bench's migrations leave the superseded records of the rewritten type behind until compaction; the
/// compaction that `shouldCompactOnLaunch` asks for must then reclaim them.
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
        // The three migrations left superseded records behind; compaction keeps one copy of each object.
        #expect(migrated > inserted * 2, "the migrations took \(migrated) bytes, \(inserted) after insert")
        #expect(compacted < inserted * 3 / 2, "after compaction \(compacted) bytes, \(inserted) after insert: \(files)")
    }
}
