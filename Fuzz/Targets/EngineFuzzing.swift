@_spi(EngineInternals) import Engine

/// Entry points for the fuzz targets (`Fuzz/Targets`): each feeds arbitrary bytes to one decoder or to the
/// whole engine. None may trap, whatever the bytes; a returned string describes a wrong result (a bug).
package enum EngineFuzzing {
    /// A log file's bytes: records are scanned and each batch decoded.
    package static func logFile(_ input: [UInt8]) -> String? {
        if let problem = logFileAsIs(input) { return problem }
        return logFileAsIs(repairingLogChecksums(input))
    }

    static func logFileAsIs(_ bytes: [UInt8]) -> String? {
        let scan = bytes.withUnsafeBytes { LogRecord.scan($0) }
        for r in scan.records { _ = try? WriteBatch.decode(record: r.record) }
        if scan.validBytes > bytes.count { return "scan claims \(scan.validBytes) valid bytes of \(bytes.count)" }
        return nil
    }

    /// These bytes as the last log of a database: open either recovers or throws a StorageError.
    package static func recovery(_ bytes: [UInt8]) -> String? {
        let fs = MemoryFileSystem()
        var options = Database.Options()
        options.backgroundMaintenance = false
        do {
            let db = try Database.open(at: "/db", options: options, fileSystem: fs)
            try db.write { try $0.put([1], [2], in: 1) }
            db.simulateProcessDeath()
        } catch {
            return "setting up failed: \(error)"
        }
        guard let log = try? fs.listDirectory(atPath: "/db").filter({ $0.hasSuffix(".log") }).sorted().last else {
            return "no log file after setup"
        }
        fs.replaceContents(ofFile: "/db/" + log, with: repairingLogChecksums(bytes))
        do {
            let db = try Database.open(at: "/db", options: options, fileSystem: fs)
            let s = try db.snapshot()
            for p in s.partitions { _ = try? s.count(p) }
            if !db.checkConsistency().isEmpty { return "consistency check failed after recovery" }
            try db.close()
        } catch is StorageError {
            return nil
        } catch {
            return "open threw a non-storage error: \(error)"
        }
        return nil
    }

    /// A segment file's bytes: open, verify, scan and look keys up.
    package static func segment(_ input: [UInt8]) -> String? {
        if let problem = segmentAsIs(input) { return problem }
        return segmentAsIs(repairingSegmentChecksums(input))
    }

    static func segmentAsIs(_ bytes: [UInt8]) -> String? {
        guard let reader = try? SegmentReader(region: MappedRegion(copying: bytes), fileNumber: 1, expectedPartition: nil) else {
            return nil
        }
        _ = reader.verify()
        if let it = try? SegmentIterator(segment: reader, from: nil) {
            var n = 0
            while it.isValid && n < 100_000 {
                let k = [UInt8](it.key)
                _ = try? k.withUnsafeBytes { try reader.lookup($0) { _ in 0 } }
                if (try? it.next()) == nil { break }
                n += 1
            }
        }
        return nil
    }

    /// A manifest's bytes: decoded, and re-encoded when valid (the round trip must be exact).
    package static func manifest(_ input: [UInt8]) -> String? {
        if let problem = manifestAsIs(input) { return problem }
        return manifestAsIs(repairingManifestChecksum(input))
    }

    static func manifestAsIs(_ bytes: [UInt8]) -> String? {
        guard let m = try? bytes.withUnsafeBytes({ try Manifest.decode($0, file: "MANIFEST-000001") }) else { return nil }
        let again = m.encoded()
        guard let m2 = try? again.withUnsafeBytes({ try Manifest.decode($0, file: "MANIFEST-000001") }), m2 == m else {
            return "a valid manifest does not survive re-encoding"
        }
        return nil
    }

    /// First 4 bytes: the declared uncompressed size; the rest: an LZ4 block. Also round-trips the rest.
    package static func lz4Block(_ bytes: [UInt8]) -> String? {
        guard bytes.count >= 4 else { return nil }
        let declared = Int(bytes[0]) | Int(bytes[1]) << 8 | Int(bytes[2]) << 16
        let block = Array(bytes[4...])
        let out = GrowableBuffer()
        _ = try? block.withUnsafeBytes { try LZ4.decompress($0, originalCount: declared, into: out) }
        // The Swift decoder on hostile input: never a trap, and (where liblz4 is linked) the same verdict and
        // bytes as LZ4_decompress_safe, for the declared size and for sizes around it.
        for capacity in Set([declared, max(0, declared - 1), declared + 1, block.count * 4]) where capacity <= 1 << 20 {
            let portable = LZ4.decode(block, capacity: capacity, with: .portable)
            if Codecs.systemCodecsLinked {
                let system = LZ4.decode(block, capacity: capacity, with: .system)
                // liblz4 decodes an offset of 0 as zeros, which the format (and the Swift decoder) calls corrupt.
                if portable != system && !(portable == nil && PortableLZ4.hasZeroOffsetMatch(block)) {
                    return "Swift LZ4 decoder gave \(portable.map { "\($0.count) bytes" } ?? "nil"), liblz4 "
                        + "\(system.map { "\($0.count) bytes" } ?? "nil") (capacity \(capacity))"
                }
            }
        }
        // Compressed by either implementation, decoded by both.
        let implementations: [LZ4.Implementation] = Codecs.systemCodecsLinked ? [.portable, .system] : [.portable]
        for encoder in implementations where !block.isEmpty {
            guard let compressed = LZ4.encode(block, with: encoder) else {
                return "\(encoder) LZ4 could not compress \(block.count) bytes into its bound"
            }
            for decoder in implementations where LZ4.decode(compressed, capacity: block.count, with: decoder) != block {
                return "\(decoder) LZ4 did not decode \(encoder)'s block of \(block.count) bytes back"
            }
        }
        return nil
    }
}

