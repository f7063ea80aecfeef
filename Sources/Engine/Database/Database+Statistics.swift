/// Counters that make the engine's costs visible.
package struct DatabaseStatistics: Sendable, CustomStringConvertible {
    package var sequence: UInt64
    package var liveSnapshots: Int
    /// The sequence number of the oldest live snapshot, if any.
    package var oldestSnapshotSequence: UInt64?
    /// Segment bytes kept on disk (or mapped) only because a live snapshot still reads them.
    package var pinnedSegmentBytes: Int
    /// Memtable bytes kept in memory only because a live snapshot still reads them.
    package var pinnedMemtableBytes: Int
    package var memtableBytes: Int
    package var segmentCount: Int
    package var segmentBytes: Int
    package var partitionCount: Int
    package var flushes: Int
    /// Background flushes of a shared database built but not installed: another flush of the same commits (of
    /// this instance below a spill, or of another process) was installed first.
    package var flushesDiscarded: Int = 0
    package var compactions: Int
    /// The last failure of a background flush or compaction (the data is safe in the log; it is retried).
    package var backgroundError: StorageError?
    /// Seconds write transactions waited, since the open: to begin (the writer gate, held by another write or,
    /// in a shared database, by a flush or merge; then LOCK.writer, held by another process), and inside the
    /// write for the maintenance queue (a large transaction's flushes and install, queued behind a merge).
    package var writerWaitSeconds: Double = 0
    package var maintenanceWaitSeconds: Double = 0

    package var description: String {
        "sequence \(sequence), \(partitionCount) partitions, \(segmentCount) segments (\(segmentBytes) bytes), "
            + "memtable \(memtableBytes) bytes, \(liveSnapshots) live snapshots pinning \(pinnedSegmentBytes) segment "
            + "and \(pinnedMemtableBytes) memtable bytes, \(flushes) flushes, \(compactions) compactions"
    }
}

extension Database {
    package func statistics() -> DatabaseStatistics {
        let (current, backgroundError) = published.withLock { ($0.version, $0.backgroundError) }
        let (flushes, flushesDiscarded, compactions) = manifestState.withLock { ($0.flushes, $0.flushesDiscarded, $0.compactions) }
        let snapshots = registry.versions
        var liveSegments = Set<ObjectIdentifier>()
        var liveRuns = Set<ObjectIdentifier>()
        var segmentBytes = 0, segmentCount = 0, memtable = 0
        for ps in current.partitions.values {
            for s in ps.segments {
                liveSegments.insert(ObjectIdentifier(s))
                segmentBytes += s.fileBytes
                segmentCount += 1
            }
            for r in ps.active + ps.frozen {
                liveRuns.insert(ObjectIdentifier(r))
                memtable += r.byteCount
            }
        }
        var pinnedSegments: [ObjectIdentifier: Int] = [:]
        var pinnedRuns: [ObjectIdentifier: Int] = [:]
        for v in snapshots {
            for ps in v.partitions.values {
                for s in ps.segments where !liveSegments.contains(ObjectIdentifier(s)) {
                    pinnedSegments[ObjectIdentifier(s)] = s.fileBytes
                }
                for r in ps.active + ps.frozen where !liveRuns.contains(ObjectIdentifier(r)) {
                    pinnedRuns[ObjectIdentifier(r)] = r.byteCount
                }
            }
        }
        return DatabaseStatistics(
            sequence: current.sequence, liveSnapshots: snapshots.count, oldestSnapshotSequence: snapshots.map(\.sequence).min(),
            pinnedSegmentBytes: pinnedSegments.values.reduce(0, +), pinnedMemtableBytes: pinnedRuns.values.reduce(0, +),
            memtableBytes: memtable, segmentCount: segmentCount, segmentBytes: segmentBytes, partitionCount: current.partitions.count,
            flushes: flushes, flushesDiscarded: flushesDiscarded, compactions: compactions, backgroundError: backgroundError,
            writerWaitSeconds: Double(writerWaitNanoseconds.load(ordering: .relaxed)) / 1e9,
            maintenanceWaitSeconds: Double(maintenanceWaitNanoseconds.load(ordering: .relaxed)) / 1e9)
    }

    /// Per partition: its live segments, their bytes on disk and their entries (every version of a key and
    /// every deletion a segment holds counts), and the memtable bytes not yet flushed.
    package func partitionStatistics() -> [UInt32: (segments: Int, segmentBytes: Int, segmentEntries: Int, memtableBytes: Int)] {
        var out: [UInt32: (segments: Int, segmentBytes: Int, segmentEntries: Int, memtableBytes: Int)] = [:]
        for (id, ps) in currentVersion.partitions {
            out[id] = (
                ps.segments.count, ps.segments.reduce(0) { $0 + $1.fileBytes }, ps.segments.reduce(0) { $0 + $1.entryCount },
                (ps.active + ps.frozen).reduce(0) { $0 + $1.byteCount }
            )
        }
        return out
    }

    /// The bytes of the write-ahead log files in the directory.
    package func logBytes() -> Int {
        let names = (try? fileSystem.listDirectory(atPath: directory)) ?? []
        var total = 0
        for n in names {
            guard case .log? = FileName(parsing: n) else { continue }
            total += (try? fileSystem.map(atPath: directory + "/" + n).count) ?? 0
        }
        return total
    }

    /// Reads every block of every live segment and checks the manifest on disk against the live state.
    /// Returns one line per problem, each naming the file (empty when all is well).
    package func checkConsistency() -> [String] {
        var problems: [String] = []
        let current = currentVersion
        let (manifest, manifestNumber) = manifestState.withLock { ($0.manifest, $0.manifestNumber) }
        for (id, ps) in current.partitions.sorted(by: { $0.key < $1.key }) {
            for s in ps.segments {
                if s.partition != id { problems.append("\(s.name): belongs to partition \(s.partition), listed under \(id)") }
                problems += s.verify()
            }
        }
        // The durable manifest may lag the live state (a drop not yet flushed), but every file it names must exist.
        var missing: [String] = []
        for (id, infos) in manifest.partitions {
            for info in infos where !fileSystem.fileExists(atPath: path(.segment(info.fileNumber))) {
                missing.append("MANIFEST: partition \(id) lists \(FileName.segment(info.fileNumber).name), which is missing")
            }
        }
        // In a shared database another instance may have replaced the manifest and removed what only the old one
        // named: files go only after CURRENT moved, so a file missing while CURRENT still names this manifest
        // (checked after looking) is a real problem.
        if !missing.isEmpty, isShared,
            (try? fileSystem.read(atPath: path(.current), from: 0)) != Array((FileName.manifest(manifestNumber).name + "\n").utf8)
        {
            missing = []
        }
        return problems + missing
    }
}

extension Database {
    /// The merges a close suspended and the next open resumes (`SuspendedMerge.swift`).
    package var pendingMerges: [PendingMerge] { manifestState.withLock { $0.manifest.pendingMerges } }
}
