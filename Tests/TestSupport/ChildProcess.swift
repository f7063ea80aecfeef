import Engine
import Foundation

/// Runs a built executable of the package to its end and returns its exit status and standard output.
public func runChild(_ name: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
    guard let path = BuildProducts.executable(name) else { throw ChildProcessError("\(name) was not built beside the tests") }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    let output = Pipe()
    process.standardOutput = output
    try process.run()
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
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    SystemProcess.sleep(microseconds: microseconds)
    SystemProcess.killHard(process.processIdentifier)
    process.waitUntilExit()
    return String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
}
