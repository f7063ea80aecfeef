import Engine

/// A small, fast, seedable generator (SplitMix64), so every randomized test is reproducible from its seed.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    public mutating func bytes(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in UInt8.random(in: 0...255, using: &self) }
    }
}

/// Seeds for randomized tests: `TEST_SEED` from the environment when set, otherwise the given list.
public enum Seeds {
    public static func environmentOr(_ defaults: [UInt64]) -> [UInt64] {
        if let text = SystemProcess.environment("TEST_SEED"), let seed = UInt64(text) { return [seed] }
        return defaults
    }

    /// A multiplier for the length of randomized and fault-injection runs: `STRATA_TEST_SCALE` (default 1).
    public static var scale: Int {
        if let text = SystemProcess.environment("STRATA_TEST_SCALE"), let n = Int(text), n > 0 { return n }
        return 1
    }
}

/// A fresh temporary directory, removed when this value goes away.
public final class TemporaryDirectory: @unchecked Sendable {
    public let path: String

    public init(_ label: String = "strata") throws {
        let base = SystemProcess.environment("TMPDIR").flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        path = try SystemProcess.makeTemporaryDirectory(in: base, label: label)
    }

    /// A path inside the directory.
    public func child(_ name: String) -> String { path + "/" + name }

    deinit { Self.remove(path) }

    public static func remove(_ path: String) { SystemProcess.removeTree(path) }
}

/// The value the SIGKILL test's child writes for commit `i`, and the parent checks.
public func crashChildValue(_ i: UInt64) -> [UInt8] {
    var x = i &* 0x9E37_79B9_7F4A_7C15
    return (0..<(Int(i % 61) + 8)).map { _ in
        x ^= x << 13; x ^= x >> 7; x ^= x << 17
        return UInt8(truncatingIfNeeded: x)
    }
}

/// The key of the encrypted SIGKILL runs (`EngineCrashChild PATH maintenance encrypted`).
package let crashChildKey: [UInt8] = (0..<64).map { UInt8(truncatingIfNeeded: $0 &* 29 &+ 7) }
