import Engine
import Foundation
import StrataSync
import StrataSyncWire
import Testing
import TestSupport

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@testable import Strata

/// The sync server end to end: real `strata-sync-server` processes on a throwaway PostgreSQL cluster, clients
/// with sync sessions. A Realm never lives across an `await` here: each step opens its own.
@Suite(.serialized) struct SyncServerTests {
    /// A cluster with one database and one server on it.
    final class Setup {
        let dir: TemporaryDirectory
        let cluster: PostgresCluster
        var servers: [SyncServerProcess] = []
        let database = "sync"

        init(servers count: Int = 1) throws {
            dir = try TemporaryDirectory()
            cluster = try PostgresCluster()
            try cluster.createDatabase(database)
            for i in 0..<count { servers.append(try SyncServerProcess(cluster: cluster, database: database, dir: dir, name: "server\(i)")) }
        }

        private var sessions: [SyncSession] = []

        /// Runs `body` on a new setup, then stops every session it started (error or not) before the cluster stops
        /// and the files go with the directory.
        static func with(servers: Int = 1, _ body: (Setup) async throws -> Void) async throws {
            let setup = try Setup(servers: servers)
            do {
                try await body(setup)
            } catch {
                for s in setup.sessions { await s.stop() }
                throw error
            }
            for s in setup.sessions { await s.stop() }
        }

        func config(_ name: String, partition: String = "team", server: Int = 0, token: String) -> Realm.Configuration {
            config(name, partition: partition, url: servers[server].url, token: token)
        }

        func config(_ name: String, partition: String, url: URL, token: String) -> Realm.Configuration {
            var c = SyncTesting.config(dir, name)
            c.syncConfiguration = SyncConfiguration(serverURL: url, partition: partition, token: { token })
            return c
        }

        /// Stops the sessions started so far.
        func stopSessions() async {
            for s in sessions { await s.stop() }
            sessions = []
        }

        /// The partition's history as the server keeps it, read from PostgreSQL.
        func history(_ partition: String) throws -> [ServerChangeSet] {
            try cluster.sql("""
                SELECT version, encode(change_set, 'hex') FROM strata_changes WHERE partition = '\(partition)' AND octet_length(change_set) > 0
                ORDER BY version
                """, database: database)
                .split(separator: "\n").map { line in
                    let parts = line.split(separator: "|")
                    let bytes = try #require(SyncServerTests.hexBytes(String(parts[1])))
                    return ServerChangeSet(version: UInt64(parts[0])!, changeSet: try bytes.withUnsafeBytes { try SyncCoding.decodeChangeSet($0) })
                }
        }

        /// The partition's live objects as the server keeps them, read from PostgreSQL.
        func objects(_ partition: String) throws -> [ObjectReference: SyncObject] {
            var out: [ObjectReference: SyncObject] = [:]
            for line in try cluster.sql("SELECT ref, encode(state, 'hex') FROM strata_objects WHERE partition = '\(partition)'", database: database)
                .split(separator: "\n") {
                let parts = line.split(separator: "|")
                let refBytes = try #require(SyncServerTests.hexBytes(String(parts[0])))
                let stateBytes = try #require(SyncServerTests.hexBytes(String(parts[1])))
                let ref = try refBytes.withUnsafeBytes { try SyncCoding.decodeReference($0) }
                let state = try stateBytes.withUnsafeBytes { try SyncCoding.decodeState($0) }
                if let o = state.object { out[ref] = o }
            }
            return out
        }

        /// The file's session (started if it was not), stopped at the end of the test.
        func session(_ config: Realm.Configuration) throws -> SyncSession {
            let s = try #require(try Realm(configuration: config).syncSession)
            if !sessions.contains(where: { $0 === s }) { sessions.append(s) }
            return s
        }

        /// Posts a raw request body to a server, returning the status and the decoded refusal, if any.
        func post(_ path: String, body: Data, token: String?, server: Int = 0) async throws -> (Int, WireError?) {
            try await SyncServerTests.post(servers[server].url, path, body: body, token: token)
        }

