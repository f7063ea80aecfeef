import Engine
import Foundation
import PostgresNIO
import StrataSyncWire

/// A PostgreSQL cluster of its own in a temporary directory, for `strata-sync-server demo` and the Bench: `initdb`
/// (as the `postgres` user when run as root, which PostgreSQL refuses), started on a random loopback port,
/// removed by `stop()`.
public final class ThrowawayPostgres: Sendable {
    public let directory: String
    public let port: Int
    public let user = "strata"
    private let asPostgres = SystemProcess.isRoot

    public init() throws {
        directory = NSTemporaryDirectory() + "strata-sync-demo-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        port = Int.random(in: 20_000..<40_000)
        if asPostgres { try Self.run(["/bin/chown", "postgres", directory]) }
        try postgres(["initdb", "-D", "\(directory)/data", "-U", "strata", "--auth=trust", "-E", "UTF8", "--no-locale", "-N"])
        try postgres(["pg_ctl", "-D", "\(directory)/data", "-l", "\(directory)/log", "-w",
                      "-o", "-p \(port) -k \(directory) -c listen_addresses=127.0.0.1", "start"])
    }

    public func stop() {
        try? postgres(["pg_ctl", "-D", "\(directory)/data", "-m", "fast", "-w", "stop"])
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func postgres(_ arguments: [String]) throws {
        let program = try Self.find(arguments[0])
        try Self.run((asPostgres ? ["/usr/sbin/runuser", "-u", "postgres", "--"] : []) + [program] + arguments.dropFirst())
    }

    /// A PostgreSQL program on PATH, or in Debian's versioned directory.
    static func find(_ name: String) throws -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        let lib = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: lib)) ?? []).sorted(by: >)
        let candidates = path.split(separator: ":").map { "\($0)/\(name)" } + versions.map { "\(lib)/\($0)/bin/\(name)" }
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw WireError(.unavailable, "PostgreSQL's \(name) was not found: install Debian's postgresql package (bash .ci/install-deps)")
        }
        return found
    }

    /// A connection configuration for its `postgres` database.
    public var configuration: PostgresConnection.Configuration {
        PostgresConnection.Configuration(host: "127.0.0.1", port: port, username: user, password: nil, database: "postgres", tls: .disable)
    }

    static func run(_ arguments: [String]) throws {
        let status = try SystemProcess.run(arguments, environment: ProcessInfo.processInfo.environment, outputPath: nil)
        guard status == 0 else { throw WireError(.unavailable, "\(arguments.joined(separator: " ")) failed (status \(status))") }
    }


}
