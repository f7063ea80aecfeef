import ArgumentParser
import Foundation
import Logging
import PostgresNIO
import StrataSyncServer

/// `strata-sync-server serve` runs the sync server; `strata-sync-server token` signs a token for trying it out.
@main
struct SyncServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "strata-sync-server",
        abstract: "Strata's sync server: its state is all in PostgreSQL.",
        subcommands: [Serve.self, Token.self, Compact.self, Demo.self],
        defaultSubcommand: Serve.self)
}

/// Where the keys come from: a file or the environment, never the command line (which `ps` shows).
struct KeyOptions: ParsableArguments {
    @Option(help: "A file holding the HS256 secret (at least 32 bytes). Or set STRATA_SYNC_HS256_SECRET.")
    var hs256SecretFile: String?

    @Option(help: "A PEM file holding the ES256 public key tokens are checked with.")
    var es256PublicKeyFile: String?

    func hs256Secret() throws -> String? {
        if let hs256SecretFile {
            return try String(contentsOfFile: hs256SecretFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        return ProcessInfo.processInfo.environment["STRATA_SYNC_HS256_SECRET"]
    }
}

/// Where the database is: options with PostgreSQL's environment variables as defaults.
struct DatabaseOptions: ParsableArguments {
    @Option(help: "PostgreSQL's host (or PGHOST).") var postgresHost: String?
    @Option(help: "PostgreSQL's port (or PGPORT).") var postgresPort: Int?
    @Option(help: "PostgreSQL's user (or PGUSER); the password comes from PGPASSWORD.") var postgresUser: String?
    @Option(help: "The database (or PGDATABASE).") var postgresDatabase: String?

    var configuration: PostgresConnection.Configuration {
        let env = ProcessInfo.processInfo.environment
        let user = postgresUser ?? env["PGUSER"] ?? "postgres"
        return PostgresConnection.Configuration(
            host: postgresHost ?? env["PGHOST"] ?? "127.0.0.1", port: postgresPort ?? env["PGPORT"].flatMap(Int.init) ?? 5432,
            username: user, password: env["PGPASSWORD"], database: postgresDatabase ?? env["PGDATABASE"] ?? user, tls: .disable)
    }
}

struct Compact: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Remove a partition's history that every client has pulled (clients behind it then get a snapshot).")

    @Option(help: "The partition.") var partition: String
    @Option(help: "Remove through this version, whoever has not pulled it (default: the oldest client cursor).") var through: UInt64?
    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let logger = Logger(label: "strata-sync-server")
        let pg = database.configuration
        let client = PostgresClient(configuration: PostgresClient.Configuration(
            host: pg.host ?? "127.0.0.1", port: pg.port ?? 5432, username: pg.username, password: pg.password,
            database: pg.database, tls: .disable), backgroundLogger: logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            let db = SyncDatabase(client: client, logger: logger)
            try await db.prepare()
            let after = try await db.compact(partition: partition, through: through)
            print("partition \(partition): history now begins after version \(after)")
            group.cancelAll()
        }
    }
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Serve sync clients (until SIGTERM or SIGINT).")

    @Option(help: "The address to listen on.") var host = "127.0.0.1"
    @Option(help: "The port to listen on (0: any free port; the first line printed names it).") var port = 8080
    @Option(help: "The largest request taken, in bytes.") var maxRequestBytes = 16 << 20
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var keys: KeyOptions

    func run() async throws {
        let env = ProcessInfo.processInfo.environment
        var logger = Logger(label: "strata-sync-server")
        logger.logLevel = env["STRATA_SYNC_LOG"].flatMap(Logger.Level.init(rawValue:)) ?? .notice
        let postgres = database.configuration
        let pem = try keys.es256PublicKeyFile.map { try String(contentsOfFile: $0, encoding: .utf8) }
        let tokens = try await SyncTokenVerifier(hs256Secret: try keys.hs256Secret(), es256PublicKeyPEM: pem)
        let configuration = SyncServerConfiguration(host: host, port: port, postgres: postgres, maxRequestBytes: maxRequestBytes)
        try await SyncServer.run(configuration, tokens: tokens, logger: logger) { port in
            // Unbuffered: a supervisor (or a test) reads the port from this line while the server runs.
            FileHandle.standardOutput.write(Data("strata-sync-server listening on \(configuration.host):\(port)\n".utf8))
        }
    }
}

struct Token: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print an HS256 token granting partitions, for trying the server out.")

    @Option(help: "Who the token is for.") var subject = "developer"
    @Option(help: "A partition to grant reading and writing (repeat for more).") var partition: [String] = []
    @Option(help: "A partition to grant reading only (repeat for more).") var readOnlyPartition: [String] = []
    @Option(help: "Seconds until the token expires.") var expiresIn = 86_400
    @OptionGroup var keys: KeyOptions

    func run() async throws {
        guard let secret = try keys.hs256Secret() else {
            throw ValidationError("give --hs256-secret-file or set STRATA_SYNC_HS256_SECRET")
        }
        let claims = SyncTokenClaims(subject: subject, expires: Date().addingTimeInterval(TimeInterval(expiresIn)),
                                     read: partition + readOnlyPartition, write: partition)
        print(try await SyncTokenSigner(hs256Secret: secret).sign(claims))
    }
}

/// A server on a PostgreSQL cluster of its own, for trying sync out: `initdb` in a temporary directory (as the
/// `postgres` user when run as root, which PostgreSQL refuses), the server, a token printed, all stopped on
/// SIGINT or SIGTERM.
struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Start PostgreSQL and a server on it, for trying sync out.")

    @Option(help: "The port to listen on.") var port = 8080
    @Option(help: "The partition the printed token grants.") var partition = "demo"

    func run() async throws {
        let cluster = try ThrowawayPostgres()
        defer { cluster.stop() }
        let secret = ProcessInfo.processInfo.environment["STRATA_SYNC_HS256_SECRET"]
            ?? (0..<4).map { _ in String(UInt64.random(in: .min ... .max), radix: 16) }.joined()
        let claims = SyncTokenClaims(subject: "demo", expires: Date().addingTimeInterval(86_400 * 30), read: [partition], write: [partition])
        let token = try await SyncTokenSigner(hs256Secret: secret).sign(claims)
        var logger = Logger(label: "strata-sync-server")
        logger.logLevel = .notice
        let postgres = cluster.configuration
        let tokens = try await SyncTokenVerifier(hs256Secret: secret, es256PublicKeyPEM: nil)
        let configuration = SyncServerConfiguration(port: port, postgres: postgres)
        try await SyncServer.run(configuration, tokens: tokens, logger: logger) { port in
            FileHandle.standardOutput.write(Data("""
                strata-sync-server listening on 127.0.0.1:\(port) (PostgreSQL in \(cluster.directory), port \(cluster.port))
                a token for partition \(partition), valid 30 days:
                \(token)

                """.utf8))
        }
    }
}

