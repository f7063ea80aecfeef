import Engine
import Foundation

/// Sizes of files and directories on disk.
public enum DirectorySize {
    public static func fileBytes(_ path: String) -> Int { SystemProcess.fileBytes(path) }

    public static func bytes(_ path: String) -> Int {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: path) else { return fileBytes(path) }
        return names.reduce(0) { $0 + fileBytes(path + "/" + $1) }
    }
}

/// A monotonic clock in seconds.
@inline(__always) public func now() -> Double {
    Double(DispatchTime.now().uptimeNanoseconds) / 1e9
}

/// How a workload's figure is expressed.
/// The process's anonymous resident memory (heap, stacks; not mapped files), from /proc/self/status (Linux),
/// for the memory rows. Mapped database pages are left out on purpose: the kernel drops them at will, and
/// counting them would charge a full scan for the size of the file (for Strata and LMDB alike).
public enum PeakMemory {
    /// Anonymous resident bytes now ("RssAnon"), or nil without /proc.
    public static func anonymous() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("RssAnon:") })
        else { return nil }
        // "RssAnon:\t  123456 kB": the number may follow the tab directly.
        return line.split(whereSeparator: { $0 == " " || $0 == "\t" }).compactMap { Int($0) }.first.map { $0 * 1024 }
    }

    /// glibc's `malloc_trim(0)`.
    static func trimHeap() { SystemProcess.trimHeap() }

    /// How far anonymous resident memory rose above its starting point while `body` ran, sampled every 5 ms
    /// by another thread; nil without /proc.
    public static func rise<T>(_ body: () throws -> T) rethrows -> (T, Int?) {
        // Heap freed by earlier steps goes back to the system first: otherwise this step may reuse it without
        // a rise, and its figure would depend on what ran before.
        trimHeap()
        guard let before = anonymous() else { return (try body(), nil) }
        let peak = Locked(before)
        let stop = Locked(false)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            while !stop.withLock({ $0 }) {
                if let now = anonymous() { peak.withLock { $0 = max($0, now) } }
                usleep(5_000)
            }
            done.signal()
        }
        let result = try body()
        if let now = anonymous() { peak.withLock { $0 = max($0, now) } }
        stop.withLock { $0 = true }
        done.wait()
        return (result, max(0, peak.withLock { $0 } - before))
    }
}

public enum Unit: String, Codable, Sendable {
    case perSecond = "/s"
    case milliseconds = "ms"
    case megabytes = "MB"
    /// Heap allocations per object read (counted with malloc-interposer, every thread of the process).
    case allocations = "allocations/object"
    /// A dimensionless ratio where smaller is better (write amplification).
    case factor = "x"
    /// A dimensionless ratio where larger is better (a rate late in a run over the rate early in it).
    case keptFactor = "late/early"

    /// Whether a larger figure is better (for the ratio's direction).
    var higherIsBetter: Bool { self == .perSecond || self == .keptFactor }
}

/// The samples of one workload on one engine.
public struct Measurement: Codable, Sendable {
    public var samples: [Double]
    public var median: Double { Self.median(samples) }
    public var min: Double { samples.min() ?? .nan }
    public var max: Double { samples.max() ?? .nan }

    static func median(_ xs: [Double]) -> Double {
        guard !xs.isEmpty else { return .nan }
        let s = xs.sorted()
        return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
    }

    enum CodingKeys: String, CodingKey { case samples, median, min, max }
    public init(samples: [Double]) { self.samples = samples }
    public init(from decoder: any Decoder) throws {
        samples = try decoder.container(keyedBy: CodingKeys.self).decode([Double].self, forKey: .samples)
    }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(samples, forKey: .samples)
        try c.encode(median, forKey: .median)
        try c.encode(min, forKey: .min)
        try c.encode(max, forKey: .max)
    }
}

/// One row of the report.
public struct Row: Codable, Sendable {
    public var workload: String
    public var unit: Unit
    /// Engine name -> measurement.
    public var results: [String: Measurement]
    /// Strata's median over each peer's, oriented so that > 1 means Strata is better.
    public var ratios: [String: Double]
    public var note: String?

    public init(workload: String, unit: Unit, results: [String: Measurement], ratios: [String: Double], note: String?) {
        (self.workload, self.unit, self.results, self.ratios, self.note) = (workload, unit, results, ratios, note)
    }
}

public struct Report: Codable, Sendable {
    public var machine: String
    public var cores: Int
    public var toolchain: String
    public var commit: String
    public var n: Int
    public var runs: Int
    public var durability: String
    public var rows: [Row]
    /// Results every engine must agree on (e.g. the sum of ages), per engine.
    public var checks: [String: [String: Int]]

    public init(
        machine: String, cores: Int, toolchain: String, commit: String, n: Int, runs: Int, durability: String, rows: [Row],
        checks: [String: [String: Int]]
    ) {
        (self.machine, self.cores, self.toolchain, self.commit, self.n, self.runs) = (machine, cores, toolchain, commit, n, runs)
        (self.durability, self.rows, self.checks) = (durability, rows, checks)
    }
}

/// Machine and build facts for the report's header.
public enum Environment {
    public static var cpu: String {
        guard let text = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8) else { return "unknown CPU" }
        for line in text.split(separator: "\n") where line.hasPrefix("model name") {
            return line.split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) } ?? "unknown CPU"
        }
        return "unknown CPU"
    }

    public static var cores: Int { Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))) }

    public static var toolchain: String {
        #if compiler(>=6.3)
        "Swift 6.3 or later"
        #elseif compiler(>=6.2)
        "Swift 6.2"
        #elseif compiler(>=6.1)
        "Swift 6.1"
        #else
        "Swift 6.0"
        #endif
    }

    public static var commit: String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["git", "rev-parse", "--short", "HEAD"]
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = FileHandle.nullDevice
        guard (try? p.run()) != nil else { return "unknown" }
        p.waitUntilExit()
        let out = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        return p.terminationStatus == 0 && !out.isEmpty ? out : "unknown"
    }
}

/// Formats figures the way the README's table shows them.
public enum Format {
    public static func figure(_ x: Double, _ unit: Unit) -> String {
        guard x.isFinite else { return "–" }
        switch unit {
        case .perSecond:
            if x >= 1e6 { return String(format: "%.2fM/s", x / 1e6) }
            if x >= 1e3 { return String(format: "%.0fk/s", x / 1e3) }
            return String(format: "%.1f/s", x)
        case .milliseconds: return x >= 100 ? String(format: "%.0f ms", x) : x < 0.1 ? String(format: "%.1f µs", x * 1000) : String(format: "%.2f ms", x)
        case .megabytes: return String(format: "%.1f MB", x)
        case .allocations, .factor, .keptFactor: return String(format: "%.2f", x)
        }
    }

    public static func cell(_ m: Measurement?, _ unit: Unit) -> String {
        guard let m, !m.samples.isEmpty else { return "–" }
        if m.samples.count == 1 || unit == .megabytes { return figure(m.median, unit) }
        return "\(figure(m.median, unit)) (\(figure(m.min, unit).replacingOccurrences(of: "/s", with: ""))–\(figure(m.max, unit)))"
    }

    public static func ratio(_ r: Double?) -> String {
        guard let r, r.isFinite else { return "–" }
        return String(format: "%.2fx", r)
    }
}
