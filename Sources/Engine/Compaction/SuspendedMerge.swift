// Merges that survive a close: a close stops a background merge part way (a close never waits for one), and
// instead of dropping what it wrote, the merge is suspended: its output so far is synced, the segment
// writer's state (index, key filter, counts, the last key) goes to a state file, and the manifest lists the
// merge as pending. The next open resumes it from the key after the last one written. Without this, an app
// that lives in short sessions (open, write, close) never finishes a merge larger than a session's time, and
// its segments grow with every session.
//
// Nothing reads a pending merge's output until it is finished and installed, so a pending merge never
// matters to the data: one whose inputs changed meanwhile (another merge took them), or whose files are
// missing or damaged, is dropped and its files deleted, and the policy merges again from the start.

/// A merge a close stopped: which segments it merges, and the files holding its progress.
package struct PendingMerge: Equatable, Sendable {
    package var partition: UInt32
    /// The input segments' file numbers, newest first, as consecutive in the partition.
    package var inputs: [UInt64]
    /// Whether the inputs reach the oldest segment (the merge then drops deletions).
    package var reachesOldest: Bool
    /// The partial output segment, and the state file of its writer.
    package var output: UInt64
    package var state: UInt64

    package init(partition: UInt32, inputs: [UInt64], reachesOldest: Bool, output: UInt64, state: UInt64) {
        self.partition = partition
        self.inputs = inputs
        self.reachesOldest = reachesOldest
        self.output = output
        self.state = state
    }

    /// Whether `segments` (a partition's, newest first) still hold the inputs, consecutive, and at the end when
    /// the merge reaches the oldest segment.
    func applies(to segments: [UInt64]) -> Bool {
        guard let start = segments.firstIndex(of: inputs[0]), start + inputs.count <= segments.count,
            Array(segments[start..<(start + inputs.count)]) == inputs
        else { return false }
        return !reachesOldest || start + inputs.count == segments.count
    }
}

/// What a segment writer needs to go on writing a segment it suspended.
struct SuspendedSegment: Equatable {
    var partition: UInt32
    var committedBytes: Int
    var blockCount: Int
    var entryCount: Int
    var salt: UInt32
    var lastKey: [UInt8]
    var index: [UInt8]
    var filterWords: [UInt64]
    var filterProbes: UInt32

    static let magic: UInt64 = 0x4D53_4154_4152_5453  // "STRATASM"
    static let formatVersion: UInt32 = 1

    /// `magic · u32 version · u32 flags (bit 0: sealed) · payload (sealed with the database key when encrypted:
    /// it holds keys) · u64 checksum` (XXH3-64 of every byte before it).
    func encoded(fileNumber: UInt64, databaseID: UInt64, cipher: Cipher?) -> [UInt8] {
        var payload: [UInt8] = []
        payload.appendUInt32LE(partition)
        payload.appendUInt64LE(UInt64(committedBytes))
        payload.appendUInt64LE(UInt64(blockCount))
        payload.appendUInt64LE(UInt64(entryCount))
        payload.appendUInt32LE(salt)
        payload.appendUInt32LE(filterProbes)
        payload.appendUInt64LE(UInt64(lastKey.count))
        payload.append(contentsOf: lastKey)
        payload.appendUInt64LE(UInt64(index.count))
        payload.append(contentsOf: index)
        payload.appendUInt64LE(UInt64(filterWords.count))
        for w in filterWords { payload.appendUInt64LE(w) }
        var out: [UInt8] = []
        out.appendUInt64LE(Self.magic)
        out.appendUInt32LE(Self.formatVersion)
        out.appendUInt32LE(cipher == nil ? 0 : 1)
        if let cipher {
            out.append(contentsOf: payload.withUnsafeBytes { cipher.seal($0, at: .index(file: fileNumber, offset: 0), database: databaseID, authenticating: out) })
        } else {
            out.append(contentsOf: payload)
        }
        out.appendUInt64LE(Checksum.xxh3(out))
        return out
    }

