import Engine
import Foundation

// Invariants:
// (1) Each batch is one write transaction: it reads the latest version under the engine's writer lock, so a
//     user's write is never overwritten with an older value, and a crash loses at most the batch, which
//     the next open does again (records already rewritten carry the current version and are skipped).
// (2) A type's pending entries leave the stored schema in the same commit as its last batch, after a pass
//     over every key; user writes since then were written at the current version.
// (3) Lock order: the engine's writer lock, then `SharedFile.storedSchema`, never the other way round.

/// How far the online migration of one object type has come.
public struct MigrationProgress: Sendable, Hashable, CustomStringConvertible {
    /// The object type's name.
    public let objectType: String
    /// Objects examined and, where their version needed it, rewritten at the current schema version.
    public let objectsMigrated: Int
    /// The type's objects when its migration started; nil until the migrator has counted them (a key scan
    /// in the background).
    public let objectsTotal: Int?
    /// Whether every object of the type is at the current schema version.
    public let isFinished: Bool

    /// Objects still to migrate, when known.
    public var objectsLeft: Int? {
        if isFinished { return 0 }
        return objectsTotal.map { max(0, $0 - objectsMigrated) }
    }

    public var description: String {
        if isFinished { return "\(objectType): done (\(objectsMigrated) objects)" }
        guard let total = objectsTotal else { return "\(objectType): counting" }
        return "\(objectType): \(objectsMigrated) of \(total)"
    }
}

/// Rewrites, in the background, the records of each object type that an online migration left behind.
final class BackgroundMigrator: @unchecked Sendable {
    weak var file: SharedFile?

    private struct TypeState {
        var total: Int?
        var done = 0
        /// Where the next batch starts (inclusive).
        var resumeKey: [UInt8]?
        var finished = false
        var order: Int
    }

    private struct State {
        var types: [String: TypeState] = [:]
        var nextOrder = 0
        /// Types a reader has touched, migrated first.
        var priority: [String] = []
        var running = false
        /// Tests stop the background thread to look at a half-done migration.
        var paused = false
        var error: (any Error)?
        var waiters: [CheckedContinuation<Void, any Error>] = []
        var streams: [UUID: AsyncStream<[MigrationProgress]>.Continuation] = [:]
    }

    private let state = Locked(State())
    private let stepLock = NSLock()
    private let queue = DispatchQueue(label: "strata.migrator", qos: .utility)
    /// A batch ends after this many records or bytes of records, whichever comes first: memory stays bounded
    /// by a batch, not by the number of objects.
    var batchRecords = 8_192
    var batchBytes = 4 << 20
    /// Once the memtable holds this many bytes after a batch, it is flushed before the next: the rewrite of a
    /// large type would otherwise fill the memtable to its own threshold (64 MB of records, more in memory).
    var flushBytes = 16 << 20

    /// Adds types with pending migrations (those already known keep their place) and starts the background work.
    func schedule(_ typeNames: [String], start: Bool) {
        state.withLock { s in
            for name in typeNames where s.types[name] == nil || s.types[name]?.finished == true {
                s.types[name] = TypeState(order: s.nextOrder)
                s.nextOrder += 1
            }
            s.error = nil
        }
        if start { self.start() }
    }

    /// A reader passed a record of `typeName` through transforms: that type goes next.
    func touched(_ typeName: String) {
        state.withLock { s in
            if s.types[typeName]?.finished == false, !s.priority.contains(typeName) { s.priority.append(typeName) }
        }
    }

    func start() {
        let go = state.withLock { s -> Bool in
            guard !s.running, !s.paused, s.error == nil, Self.nextType(s) != nil else { return false }
            s.running = true
            return true
        }
        if go { queue.async { self.loop() } }
    }

    /// Stops the background thread after its current batch (tests); `resume` or `finishNow` go on.
    func pause() { state.withLock { $0.paused = true } }

    func resume() {
        state.withLock { $0.paused = false }
        start()
    }

    private static func nextType(_ s: State) -> String? {
        if let p = s.priority.first(where: { s.types[$0]?.finished == false }) { return p }
        return s.types.filter { !$0.value.finished }.min { $0.value.order < $1.value.order }?.key
    }

