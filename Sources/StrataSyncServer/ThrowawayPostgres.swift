import Foundation
import PostgresNIO
import StrataSyncWire

#if canImport(Glibc)
import Glibc
#endif

/// A PostgreSQL cluster of its own in a temporary directory, for `strata-sync-server demo` and the Bench: `initdb`
/// (as the `postgres` user when run as root, which PostgreSQL refuses), started on a random loopback port,
/// removed by `stop()`.
public final class ThrowawayPostgres: Sendable {
    public let directory: String
    public let port: Int
    public let user = "strata"
    private let asPostgres = geteuid() == 0

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

    /// Runs a program to its end with posix_spawn and waitpid: Foundation's `Process` did not notice `runuser`'s
    /// exit here, and a pipe would stay open as long as the daemon that `pg_ctl` starts.
    static func run(_ arguments: [String]) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = ProcessInfo.processInfo.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for p in argv + envp { free(p) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, arguments[0], &actions, nil, argv, envp)
        guard spawned == 0 else { throw WireError(.unavailable, "\(arguments[0]) could not be started: \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        guard status == 0 else { throw WireError(.unavailable, "\(arguments.joined(separator: " ")) failed (status \(status))") }
    }

}