    /// Reads a state file; every problem is a `.corrupted` (or `.decryptionFailed`) error naming the file.
    static func decode(_ bytes: UnsafeRawBufferPointer, fileNumber: UInt64, databaseID: UInt64, cipher: Cipher?, file: String) throws
        -> SuspendedSegment
    {
        do {
            guard bytes.count >= 24 else { throw StorageError.corrupted("a merge state file of \(bytes.count) bytes is too short", file: nil, offset: 0) }
            let body = UnsafeRawBufferPointer(rebasing: bytes[0..<(bytes.count - 8)])
            var tail = ByteReader(bytes, position: bytes.count - 8)
            guard try tail.readUInt64LE() == Checksum.xxh3(body) else {
                throw StorageError.corrupted("merge state checksum mismatch", file: nil, offset: bytes.count - 8)
            }
            var header = ByteReader(body)
            guard try header.readUInt64LE("magic") == magic else { throw StorageError.corrupted("not a merge state file", file: nil, offset: 0) }
            guard try header.readUInt32LE("format version") == formatVersion else {
                throw StorageError.corrupted("unknown merge state format", file: nil, offset: 8)
            }
            let sealed = try header.readUInt32LE("flags") & 1 != 0
            guard sealed == (cipher != nil) else {
                throw StorageError.corrupted("the merge state file's encryption does not match the database's", file: nil, offset: 12)
            }
            let rest = UnsafeRawBufferPointer(rebasing: body[16...])
            let payload: [UInt8]
            if let cipher {
                payload = try cipher.open(rest, at: .index(file: fileNumber, offset: 0), database: databaseID, authenticating: [UInt8](body[0..<16]))
            } else {
                payload = [UInt8](rest)
            }
            return try payload.withUnsafeBytes { p in
                var r = ByteReader(p)
                let partition = try r.readUInt32LE("partition")
                let committed = try r.readUInt64LE("committed bytes")
                let blocks = try r.readUInt64LE("block count")
                let entries = try r.readUInt64LE("entry count")
                let salt = try r.readUInt32LE("salt")
                let probes = try r.readUInt32LE("probe count")
                func bytes(_ what: String) throws -> [UInt8] {
                    let n = try r.readUInt64LE(what)
                    guard n <= UInt64(r.remaining) else { throw StorageError.corrupted("\(what) runs past the end", file: nil, offset: r.position) }
                    return [UInt8](try r.readBytes(count: Int(n), what))
                }
                let lastKey = try bytes("last key")
                let index = try bytes("index")
                let wordCount = try r.readUInt64LE("filter words")
                guard wordCount > 0, wordCount <= UInt64(r.remaining / 8) else {
                    throw StorageError.corrupted("filter of \(wordCount) words does not fit", file: nil, offset: r.position)
                }
                var words: [UInt64] = []
                words.reserveCapacity(Int(wordCount))
                for _ in 0..<wordCount { words.append(try r.readUInt64LE()) }
                guard r.isAtEnd, committed <= UInt64(Int.max), blocks <= committed, entries >= blocks else {
                    throw StorageError.corrupted("inconsistent merge state", file: nil, offset: r.position)
                }
                return SuspendedSegment(
                    partition: partition, committedBytes: Int(committed), blockCount: Int(blocks), entryCount: Int(entries), salt: salt,
                    lastKey: lastKey, index: index, filterWords: words, filterProbes: probes)
            }
        } catch let error as StorageError {
            throw error.located(file: file)
        }
    }
}

extension Database {
    /// Suspends the merge writing `output` (a close stopped it): syncs it, writes its state file and a manifest
    /// that lists it as pending. Returns false when there is nothing worth keeping: nothing written yet, or
    /// inputs that are no longer the partition's (another process installed a merge of them meanwhile), so that
    /// the caller removes the output.
    func suspendMerge(_ merge: PendingMerge, writer: SegmentWriter) throws -> Bool {
        guard writer.entryCount > 0 else { return false }
        guard let ps = currentVersion.partitions[merge.partition], merge.applies(to: ps.segments.map(\.fileNumber)) else { return false }
        let state = try writer.suspend()
        let stateFile = try fileSystem.createFile(atPath: path(.mergeState(merge.state)))
        do {
            try stateFile.append(state.encoded(fileNumber: merge.state, databaseID: databaseID, cipher: cipher))
            try stateFile.sync(.ordered)
            stateFile.close()
        } catch {
            stateFile.close()
            try? fileSystem.removeFile(atPath: path(.mergeState(merge.state)))
            throw error
        }
        let kept = try manifestState.withLock { ms -> Bool in
            var pending = ms.manifest.pendingMerges.filter { $0.output != merge.output }
            pending.append(merge)
            try writeManifest(
                for: currentVersion, lastFlushedSequence: ms.manifest.lastFlushedSequence, logNumber: ms.manifest.logNumber, state: &ms,
                pendingMerges: pending)
            return ms.manifest.pendingMerges.contains { $0.output == merge.output }
        }
        if !kept { try? fileSystem.removeFile(atPath: path(.mergeState(merge.state))) }  // try?: a state file no manifest names
        return kept
    }

