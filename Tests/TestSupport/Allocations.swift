import MallocInterposerSwift

/// Counts heap allocations (malloc and its family, through ordo-one's malloc-interposer, which the test and
/// Bench executables link).
public enum Allocations {
    /// The allocations `body` makes. Every thread of the process counts: measure in a quiet process, such as an
    /// exit test's child.
    public static func count(_ body: () throws -> Void) rethrows -> Int {
        MallocInterposerSwift.initialize()
        MallocInterposerSwift.hook()
        try body()
        MallocInterposerSwift.unhook()
        return MallocInterposerSwift.getStatistics().mallocCount
    }
}