extension EngineFuzzing {
    /// The input read as operations against the engine and a dictionary model: put, delete, commit,
    /// snapshot, reopen, flush, compact, drop. Returns the first disagreement.
    package static func operations(_ bytes: [UInt8]) -> String? {
        let fs = MemoryFileSystem()
        var options = Database.Options()
        options.backgroundMaintenance = false
        options.memtableFlushBytes = 2048
        var model: [UInt32: [[UInt8]: [UInt8]]] = [:]
        var pending = model
        var held: [(Snapshot, [UInt32: [[UInt8]: [UInt8]]])] = []
        var i = 0
        func next() -> UInt8 {
            defer { i += 1 }
            return i < bytes.count ? bytes[i] : 0
        }
        func contents(_ s: Snapshot) throws -> [UInt32: [[UInt8]: [UInt8]]] {
            var out: [UInt32: [[UInt8]: [UInt8]]] = [:]
            for p: UInt32 in 0..<3 {
                try s.scan(p) { k, v in
                    out[p, default: [:]][[UInt8](k)] = [UInt8](v)
                    return true
                }
            }
            return out
        }
        do {
            var db = try Database.open(at: "/db", options: options, fileSystem: fs)
            var tx = try db.beginWrite()
            var steps = 0
            while i < bytes.count && steps < 2_000 {
                steps += 1
                let op = next() % 10
                let p = UInt32(next() % 3)
                switch op {
                case 0, 1, 2:
                    let k: [UInt8] = [next() % 16]
                    let v = (0..<Int(next() % 40)).map { _ in next() }
                    try tx.put(k, v, in: p)
                    pending[p, default: [:]][k] = v
                case 3:
                    let k: [UInt8] = [next() % 16]
                    try tx.delete(k, in: p)
                    pending[p]?[k] = nil
                    if pending[p]?.isEmpty == true { pending[p] = nil }
                case 4:
                    try tx.commit()
                    model = pending
                    tx = try db.beginWrite()
                case 5:
                    if held.count < 4 { held.append((try db.snapshot(), model)) } else { held.removeFirst().0.close() }
                case 6:
                    try tx.dropPartition(p)
                    pending[p] = nil
                case 7:
                    tx.abort()
                    pending = model
                    try db.flush()
                    tx = try db.beginWrite()
                case 8:
                    tx.abort()
                    pending = model
                    try db.compact()
                    tx = try db.beginWrite()
                default:
                    tx.abort()
                    pending = model
                    for (s, _) in held { s.close() }
                    held = []
                    try db.close()
                    db = try Database.open(at: "/db", options: options, fileSystem: fs)
                    tx = try db.beginWrite()
                }
                if try contents(try db.snapshot()) != model { return "step \(steps): contents differ from the model" }
                for (s, m) in held where try contents(s) != m { return "step \(steps): a held snapshot changed" }
            }
            tx.abort()
            let problems = db.checkConsistency()
            if !problems.isEmpty { return "consistency: \(problems)" }
            try db.close()
            let reopened = try Database.open(at: "/db", options: options, fileSystem: fs)
            if try contents(try reopened.snapshot()) != model { return "contents differ from the model after reopening" }
            try reopened.close()
        } catch {
            return "operation failed: \(error)"
        }
        return nil
    }