    /// Goes on with the merges a close suspended, when their inputs are still there, holding the lock; drops the
    /// others. A close's share of merging (`advanceMergesAtClose`): with `budgetBytes`, each goes on for about
    /// that many bytes of input and is suspended again. (The background resumes them without the lock:
    /// `takePendingMerge`.) Returns the budget left.
    @discardableResult
    func resumePendingMerges(budgetBytes: Int? = nil) throws -> Int {
        var budget = budgetBytes ?? Int.max
        for merge in manifestState.withLock({ $0.manifest.pendingMerges }) where budget > 0 {
            guard let ps = currentVersion.partitions[merge.partition], merge.applies(to: ps.segments.map(\.fileNumber)),
                let state = loadSuspendedState(merge), state.partition == merge.partition
            else {
                try dropPendingMerge(merge)
                continue
            }
            let start = ps.segments.firstIndex { $0.fileNumber == merge.inputs[0] }!
            let window = start..<(start + merge.inputs.count)
            let entries = budgetBytes.map { _ in Self.entries(forBytes: budget, of: Array(ps.segments[window])) }
            budget -= budgetBytes == nil ? 0 : budget
            do {
                guard try compactPartition(merge.partition, window: window, stopWhenClosed: budgetBytes == nil, resuming: (merge, state), stopAfterEntries: entries)
                else {
                    try dropPendingMerge(merge)
                    continue
                }
            } catch let error as StorageError where error.code == .closed && budgetBytes != nil {
                // Suspended again at the end of the close's share.
            }
        }
        return budget
    }

    /// About how many entries of `inputs` make `bytes` bytes.
    static func entries(forBytes bytes: Int, of inputs: [SegmentReader]) -> Int {
        let totalBytes = max(1, inputs.reduce(0) { $0 + $1.fileBytes })
        let totalEntries = inputs.reduce(0) { $0 + $1.entryCount }
        return max(1, Int(Double(totalEntries) * min(1, Double(bytes) / Double(totalBytes))))
    }

    /// A close's share of the merging, after its flush and its small merges: about
    /// `Tuning.closeMergeShareBytes` of input, or four times what the session flushed when that is more, spent
    /// on the merges a close suspended and then on the one the policy asks for next, each suspended again where
    /// the share ends. However short its sessions, a database then keeps merging in step with what it is
    /// written (a background merge gets no time in a session that closes at once), and a close stays a bounded
    /// multiple of its flush.
    func advanceMergesAtClose(sessionFlushedBytes: Int) throws {
        guard let trigger = options.compactionSegmentTrigger, options.closeMergeShare else { return }
        var budget = max(Tuning.closeMergeShareBytes, 4 * sessionFlushedBytes)
        budget = try resumePendingMerges(budgetBytes: budget)
        for id in currentVersion.partitions.keys.sorted() where budget > 0 {
            guard let ps = currentVersion.partitions[id],
                let window = Self.compactionWindow(
                    sizes: ps.segments.map(\.fileBytes), entries: ps.segments.map(\.entryCount), minimumSegments: trigger),
                !manifestState.withLock({ $0.manifest.pendingMerges.contains { $0.partition == id } })
            else { continue }
            let inputs = Array(ps.segments[window])
            let entries = Self.entries(forBytes: budget, of: inputs)
            budget -= inputs.reduce(0) { $0 + $1.fileBytes }
            do {
                _ = try compactPartition(id, window: window, stopWhenClosed: false, stopAfterEntries: entries)
            } catch let error as StorageError where error.code == .closed {
                // Suspended at the end of the close's share.
            }
        }
    }

    /// The state of a pending merge's writer, when its files are whole; nil otherwise.
    func loadSuspendedState(_ merge: PendingMerge) -> SuspendedSegment? {
        do {
            let region = try fileSystem.map(atPath: path(.mergeState(merge.state)))
            let state = try region.withUnsafeBytes {
                try SuspendedSegment.decode($0, fileNumber: merge.state, databaseID: databaseID, cipher: cipher, file: path(.mergeState(merge.state)))
            }
            let output = try fileSystem.map(atPath: path(.segment(merge.output)))
            guard output.count >= state.committedBytes else { return nil }
            return state
        } catch {
            // Not an error of the database: a damaged or missing state only costs the merge its progress (the
            // caller drops it, and its inputs are merged again from the start); no data is read from it.
            return nil
        }
    }

    /// Forgets a pending merge: a manifest without it, then its files.
    func dropPendingMerge(_ merge: PendingMerge) throws {
        try manifestState.withLock { ms in
            guard ms.manifest.pendingMerges.contains(merge) else { return }
            try writeManifest(
                for: currentVersion, lastFlushedSequence: ms.manifest.lastFlushedSequence, logNumber: ms.manifest.logNumber, state: &ms,
                pendingMerges: ms.manifest.pendingMerges.filter { $0 != merge })
        }
    }
}
