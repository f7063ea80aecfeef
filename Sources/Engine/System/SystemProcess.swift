// Guards: the C library calls that tools, test children, the fuzz entry and the Bench make (environment,
// standard streams, exit, sleeping, signals to children, temporary directories, the heap). They live here so
// that no file outside Engine/System names a C module; each is one call with the platform's spelling.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

private func cWrite(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int { write(fd, bytes, count) }
private func cExit(_ code: Int32) -> Never { exit(code) }
private func cAbort() -> Never { abort() }
private func cKill(_ pid: Int32, _ signal: Int32) -> Int32 { kill(pid, signal) }
private func cUnlink(_ path: UnsafePointer<CChar>) -> Int32 { unlink(path) }
private func cRmdir(_ path: UnsafePointer<CChar>) -> Int32 { rmdir(path) }

/// The process and its surroundings, for executables and tests of this package (not the library's users).
package enum SystemProcess {
    /// The value of the environment variable `name` (`getenv`).
    package static func environment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// Writes `text` to standard output with one unbuffered `write`: a line a parent reads the moment it is
    /// written, even if the process is killed right after.
    package static func writeStandardOutput(_ text: String) { writeAll(1, text) }

    /// Writes `text` to standard error, unbuffered.
    package static func writeStandardError(_ text: String) { writeAll(2, text) }

    private static func writeAll(_ fd: Int32, _ text: String) {
        var text = text
        text.withUTF8 { bytes in
            var done = 0
            while done < bytes.count {
                let n = cWrite(fd, bytes.baseAddress! + done, bytes.count - done)
                if n <= 0 { return }
                done += n
            }
        }
    }

    /// Ends the process with `code` (`exit`: buffered streams are flushed).
    package static func exit(_ code: Int32) -> Never { cExit(code) }

    /// Ends the process at once (`abort`), as a crash: what a fuzz target does on a wrong result.
    package static func abort() -> Never { cAbort() }

    /// Sleeps the calling thread.
    package static func sleep(microseconds: UInt32) { _ = usleep(microseconds) }

    /// Sends SIGKILL to the process `pid` (a test's child): it ends without running any of its code.
    package static func killHard(_ pid: Int32) { _ = cKill(pid, SIGKILL) }

    /// Sends `signal` to the process `pid` (SIGTERM: the sync server's graceful stop).
    package static func signal(_ pid: Int32, _ signal: Int32) { _ = cKill(pid, signal) }

    package static var sigterm: Int32 { SIGTERM }
    package static var sigint: Int32 { SIGINT }

    /// Whether the process runs as root (PostgreSQL's programs refuse to; they then run as `postgres`).
    package static var isRoot: Bool { geteuid() == 0 }

    /// Runs the program `arguments[0]` to its end (posix_spawn and waitpid) with standard input from /dev/null and
    /// its output (both streams) written to `outputPath`, or discarded; returns its exit status, or -1 when a
    /// signal ended it. No pipe: a daemon it starts (PostgreSQL's) would hold a pipe open as long as it runs.
    package static func run(_ arguments: [String], environment: [String: String], outputPath: String?) throws -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for p in argv + envp { free(p) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, arguments[0], &actions, nil, argv, envp)
        guard spawned == 0 else { throw SystemProcessError("\(arguments[0]) could not be started: \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return status & 0x7f == 0 ? (status >> 8) & 0xff : -1
    }

    /// Whether standard output is a terminal (`isatty`).
    package static var standardOutputIsTerminal: Bool { isatty(1) != 0 }

    /// The system's description of `errno` value `code` (`strerror`).
    package static func errorDescription(_ code: Int32) -> String { String(cString: strerror(code)) }

    /// Creates a new, empty directory `base/label-XXXXXX` (`mkdtemp`) and returns its path.
    package static func makeTemporaryDirectory(in base: String, label: String) throws -> String {
        var template = Array("\(base)/\(label)-XXXXXX".utf8CString)
        let path = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!).map { String(cString: $0) } }
        guard let path else { throw Syscalls.fail("mkdtemp", base) }
        return path
    }

    /// Removes `path` and, if it is a directory, everything in it; what cannot be removed is left.
    package static func removeTree(_ path: String) {
        var st = stat()
        guard path.withCString({ lstat($0, &st) }) == 0 else { return }
        if st.st_mode & S_IFMT == S_IFDIR {
            for name in (try? Syscalls.listDirectory(path)) ?? [] { removeTree(path + "/" + name) }
            _ = path.withCString { cRmdir($0) }
        } else {
            _ = path.withCString { cUnlink($0) }
        }
    }

    /// The size of the file at `path` in bytes, or 0 when it cannot be read (`stat`).
    package static func fileBytes(_ path: String) -> Int {
        var st = stat()
        return path.withCString { stat($0, &st) } == 0 ? Int(st.st_size) : 0
    }

    /// Returns memory the allocator holds but no longer uses to the system (glibc's `malloc_trim(0)`, looked
    /// up at run time: the C library module does not declare it); nothing elsewhere.
    package static func trimHeap() {
        #if canImport(Glibc)
        typealias Trim = @convention(c) (Int) -> Int32
        guard let program = dlopen(nil, RTLD_NOW), let symbol = dlsym(program, "malloc_trim") else { return }
        _ = unsafeBitCast(symbol, to: Trim.self)(0)
        #endif
    }
}

package struct SystemProcessError: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}