    /// Valid inputs of each kind, for the corpus: a log file, a segment and a manifest written by the engine.
    package static func seedFiles() throws -> [String: [[UInt8]]] {
        let fs = MemoryFileSystem()
        var options = Database.Options()
        options.backgroundMaintenance = false
        let db = try Database.open(at: "/db", options: options, fileSystem: fs)
        for round in 0..<3 {
            try db.write { tx in
                for k in 0..<200 { try tx.put([UInt8(k), UInt8(round)], [UInt8](repeating: UInt8(k), count: k % 50), in: UInt32(k % 2)) }
                try tx.delete([7, 0], in: 1)
            }
        }
        try db.flush()
        try db.write { tx in for k in 0..<20 { try tx.put([UInt8(k)], [1, 2, 3], in: 0) } }
        db.simulateProcessDeath()
        var out: [String: [[UInt8]]] = [:]
        for name in try fs.listDirectory(atPath: "/db") {
            guard let bytes = fs.contents(ofFile: "/db/" + name) else { continue }
            switch FileName(parsing: name) {
            case .log?: out["walDecode", default: []].append(bytes); out["recovery", default: []].append(bytes)
            case .segment?: out["segmentDecode", default: []].append(bytes)
            case .manifest?: out["manifestDecode", default: []].append(bytes)
            default: break
            }
        }
        let text = [UInt8]("the quick brown fox jumps over the lazy dog, the quick brown fox".utf8)
        let c = GrowableBuffer()
        if let n = text.withUnsafeBytes({ LZ4.compress($0, into: c) }), n > 0 {
            out["lz4Block", default: []].append([UInt8(text.count), 0, 0, 0] + [UInt8](c.unsafeBytes))
        }
        out["operations", default: []].append([0, 1, 5, 9, 4, 0, 2, 3, 3, 1, 2, 4, 5, 0, 7, 0, 8, 0, 9, 0, 6, 1, 4, 1])
        return out
    }
}

extension EngineFuzzing {
    /// Recomputes every checksum a segment's layout lets us find (blocks walked from the header, the index
    /// and footer from the footer's fields), so that mutated inputs reach the parsers behind the checksums.
    package static func repairingSegmentChecksums(_ input: [UInt8]) -> [UInt8] {
        var bytes = input
        let footerAt = bytes.count - SegmentFormat.footerBytes
        guard footerAt >= SegmentFormat.headerBytes else { return bytes }
        func u32(_ o: Int) -> UInt32? { bytes.withUnsafeBytes { Bytes.loadUInt32LE($0, at: o) } }
        func u64(_ o: Int) -> UInt64? {
            guard let lo = u32(o), let hi = u32(o + 4) else { return nil }
            return UInt64(lo) | UInt64(hi) << 32
        }
        func put64(_ v: UInt64, at o: Int) {
            for i in 0..<8 { bytes[o + i] = UInt8(truncatingIfNeeded: v >> (8 * UInt64(i))) }
        }
        // Blocks, walked from the header while their declared lengths fit.
        var o = SegmentFormat.headerBytes
        let indexOffset = Int(clamping: u64(footerAt + 16) ?? 0)
        while o + BlockHeader.byteCount <= min(indexOffset, footerAt) {
            guard let stored = u32(o), let raw = u32(o + 4), let entries = u32(o + 8), let flags = u32(o + 12) else { break }
            let end = o + BlockHeader.byteCount + Int(stored)
            guard end <= footerAt else { break }
            let sum = bytes.withUnsafeBytes {
                BlockHeader.checksum(
                    stored: UnsafeRawBufferPointer(rebasing: $0[(o + BlockHeader.byteCount)..<end]), storedCount: stored, rawCount: raw,
                    entryCount: entries, flags: flags)
            }
            put64(sum, at: o + 16)
            o = end
        }
        // The index and the footer.
        let indexLength = Int(clamping: u64(footerAt + 24) ?? 0)
        if indexOffset >= 0, indexLength >= 0, indexOffset <= footerAt, indexLength <= footerAt - indexOffset {
            let end = indexOffset + indexLength
            func sum(_ from: Int, _ to: Int) -> UInt64 { bytes.withUnsafeBytes { Checksum.xxh3(UnsafeRawBufferPointer(rebasing: $0[from..<to])) } }
            var checked = indexOffset..<end
            // Format 3: each page's and filter chunk's checksum in the directory, and the footer's over the directory.
            if let layout = pagedIndexLayout(bytes) {
                for (i, page) in layout.pages.enumerated() {
                    let pageEnd = i + 1 < layout.pages.count ? layout.pages[i + 1].start : layout.filterStart
                    if page.start >= indexOffset, page.start <= pageEnd { put64(sum(page.start, pageEnd), at: page.sumAt) }
                }
                var chunk = layout.filterStart, o = layout.chunkSumsAt
                while chunk < layout.directory, o + 8 <= end - 16 {
                    let chunkEnd = min(layout.directory, chunk + 512 * 8)
                    put64(sum(chunk, chunkEnd), at: o)
                    o += 8
                    chunk = chunkEnd
                }
                checked = layout.directory..<end
            }
            put64(sum(checked.lowerBound, checked.upperBound), at: footerAt + 72)
        }
        let footerSum = bytes.withUnsafeBytes { Checksum.xxh3(UnsafeRawBufferPointer(rebasing: $0[footerAt..<(bytes.count - 8)])) }
        put64(footerSum, at: bytes.count - 8)
        return bytes
    }

