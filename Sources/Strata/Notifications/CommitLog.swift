import Dispatch
import Engine
import Foundation

/// The object keys a commit touched, per partition (inserted, changed or deleted alike).
struct ChangeSummary: Sendable {
    var keys: [UInt32: Set<Int64>] = [:]
    /// Unknown changes (a schema change, a dropped partition, a commit missing from the log).
    var everything = false

    static let unknown = ChangeSummary(everything: true)

    mutating func merge(_ other: ChangeSummary) {
        everything = everything || other.everything
        for (p, k) in other.keys { keys[p, default: []].formUnion(k) }
    }
}

/// Recent commits' summaries, by sequence.
struct CommitLog {
    static let capacity = 4096
    var entries: [UInt64: ChangeSummary] = [:]

    mutating func record(_ sequence: UInt64, _ summary: ChangeSummary) {
        entries[sequence] = summary
        if entries.count > Self.capacity, let oldest = entries.keys.min() { entries[oldest] = nil }
    }

    func changes(after a: UInt64, through c: UInt64) -> ChangeSummary {
        guard c > a else { return ChangeSummary() }
        guard c - a <= UInt64(Self.capacity) else { return .unknown }
        var out = ChangeSummary()
        for s in (a + 1)...c {
            guard let entry = entries[s] else { return .unknown }
            out.merge(entry)
        }
        return out
    }
}
