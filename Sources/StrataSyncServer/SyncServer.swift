import Foundation
import Hummingbird
import Logging
import PostgresNIO
import Strata
import StrataSyncWire

/// How a sync server runs: where it listens, its database, its limits.
public struct SyncServerConfiguration: Sendable {
    public var host: String
    /// 0 picks a free port (`onListening` tells which).
    public var port: Int
    public var postgres: PostgresConnection.Configuration
    /// The largest request body taken (bytes); a larger one gets `tooLarge` (413).
    public var maxRequestBytes: Int
    /// The most change sets a pull returns.
    public var pullLimit: Int
    /// The longest a long poll waits.
    public var maxWait: Duration
    /// The most objects a page of a snapshot holds (a client asking for more gets this many).
    public var snapshotPageLimit: Int

    public init(host: String = "127.0.0.1", port: Int = 8080, postgres: PostgresConnection.Configuration,
                maxRequestBytes: Int = SyncWire.defaultMaxRequestBytes, pullLimit: Int = SyncWire.defaultPullLimit,
                maxWait: Duration = .seconds(30), snapshotPageLimit: Int = SyncWire.defaultSnapshotPage) {
        self.host = host
        self.port = port
        self.postgres = postgres
        self.maxRequestBytes = maxRequestBytes
        self.pullLimit = pullLimit
        self.maxWait = maxWait
        self.snapshotPageLimit = snapshotPageLimit
    }
}

/// The sync server: stateless HTTP in front of `SyncDatabase`. Several server processes may serve one database.
public enum SyncServer {
    /// Runs until the process gets SIGTERM or SIGINT (or the task is cancelled). `onListening` gets the port.
    public static func run(_ configuration: SyncServerConfiguration, tokens: SyncTokenVerifier, logger: Logger,
                           onListening: @escaping @Sendable (Int) -> Void = { _ in }) async throws {
        let pg = configuration.postgres
        let client = PostgresClient(configuration: PostgresClient.Configuration(
            host: pg.host ?? "127.0.0.1", port: pg.port ?? 5432, username: pg.username, password: pg.password,
            database: pg.database, tls: .disable), backgroundLogger: logger)
        let database = SyncDatabase(client: client, logger: logger)
        let waiters = PartitionWaiters()
        let router = Router()
        Routes(database: database, waiters: waiters, tokens: tokens, configuration: configuration, logger: logger).add(to: router)
        var app = Application(
            router: router,
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "strata-sync"),
            services: [client],
            onServerRunning: { channel in onListening(channel.localAddress?.port ?? configuration.port) },
            logger: logger)
        app.beforeServerStarts { try await database.prepare() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await waiters.listen(configuration: pg, channel: SyncDatabase.channel, logger: logger) }
            try await app.runService()
            group.cancelAll()
        }
    }
}

/// The HTTP routes of protocol version 1 (see `StrataSyncWire`).
struct Routes: Sendable {
    let database: SyncDatabase
    let waiters: PartitionWaiters
    let tokens: SyncTokenVerifier
    let configuration: SyncServerConfiguration
    let logger: Logger

    func add(to router: Router<BasicRequestContext>) {
        router.add(middleware: ConnectionCloseEcho())
        router.get("/v1/health") { _, _ in "ok" }
        router.post("/v1/partitions/:partition/push") { request, context in
            await respond { try await push(request, context) }
        }
        router.post("/v1/partitions/:partition/pull") { request, context in
            await respond { try await pull(request, context) }
        }
        router.post("/v1/partitions/:partition/salts") { request, context in
            await respond { try await salts(request, context) }
        }
    }

    /// The request's partition, once its token grants reading it (or writing it).
    private func authorized(_ request: Request, _ context: BasicRequestContext, writing: Bool) async throws -> String {
        let partition = try partitionName(context)
        let claims = try await tokens.claims(authorization: request.headers[.authorization])
        guard (writing ? claims.write : claims.read).contains(partition) else {
            throw WireError(.forbidden, "the token of \(claims.sub.value) does not grant \(writing ? "writing" : "reading") partition \(partition)")
        }
        return partition
    }

    private func push(_ request: Request, _ context: BasicRequestContext) async throws -> Data {
        let partition = try await authorized(request, context, writing: true)
        let push = try SyncWire.decode(PushRequest.self, from: try await body(request))
        try checkProtocol(push.protocolVersion)
        let sets = try push.changeSets.map { try $0.decoded() }
        if let other = sets.first(where: { $0.clientID != push.clientID }) {
            throw WireError(.wrongClient, "change set \(other.sequence) is client \(other.clientID)'s, not the request's \(push.clientID)")
        }
        let response = try await database.push(partition: partition, clientID: push.clientID, changeSets: sets)
        // A push told to wait took nothing: the long polls have nothing new to see.
        if response.retryAfterMilliseconds == nil { await waiters.notify(partition) }
        return try SyncWire.encoder.encode(response)
    }

