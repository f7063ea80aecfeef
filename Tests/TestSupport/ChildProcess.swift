import Engine
import Foundation

/// Runs a built executable of the package to its end and returns its exit status and standard output.
public func runChild(_ name: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
    guard let path = BuildProducts.executable(name) else { throw ChildProcessError("\(name) was not built beside the tests") }
    let (process, output) = try startChild(path, arguments)
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
}

public struct ChildProcessError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Starts the executable at `path`, kills it (SIGKILL) after `microseconds`, and returns what it printed until
/// then: for the tests that kill a writer at random instants.
public func runChildKilled(_ path: String, _ arguments: [String], afterMicroseconds microseconds: UInt32) throws -> String {
    let (process, output) = try startChild(path, arguments)
    SystemProcess.sleep(microseconds: microseconds)
    SystemProcess.killHard(process.processIdentifier)
    process.waitUntilExit()
    return String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
}

/// The running child and the pipe of its standard output.
private func startChild(_ path: String, _ arguments: [String]) throws -> (Process, Pipe) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    return (process, output)
}

/// Collects what a child writes to a pipe, on a thread of its own that reads until the end of the stream (no
/// dispatch source: on Linux, `FileHandle.readabilityHandler` can crash libdispatch when a killed child's pipe
/// closes while the handler is being removed).
public final class OutputCollector: @unchecked Sendable {
    private let text = Locked("")
    private let done = DispatchSemaphore(value: 0)

    public init(_ pipe: Pipe) {
        let handle = pipe.fileHandleForReading
        let text = self.text
        let done = self.done
        Thread {
            defer { done.signal() }
            while true {
                let data = handle.availableData
                if data.isEmpty { return }
                text.withLock { $0 += String(decoding: data, as: UTF8.self) }
            }
        }.start()
    }

    /// Everything read so far.
    public var output: String { text.withLock { $0 } }

    /// Waits until the stream ended (the child exited and every byte was read).
    public func waitForEnd() { done.wait() }
}
