import Foundation

extension Realm {
    /// The online migrations of this Realm's file that are still under way, one entry per object type
    /// (finished types stay listed, as done, for the life of the process). Empty when none ran.
    public var migrationProgress: [MigrationProgress] { core.shared.migrator.progress() }

    /// Progress values as the background migration goes on, starting with the current one. The sequence
    /// finishes when every type is migrated.
    public var migrationProgressUpdates: AsyncStream<[MigrationProgress]> { core.shared.migrator.updates() }

    /// Returns when every object type's online migration has finished; throws the error that stopped it
    /// (a full disk, for example: calling again tries again). Reads are correct before it returns; this only
    /// waits for the background rewrite.
    public func waitForMigrations() async throws { try await core.shared.migrator.wait() }

    /// Finishes every pending online migration now, on the calling thread (what `strata migrate` does).
    public func finishMigrations() throws { try core.shared.migrator.finishNow() }
}
