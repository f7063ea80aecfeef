/// The names of the files in a database directory. This is the only code that formats or parses them.
package enum FileName: Equatable, Hashable, Sendable {
    /// `CURRENT`: names the live manifest.
    case current
    /// `CURRENT.tmp`: the next `CURRENT`, renamed over it atomically.
    case currentTemporary
    /// `LOCK`: held with `flock` while the database is open.
    case lock
    /// `MANIFEST-000007`: the list of live segments and the log position.
    case manifest(UInt64)
    /// `000042.log`: a write-ahead log file.
    case log(UInt64)
    /// `000043.seg`: a sealed segment.
    case segment(UInt64)
    /// `000044.merge`: the state of a merge a close suspended (`PendingMerge`).
    case mergeState(UInt64)

    package var name: String {
        switch self {
        case .current: "CURRENT"
        case .currentTemporary: "CURRENT.tmp"
        case .lock: "LOCK"
        case .manifest(let n): "MANIFEST-" + Self.padded(n)
        case .log(let n): Self.padded(n) + ".log"
        case .segment(let n): Self.padded(n) + ".seg"
        case .mergeState(let n): Self.padded(n) + ".merge"
        }
    }

    /// Parses a name this type formatted; nil for anything else.
    package init?(parsing name: String) {
        switch name {
        case "CURRENT": self = .current
        case "CURRENT.tmp": self = .currentTemporary
        case "LOCK": self = .lock
        default:
            if name.hasPrefix("MANIFEST-"), let n = Self.number(name.dropFirst("MANIFEST-".count)) {
                self = .manifest(n)
            } else if name.hasSuffix(".log"), let n = Self.number(name.dropLast(4)) {
                self = .log(n)
            } else if name.hasSuffix(".seg"), let n = Self.number(name.dropLast(4)) {
                self = .segment(n)
            } else if name.hasSuffix(".merge"), let n = Self.number(name.dropLast(6)) {
                self = .mergeState(n)
            } else {
                return nil
            }
        }
    }

    private static func padded(_ n: UInt64) -> String {
        let digits = String(n)
        return digits.count >= 6 ? digits : String(repeating: "0", count: 6 - digits.count) + digits
    }

    /// The number of a name this type formatted: six digits or more, zero-padded to six, never more. Read as
    /// UTF-8 bytes (an open parses every name in the directory; `Character` tests cost thousands of
    /// instructions a name).
    private static func number(_ text: Substring) -> UInt64? {
        let digits = text.utf8
        guard digits.count >= 6, digits.count <= 19, digits.count == 6 || digits.first != UInt8(ascii: "0") else { return nil }
        var n: UInt64 = 0
        for d in digits {
            guard d >= UInt8(ascii: "0"), d <= UInt8(ascii: "9") else { return nil }
            n = n * 10 + UInt64(d - UInt8(ascii: "0"))  // 19 digits fit: at most 9,999,999,999,999,999,999
        }
        // Numbers near the top of the range are not ours: counting up from them would overflow.
        return n <= 1 << 62 ? n : nil
    }
}
