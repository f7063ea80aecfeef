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
