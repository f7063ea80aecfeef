import Engine

extension Realm {
    /// The engine's counters for this Realm's file (the Bench's per-row waits and segment counts).
    package var engineStatistics: DatabaseStatistics { core.shared.database.statistics() }

    /// The most segments any one partition of the file has now.
    package var engineSegmentsPerPartition: Int {
        core.shared.database.partitionStatistics().values.map(\.segments).max() ?? 0
    }
}
