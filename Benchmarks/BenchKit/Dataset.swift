import TestSupport

/// The Bench's data: `Person { id, firstName (8 lowercase letters), lastName (10), age (0..99) }`, the same
/// for every engine, from one seed.
public struct Person: Sendable, Equatable {
    public var id: Int
    public var firstName: [UInt8]
    public var lastName: [UInt8]
    public var age: Int
}

public struct Dataset: Sendable {
    public let people: [Person]
    /// Ids for the lookup workload, drawn from the same seed.
    public let lookupIDs: [Int]

    public init(count: Int, lookups: Int, seed: UInt64 = 42) {
        var rng = SplitMix64(seed: seed)
        func letters(_ n: Int) -> [UInt8] { (0..<n).map { _ in UInt8(97 + rng.next() % 26) } }
        people = (0..<count).map { i in
            Person(id: i, firstName: letters(8), lastName: letters(10), age: Int(rng.next() % 100))
        }
        lookupIDs = count == 0 ? [] : (0..<lookups).map { _ in Int(rng.next() % UInt64(count)) }
    }

    /// Expected results, computed directly from the data, that every engine must reproduce.
    public var ageSum: Int { people.reduce(0) { $0 + $1.age } }
    public var allSum: Int { people.reduce(0) { $0 + $1.id + $1.firstName.count + $1.lastName.count + $1.age } }
    public var lookupAgeSum: Int { lookupIDs.reduce(0) { $0 + people[$1].age } }
    public var ageOver50: Int { people.filter { $0.age > 50 }.count }
    public var firstNameAB: Int { people.filter { $0.firstName.starts(with: [97, 98]) }.count }
}

/// The packed record the key-value engines store: `age u8 · firstCount u8 · first · lastCount u8 · last`.
public enum PackedPerson {
    public static func encode(_ p: Person, into out: inout [UInt8]) {
        out.removeAll(keepingCapacity: true)
        out.append(UInt8(p.age))
        out.append(UInt8(p.firstName.count))
        out.append(contentsOf: p.firstName)
        out.append(UInt8(p.lastName.count))
        out.append(contentsOf: p.lastName)
    }

    @inline(__always) public static func age(_ v: UnsafeRawBufferPointer) -> Int { v.isEmpty ? 0 : Int(v[0]) }

    /// age + firstName count + lastName count, reading every field.
    @inline(__always) public static func allFields(_ v: UnsafeRawBufferPointer) -> Int {
        guard v.count >= 3 else { return 0 }
        let first = Int(v[1])
        guard v.count > 2 + first else { return 0 }
        let last = Int(v[2 + first])
        return Int(v[0]) + first + last
    }

    /// Whether firstName starts with "ab".
    @inline(__always) public static func firstNameStartsAB(_ v: UnsafeRawBufferPointer) -> Bool {
        v.count >= 4 && v[1] >= 2 && v[2] == 97 && v[3] == 98
    }

    public static func key(_ id: Int) -> [UInt8] { withUnsafeBytes(of: UInt64(id).bigEndian) { Array($0) } }

    @inline(__always) public static func id(_ k: UnsafeRawBufferPointer) -> Int {
        var x = 0
        for b in k { x = x << 8 | Int(b) }
        return x
    }
}