    /// Where a format-3 segment's index parts lie, read from its footer, trailer and directory (`SegmentFormat`),
    /// as far as a damaged or mutated file lets them be found: each page's start and where its checksum is
    /// stored, the filter's start, the directory's, and where the filter chunks' checksums begin. Nil for a
    /// segment of an earlier format or whose trailer does not fit.
    package static func pagedIndexLayout(
        _ bytes: [UInt8]
    ) -> (pages: [(start: Int, sumAt: Int)], filterStart: Int, filterWords: Int, directory: Int, chunkSumsAt: Int)? {
        let footerAt = bytes.count - SegmentFormat.footerBytes
        func u32(_ o: Int) -> Int? { bytes.withUnsafeBytes { Bytes.loadUInt32LE($0, at: o) }.map(Int.init) }
        func u64(_ o: Int) -> Int? { bytes.withUnsafeBytes { Bytes.loadUInt64LE($0, at: o) }.map { Int(clamping: $0) } }
        guard footerAt >= SegmentFormat.headerBytes, (u32(8) ?? 0) >= 3, let indexOffset = u64(footerAt + 16), let indexLength = u64(footerAt + 24),
            indexOffset >= 0, indexLength >= 16, indexOffset <= footerAt, indexLength <= footerAt - indexOffset
        else { return nil }
        let end = indexOffset + indexLength
        guard let pageCount = u32(end - 16), let words = u32(end - 12), let directoryBytes = u32(end - 4), directoryBytes >= 16,
            directoryBytes <= indexLength
        else { return nil }
        let directory = end - directoryBytes
        var pages: [(start: Int, sumAt: Int)] = []
        var o = directory
        for _ in 0..<min(pageCount, indexLength) {
            guard o + 12 < end - 16, let start = u32(o) else { break }
            pages.append((indexOffset + start, o + 4))
            var keyCount = 0, shift = 0
            o += 12
            while o < end - 16, shift < 35 {
                let b = Int(bytes[o])
                o += 1
                keyCount |= (b & 0x7F) << shift
                shift += 7
                if b < 0x80 { break }
            }
            o += keyCount
        }
        let filterStart = directory - words * 8
        guard filterStart >= indexOffset else { return nil }
        return (pages, filterStart, words, directory, o)
    }

    /// Recomputes the checksum of every record a log file's lengths let us walk.
    package static func repairingLogChecksums(_ input: [UInt8]) -> [UInt8] {
        var bytes = input
        var o = LogRecord.fileHeaderBytes
        while o + LogRecord.headerBytes <= bytes.count {
            let count = bytes.withUnsafeBytes { Int(Bytes.loadUInt32LE($0, at: o) ?? 0) }
            let sequence = bytes.withUnsafeBytes { raw -> UInt64 in
                UInt64(Bytes.loadUInt32LE(raw, at: o + 8) ?? 0) | UInt64(Bytes.loadUInt32LE(raw, at: o + 12) ?? 0) << 32
            }
            let start = o + LogRecord.headerBytes
            guard count <= bytes.count - start else { break }
            let sum = bytes.withUnsafeBytes {
                Checksum.xxh3(UnsafeRawBufferPointer(rebasing: $0[start..<(start + count)]), seed: LogRecord.seed(sequence: sequence, payloadCount: count))
            }
            for i in 0..<8 { bytes[o + 16 + i] = UInt8(truncatingIfNeeded: sum >> (8 * UInt64(i))) }
            o = start + count
        }
        return bytes
    }

