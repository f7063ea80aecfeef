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

