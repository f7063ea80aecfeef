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
        ("assumingMemoryBound", []),
        ("bindMemory", []),
        ("UnsafeMutable", [
            "Engine/System/MappedRegion.swift", "Engine/System/Syscalls.swift", "Engine/Compression/LZ4.swift",
            // Reads the Swift runtime's type metadata records to find the model classes (no write through a pointer).
            "Strata/Schema/ModelDiscovery.swift",
        ]),
        ("import Glibc", ["Engine/System/Syscalls.swift", "Engine/System/MappedRegion.swift"]),
        ("import Darwin", ["Engine/System/Syscalls.swift", "Engine/System/MappedRegion.swift"]),
        ("import Musl", ["Engine/System/Syscalls.swift", "Engine/System/MappedRegion.swift"]),
        ("import CLZ4", ["Engine/Compression/LZ4.swift"]),
        ("import CXXHash", ["Engine/Checksum/Checksum.swift"]),
        ("baseAddress!", ["Engine/System/Syscalls.swift", "Engine/System/MappedRegion.swift"]),
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
