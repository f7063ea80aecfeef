// Salvage: everything of a damaged database that can still be read, and an account of what cannot.
//
// Unlike `open`, which refuses a database with any damage, salvage reads around it: a segment whose footer
// or index is damaged is lost whole, a block that fails its checksum is lost with its key range, a log is
// read up to its first damaged record. It reads the files only; nothing in the directory is written, locked
// or deleted. What it returns is the newest readable value of each key, as the manifest orders the sources
// (logs, then segments newest first). A key whose newest version sat in a lost block may come back with an
// older value from an older segment, or come back although it was deleted: each lost range is reported, so
// that a caller can say which keys to check.

/// What `Database.salvage` could not read.
package struct SalvageLoss: Sendable, CustomStringConvertible {
    package var file: String
    package var offset: Int?
    /// The partition the lost bytes belonged to, when known.
    package var partition: UInt32?
    /// The lost keys run from `firstKey` up to, not including, `endKey` (nil: to the end); both nil when
    /// everything of the file in `partition` (or in any partition, when that is nil too) is lost.
    package var firstKey: [UInt8]?
    package var endKey: [UInt8]?
    package var reason: String

    package var description: String {
        "\(file)\(offset.map { " at offset \($0)" } ?? ""): \(reason)"
    }
}

/// The result of `Database.salvage`.
package struct SalvageResult: Sendable {
    /// Per partition, the newest readable value of each key, in key order (deleted keys are left out).
    package var partitions: [UInt32: [(key: [UInt8], value: [UInt8])]] = [:]
    package var losses: [SalvageLoss] = []
    /// What the caller should know beyond the losses (how the sources were chosen).
    package var notes: [String] = []
}

extension Database {
    /// An error's text without the file it names (a loss names it already).
    static func reason(_ error: any Error) -> String {
        (error as? StorageError)?.message ?? "\(error)"
    }

