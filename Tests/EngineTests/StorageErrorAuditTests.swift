import Foundation
import Testing

/// No storage error is swallowed in the object layer (issue: damaged files give an error, never a wrong
/// answer): every `try?` in `Sources/Strata` says beside it, in a `// try?:` comment on its line or the line
/// above, why its error is not a storage read's; no `catch` is empty.
@Suite struct StorageErrorAuditTests {
    static let strata = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/Strata")

    /// Files exempt as a whole, and why (none now: the fuzz targets, which swallow errors on purpose, live in
    /// `Fuzz/Targets`, outside the library).
    static let exempt: [String: String] = [:]

    @Test func everyTryQuestionMarkSaysWhyItIsNotAStorageRead() throws {
        let files = try #require(FileManager.default.enumerator(atPath: Self.strata.path)).compactMap { $0 as? String }
            .filter { $0.hasSuffix(".swift") && Self.exempt[$0] == nil }
        #expect(files.count > 10, "found no sources at \(Self.strata.path)")
        let tryQuestion = try Regex(#"(^|[^A-Za-z0-9_])try\?"#)
        let emptyCatch = try Regex(#"catch\s*\{\s*\}"#)
        var violations: [String] = []
        for file in files {
            let text = try String(contentsOf: Self.strata.appendingPathComponent(file), encoding: .utf8)
            let lines = text.components(separatedBy: "\n")
            for (n, line) in lines.enumerated() where line.contains(tryQuestion) {
                let code = line.components(separatedBy: "//").first ?? line
                guard code.contains(tryQuestion) else { continue }
                let reasoned = line.contains("// try?:") || (n > 0 && lines[n - 1].contains("// try?:"))
                if !reasoned { violations.append("\(file):\(n + 1): \(line.trimmingCharacters(in: .whitespaces))") }
            }
            if text.contains(emptyCatch) { violations.append("\(file): an empty catch") }
        }
        #expect(violations == [], "give each a `// try?:` reason, or pass the error on (mustRead, throw)")
    }

    /// Trap messages survive release builds: `precondition`, `preconditionFailure`, `assert` and
    /// `assertionFailure` drop theirs under `-O`, so every source file traps through `require` or `fatalError`.
    @Test func trapsKeepTheirMessagesInReleaseBuilds() throws {
        let sources = Self.strata.deletingLastPathComponent()
        let files = try #require(FileManager.default.enumerator(atPath: sources.path)).compactMap { $0 as? String }
            .filter { $0.hasSuffix(".swift") }
        let trap = try Regex(#"(^|[^A-Za-z0-9_.])(precondition|preconditionFailure|assert|assertionFailure)\("#)
        var violations: [String] = []
        for file in files {
            let lines = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8).components(separatedBy: "\n")
            for (n, line) in lines.enumerated() {
                let code = line.components(separatedBy: "//").first ?? line
                if code.contains(trap) { violations.append("\(file):\(n + 1): \(line.trimmingCharacters(in: .whitespaces))") }
            }
        }
        #expect(files.count > 20)
        #expect(violations == [], "use require(_:_:) or fatalError, whose messages survive -O")
    }
}