        /// Posts `request` to the first server's `verb` endpoint of `partition` and decodes its answer (a refusal
        /// is recorded as an issue, and fails the decoding).
        func exchange<Answer: Decodable>(_ verb: String, partition: String = "team", token: String, _ request: some Encodable) async throws -> Answer {
            var http = URLRequest(url: servers[0].url.appendingPathComponent("v1/partitions/\(partition)/\(verb)"))
            http.httpMethod = "POST"
            http.httpBody = try SyncWire.encoder.encode(request)
            // A connection of its own (see `post`).
            http.setValue("close", forHTTPHeaderField: "Connection")
            http.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            let session = URLSession(configuration: .ephemeral)
            defer { session.finishTasksAndInvalidate() }
            let (data, response) = try await session.data(for: http)
            #expect((response as? HTTPURLResponse)?.statusCode == 200, "\(verb): \(String(decoding: data, as: UTF8.self))")
            return try JSONDecoder().decode(Answer.self, from: data)
        }

        /// The partition's version, read from PostgreSQL.
        func version(_ partition: String) throws -> Int {
            Int(try cluster.sql("SELECT coalesce(max(version), 0) FROM strata_partitions WHERE name = '\(partition)'", database: database)
                .trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        }
    }

    /// Posts a raw request body to a server, returning the status and the decoded refusal, if any.
    static func post(_ url: URL, _ path: String, body: Data, token: String?) async throws -> (Int, WireError?) {
        var request = URLRequest(url: url.appendingPathComponent(path))
        request.httpMethod = "POST"
        request.httpBody = body
        // A connection and a session of its own: a request of one test (a refused 17 MB upload) never holds up
        // another's on Linux's URLSession, which serves a session's transfers together.
        request.setValue("close", forHTTPHeaderField: "Connection")
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
        let (data, response) = try await session.data(for: request)
        let status = (response as! HTTPURLResponse).statusCode
        return (status, status == 200 ? nil : try JSONDecoder().decode(WireError.self, from: data))
    }

    static func hexBytes(_ text: String) -> [UInt8]? {
        let u = Array(text.utf8)
        guard u.count % 2 == 0 else { return nil }
        return stride(from: 0, to: u.count, by: 2).compactMap { UInt8(String(decoding: u[$0..<$0 + 2], as: UTF8.self), radix: 16) }
    }

    static func write(_ config: Realm.Configuration, _ body: (Realm) -> Void) throws {
        let realm = try Realm(configuration: config)
        try realm.write { body(realm) }
    }

    static func item(_ config: Realm.Configuration, _ id: String) throws -> SyncItem? {
        try Realm(configuration: config).object(ofType: SyncItem.self, forPrimaryKey: id)
    }

    @Test func twoClientsSyncThroughTheServerBothWays() async throws {
        try await Setup.with { setup in
        let token = try SyncServerProcess.token(write: ["team"])
        let a = setup.config("a.realm", token: token)
        let b = setup.config("b.realm", token: token)
        try Self.write(a) { r in
            let item = SyncItem("x", title: "from a")
            item.tags.append(objectsIn: ["one", "two"])
            r.add(item)
        }
        try await setup.session(a).wait(for: .upload)
        try await setup.session(b).wait(for: .download)
        #expect(try Self.item(b, "x")?.title == "from a")
        #expect(try Self.item(b, "x").map { Array($0.tags) } == ["one", "two"])

        try Self.write(b) { r in r.object(ofType: SyncItem.self, forPrimaryKey: "x")!.title = "from b" }
        try await setup.session(b).wait(for: .upload)
        try await setup.session(a).wait(for: .download)
        #expect(try Self.item(a, "x")?.title == "from b")
        // Each side's outbox is empty once the server returned its change sets.
        try await setup.session(b).wait(for: .download)
        #expect(try Realm(configuration: a).pendingChanges().isEmpty)
        let bRealm = try Realm(configuration: b)
        let bPending = try bRealm.pendingChanges()
        #expect(bPending.isEmpty, "\(String(describing: bRealm.syncStatus)) \(bPending)")
        #expect(try setup.version("team") == 2)
        }
    }