    /// Reads every key and value of the database at `directory` that can still be read, around any damage.
    /// Holds the whole database in memory. Throws only when the directory cannot be listed, or when
    /// `encryptionKey` is not a key's length. An encrypted database needs its key (what does not open with it is
    /// reported lost).
    package static func salvage(
        at directory: String, fileSystem fs: any FileSystem = PosixFileSystem(), encryptionKey: [UInt8]? = nil
    ) throws -> SalvageResult {
        var cipher: Cipher? = nil
        if let encryptionKey {
            guard let c = Cipher(key: encryptionKey) else {
                throw StorageError(.invalidArgument, "an encryption key must be \(Cipher.keyBytes) bytes long, this one is \(encryptionKey.count)")
            }
            cipher = c
        }
        var result = SalvageResult()
        func path(_ n: FileName) -> String { directory + "/" + n.name }
        let names = try fs.listDirectory(atPath: directory).compactMap { FileName(parsing: $0) }

        // The manifest says which segments are live and in which order; without it, every segment file is
        // read, newest file first.
        var manifest: Manifest? = nil
        do {
            let current = try fs.map(atPath: path(.current))
            let text = current.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
            guard text.hasSuffix("\n"), case .manifest(let n)? = FileName(parsing: String(text.dropLast())) else {
                throw StorageError.corrupted("CURRENT does not name a manifest", file: FileName.current.name, offset: 0)
            }
            let name = FileName.manifest(n).name
            let bytes = try fs.map(atPath: path(.manifest(n)))
            manifest = try bytes.withUnsafeBytes { try Manifest.decode($0, file: name, cipher: cipher) }
        } catch {
            result.notes.append(
                "the manifest could not be read (\(error)); every segment file was read, newest first, so values deleted or "
                    + "overwritten since an older segment was written may come back")
        }
        var segmentsByPartition: [UInt32: [UInt64]] = [:]
        var unassigned: [UInt64] = []
        if let manifest {
            segmentsByPartition = manifest.partitions.mapValues { $0.map(\.fileNumber) }
        } else {
            unassigned = names.compactMap { if case .segment(let n) = $0 { n } else { nil } }.sorted(by: >)
        }

        // Newest first: the first source to give a key decides it (a nil value: deleted).
        var decided: [UInt32: [[UInt8]: [UInt8]?]] = [:]
        // Partitions a log record dropped: segments say nothing more about them.
        var droppedByLog = Set<UInt32>()

        // The logs: commits after the last flush, applied in order (a later one wins).
        let firstLog = manifest?.logNumber ?? 0
        let logs = names.compactMap { if case .log(let n) = $0, n >= firstLog { n } else { nil } }.sorted()
        var logged: [UInt32: [[UInt8]: [UInt8]?]] = [:]
        var sequence = manifest?.lastFlushedSequence ?? 0
        // An encrypted record's place includes the database's identity: the manifest's, or without one, the one
        // the segments' headers carry.
        var identity = manifest?.databaseID ?? 0
        if identity == 0, cipher != nil {
            for case .segment(let n) in names.sorted(by: { $0.name > $1.name }) {
                guard let region = try? fs.map(atPath: path(.segment(n))), region.count >= SegmentFormat.headerBytes else { continue }  // try?: salvage reads around damage; an unreadable segment is reported below
                let id = UInt64(littleEndian: region.unsafeBytes.loadUnaligned(fromByteOffset: 24, as: UInt64.self))
                if id != 0 {
                    identity = id
                    break
                }
            }
        }
        for number in logs {
            let name = FileName.log(number).name
            let region: MappedRegion
            do {
                region = try fs.map(atPath: path(.log(number)))
            } catch {
                result.losses.append(SalvageLoss(file: name, reason: "the log could not be read (\(error)); its commits are lost"))
                continue
            }
            if let expected = manifest?.databaseID, expected != 0, let id = region.withUnsafeBytes({ LogRecord.databaseID(ofLog: $0) }),
                id != 0, id != UInt32(truncatingIfNeeded: expected)
            {
                result.losses.append(SalvageLoss(file: name, reason: "the log belongs to another database; it was not read"))
                continue
            }
            let scan = region.withUnsafeBytes { LogRecord.scan($0) }
            for record in scan.records where record.sequence > sequence {
                guard let plain = try? LogRecord.plain(record, cipher: cipher, log: number, database: identity),  // try?: salvage reads around damage; reported below
                    let ops = try? WriteBatch.decode(record: plain)  // try?: likewise
                else {
                    result.losses.append(SalvageLoss(file: name, offset: record.offset, reason: "commit \(record.sequence) does not decode; it is lost"))
                    continue
                }
                sequence = record.sequence
                for (id, pb) in ops {
                    if pb.drop {
                        logged[id] = [:]
                        droppedByLog.insert(id)
                    }
                    let bytes = plain.unsafeBytes
                    for slot in pb.slots {
                        let key = [UInt8](UnsafeRawBufferPointer(rebasing: bytes[slot.keyOffset..<(slot.keyOffset + Int(slot.keyCount))]))
                        logged[id, default: [:]][key] = slot.isTombstone
                            ? .some(nil)
                            : .some([UInt8](UnsafeRawBufferPointer(rebasing: bytes[slot.valueOffset..<(slot.valueOffset + Int(slot.valueCount))])))
                    }
                }
            }
            withExtendedLifetime(scan) {}
            if let damage = scan.damage {
                let torn = scan.validRecordAfterDamage == nil
                result.losses.append(SalvageLoss(
                    file: name, offset: scan.validBytes,
                    reason: torn
                        ? "the log ends in a torn record (\(damage.message)): a commit that a crash interrupted, or damage; what follows is lost"
                        : "the log is damaged (\(damage.message)); the commits after this offset are lost"))
            }
        }
        decided = logged

        // Segments, newest first per partition.
        func read(_ number: UInt64, partition expected: UInt32?) {
            let name = FileName.segment(number).name
            let segment: SegmentReader
            do {
                segment = try SegmentReader(
                    region: try fs.map(atPath: path(.segment(number))), fileNumber: number, expectedPartition: expected,
                    databaseID: manifest?.databaseID ?? 0, cipher: cipher)
            } catch {
                result.losses.append(SalvageLoss(
                    file: name, partition: expected, reason: "the segment cannot be read (\(Self.reason(error))); all its records are lost"))
                return
            }
            let id = segment.partition
            if droppedByLog.contains(id) { return }
            var entries = decided[id] ?? [:]
            let unreadable = segment.salvageEntries { k, v in
                let key = [UInt8](k)
                if entries[key] == nil { entries[key] = .some(v.map { [UInt8]($0) }) }
            }
            decided[id] = entries
            for u in unreadable {
                result.losses.append(SalvageLoss(
                    file: name, offset: u.offset, partition: id, firstKey: u.firstKey, endKey: u.endKey,
                    reason: u.offset == nil
                        ? "the segment's index is damaged (\(Self.reason(u.error))); all its records are lost"
                        : "\(Self.reason(u.error)) (the keys of this block are lost)"))
            }
        }
        for (id, numbers) in segmentsByPartition.sorted(by: { $0.key < $1.key }) {
            for n in numbers { read(n, partition: id) }
        }
        for n in unassigned { read(n, partition: nil) }

        for (id, entries) in decided {
            let live = entries.compactMap { k, v in v.map { (key: k, value: $0) } }
            if live.isEmpty { continue }
            result.partitions[id] = live.sorted { $0.key.lexicographicallyPrecedes($1.key) }
        }
        return result
    }
}
