import Foundation
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

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

    static var isRoot: Bool { geteuid() == 0 }

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

    private func postgres(_ arguments: [String]) throws {
        try run(Self.isRoot ? ["/usr/sbin/runuser", "-u", "postgres", "--"] + arguments : arguments)
    }
}

struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

/// Runs a program to its end; throws with what it printed when it fails. It is spawned and waited for with
/// posix_spawn and waitpid, its output going to a file: a daemon it starts (PostgreSQL's) would keep a pipe open
/// for as long as it runs, and Foundation's `Process` did not notice `runuser`'s exit from an async test.
@discardableResult
func run(_ arguments: [String], environment: [String: String]? = nil) throws -> String {
    let outputPath = NSTemporaryDirectory() + "strata-run-\(UUID().uuidString)"
    defer { unlink(outputPath) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
    let env = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
    let argv = arguments.map { strdup($0) } + [nil]
    let envp = env.map { strdup($0) } + [nil]
    defer { for p in argv + envp { free(p) } }
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, arguments[0], &actions, nil, argv, envp)
    guard spawned == 0 else { throw HarnessError("\(arguments[0]) could not be started: \(String(cString: strerror(spawned)))") }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
    let exited = status & 0x7f == 0
    let code = (status >> 8) & 0xff
    guard exited && code == 0 else {
        throw HarnessError("\(arguments.prefix(3).joined(separator: " ")) failed (status \(status)): \(text)")
    }
    return text
}

/// A free TCP port on loopback (bound, read, released).
func freePort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw HarnessError("socket failed") }
    defer { close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_port = 0
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    let bound = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    guard bound == 0 else { throw HarnessError("bind failed") }
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
    return Int(UInt16(bigEndian: addr.sin_port))
}

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

    deinit { stop(signal: SIGKILL) }

    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// What the server wrote to standard error so far.
    var logText: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

    func stop(signal: Int32 = SIGTERM) {
        guard process.isRunning else { return }
        kill(process.processIdentifier, signal)
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