    @Test func aClientWaitingOnTheLongPollGetsAnotherClientsCommitWithoutAsking() async throws {
        try await Setup.with { setup in
        let token = try SyncServerProcess.token(write: ["team"])
        let a = setup.config("a.realm", token: token)
        let b = setup.config("b.realm", token: token)
        _ = try setup.session(b)  // b's session starts and waits on the server
        try Self.write(a) { r in r.add(SyncItem("pushed", title: "now")) }
        _ = try setup.session(a)
        let deadline = Date().addingTimeInterval(300)  // generous: the whole suite shares two cores
        while try Self.item(b, "pushed") == nil {
            guard Date() < deadline else {
                Issue.record("b never received a's commit")
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        }
    }

    /// A suspended session applies nothing, also what a long poll sent before `suspend()` brings back (found by
    /// the restore test: a client suspended before a backup applied the history the restore then lost).
    @Test func aSuspendedSessionAppliesNothingItsLongPollBringsBack() async throws {
        try await Setup.with { setup in
            let token = try SyncServerProcess.token(write: ["team"])
            let a = setup.config("a.realm", token: token)
            let b = setup.config("b.realm", token: token)
            try await setup.session(b).wait(for: .download)
            // b's session is back on its long poll.
            try await Task.sleep(for: .milliseconds(300))
            try setup.session(b).suspend()
            try Self.write(a) { r in r.add(SyncItem("while-suspended")) }
            try await setup.session(a).wait(for: .upload)
            try await Task.sleep(for: .milliseconds(500))
            #expect(try Self.item(b, "while-suspended") == nil, "a suspended session applied a change")
            try setup.session(b).resume()
            try await setup.session(b).wait(for: .download)
            #expect(try Self.item(b, "while-suspended") != nil)
        }
    }

    /// An idle session sleeps: its upload loop reads the outbox once per commit and once per 5 s, not in a loop
    /// (a cancelled timer used to leave a wake-up pending that ended the next sleep at once, so the loop ran
    /// without pause, reading the outbox about a thousand times a second).
    @Test func anIdleSessionSleeps() async throws {
        try await Setup.with { setup in
            let token = try SyncServerProcess.token(write: ["team"])
            let a = setup.config("a.realm", token: token)
            try Self.write(a) { r in r.add(SyncItem("one")) }
            try await setup.session(a).wait(for: .upload)
            try Self.write(a) { r in r.add(SyncItem("two")) }
            try await setup.session(a).wait(for: .upload)
            let before = try setup.session(a).idleUploadPasses
            try await Task.sleep(for: .seconds(1))
            let passes = try setup.session(a).idleUploadPasses - before
            #expect(passes <= 2, "\(passes) passes of the upload loop in 1 s with nothing to send")
        }
    }

    @Test func aNewClientStartsFromTheServersObjectsAndOneBehindACompactedHistoryKeepsItsOfflineEdits() async throws {
        try await Setup.with { setup in
            let token = try SyncServerProcess.token(write: ["team"])
            let a = setup.config("a.realm", token: token)
            let b = setup.config("b.realm", token: token)
            try Self.write(a) { r in
                r.add(SyncItem("kept", title: "one"))
                r.add(SyncItem("gone", title: "two"))
            }
            try await setup.session(a).wait(for: .upload)
            try await setup.session(b).wait(for: .download)
            // b goes offline and edits; meanwhile a deletes, edits, and the server compacts its whole history.
            try setup.session(b).suspend()
            try Self.write(b) { r in r.object(ofType: SyncItem.self, forPrimaryKey: "kept")!.tags.append("offline") }
            try Self.write(a) { r in
                r.delete(r.object(ofType: SyncItem.self, forPrimaryKey: "gone")!)
                r.object(ofType: SyncItem.self, forPrimaryKey: "kept")!.title = "three"
                r.object(ofType: SyncItem.self, forPrimaryKey: "kept")!.increment("count", by: 5)
            }
            try await setup.session(a).wait(for: .upload)
            let compacted = try run([try SyncServerProcess.executable, "compact", "--partition", "team", "--through", "2",
                                     "--postgres-port", "\(setup.cluster.port)", "--postgres-user", setup.cluster.user,
                                     "--postgres-database", setup.database])
            #expect(compacted.contains("after version 2"), "\(compacted)")
            #expect(try setup.history("team").isEmpty)

            // A new client starts from the objects, tombstone included.
            let c = setup.config("c.realm", token: token)
            try await setup.session(c).wait(for: .download)
            #expect(try Realm(configuration: c).syncStatus?.serverVersion == 2)
            #expect(try Self.item(c, "gone") == nil)
            #expect(try Self.item(c, "kept")?.title == "three")
            #expect(try Self.item(c, "kept")?.count == 5)

            // b catches up past the history it missed, and its offline edit is kept and uploaded.
            try setup.session(b).resume()
            try await setup.session(b).wait(for: .download)
            try await setup.session(b).wait(for: .upload)
            #expect(try Self.item(b, "gone") == nil)
            #expect(try Self.item(b, "kept").map { Array($0.tags) } == ["offline"])
            #expect(try Self.item(b, "kept")?.title == "three")
            try await setup.session(c).wait(for: .download)
            try await setup.session(a).wait(for: .download)
            let server = SyncContents.normalized(try setup.objects("team"))
            for config in [a, b, c] {
                let diff = SyncContents.difference(try SyncContents.of(try Realm(configuration: config)), server)
                #expect(diff == nil, "\(config.fileURL!.lastPathComponent): \(diff ?? "")")
            }
            // A delete's tombstone reached the new client: a create by a client that had not seen the delete
            // does not bring the object back there either.
            let stale = ChangeSet(clientID: 77, sequence: 1, baseVersion: 1, schemaVersion: 0,
                                  operations: [.create(SyncTesting.ref("gone"), values: ["id": .string("gone"), "title": .string("stale")])])
            #expect(try await setup.post("v1/partitions/team/push", body: SyncWire.encoder.encode(PushRequest(clientID: 77, changeSets: [stale])),
                                         token: token).0 == 200)
            try await setup.session(c).wait(for: .download)
            #expect(try Self.item(c, "gone") == nil)
            #expect(try setup.objects("team")[SyncTesting.ref("gone")] == nil)
        }
    }

