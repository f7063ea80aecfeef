import RealmFile
/// Fuzz targets over the reader (`Fuzz/Targets` lists them; `FuzzReplayTests` replays their corpus): any bytes,
/// read as a plain or as an encrypted Realm file, end in values or a ``RealmFileError``, never a trap or a hang.
package enum RealmFileFuzzing {
    /// The key the encrypted target decrypts with.
    package static let key: [UInt8] = (0..<64).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }

    /// Reads every object of every table, and a few by key; nil unless the reader disagrees with itself.
    package static func readEverything(_ file: RealmFile) throws -> String? {
        for table in file.tables {
            var keys: [Int64] = []
            var values: [[RealmFileValue]] = []
            try file.forEachObject(in: table) { object in
                if keys.count < 16 {
                    keys.append(object.key)
                    values.append(object.values)
                }
            }
            for (key, expected) in zip(keys, values) {
                guard let again = try file.object(in: table, key: key) else { continue }  // unsorted keys in a damaged leaf
                if again.values != expected { return "\(table.name)[\(key)]: by key \(again.values), in order \(expected)" }
            }
        }
        return nil
    }

    /// The bytes as a plain Realm file.
    @Sendable package static func decode(_ bytes: [UInt8]) -> String? {
        do {
            return try readEverything(RealmFile(bytes: bytes, name: "fuzz.realm"))
        } catch is RealmFileError {
            return nil
        } catch {
            return "an error that is not a RealmFileError: \(error)"
        }
    }

    /// The bytes as an encrypted Realm file (key ``key``).
    @Sendable package static func decrypt(_ bytes: [UInt8]) -> String? {
        do {
            return try readEverything(RealmFile(bytes: bytes, name: "fuzz.realm", encryptionKey: key))
        } catch is RealmFileError {
            return nil
        } catch {
            return "an error that is not a RealmFileError: \(error)"
        }
    }

    /// The seed files encrypted with ``key``, for the decryption target's corpus.
    package static func encryptedSeedFiles() throws -> [[UInt8]] {
        try seedFiles().enumerated().map { i, plain in try RealmFileWriter.encrypt(plain, key: key, interrupted: i == 1 ? [0] : []) }
    }

    /// Small files of every shape the writer makes, for the corpus.
    package static func seedFiles() -> [[UInt8]] {
        typealias P = RealmFileWriter.Property
        var seeds: [[UInt8]] = []
        let properties: [P] = [
            P("i", .int), P("oi", .int, optional: true), P("b", .bool), P("s", .string, optional: true), P("d", .data),
            P("t", .date), P("f", .float), P("x", .double, optional: true), P("m", .decimal128), P("o", .objectId), P("u", .uuid, optional: true),
            P("any", .mixed, optional: true), P("l", .int, collection: .list), P("set", .string, collection: .set),
            P("map", .mixed, optional: true, collection: .map), P("link", .object, optional: true, target: 1),
        ]
        for (count, leaf) in [(3, 256), (9, 4), (20, 4)] {
            let rows: [(key: Int64, values: [RealmFileValue])] = (0..<count).map { i in
                let n = Int64(i)
                let values: [RealmFileValue] = [
                    .int(n * 1_000_003), i % 3 == 0 ? .null : .int(-n), .bool(i % 2 == 0), i % 4 == 0 ? .null : .string(String(repeating: "s", count: i * 5)),
                    .data(Array(repeating: UInt8(i), count: i * 7)), .timestamp(RealmFileTimestamp(seconds: n * 86_400, nanoseconds: Int32(i))),
                    .float(Float(i) / 3), i % 2 == 0 ? .null : .double(Double(i) * 1.5),
                    .decimal128(RealmFileDecimal128(low: UInt64(i), high: 0x3040_0000_0000_0000)), .objectId(Array(repeating: UInt8(i), count: 12)),
                    .uuid(Array(repeating: UInt8(255 - i), count: 16)),
                    i % 3 == 0 ? .list([.int(n), .string("x"), .map([RealmFileMapEntry(key: "k", value: .bool(true))])]) : .double(Double(i)),
                    .list((0..<Int64(i % 6)).map(RealmFileValue.int)), .set([.string("a\(i)"), .string("b")]),
                    .map([RealmFileMapEntry(key: "a", value: .int(n)), RealmFileMapEntry(key: "b", value: .link(RealmFileLink(table: 1, key: n)))]),
                    .link(RealmFileLink(table: 1, key: n)),
                ]
                return (n, values)
            }
            var writer = RealmFileWriter()
            writer.clusterLeafObjects = leaf
            writer.bptreeLeafElements = leaf == 4 ? 4 : 1000
            writer.streamingForm = count == 9
            seeds.append(writer.write([RealmFileWriter.Table(name: "Thing", primaryKey: "i", properties: properties, objects: rows)]))
        }
        return seeds
    }
}
