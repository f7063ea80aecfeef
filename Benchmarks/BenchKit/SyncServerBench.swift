import Engine
import Foundation
import Logging
import PostgresNIO
import Strata
import StrataSync
import StrataSyncServer

// Issue 58's rows: change sets pushed and pulled through a sync server on PostgreSQL (a cluster of the Bench's
// own, the server in this process), a new client's bootstrap, the latency from a commit on one client to the
// notification on another, and PostgreSQL's own insert rate for the rows a push writes (the physical reference).

extension Runner {
    struct SyncServerFigures {
        /// Operations per second: uploading N creates (writes of 1,000), and another client downloading them.
        var push: Double
        var pull: Double
        /// Objects per second of a new client's start from the server's N objects.
        var bootstrap: Double
        /// Milliseconds from a one-object commit on one client to the notification on another.
        var latencyMedian: Double
        var latencyP99: Double
        /// Rows per second PostgreSQL inserts of rows of the objects table's shape, 1,000 a statement.
        var postgresInsert: Double
    }

    /// Runs `body` on the concurrency pool and waits for it (the Bench's runner is synchronous).
    func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
        let result = Locked<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let r: Result<T, any Error>
            do { r = .success(try await body()) } catch { r = .failure(error) }
            result.withLock { $0 = r }
            done.signal()
        }
        done.wait()
        return try result.withLock { $0! }.get()
    }

    func syncServerFigures(in directory: String, people: [Person]) throws -> SyncServerFigures {
        let postgres = try ThrowawayPostgres()
        defer { postgres.stop() }
        let secret = "strata-bench-secret-0123456789abcdef0123"
        let port = Locked<Int>(0)
        let failure = Locked<(any Error)?>(nil)
        var logger = Logger(label: "bench-sync")
        logger.logLevel = .error
        let serverLogger = logger
        let server = Task {
            do {
                let tokens = try await SyncTokenVerifier(hs256Secret: secret, es256PublicKeyPEM: nil)
                try await SyncServer.run(SyncServerConfiguration(port: 0, postgres: postgres.configuration, maxRequestBytes: 256 << 20),
                                         tokens: tokens, logger: serverLogger) { p in port.withLock { $0 = p } }
            } catch {
                failure.withLock { $0 = error }
            }
        }
        defer { server.cancel() }
        // Generous: in the test suite the server's tasks wait for a pool that the other tests keep busy.
        let deadline = now() + 600
        while port.withLock({ $0 }) == 0 {
            if let error = failure.withLock({ $0 }) { throw BenchFailure("the sync server failed: \(error)") }
            guard now() < deadline else { throw BenchFailure("the sync server did not start in 600 s") }
            usleep(10_000)
        }
        let url = URL(string: "http://127.0.0.1:\(port.withLock { $0 })")!
        let token = try blocking {
            try await SyncTokenSigner(hs256Secret: secret).sign(
                SyncTokenClaims(subject: "bench", expires: Date().addingTimeInterval(3600), read: ["bench"], write: ["bench"]))
        }
        func config(_ name: String) -> Realm.Configuration {
            var c = Realm.Configuration(fileURL: URL(fileURLWithPath: directory + "/" + name + ".realm"), objectTypes: [BenchPerson.self])
            c.syncConfiguration = SyncConfiguration(serverURL: url, partition: "bench", token: { token })
            return c
        }
        let a = config("a")
        let b = config("b")
        var sessions: [SyncSession] = []
        defer { for s in sessions { try? blocking { await s.stop() } } }
        func session(_ c: Realm.Configuration) throws -> SyncSession {
            let s = try Realm(configuration: c).syncSession!
            if !sessions.contains(where: { $0 === s }) { sessions.append(s) }
            return s
        }

        // b starts from version 1, so that it then pulls history rather than a snapshot.
        let first = try Realm(configuration: a)
        try first.write { first.add(BenchPerson(Person(id: -1, firstName: [], lastName: [], age: 0))) }
        let sa = try session(a)
        try blocking { try await sa.wait(for: .upload) }
        let sb = try session(b)
        try blocking { try await sb.wait(for: .download) }
        sa.suspend()
        sb.suspend()  // b pulls only when timed

        progress("Strata: sync server, push")
        let writer = try Realm(configuration: a)
        for chunk in stride(from: 0, to: people.count, by: 1000) {
            try writer.write { for p in people[chunk..<min(chunk + 1000, people.count)] { writer.add(BenchPerson(p)) } }
        }
        var start = now()
        sa.resume()
        try blocking { try await sa.wait(for: .upload) }
        var f = SyncServerFigures(push: Double(people.count) / (now() - start), pull: 0, bootstrap: 0, latencyMedian: 0, latencyP99: 0, postgresInsert: 0)

        progress("Strata: sync server, pull")
        start = now()
        sb.resume()
        try blocking { try await sb.wait(for: .download) }
        f.pull = Double(people.count) / (now() - start)
        guard try Realm(configuration: b).objects(BenchPerson.self).count == people.count + 1 else {
            throw BenchFailure("Strata: the pulling client has \(try Realm(configuration: b).objects(BenchPerson.self).count) people, not \(people.count + 1)")
        }

        progress("Strata: sync server, bootstrap")
        let c = config("c")
        start = now()
        let sc = try session(c)
        try blocking { try await sc.wait(for: .download) }
        f.bootstrap = Double(people.count + 1) / (now() - start)
        guard try Realm(configuration: c).objects(BenchPerson.self).count == people.count + 1 else {
            throw BenchFailure("Strata: the new client has \(try Realm(configuration: c).objects(BenchPerson.self).count) people, not \(people.count + 1)")
        }

        progress("Strata: sync server, commit to notification")
        // b's session applies each commit; a queue-confined Realm of b's file hears of it.
        let queue = DispatchQueue(label: "bench.sync.observer")
        let heard = DispatchSemaphore(value: 0)
        let token2 = try queue.sync {
            let observer = try Realm(configuration: b, queue: queue)
            return observer.objects(BenchPerson.self).filter("age == 999999").observe(on: queue) { change in
                if case .update(_, _, let insertions, _) = change, !insertions.isEmpty { heard.signal() }
            }
        }
        defer { token2.invalidate() }
        var latencies: [Double] = []
        for i in 0..<200 {
            let start = now()
            try writer.write { writer.add(BenchPerson(Person(id: -2 - i, firstName: [], lastName: [], age: 999_999))) }
            guard heard.wait(timeout: .now() + 300) == .success else { throw BenchFailure("Strata: commit \(i) never reached the other client") }
            latencies.append((now() - start) * 1000)
        }
        latencies.sort()
        f.latencyMedian = latencies[latencies.count / 2]
        f.latencyP99 = latencies[latencies.count * 99 / 100]

        progress("PostgreSQL: insert the same rows")
        f.postgresInsert = try blocking { try await Self.postgresInsertRate(postgres.configuration, rows: people.count, logger: serverLogger) }
        return f
    }

    /// Rows per second of PostgreSQL inserting rows of the shape a push writes (a key, a ~60-byte state, a link
    /// array), as a push writes them: 1,000 rows a statement (arrays unnested), a transaction each, over the same
    /// client library.
    static func postgresInsertRate(_ configuration: PostgresConnection.Configuration, rows: Int, logger: Logger) async throws -> Double {
        let connection = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: logger)
        defer { Task { try? await connection.close() } }
        try await connection.query("CREATE TABLE bench_rows (partition text, ref text, state bytea, links text[], version bigint, PRIMARY KEY (partition, ref))", logger: logger)
        let state = String(repeating: "07", count: 60)
        let start = Date()
        for chunk in stride(from: 0, to: rows, by: 1000) {
            let range = chunk..<min(chunk + 1000, rows)
            try await connection.query("""
                INSERT INTO bench_rows SELECT 'bench', ref, decode(state, 'hex'), string_to_array(links, ','), v
                FROM unnest(\(range.map { String($0, radix: 16) }), \(range.map { _ in state }), \(range.map { _ in "" }),
                            \(range.map { Int64($0) })) AS t(ref, state, links, v)
                """, logger: logger)
        }
        return Double(rows) / Date().timeIntervalSince(start)
    }
}
