import Foundation
import FuzzTargets
import Testing

/// Replays every committed corpus input through its fuzz target: every past finding stays fixed, and no
/// seed makes a decoder trap or disagree with itself.
@Suite struct FuzzReplayTests {
    static let corpus = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz/Corpus")

    @Test(arguments: FuzzTargets.all.keys.sorted())
    func corpusReplaysCleanly(target: String) throws {
        let dir = Self.corpus.appendingPathComponent(target)
        let files = (try? FileManager.default.contentsOfDirectory(atPath: dir.path))?.sorted() ?? []
        #expect(!files.isEmpty, "Fuzz/Corpus/\(target) has no inputs")
        let run = try #require(FuzzTargets.all[target])
        for name in files {
            let bytes = [UInt8](try Data(contentsOf: dir.appendingPathComponent(name)))
            #expect(run(bytes) == nil, "Fuzz/Corpus/\(target)/\(name)")
        }
    }

    @Test func seedsWrittenByTheCodeReplayCleanly() throws {
        for (target, inputs) in try FuzzTargets.seeds() {
            let run = try #require(FuzzTargets.all[target])
            for (i, bytes) in inputs.enumerated() { #expect(run(bytes) == nil, "\(target) seed \(i)") }
        }
    }
}
