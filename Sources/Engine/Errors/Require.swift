/// `precondition` whose message survives optimized builds: Swift drops `precondition`'s text under `-O`, and a
/// trap without its reason is of no use to the person who must fix the call. Use it for broken contracts (see
/// STYLE.md); `fatalError` for a trap with no condition.
@inlinable
@inline(__always)
package func require(
    _ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line
) {
    if !condition() { fatalError(message(), file: file, line: line) }
}
