import Engine

/// The in-memory model the engine is checked against: partitions of key -> value.
package struct ReferenceStore: Equatable, Sendable {
    package var partitions: [UInt32: [[UInt8]: [UInt8]]] = [:]
    package init() {}

    package mutating func put(_ key: [UInt8], _ value: [UInt8], in p: UInt32) { partitions[p, default: [:]][key] = value }
    package mutating func delete(_ key: [UInt8], in p: UInt32) {
        partitions[p]?[key] = nil
        if partitions[p]?.isEmpty == true { partitions[p] = nil }
    }
    package mutating func drop(_ p: UInt32) { partitions[p] = nil }

    /// Sorted entries of one partition.
    package func entries(_ p: UInt32) -> [([UInt8], [UInt8])] {
        (partitions[p] ?? [:]).sorted { $0.key.lexicographicallyPrecedes($1.key) }.map { ($0.key, $0.value) }
    }
}

/// Everything a snapshot shows, read both by scanning and by point lookups.
package func contents(of snapshot: Snapshot, partitions: some Sequence<UInt32>) throws -> ReferenceStore {
    var store = ReferenceStore()
    for p in partitions {
        try snapshot.scan(p) { k, v in
            store.put([UInt8](k), [UInt8](v), in: p)
            return true
        }
    }
    return store
}

/// Throws a readable description of the first difference between a snapshot and the model.
package func expectSame(_ snapshot: Snapshot, _ model: ReferenceStore, partitions: some Sequence<UInt32>, _ context: String) throws {
    let parts = Array(partitions)
    let seen = try contents(of: snapshot, partitions: parts)
    for p in parts {
        let a = seen.entries(p), b = model.entries(p)
        if a.count != b.count {
            throw Mismatch("\(context): partition \(p) has \(a.count) entries, the model \(b.count)")
        }
        for (x, y) in zip(a, b) where x.0 != y.0 || x.1 != y.1 {
            if x.0 == y.0 {
                throw Mismatch("\(context): partition \(p), key \(x.0) has a \(x.1.count)-byte value, the model a different \(y.1.count)-byte one")
            }
            throw Mismatch("\(context): partition \(p) has key \(x.0) where the model has \(y.0)")
        }
        // Point lookups agree with the scan, and a cursor too.
        for (k, v) in b where try snapshot.get(k, in: p) != v {
            throw Mismatch("\(context): get of key \(k) in partition \(p) disagrees with the model")
        }
    }
}

package struct Mismatch: Error, CustomStringConvertible {
    package let description: String
    package init(_ d: String) { description = d }
}