    private func pull(_ request: Request, _ context: BasicRequestContext) async throws -> Data {
        let partition = try await authorized(request, context, writing: false)
        let pull = try SyncWire.decode(PullRequest.self, from: try await body(request))
        try checkProtocol(pull.protocolVersion)
        guard pull.limit > 0 else { throw WireError(.malformed, "a pull's limit must be at least 1 (it was \(pull.limit))") }
        let limit = min(pull.limit, configuration.pullLimit)
        let recovery = pull.recovery ?? false
        if recovery && (pull.recoveryClientID ?? 0) == 0 {
            throw WireError(.malformed, "a recovery's pull names the client id of its change sets (recoveryClientID)")
        }
        var page: SnapshotPage?
        if let size = pull.snapshotPage {
            guard size > 0 else { throw WireError(.malformed, "a pull's snapshotPage must be at least 1 (it was \(size))") }
            if let after = pull.snapshotAfter, after.count > SyncWire.maxSnapshotCursor {
                throw WireError(.malformed, "a pull's snapshotAfter is \(after.count) bytes; a reference is at most \(SyncWire.maxSnapshotCursor)")
            }
            guard (pull.snapshotSeen == nil) == (pull.snapshotSeenSalt == nil) else {
                throw WireError(.malformed, "a pull's snapshotSeen and snapshotSeenSalt go together")
            }
            page = SnapshotPage(limit: min(size, configuration.snapshotPageLimit), after: pull.snapshotAfter.map(Array.init), since: pull.snapshotSince ?? 0,
                                seen: pull.snapshotSeen.map { ($0, pull.snapshotSeenSalt ?? 0) })
        } else if pull.snapshotAfter != nil || pull.snapshotSince != nil || pull.snapshotSeen != nil {
            throw WireError(.malformed, "a pull's snapshotAfter, snapshotSince and snapshotSeen go with snapshotPage")
        }
        let ticket = pull.waitMilliseconds > 0 && !recovery ? await waiters.register(partition) : nil
        var response = try await database.pull(
            partition: partition, clientID: pull.clientID, after: pull.after, afterSalt: pull.afterSalt ?? 0, limit: limit, recovery: recovery,
            recoveryClientID: pull.recoveryClientID ?? 0, page: page)
        if let ticket {
            if response.changes.isEmpty && response.snapshot == nil && response.diverged != true {
                await waiters.wait(ticket, timeout: min(.milliseconds(pull.waitMilliseconds), configuration.maxWait))
                response = try await database.pull(
                    partition: partition, clientID: pull.clientID, after: pull.after, afterSalt: pull.afterSalt ?? 0, limit: limit, again: true,
                    page: page)
            } else {
                await waiters.cancel(ticket)
            }
        }
        return try SyncWire.encoder.encode(response)
    }

    private func salts(_ request: Request, _ context: BasicRequestContext) async throws -> Data {
        let partition = try await authorized(request, context, writing: false)
        let ask = try SyncWire.decode(SaltsRequest.self, from: try await body(request))
        try checkProtocol(ask.protocolVersion)
        guard ask.versions.count <= SyncWire.maxSaltProbes else {
            throw WireError(.malformed, "a salts request asks about at most \(SyncWire.maxSaltProbes) versions (it asked about \(ask.versions.count))")
        }
        return try SyncWire.encoder.encode(try await database.salts(partition: partition, versions: ask.versions))
    }

    private func partitionName(_ context: BasicRequestContext) throws -> String {
        let name = context.parameters.get("partition") ?? ""
        guard SyncWire.isValidPartition(name) else {
            throw WireError(.malformed, "\"\(name.prefix(140))\" is not a partition name (1-128 of A-Z a-z 0-9 - _ .)")
        }
        return name
    }

    private func checkProtocol(_ version: Int) throws {
        guard version == SyncWire.protocolVersion else {
            throw WireError(.unsupportedProtocol, "protocol version \(version) is not this server's (\(SyncWire.protocolVersion))")
        }
    }

    private func body(_ request: Request) async throws -> Data {
        var out = Data()
        for try await chunk in request.body {
            guard out.count + chunk.readableBytes <= configuration.maxRequestBytes else {
                throw WireError(.tooLarge, "the request is larger than this server takes (\(configuration.maxRequestBytes) bytes)")
            }
            out.append(contentsOf: chunk.readableBytesView)
        }
        return out
    }

    /// The handler's JSON, or its refusal as a `WireError` with its status; a database failure is `unavailable`.
    private func respond(_ handler: () async throws -> Data) async -> Response {
        let status: Int
        let body: Data
        do {
            body = try await handler()
            status = 200
        } catch let error as WireError {
            status = error.httpStatus
            body = (try? SyncWire.encoder.encode(error)) ?? Data()
        } catch {
            logger.error("sync: a request failed: \(String(reflecting: error))")
            let refusal = WireError(.unavailable, "the server could not complete the request; retry later")
            status = refusal.httpStatus
            body = (try? SyncWire.encoder.encode(refusal)) ?? Data()
        }
        return Response(status: .init(code: status), headers: [.contentType: "application/json"],
                        body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }
}

/// Says `Connection: close` in the answer to a request that said it. The server closes such a connection after
/// its answer either way; a client that is not told (libcurl, under Linux's URLSession) may keep the connection for
/// its next request and, finding it closed, send that request again without its body, which then waits for its
/// timeout. The sync session asks for a connection per request on Linux.
struct ConnectionCloseEcho: RouterMiddleware {
    typealias Context = BasicRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        let asked = request.headers[.connection]?.lowercased().split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } ?? []
        if asked.contains("close") { response.headers[.connection] = "close" }
        return response
    }
}
