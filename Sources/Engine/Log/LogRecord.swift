/// The byte layout of the write-ahead log.
///
/// A log file starts with a 16-byte header: `magic "STRATAWL"` (u64) · `u32 formatVersion` · `u32 flags`.
/// Then records, each a 24-byte header · payload:
/// `u32 payloadCount` · `u32 flags` · `u64 sequence` · `u64 checksum` (XXH3-64 of the payload, seeded with
/// the sequence and the length, so a header cannot be paired with another record's payload).
package enum LogRecord {
    static let fileMagic: UInt64 = 0x4C57_4154_4152_5453  // "STRATAWL"
    static let formatVersion: UInt32 = 1
    package static let fileHeaderBytes = 16
    package static let headerBytes = 24

    package static func seed(sequence: UInt64, payloadCount: Int) -> UInt64 {
        sequence ^ (UInt64(payloadCount) &* 0x9E37_79B9_7F4A_7C15)
    }

    /// The file header: magic, format version, and the low 32 bits of the database's identity (0 in logs
    /// written before identities; the field was reserved).
    static func fileHeader(databaseID: UInt64) -> [UInt8] {
        var out: [UInt8] = []
        out.appendUInt64LE(fileMagic)
        out.appendUInt32LE(formatVersion)
        out.appendUInt32LE(UInt32(truncatingIfNeeded: databaseID))
        return out
    }

    /// The identity field of a log file's header (nil when the file is too short to have one).
    static func databaseID(ofLog bytes: UnsafeRawBufferPointer) -> UInt32? {
        guard bytes.count >= fileHeaderBytes else { return nil }
        var r = ByteReader(bytes, position: 12)
        return try? r.readUInt32LE()  // try?: the length was checked above
    }

    /// Fills in the header of `batch`'s buffer for `sequence`.
    static func seal(_ batch: WriteBatch, sequence: UInt64) {
        let buffer = batch.buffer
        let payloadCount = buffer.count - headerBytes
        let checksum = buffer.withUnsafeBytes { all in
            Checksum.xxh3(UnsafeRawBufferPointer(rebasing: all[headerBytes...]), seed: seed(sequence: sequence, payloadCount: payloadCount))
        }
        buffer.setUInt32LE(UInt32(payloadCount), at: 0)
        buffer.setUInt32LE(0, at: 4)
        buffer.setUInt64LE(sequence, at: 8)
        buffer.setUInt64LE(checksum, at: 16)
    }

    /// Record flag bit 0: the payload is sealed (`nonce · ciphertext · tag`, `Cipher`); the checksum covers the
    /// sealed bytes, so a torn tail is found as in a plain log.
    static let flagEncrypted: UInt32 = 1

    /// A sealed copy of a plain record (header and payload) for log `log`: what an encrypted database appends.
    static func encrypted(_ record: UnsafeRawBufferPointer, cipher: Cipher, log: UInt64, database: UInt64) -> [UInt8] {
        // The caller's record is one `seal(_:sequence:)` filled in: its header is there.
        let sequence = UInt64(littleEndian: record.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        let sealed = cipher.seal(
            UnsafeRawBufferPointer(rebasing: record[headerBytes...]), at: .logRecord(file: log, sequence: sequence), database: database)
        var out: [UInt8] = []
        out.reserveCapacity(headerBytes + sealed.count)
        out.appendUInt32LE(UInt32(sealed.count))
        out.appendUInt32LE(flagEncrypted)
        out.appendUInt64LE(sequence)
        out.appendUInt64LE(Checksum.xxh3(sealed, seed: seed(sequence: sequence, payloadCount: sealed.count)))
        out.append(contentsOf: sealed)
        return out
    }

    /// A record read from log `log` as a plain record (header and payload), opened with `cipher` when sealed.
    /// A sealed record without a cipher, or a plain one with a cipher, is `.decryptionFailed`: a database is
    /// encrypted whole or not at all.
    static func plain(_ decoded: Decoded, cipher: Cipher?, log: UInt64, database: UInt64) throws -> MappedRegion {
        let bytes = decoded.record.unsafeBytes
        var h = ByteReader(bytes, position: 4)
        let flags = try h.readUInt32LE("record flags")
        let sealed = flags & flagEncrypted != 0
        switch (sealed, cipher) {
        case (false, nil):
            return decoded.record
        case (true, let cipher?):
            let plain = try cipher.open(
                UnsafeRawBufferPointer(rebasing: bytes[headerBytes...]), at: .logRecord(file: log, sequence: decoded.sequence), database: database)
            var out = [UInt8](UnsafeRawBufferPointer(rebasing: bytes[0..<headerBytes]))
            out.append(contentsOf: plain)
            return out.withUnsafeBytes { MappedRegion(copying: $0) }
        case (true, nil):
            throw StorageError(.decryptionFailed, "the log record is encrypted and no encryption key was given", file: nil, offset: 4)
        case (false, _?):
            throw StorageError(
                .decryptionFailed, "the log record is not encrypted in an encrypted database: the log was replaced or forged", file: nil, offset: 4)
        }
    }

    package struct Decoded {
        package var sequence: UInt64
        /// Header and payload, copied out of the file.
        package var record: MappedRegion
        package var offset: Int
    }

    package struct Scan {
        package var records: [Decoded] = []
        /// Bytes of the file up to the end of the last whole record.
        package var validBytes: Int = 0
        /// Why reading stopped before the end of the file, if it did.
        var damage: StorageError? = nil
        /// The offset of a whole, valid record found after the damage: the damage is not a torn tail.
        var validRecordAfterDamage: Int? = nil
    }

    /// Reads the records of one log file, stopping at the first one that is torn or fails its checksum.
    /// With `fileOffset`, `bytes` are the file from that offset on (where a record starts; the file header is
    /// before it), and every offset in the result is the file's.
    package static func scan(_ bytes: UnsafeRawBufferPointer, fileOffset: Int = 0) -> Scan {
        var scan = Scan()
        var r = ByteReader(bytes)
        scan.validBytes = fileOffset
        do {
            if bytes.count == 0 { return scan }
            if fileOffset == 0 {
                let magic = try r.readUInt64LE("log file magic")
                guard magic == fileMagic else {
                    throw StorageError.corrupted("not a Strata log file (bad magic number)", file: nil, offset: 0)
                }
                let version = try r.readUInt32LE("log format version")
                guard version <= formatVersion else {
                    throw StorageError(.formatTooNew, "log format version \(version) is newer than this build's \(formatVersion)", file: nil, offset: 8)
                }
                _ = try r.readUInt32LE("log flags")
                scan.validBytes = r.position
            }
            while !r.isAtEnd {
                let start = r.position
                let payloadCount = Int(try r.readUInt32LE("record length"))
                _ = try r.readUInt32LE("record flags")
                let sequence = try r.readUInt64LE("record sequence")
                let stored = try r.readUInt64LE("record checksum")
                // (A sealed payload is `Cipher.overhead` longer than the largest plain one.)
                guard payloadCount <= Limits.maxTransactionBytes + Cipher.overhead else {
                    throw StorageError.corrupted(
                        "record length \(payloadCount) exceeds the transaction limit \(Limits.maxTransactionBytes)",
                        file: nil, offset: start)
                }
                let payload = try r.readBytes(count: payloadCount, "record payload")
                let computed = Checksum.xxh3(payload, seed: seed(sequence: sequence, payloadCount: payloadCount))
                guard computed == stored else {
                    throw StorageError.corrupted(
                        "record checksum mismatch (stored 0x\(String(stored, radix: 16)), computed 0x\(String(computed, radix: 16)))",
                        file: nil, offset: start)
                }
                let whole = UnsafeRawBufferPointer(rebasing: bytes[start..<r.position])
                scan.records.append(Decoded(sequence: sequence, record: MappedRegion(copying: whole), offset: fileOffset + start))
                scan.validBytes = fileOffset + r.position
            }
        } catch let error as StorageError {
            var e = error
            e.offset = fileOffset + (e.offset ?? r.position)
            scan.damage = e
        } catch {
            scan.damage = StorageError.corrupted("\(error)", file: nil, offset: fileOffset + r.position)
        }
        if scan.damage != nil {
            scan.validRecordAfterDamage = findRecord(
                in: bytes, after: scan.validBytes - fileOffset, lastSequence: scan.records.last?.sequence
            ).map { fileOffset + $0 }
        }
        return scan
    }

    /// Looks for a whole record with a later sequence number anywhere after `offset`. A crash only ever tears
    /// the end of the log, so finding one means the damage is in the middle: corruption, not a torn tail.
    static func findRecord(in bytes: UnsafeRawBufferPointer, after offset: Int, lastSequence: UInt64?) -> Int? {
        var p = offset + 1
        while p + headerBytes <= bytes.count {
            defer { p += 1 }
            var r = ByteReader(bytes, position: p)
            guard let count = try? r.readUInt32LE(), let _ = try? r.readUInt32LE(), let sequence = try? r.readUInt64LE(),
                let stored = try? r.readUInt64LE()
            else { return nil }
            // (Subtraction, not addition: a damaged sequence near the top of the range must not overflow.)
            if let lastSequence, sequence <= lastSequence || sequence - lastSequence > 1_000_000 { continue }
            guard Int(count) <= bytes.count - r.position, let payload = try? r.readBytes(count: Int(count)) else { continue }
            if Checksum.xxh3(payload, seed: seed(sequence: sequence, payloadCount: Int(count))) == stored { return p }
        }
        return nil
    }
}
