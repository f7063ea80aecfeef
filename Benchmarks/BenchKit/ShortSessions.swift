import Foundation
import Strata

// Issue 37's workloads: many small durable transactions (the bytes written per byte of values, beside SQLite
// and RocksDB), and many short sessions (open, one transaction, close), after which a Strata database must
// keep a handful of segments per partition and a close must stay short.

extension Runner {
    /// `transactions` durable transactions of `size` records each on `engine`, the database open throughout:
    /// records per second, and the bytes the process wrote to storage per byte of values.
    func smallTransactions(
        _ engine: any SustainedBenchEngine, in directory: String, transactions: Int, size: Int
    ) throws -> (rate: Double, writeAmplification: Double?) {
        var valueBytes = 0
        var seconds = 0.0
        let writtenBefore = processWriteBytes()
        try engine.sustainedOpen(in: directory)
        for t in 0..<transactions {
            let records = (t * size..<(t + 1) * size).map(SustainedRecord.make)
            valueBytes += records.reduce(0) { $0 + $1.valueBytes }
            let start = now()
            try engine.sustainedInsert(records)
            seconds += now() - start
            if t % 1000 == 0 { progress("\(engine.name): small-txn \(t) of \(transactions)") }
        }
        try engine.sustainedClose()
        let written: Int? = if let after = processWriteBytes(), let writtenBefore { after - writtenBefore } else { nil }
        return (Double(transactions * size) / seconds, written.map { Double($0) / Double(valueBytes) })
    }

    /// Strata: `sessions` sessions that open the Realm, commit one transaction of `size` objects and close it,
    /// with no pause between them. The most segments any type's partition holds afterwards (as `strata info`
    /// reports them) and the median time of a close, in milliseconds.
    func shortSessions(in directory: String, sessions: Int, size: Int) throws -> (segments: Int, closeMilliseconds: Double) {
        let peer = StrataObjectPeer()
        var closes: [Double] = []
        for s in 0..<sessions {
            try peer.sustainedOpen(in: directory)
            try peer.sustainedInsert((s * size..<(s + 1) * size).map(SustainedRecord.make))
            let start = now()
            try peer.sustainedClose()
            closes.append((now() - start) * 1000)
            if s % 50 == 0 { progress("Strata: short sessions \(s) of \(sessions)") }
        }
        let inspector = try DatabaseInspector(path: directory + "/sustained.realm")
        defer { try? inspector.close() }  // try?: a read-only inspection; nothing to lose at its close
        let segments = try inspector.summary().types.map(\.segments).max() ?? 0
        return (segments, Measurement.median(closes))
    }
}