    private func loop() {
        while true {
            let next = state.withLock { s -> String? in
                guard !s.paused, let t = Self.nextType(s) else {
                    s.running = false
                    return nil
                }
                return t
            }
            guard let typeName = next, let file else {
                publish()
                return
            }
            do {
                try step(file, typeName)
            } catch {
                StrataLog.error("\(error)")
                state.withLock { s in
                    s.error = error
                    s.running = false
                }
                publish()
                return
            }
            publish()
        }
    }

    /// Does every remaining batch on the calling thread.
    func finishNow() throws {
        guard let file else { return }
        state.withLock { $0.error = nil }
        while let typeName = state.withLock({ Self.nextType($0) }) {
            try step(file, typeName)
            publish()
        }
        publish()
    }

    /// Does one batch of one type. Returns whether the batch finished the type.
    @discardableResult
    func step(_ file: SharedFile, _ typeName: String) throws -> Bool {
        stepLock.lock()
        defer { stepLock.unlock() }
        guard var ts = state.withLock({ $0.types[typeName] }), !ts.finished else { return true }
        let tx = try file.database.beginWrite()
        do {
            // A type's online migration, its upgrade to record format 3, or both.
            let schema = file.storedSchema.withLock { $0 }
            let t = schema?.type(named: typeName)
            let hasPending = !(schema?.pending(for: typeName).isEmpty ?? true)
            let migration = hasPending ? file.migration(for: typeName) : nil
            let upgrade = t.map { $0.recordFormat != RecordLayout.storedFormat } ?? false
            guard let schema, let t, hasPending ? migration != nil : upgrade else {
                tx.abort()
                ts.finished = true
                state.withLock { $0.types[typeName] = ts }
                return true
            }
            if ts.total == nil {
                var n = 0
                try tx.snapshot.scan(t.partition) { _, _ in
                    n += 1
                    return true
                }
                ts.total = n
                state.withLock { $0.types[typeName] = ts }
            }
            // Rewritten records go straight into the transaction (an error below aborts it).
            var writer = migration?.recordWriter() ?? RecordWriter(t, defaults: [:])
            var examined = 0
            var bytes = 0
            var nextKey: [UInt8]? = nil
            let reporter = MigrationReporter()
            let layouts = RecordLayouts(partition: t.partition, in: schema)
            try Migration.$runningTransform.withValue(typeName) {
            try tx.snapshot.scan(t.partition, from: ts.resumeKey) { k, v in
                if examined >= batchRecords || bytes >= batchBytes {
                    nextKey = [UInt8](k)
                    return false
                }
                examined += 1
                bytes += v.count
                let version = try ObjectRecord.schemaVersion(v)
                guard let migration, migration.generation(for: version) != nil else {
                    // A record of an earlier release, in format 1 or 2: the same fields at the same version in format 3
                    // (one whose values do not fit the layout stays as it is; readers take both).
                    if upgrade, v.first != RecordLayout.format, let layout = layouts.layout(version) {
                        let record = try ObjectRecord.decodeAll(v, layouts: layouts)
                        let out = ObjectRecord.encode(schemaVersion: version, fields: record.fields.map { ($0.id, $0.value) }, layout: layout)
                        if out.first == RecordLayout.format { try out.withUnsafeBytes { try tx.putBytes(k, $0, in: t.partition) } }
                    }
                    return true
                }
                try migration.migrate(v, layouts: layouts, report: reporter) { state in
                    writer.encode(state, schemaVersion: migration.newVersion)
                    try writer.bytes.withUnsafeBytes { try tx.putBytes(k, $0, in: t.partition) }
                }
                return reporter.messages.isEmpty
            }
            }
            guard reporter.messages.isEmpty else {
                throw Realm.Error(
                    .fail,
                    "the online migration of '\(typeName)' in \(file.displayName) stopped; objects not yet migrated are "
                        + "read through the transforms: " + reporter.messages.joined(separator: "; "), fileURL: file.fileURL)
            }
            // A rewrite changes no value that readers see: observers have nothing to report for it.
            file.recordCommit(sequence: tx.snapshot.sequence + 1, ChangeSummary())
            if nextKey == nil {
                try file.storedSchema.withLock { stored in
                    guard var s = stored else { return }
                    s.pending = s.pending?.filter { $0.typeName != typeName }
                    if s.pending?.isEmpty == true { s.pending = nil }
                    // Every record was examined: those left in format 1 have values that do not fit their slots,
                    // fields their version's layout lacks, or a version the history does not record (files of
                    // releases before it was kept); they stay readable as they are.
                    if upgrade, let i = s.types.firstIndex(where: { $0.name == typeName && $0.partition == t.partition }) {
                        s.types[i].recordFormat = RecordLayout.storedFormat
                    }
                    try tx.put(StoredSchema.schemaKey, s.encoded(), in: StoredSchema.metadataPartition)
                    try tx.commit()
                    stored = s
                }
            } else {
                try tx.commit()
            }
            ts.done += examined
            ts.resumeKey = nextKey
            ts.finished = nextKey == nil
            state.withLock { $0.types[typeName] = ts }
        } catch {
            tx.abort()
            if let e = error as? StorageError { throw realmError(e, fileURL: file.fileURL) }
            throw error
        }
        do {
            if file.database.statistics().memtableBytes >= flushBytes { try file.database.flush() }
        } catch let e as StorageError {
            // The batch is committed; the failed flush is reported (a later batch, or the engine at its own
            // threshold, flushes again).
            throw realmError(e, fileURL: file.fileURL)
        }
        return ts.finished
    }

