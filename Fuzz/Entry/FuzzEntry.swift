// The fuzzing executable. Built with `-DFUZZING --sanitize=fuzzer` (see Fuzz/run.sh) it is a libFuzzer
// target whose function is chosen by the FUZZ_TARGET environment variable. Built normally it replays files:
// `Fuzz TARGET FILE...`, or writes the seed corpus: `Fuzz --write-seeds DIRECTORY`.
// With FUZZ_PORTABLE=1 the engine uses its Swift LZ4 and XXH3 even where liblz4 and libxxhash are linked, so
// that every target (encryptedDamage, segmentDecode, ...) fuzzes the Swift decoder.

import Engine
import Foundation
import FuzzTargets

/// Writes a line to standard error (fd 2) without touching C's global `stderr`.
func printError(_ text: String) {
    SystemProcess.writeStandardError(text + "\n")
}

#if FUZZING
nonisolated(unsafe) private var selected: (@Sendable ([UInt8]) -> String?)? = nil

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    if selected == nil {
        if SystemProcess.environment("FUZZ_PORTABLE") == "1" { Codecs.portable = true }
        guard let name = SystemProcess.environment("FUZZ_TARGET"), let f = FuzzTargets.all[name] else {
            printError("set FUZZ_TARGET to one of: \(FuzzTargets.all.keys.sorted().joined(separator: ", "))")
            SystemProcess.exit(2)
        }
        selected = f
    }
    let bytes = size == 0 || data == nil ? [] : Array(UnsafeBufferPointer(start: data, count: size))
    if let problem = selected?(bytes) {
        printError("fuzz target found a wrong result: \(problem)")
        SystemProcess.abort()
    }
    return 0
}
#else
@main
struct FuzzReplay {
    static func main() throws {
        if SystemProcess.environment("FUZZ_PORTABLE") == "1" { Codecs.portable = true }
        let args = Array(CommandLine.arguments.dropFirst())
        if args.first == "--write-seeds", args.count == 2 {
            for (target, inputs) in try FuzzTargets.seeds() {
                let dir = args[1] + "/" + target
                try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
                for (i, bytes) in inputs.enumerated() {
                    try Data(bytes).write(to: URL(fileURLWithPath: dir + "/seed-\(i).bin"))
                }
            }
            return
        }
        guard args.count >= 2, let f = FuzzTargets.all[args[0]] else {
            print("usage: Fuzz TARGET FILE... | Fuzz --write-seeds DIRECTORY\ntargets: \(FuzzTargets.all.keys.sorted().joined(separator: ", "))")
            SystemProcess.exit(2)
        }
        var failures = 0
        for path in args.dropFirst() {
            guard let data = FileManager.default.contents(atPath: path) else {
                print("\(path): cannot be read")
                failures += 1
                continue
            }
            if let problem = f([UInt8](data)) {
                print("\(path): \(problem)")
                failures += 1
            }
        }
        SystemProcess.exit(failures == 0 ? 0 : 1)
    }
}
#endif
