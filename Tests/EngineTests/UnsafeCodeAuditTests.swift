import Foundation
import Testing

/// Pointer code and C imports stay in the few files that are audited for them (STYLE.md, "Unsafe code").
@Suite struct UnsafeCodeAuditTests {
    static let sources = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources")

    /// Files allowed to hold each kind of construct, relative to Sources/.
    static let allowed: [(pattern: String, files: Set<String>)] = [
        ("advanced(by:", []),
        ("assumingMemoryBound", ["Engine/System/MetadataSections.swift"]),
        ("bindMemory", []),
        ("UnsafeMutable", [
            "Engine/System/MappedRegion.swift", "Engine/System/Syscalls.swift", "Engine/System/SystemProcess.swift",
            "Engine/System/MetadataSections.swift", "Engine/Compression/LZ4.swift",
            // Drains inotify's events into a buffer it owns (read(2) with the buffer's own count).
            "Engine/System/DirectoryWatch.swift",
            // A bit set's words in one allocation it owns, read through swift-atomics at a checked index.
            "Engine/System/AtomicBits.swift",
            // Loopback TCP for the sync tests: socket addresses for bind and getsockname, recv into its own buffer.
            "Engine/System/LoopbackSocket.swift",
            // The Swift codecs: every access is checked against the buffers' bounds (CodecCompatibilityTests).
            "Engine/Compression/PortableLZ4.swift", "Engine/Checksum/PortableXXH3.swift",
            // Reads the Swift runtime's type metadata records to find the model classes (no write through a pointer).
            "Strata/Schema/ModelDiscovery.swift",
            // Writes each @Persisted storage's property index into a model instance, at the offsets the runtime
            // gives for the class's fields.
            "Strata/Model/PersistedSlots.swift",
        ]),
        ("baseAddress!", [
            "Engine/System/Syscalls.swift", "Engine/System/MappedRegion.swift", "Engine/System/SystemProcess.swift",
            "Engine/Compression/PortableLZ4.swift", "Engine/Checksum/PortableXXH3.swift",
        ]),
    ] + Self.cModules.map { ("import \($0)", Self.systemFiles) } + [
        ("import CLZ4", ["Engine/Compression/LZ4.swift"]),
        ("import CXXHash", ["Engine/Checksum/Checksum.swift"]),
        ("import CSwiftRuntime", ["Engine/System/AllocatingInitializers.swift"]),
        ("import MachO", ["Engine/System/MetadataSections.swift"]),
    ]

    /// The C library's modules on each platform, named only in the system layer (issue 34).
    static let cModules = ["Glibc", "Musl", "Darwin", "Android", "WinSDK"]
    static let systemFiles: Set<String> = [
        "Engine/System/Syscalls.swift", "Engine/System/MappedRegion.swift", "Engine/System/SystemProcess.swift",
        "Engine/System/MetadataSections.swift", "Engine/System/DirectoryWatch.swift", "Engine/System/LoopbackSocket.swift",
    ]

    @Test func pointerCodeStaysInTheAuditedFiles() throws {
        let files = try #require(FileManager.default.enumerator(atPath: Self.sources.path)).compactMap { $0 as? String }
            .filter { $0.hasSuffix(".swift") }
        #expect(files.count > 10, "found no sources at \(Self.sources.path)")
        var violations: [String] = []
        for file in files {
            let text = try String(contentsOf: Self.sources.appendingPathComponent(file), encoding: .utf8)
            for (pattern, allowedFiles) in Self.allowed where text.contains(pattern) && !allowedFiles.contains(file) {
                violations.append("\(file) uses \(pattern)")
            }
        }
        #expect(violations == [])
    }

    /// Nothing outside the system layer names a C module, by import or by a qualified call such as
    /// `Glibc.open` (which does not compile on Darwin): not the library, the tests, the test children, the
    /// fuzz entry, the Bench or the examples. What they need goes through `SystemProcess` or Foundation.
    @Test func noCModuleIsNamedOutsideTheSystemLayer() throws {
        let root = Self.sources.deletingLastPathComponent()
        let modules = Self.cModules.joined(separator: "|")
        let named = try Regex("(import (\(modules))\\b)|\\b(\(modules))\\.[A-Za-z_]")
        var violations: [String] = []
        var checked = 0
        for folder in ["Sources", "Tests", "Fuzz", "Benchmarks", "Examples"] {
            let base = root.appendingPathComponent(folder)
            let files = try #require(FileManager.default.enumerator(atPath: base.path)).compactMap { $0 as? String }
                .filter { $0.hasSuffix(".swift") && !$0.hasSuffix("UnsafeCodeAuditTests.swift") }
            for file in files where !(folder == "Sources" && Self.systemFiles.contains(file)) {
                let text = try String(contentsOf: base.appendingPathComponent(file), encoding: .utf8)
                checked += 1
                for line in text.split(separator: "\n") where !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") {
                    if line.contains(named) { violations.append("\(folder)/\(file): \(line.trimmingCharacters(in: .whitespaces))") }
                }
            }
        }
        #expect(checked > 100, "found too few sources under \(root.path)")
        #expect(violations == [])
    }

    @Test func engineKnowsNothingOfObjects() throws {
        let engine = Self.sources.appendingPathComponent("Engine")
        let files = try #require(FileManager.default.enumerator(atPath: engine.path)).compactMap { $0 as? String }
            .filter { $0.hasSuffix(".swift") }
        for file in files {
            let text = try String(contentsOf: engine.appendingPathComponent(file), encoding: .utf8)
            #expect(!text.contains("import Strata"), "\(file) imports the object layer")
        }
    }
}