    // MARK: - Progress

    func progress() -> [MigrationProgress] {
        state.withLock { Self.progress($0) }
    }

    private static func progress(_ s: State) -> [MigrationProgress] {
        s.types.sorted { $0.value.order < $1.value.order }.map {
            MigrationProgress(objectType: $0.key, objectsMigrated: $0.value.done, objectsTotal: $0.value.total, isFinished: $0.value.finished)
        }
    }

    var isFinished: Bool { state.withLock { s in s.types.values.allSatisfy(\.finished) } }

    private func publish() {
        let (p, streams, waiters, error) = state.withLock { s -> ([MigrationProgress], [AsyncStream<[MigrationProgress]>.Continuation], [CheckedContinuation<Void, any Error>], (any Error)?) in
            let done = s.types.values.allSatisfy(\.finished)
            let w = done || s.error != nil ? s.waiters : []
            if !w.isEmpty { s.waiters = [] }
            let streams = Array(s.streams.values)
            if done { s.streams = [:] }
            return (Self.progress(s), streams, w, s.error)
        }
        let done = p.allSatisfy(\.isFinished)
        for c in streams {
            c.yield(p)
            if done { c.finish() }
        }
        for w in waiters {
            if let error, !done { w.resume(throwing: error) } else { w.resume() }
        }
    }

    /// Progress values as the migration goes on, starting with the current one; finishes when every type is done.
    func updates() -> AsyncStream<[MigrationProgress]> {
        AsyncStream { continuation in
            let id = UUID()
            let (current, done) = state.withLock { s -> ([MigrationProgress], Bool) in
                let done = s.types.values.allSatisfy(\.finished)
                if !done { s.streams[id] = continuation }
                return (Self.progress(s), done)
            }
            continuation.yield(current)
            if done { continuation.finish() }
            continuation.onTermination = { [weak self] _ in
                _ = self?.state.withLock { $0.streams.removeValue(forKey: id) }
            }
        }
    }

    /// Returns when every pending type is migrated; throws what stopped the migrator.
    func wait() async throws {
        // A new wait tries again after an error (a disk that was full may have room now).
        state.withLock { $0.error = nil }
        start()
        try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
            let outcome = state.withLock { s -> Result<Void, any Error>? in
                if s.types.values.allSatisfy(\.finished) { return .success(()) }
                if let e = s.error { return .failure(e) }
                s.waiters.append(c)
                return nil
            }
            if let outcome { c.resume(with: outcome) }
        }
    }
}
