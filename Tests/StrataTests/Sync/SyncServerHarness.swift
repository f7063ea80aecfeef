import Engine
import Foundation
import Testing
import TestSupport

/// A throwaway PostgreSQL cluster for one test: `initdb` in a temporary directory, a free port on loopback,
/// stopped (and removed) at the end. PostgreSQL refuses to run as root, so as root its programs run as the
/// `postgres` user that Debian's package creates. Durability settings are PostgreSQL's defaults but `fsync=off`:
/// the tests kill processes, never the machine, and the WAL they recover from is in the OS's cache either way.
final class PostgresCluster {
    let root: TemporaryDirectory
    let port: Int
    let user = "strata"
    var data: String { root.child("data") }
    private(set) var running = false

    static func binary(_ name: String) throws -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        var candidates = path.split(separator: ":").map { "\($0)/\(name)" }
        let lib = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: lib)) ?? []).sorted(by: >)
        candidates += versions.map { "\(lib)/\($0)/bin/\(name)" }
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw HarnessError("PostgreSQL's \(name) is not installed: `.ci/install-deps` installs Debian's postgresql package")
        }
        return found
    }

    static var isRoot: Bool { SystemProcess.isRoot }

    init() throws {
        root = try TemporaryDirectory("strata-pg")
        port = try freePort()
        if Self.isRoot { try run(["/bin/chown", "postgres", root.path]) }
        try postgres([try Self.binary("initdb"), "-D", data, "-U", user, "--auth=trust", "-E", "UTF8", "--no-locale", "-N"])
        try start()
    }

    deinit {
        if running { try? stop(mode: "immediate") }
    }

    func start() throws {
        let options = "-p \(port) -k \(root.path) -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
        try postgres([try Self.binary("pg_ctl"), "-D", data, "-l", root.child("log"), "-o", options, "-w", "-t", "60", "start"])
        running = true
    }

    /// Stops the cluster: `fast` (clean) or `immediate` (as a crash: recovery from the WAL at the next start).
    func stop(mode: String = "fast") throws {
        try postgres([try Self.binary("pg_ctl"), "-D", data, "-m", mode, "-w", "-t", "60", "stop"])
        running = false
    }

    /// Runs SQL with psql as the cluster's user and returns what it printed (unaligned, tuples only).
    @discardableResult
    func sql(_ statement: String, database: String = "postgres") throws -> String {
        try run([try Self.binary("psql"), "-h", "127.0.0.1", "-p", "\(port)", "-U", user, "-d", database, "-v", "ON_ERROR_STOP=1",
                 "-A", "-t", "-c", statement])
    }

    /// A fresh database of the cluster.
    func createDatabase(_ name: String) throws {
        try sql("CREATE DATABASE \(name)")
    }

    /// A backup of `database` as `pg_dump` makes it (its custom format), at `path`.
    func dump(_ database: String, to path: String) throws {
        try run([try Self.binary("pg_dump"), "-h", "127.0.0.1", "-p", "\(port)", "-U", user, "-Fc", "-f", path, database])
    }

    /// Replaces `database` with the backup at `path` (connections to it are ended).
    func restore(_ database: String, from path: String) throws {
        try sql("DROP DATABASE \(database) WITH (FORCE)")
        try createDatabase(database)
        try run([try Self.binary("pg_restore"), "-h", "127.0.0.1", "-p", "\(port)", "-U", user, "-d", database, path])
    }

    private func postgres(_ arguments: [String]) throws {
        try run(Self.isRoot ? ["/usr/sbin/runuser", "-u", "postgres", "--"] + arguments : arguments)
    }
}

struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

/// Runs a program to its end; throws with what it printed when it fails. Spawned and waited for with posix_spawn
/// and waitpid (`SystemProcess.run`): Foundation's `Process` did not notice `runuser`'s exit from an async test,
/// and a pipe would stay open as long as the daemon `pg_ctl` starts.
@discardableResult
func run(_ arguments: [String], environment: [String: String]? = nil) throws -> String {
    let outputPath = NSTemporaryDirectory() + "strata-run-\(UUID().uuidString)"
    defer { try? FileManager.default.removeItem(atPath: outputPath) }
    let status = try SystemProcess.run(arguments, environment: environment ?? ProcessInfo.processInfo.environment, outputPath: outputPath)
    let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
    guard status == 0 else {
        throw HarnessError("\(arguments.prefix(3).joined(separator: " ")) failed (status \(status)): \(text)")
    }
    return text
}

/// A free TCP port on loopback.
func freePort() throws -> Int { try LoopbackSocket.freePort() }

/// One `strata-sync-server` process on a database of a cluster, on a port it picked.
final class SyncServerProcess {
    static let secret = "strata-sync-test-secret-0123456789abcdef"

    static var executable: String {
        get throws {
            guard let path = BuildProducts.executable("strata-sync-server") else {
                throw HarnessError("strata-sync-server was not built beside the tests")
            }
            return path
        }
    }

    let process = Process()
    private(set) var port = 0
    let log: String

    /// Starts a server on `database` of `cluster` and waits for the line that names its port.
    init(cluster: PostgresCluster, database: String, dir: TemporaryDirectory, name: String = "server",
         environment extra: [String: String] = [:]) throws {
        log = dir.child("\(name).log")
        process.executableURL = URL(fileURLWithPath: try Self.executable)
        process.arguments = ["serve", "--port", "0", "--postgres-port", "\(cluster.port)", "--postgres-user", cluster.user,
                             "--postgres-database", database]
        var env = ProcessInfo.processInfo.environment
        env["STRATA_SYNC_HS256_SECRET"] = Self.secret
        env.merge(extra) { _, new in new }
        process.environment = env
        let out = Pipe()
        process.standardOutput = out
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        process.standardError = FileHandle(forWritingAtPath: log)
        try process.run()
        let reader = out.fileHandleForReading
        var line = Data()
        let deadline = Date().addingTimeInterval(120)
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = reader.availableData
            if chunk.isEmpty {
                guard process.isRunning, Date() < deadline else {
                    throw HarnessError("the sync server did not start: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
                }
                continue
            }
            line.append(chunk)
        }
        let text = String(decoding: line, as: UTF8.self)
        guard let p = text.split(separator: ":").last.flatMap({ Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }) else {
            throw HarnessError("the sync server printed \(text)")
        }
        port = p
    }

    deinit { kill() }

    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// What the server wrote to standard error so far.
    var logText: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

    /// Stops the server as a supervisor does (SIGTERM: it finishes what it serves).
    func stop() {
        guard process.isRunning else { return }
        SystemProcess.signal(process.processIdentifier, SystemProcess.sigterm)
        process.waitUntilExit()
    }

    /// Kills the server (SIGKILL): whatever it was doing stops there.
    func kill() {
        guard process.isRunning else { return }
        SystemProcess.killHard(process.processIdentifier)
        process.waitUntilExit()
    }

    /// A token from the `token` command, signed with the servers' secret (or forged with another), granting
    /// `write` partitions for reading and writing and `readOnly` ones for reading.
    static func token(subject: String = "tester", write: [String], readOnly: [String] = [], expiresIn: Int = 3600,
                      secret: String = SyncServerProcess.secret) throws -> String {
        var env = ProcessInfo.processInfo.environment
        env["STRATA_SYNC_HS256_SECRET"] = secret
        let grants = write.flatMap { ["--partition", $0] } + readOnly.flatMap { ["--read-only-partition", $0] }
        return try run([try executable, "token", "--subject", subject, "--expires-in=\(expiresIn)"] + grants,
                       environment: env).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
