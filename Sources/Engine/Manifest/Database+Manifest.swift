// Writing and installing manifests, and removing the logs a manifest no longer needs: the commit point of
// every flush, compaction and spilled transaction.

extension Database {
    // MARK: Manifest

    /// Writes a manifest describing `version`'s segments, switches CURRENT to it, and deletes the segments and
    /// manifest it no longer names. Pending merges (`pendingMerges`, or the current manifest's) are kept while
    /// their inputs are there; the files of the others are deleted, except the output of `taken` (a pending merge
    /// this instance takes out of the list to build on: `takePendingMerge`).
    func writeManifest(
        for version: Version, lastFlushedSequence: UInt64, logNumber: UInt64, state ms: inout ManifestState, pendingMerges: [PendingMerge]? = nil,
        keepingOutputOf taken: PendingMerge? = nil
    ) throws {
        var partitions: [UInt32: [SegmentInfo]] = [:]
        for (id, ps) in version.partitions where !ps.segments.isEmpty {
            partitions[id] = ps.segments.map(\.info)
        }
        let number = allocateFileNumber()
        var manifest = Manifest(
            nextFileNumber: nextFileNumber, lastFlushedSequence: lastFlushedSequence, logNumber: logNumber,
            newestLogNumber: max(logNumber, ms.manifest.newestLogNumber), partitions: partitions, databaseID: databaseID)
        manifest.pendingMerges = (pendingMerges ?? ms.manifest.pendingMerges).filter { m in
            partitions[m.partition].map { m.applies(to: $0.map(\.fileNumber)) } ?? false
        }
        try installManifest(manifest, number: number)
        let old = ms.manifest
        let oldNumber = ms.manifestNumber
        ms.manifest = manifest
        ms.manifestNumber = number
        // The new manifest is durable: what only the old one named can go (snapshots keep their mappings).
        let live = Set(partitions.values.flatMap { $0.map(\.fileNumber) })
        for n in old.partitions.values.flatMap({ $0.map(\.fileNumber) }) where !live.contains(n) {
            try? fileSystem.removeFile(atPath: path(.segment(n)))
        }
        try? fileSystem.removeFile(atPath: path(.manifest(oldNumber)))
        // try?: a pending merge's files that could not be removed now are orphans, removed at the next open.
        // (The output of a finished one is now a live segment.)
        for m in old.pendingMerges where !manifest.pendingMerges.contains(where: { $0.output == m.output }) {
            if !live.contains(m.output), m.output != taken?.output { try? fileSystem.removeFile(atPath: path(.segment(m.output))) }
            try? fileSystem.removeFile(atPath: path(.mergeState(m.state)))
        }
        for m in old.pendingMerges {
            if let kept = manifest.pendingMerges.first(where: { $0.output == m.output }), kept.state != m.state {
                try? fileSystem.removeFile(atPath: path(.mergeState(m.state)))
            }
        }
    }

    /// Writes `MANIFEST-number`, syncs it, and makes it current with an atomic rename of `CURRENT`.
    func installManifest(_ manifest: Manifest, number: UInt64) throws {
        try Self.installManifest(manifest, number: number, fileSystem: fileSystem, directory: directory, cipher: cipher)
    }

    static func installManifest(_ manifest: Manifest, number: UInt64, fileSystem: any FileSystem, directory: String, cipher: Cipher?) throws {
        func path(_ n: FileName) -> String { directory + "/" + n.name }
        let file = try fileSystem.createFile(atPath: path(.manifest(number)))
        try file.append(manifest.encoded(cipher: cipher))
        // Sync points 7-10 (Recovery.md, "Sync points"): the manifest only needs to reach the disk before the
        // rename does; CURRENT.tmp's durable sync makes sure of it (and of the manifest, on drives that ignore
        // barriers); the rename must be durable before anything it replaced is deleted.
        try file.sync(.ordered)
        file.close()
        try fileSystem.syncDirectory(atPath: directory, .ordered)
        let tmp = try fileSystem.createFile(atPath: path(.currentTemporary))
        try tmp.append(Array((FileName.manifest(number).name + "\n").utf8))
        try tmp.sync(.durable)
        tmp.close()
        try fileSystem.rename(from: path(.currentTemporary), to: path(.current))
        try fileSystem.syncDirectory(atPath: directory, .durable)
    }

    /// Deletes log files numbered below `logNumber` (their commits are in segments named by a durable manifest).
    func removeLogs(before logNumber: UInt64) throws {
        for name in try fileSystem.listDirectory(atPath: directory) {
            if case .log(let n)? = FileName(parsing: name), n < logNumber {
                try? fileSystem.removeFile(atPath: path(.log(n)))
            }
        }
    }
}