    /// Recomputes a manifest's trailing checksum.
    package static func repairingManifestChecksum(_ input: [UInt8]) -> [UInt8] {
        guard input.count >= 8 else { return input }
        var bytes = input
        let sum = Checksum.xxh3(Array(bytes[0..<(bytes.count - 8)]))
        for i in 0..<8 { bytes[bytes.count - 8 + i] = UInt8(truncatingIfNeeded: sum >> (8 * UInt64(i))) }
        return bytes
    }
}

extension EngineFuzzing {
    static let encryptedKey: [UInt8] = (0..<64).map { UInt8(truncatingIfNeeded: $0 &* 41 &+ 3) }

    /// An encrypted database (segments, a log with commits not yet flushed, a manifest) damaged as the input
    /// says: pairs of bytes `(file selector, position byte)`, each flipping one bit of one file at a position
    /// spread over it, with the file's checksums then made to match again (a forger's edit, which only
    /// authentication can catch). The open either throws a `StorageError`, or every read gives the value written
    /// or throws one: never a wrong value, never a trap; and unless a log was edited (a cut log reads as a
    /// shorter one), never a key silently missing.
    package static func encryptedDamage(_ input: [UInt8]) -> String? {
        let fs = MemoryFileSystem()
        var options = Database.Options()
        options.backgroundMaintenance = false
        options.memtableFlushBytes = 4096
        options.encryptionKey = encryptedKey
        func key(_ i: Int) -> [UInt8] { [UInt8(i >> 8), UInt8(i & 0xFF)] }
        func value(_ i: Int) -> [UInt8] { Array("value \(i) ".utf8) + [UInt8](repeating: UInt8(i % 200), count: i % 30) }
        let count = 300
        do {
            let db = try Database.open(at: "/db", options: options, fileSystem: fs)
            for start in stride(from: 0, to: count, by: 50) {
                try db.write { tx in for i in start..<(start + 50) { try tx.put(key(i), value(i), in: 1) } }
                if start == 150 { try db.flush() }
            }
            db.simulateProcessDeath()
        } catch {
            return "setting up failed: \(error)"
        }
        guard let names = try? fs.listDirectory(atPath: "/db").filter({ $0 != "LOCK" }).sorted(), !names.isEmpty else {
            return "no files after setup"
        }
        var i = 0
        var logEdited = false
        while i + 1 < input.count {
            let name = names[Int(input[i]) % names.count]
            if var bytes = fs.contents(ofFile: "/db/" + name), !bytes.isEmpty {
                let at = Int(input[i + 1]) * bytes.count / 256
                bytes[at] ^= UInt8(1) << (input[i] % 8)
                if name.hasSuffix(".seg") {
                    bytes = repairingSegmentChecksums(bytes)
                } else if name.hasSuffix(".log") {
                    bytes = repairingLogChecksums(bytes)
                    logEdited = true
                } else if name.hasPrefix("MANIFEST") {
                    bytes = repairingManifestChecksum(bytes)
                }
                fs.replaceContents(ofFile: "/db/" + name, with: bytes)
            }
            i += 2
        }
        let db: Database
        do {
            db = try Database.open(at: "/db", options: options, fileSystem: fs)
        } catch is StorageError {
            return nil
        } catch {
            return "open threw a non-storage error: \(error)"
        }
        defer { try? db.close() }
        guard let snapshot = try? db.snapshot() else { return nil }
        for j in 0..<count {
            do {
                let v = try snapshot.get(key(j), in: 1)
                if let v, v != value(j) { return "key \(j) read a wrong value from a damaged encrypted file" }
                if v == nil, !logEdited { return "key \(j) is missing, and no error said why (only segments or the manifest were edited)" }
            } catch is StorageError {
                continue
            } catch {
                return "a read threw a non-storage error: \(error)"
            }
        }
        do {
            try snapshot.scan(1) { k, v in
                guard k.count == 2 else { throw FuzzWrongValue() }
                let j = Int(k[k.startIndex]) << 8 | Int(k[k.startIndex + 1])
                if [UInt8](v) != value(j) { throw FuzzWrongValue() }
                return true
            }
        } catch is FuzzWrongValue {
            return "a scan read a wrong value from a damaged encrypted file"
        } catch {
            return nil
        }
        return nil
    }

    private struct FuzzWrongValue: Error {}
}
