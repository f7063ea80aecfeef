// The fuzzing executable. Built with `-DFUZZING --sanitize=fuzzer` (see Fuzz/run.sh) it is a libFuzzer
// target whose function is chosen by the FUZZ_TARGET environment variable. Built normally it replays files:
// `Fuzz TARGET FILE...`, or writes the seed corpus: `Fuzz --write-seeds DIRECTORY`.

import FuzzTargets

#if canImport(Glibc)
import Glibc
#endif

/// Writes a line to standard error (fd 2) without touching C's global `stderr`.
func printError(_ text: String) {
    var line = text + "\n"
    line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}

#if FUZZING
nonisolated(unsafe) private var selected: (@Sendable ([UInt8]) -> String?)? = nil

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    if selected == nil {
        guard let name = getenv("FUZZ_TARGET").map({ String(cString: $0) }), let f = FuzzTargets.all[name] else {
            printError("set FUZZ_TARGET to one of: \(FuzzTargets.all.keys.sorted().joined(separator: ", "))")
            exit(2)
        }
        selected = f
    }
    let bytes = size == 0 || data == nil ? [] : Array(UnsafeBufferPointer(start: data, count: size))
    if let problem = selected?(bytes) {
        printError("fuzz target found a wrong result: \(problem)")
        abort()
    }
    return 0
}
#else
@main
struct FuzzReplay {
    static func main() throws {
        let args = Array(CommandLine.arguments.dropFirst())
        if args.first == "--write-seeds", args.count == 2 {
            for (target, inputs) in try FuzzTargets.seeds() {
                let dir = args[1] + "/" + target
                mkdir(dir, 0o755)
                for (i, bytes) in inputs.enumerated() {
                    guard let f = fopen(dir + "/seed-\(i).bin", "wb") else { continue }
                    _ = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, f) }
                    fclose(f)
                }
            }
            return
        }
        guard args.count >= 2, let f = FuzzTargets.all[args[0]] else {
            print("usage: Fuzz TARGET FILE... | Fuzz --write-seeds DIRECTORY\ntargets: \(FuzzTargets.all.keys.sorted().joined(separator: ", "))")
            exit(2)
        }
        var failures = 0
        for path in args.dropFirst() {
            guard let file = fopen(path, "rb") else { continue }
            var bytes: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = fread(&buffer, 1, buffer.count, file)
                if n <= 0 { break }
                bytes += buffer[0..<n]
            }
            fclose(file)
            if let problem = f(bytes) {
                print("\(path): \(problem)")
                failures += 1
            }
        }
        exit(failures == 0 ? 0 : 1)
    }
}
#endif