    @Test func tokensGrantOnlyTheirPartitionsAndRefusedRequestsChangeNothing() async throws {
        let setup = try Setup()
        let writer = try SyncServerProcess.token(write: ["a"])
        let reader = try SyncServerProcess.token(write: [], readOnly: ["b"])
        let expired = try SyncServerProcess.token(write: ["a"], expiresIn: -60)
        let forged = try SyncServerProcess.token(write: ["a"], secret: "not-the-servers-secret-0123456789abcdef")
        let change = ChangeSet(clientID: 7, sequence: 1, baseVersion: 0, schemaVersion: 0,
                               operations: [.create(SyncTesting.ref("p"), values: ["id": .string("p")])])
        let push = try SyncWire.encoder.encode(PushRequest(clientID: 7, changeSets: [change]))
        let pull = try SyncWire.encoder.encode(PullRequest(clientID: 7, after: 0))

        func expectRefused(_ path: String, _ body: Data, _ token: String?, _ status: Int, _ code: WireError.Code) async throws {
            let (s, e) = try await setup.post(path, body: body, token: token)
            #expect(s == status, "\(path): \(String(describing: e))")
            #expect(e?.code == code, "\(path): \(String(describing: e))")
        }
        try await expectRefused("v1/partitions/b/push", push, writer, 403, .forbidden)
        try await expectRefused("v1/partitions/b/pull", pull, writer, 403, .forbidden)
        try await expectRefused("v1/partitions/b/push", push, reader, 403, .forbidden)
        try await expectRefused("v1/partitions/a/push", push, expired, 401, .unauthorized)
        try await expectRefused("v1/partitions/a/push", push, forged, 401, .unauthorized)
        try await expectRefused("v1/partitions/a/push", push, nil, 401, .unauthorized)
        try await expectRefused("v1/partitions/a/push", push, "not.a.token", 401, .unauthorized)
        try await expectRefused("v1/partitions/a/push", Data("{\"clientID\":".utf8), writer, 400, .malformed)
        var truncated = PushRequest(clientID: 7, changeSets: [])
        truncated.changeSets = [EncodedChangeSet(bytes: EncodedChangeSet(change).bytes.dropLast(3))]
        try await expectRefused("v1/partitions/a/push", try SyncWire.encoder.encode(truncated), writer, 400, .malformed)
        try await expectRefused("v1/partitions/a%20b/push", push, writer, 400, .malformed)
        let other = try SyncWire.encoder.encode(PushRequest(clientID: 8, changeSets: [change]))
        try await expectRefused("v1/partitions/a/push", other, writer, 400, .wrongClient)
        try await expectRefused("v1/partitions/a/push", Data(count: 17 << 20), writer, 413, .tooLarge)
        #expect(try setup.version("a") == 0)
        #expect(try setup.version("b") == 0)
        #expect(try setup.cluster.sql("SELECT count(*) FROM strata_objects", database: setup.database).hasPrefix("0"))

        // The reader reads b; the writer writes a, and the same push again changes nothing.
        #expect(try await setup.post("v1/partitions/b/pull", body: pull, token: reader).0 == 200)
        #expect(try await setup.post("v1/partitions/a/push", body: push, token: writer).0 == 200)
        #expect(try await setup.post("v1/partitions/a/push", body: push, token: writer).0 == 200)
        #expect(try setup.version("a") == 1)
    }
}
