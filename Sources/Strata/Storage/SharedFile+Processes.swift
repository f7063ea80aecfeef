import Dispatch
import Engine
import Foundation

// Other processes on a shared file (`Realm.Configuration.processSharing`, the engine's `Database+Sharing.swift`).
//
// - Their commits reach this process when the engine catches up: at every write (under the writer lock), at
//   every refresh, and from a poll of the files every `pollInterval` while some instance here has an observer.
// - The engine hands over the keys each of their commits wrote; they become this file's commit log entries, so
//   observers here get the change sets they would get for a commit made here. A commit flushed to segments before
//   this process read it from the log has no entry: observers re-evaluate ("unknown changes"), never miss it.
// - A schema another process wrote (a type or property it added) replaces the stored schema here, at the next
//   write or refresh with no write open in this process.

extension SharedFile {
    /// How often a shared file is checked for other processes' commits while it has observers and no watch of
    /// its directory (Apple platforms, or a watch that could not be set up).
    static let pollInterval: DispatchTimeInterval = .milliseconds(50)
    /// How often it is checked beside a watch: a fallback only, for an event the watch could miss.
    static let watchedPollInterval: DispatchTimeInterval = .seconds(1)
    /// Test hook: the poll beside a watch, by database directory, so that a test can tell the watch's deliveries
    /// from the poll's.
    static let watchedPollIntervalsForTesting = Locked<[String: DispatchTimeInterval]>([:])

    /// Starts watching a shared file for other processes' commits when nothing watches it yet (nothing for an
    /// exclusive one): called as an observer is added. A watch of the directory (`DirectoryWatch`: inotify on
    /// Linux) wakes it as another process writes; a poll runs beside it, every `watchedPollInterval`, or every
    /// `pollInterval` where there is no watch. Both hold the file weakly and stop once no instance observes (no
    /// wake-ups while nothing listens).
    func watchOtherProcesses() {
        guard database.isShared else { return }
        watcher.withLock { current in
            guard current == nil else { return }
            let path = database.directory
            // One serial queue for the watch and the poll, for the file's life: other processes' commits are
            // taken and recorded by one of them at a time, as the poll alone did.
            let queue = otherProcessesQueue
            let watch = fileURL == nil ? nil : DirectoryWatch.start(path: path, queue: queue) { [weak self] in self?.pollOtherProcesses() }
            let interval = watch == nil ? Self.pollInterval : Self.watchedPollIntervalsForTesting.withLock { $0[path] } ?? Self.watchedPollInterval
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(10))
            timer.setEventHandler { [weak self] in self?.pollOtherProcesses() }
            timer.resume()
            current = (timer, watch)
        }
    }

    func stopWatchingOtherProcesses() {
        watcher.withLock { current in
            current?.timer.cancel()
            current?.watch?.cancel()
            current = nil
        }
    }

    private func pollOtherProcesses() {
        guard isObserved() else {
            stopWatchingOtherProcesses()
            // An observer added meanwhile found the timer still there: start again for it.
            if isObserved() { watchOtherProcesses() }
            return
        }
        let changed: Bool
        do {
            changed = try database.refresh()
        } catch {
            // The instances find the error themselves at their next refresh or write, which throws it; the
            // poll only wakes them.
            changed = true
        }
        guard changed else { return }
        absorbOtherCommits()
        let all = coresOpen()
        for core in all { core.otherInstanceCommitted() }
    }

    /// Records the commits of other processes the engine replayed since the last call, as commit log entries.
    func absorbOtherCommits() {
        let commits = database.takeOtherCommits()
        guard !commits.isEmpty else { return }
        var schemaChanged = false
        for commit in commits {
            if commit.isUnknown {
                // Flushed before this process read them: any of them may have changed the schema.
                schemaChanged = true
                recordCommit(sequence: commit.sequence, .unknown)
                continue
            }
            var summary = ChangeSummary()
            summary.everything = !commit.dropped.isEmpty
            var count = 0
            for (partition, keys) in commit.keys {
                if partition == StoredSchema.metadataPartition {
                    if keys.contains(StoredSchema.schemaKey) {
                        schemaChanged = true
                        summary.everything = true
                    }
                    continue
                }
                count += keys.count
                var decoded = Set<Int64>()
                for key in keys {
                    if let k = key.withUnsafeBytes({ ObjectKey.decode($0) }) { decoded.insert(k) }
                }
                summary.keys[partition, default: []].formUnion(decoded)
            }
            if count > RealmCore.largeCommit { summary = .unknown }
            recordCommit(sequence: commit.sequence, summary)
        }
        if schemaChanged { schemaIsStale.withLock { $0 = true } }
    }

    /// Replaces the stored schema with the one `snapshot` holds when another process changed it. Called where no
    /// write of this process is open (a write's own schema changes live in `storedSchema` until it commits).
    func reloadSchemaIfStale(from snapshot: Snapshot) throws {
        guard schemaIsStale.withLock({ $0 }) else { return }
        guard let bytes = try snapshot.get(StoredSchema.schemaKey, in: StoredSchema.metadataPartition) else { return }
        let schema = try StoredSchema.decode(bytes, file: displayName)
        storedSchema.withLock { $0 = schema }
        schemaIsStale.withLock { $0 = false }
    }

    /// Whether another process has the file open: what `deleteFiles` refuses.
    static func isOpenInAnotherProcess(_ path: String) -> Bool {
        !Database.liveSessions(in: path).isEmpty
    }

    /// `performMigration` beside another process: finishing the online work of the version the file is at is
    /// safe (each batch is a write transaction), raising the version is not, since that process reads the file
    /// with its older model. Realm refuses to migrate a Realm that is open; this is the same rule across processes.
    static func refuseMigrationBesideOtherProcesses(_ config: Realm.Configuration) throws {
        guard let url = config.fileURL, config.inMemoryIdentifier == nil,
            [url.path, RealmFileImport.convertedPath(for: url.path)].contains(where: isOpenInAnotherProcess),
            // try?: a file whose version cannot be read here is opened below, which reports why.
            let stored = try? storedSchemaVersion(at: url, encryptionKey: config.encryptionKey),
            stored < config.schemaVersion
        else { return }
        throw Realm.Error(
            .alreadyOpen,
            "Cannot migrate \(url.lastPathComponent) from schema version \(stored) to \(config.schemaVersion): another process has it open "
                + "with the older model",
            fileURL: url,
            suggestion: "Close the Realm in the other process (an app extension or widget) first, or let the next open migrate it.")
    }
}
