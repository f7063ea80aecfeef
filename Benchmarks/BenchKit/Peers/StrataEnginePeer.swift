import Engine

/// Strata's storage engine driven directly (key = id as 8 bytes big-endian, value = the packed record):
/// the raw rows of the Bench, until the object layer exists.
public final class StrataEnginePeer: BenchEngine {
    public let name: String
    var db: Database?
    static let partition: UInt32 = 1

    /// `name`: a variant's (the runner sets what differs, such as the codecs).
    public init(name: String = Runner.strataEngine) { self.name = name }

    public func create(in directory: String) throws { db = try Database.open(at: directory + "/strata") }
    public func open(in directory: String) throws { db = try Database.open(at: directory + "/strata") }
    public func close() throws {
        try db?.close()
        db = nil
    }

    func database() throws -> Database {
        guard let db else { throw BenchFailure("Strata engine: not open") }
        return db
    }

    public func insertAll(_ people: [Person]) throws {
        let tx = try database().beginWrite()
        var value: [UInt8] = []
        value.reserveCapacity(32)
        for p in people {
            PackedPerson.encode(p, into: &value)
            try withUnsafeBytes(of: UInt64(p.id).bigEndian) { k in
                try value.withUnsafeBytes { v in try tx.put(k, v, in: Self.partition) }
            }
        }
        try tx.commit()
    }

    public func sumAges() throws -> Int {
        var sum = 0
        try database().snapshot().scan(Self.partition) { _, v in
            sum &+= PackedPerson.age(v)
            return true
        }
        return sum
    }

    public func sumAllFields() throws -> Int {
        var sum = 0
        try database().snapshot().scan(Self.partition) { k, v in
            sum &+= PackedPerson.id(k) &+ PackedPerson.allFields(v)
            return true
        }
        return sum
    }

    public func lookupAges(_ ids: [Int]) throws -> Int {
        let s = try database().snapshot()
        var sum = 0
        for id in ids {
            sum &+= try withUnsafeBytes(of: UInt64(id).bigEndian) { k in
                try s.withValue(forKey: k, in: Self.partition) { v in v.map(PackedPerson.age) ?? 0 }
            }
        }
        return sum
    }

    public func countAgeOver50() throws -> Int {
        var n = 0
        try database().snapshot().scan(Self.partition) { _, v in
            if PackedPerson.age(v) > 50 { n += 1 }
            return true
        }
        return n
    }

    public func countFirstNameAB() throws -> Int {
        var n = 0
        try database().snapshot().scan(Self.partition) { _, v in
            if PackedPerson.firstNameStartsAB(v) { n += 1 }
            return true
        }
        return n
    }

    public func readOne(_ id: Int) throws -> Int {
        try database().snapshot().withValue(forKey: PackedPerson.key(id), in: Self.partition) { v in v.map(PackedPerson.age) ?? -1 }
    }

    public func sizeOnDisk(in directory: String) throws -> Int { DirectorySize.bytes(directory + "/strata") }

    public func updateAllAges() throws -> Int {
        let tx = try database().beginWrite()
        var updates: [([UInt8], [UInt8])] = []
        try tx.snapshot.scan(Self.partition) { k, v in
            var value = [UInt8](v)
            value[0] &+= 1
            updates.append(([UInt8](k), value))
            return true
        }
        for (k, v) in updates { try tx.put(k, v, in: Self.partition) }
        try tx.commit()
        return updates.count
    }

    public func deleteHalf() throws -> Int {
        let tx = try database().beginWrite()
        var keys: [[UInt8]] = []
        try tx.snapshot.scan(Self.partition) { k, _ in
            if PackedPerson.id(k) % 2 == 0 { keys.append([UInt8](k)) }
            return true
        }
        for k in keys { try tx.delete(k, in: Self.partition) }
        try tx.commit()
        return keys.count
    }
}
