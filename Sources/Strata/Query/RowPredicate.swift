import Engine

/// A predicate compiled once per query for reading rows in place: its top-level conjuncts, each either a
/// direct test (an integer comparison, an option-less string operator with an ASCII pattern) that reads the
/// record's bytes where they lie, or the general `Predicate` for everything else. A direct test that meets a
/// record it cannot read directly (another layout, nil, non-ASCII text) asks the general predicate of that
/// conjunct, so the answer is always the general one.
struct RowPredicate {
    enum Test {
        case int(index: Int, op: CompareOp, value: Int64, general: Predicate)
        case ascii(index: Int, op: StringOp, pattern: [UInt8], general: Predicate)
        case general(Predicate)
    }

    let tests: [Test]

    init(_ predicate: Predicate) {
        var conjuncts: [Predicate] = []
        func flatten(_ p: Predicate) {
            if case .and(let a, let b) = p {
                flatten(a)
                flatten(b)
            } else {
                conjuncts.append(p)
            }
        }
        flatten(predicate)
        tests = conjuncts.map { p in
            switch p {
            case .compare(let i, let op, .int(let v), _):
                return .int(index: i, op: op, value: v, general: p)
            case .string(let i, let op, let s, let options) where options.isEmpty && op != .like && Self.bytewise(op, Array(s.utf8)):
                return .ascii(index: i, op: op, pattern: Array(s.utf8), general: p)
            default:
                return .general(p)
            }
        }
    }

    func evaluate(_ r: RecordRef, key: Int64, in context: QueryContext?) -> Bool {
        guard case .bytes(let raw, let binding) = r else {
            return tests.allSatisfy { $0.general.evaluate(r, key: key, in: context) }
        }
        for test in tests {
            switch test {
            case .int(let i, let op, let value, let general):
                if let (tag, start) = binding.directPayload(i, in: raw), tag == DirectTag.int, let w = DirectTag.word(raw, start) {
                    if !Predicate.compare(Int64(bitPattern: w), op, value) { return false }
                } else if !general.evaluate(r, key: key, in: context) {
                    return false
                }
            case .ascii(let i, let op, let pattern, let general):
                if let (tag, start) = binding.directPayload(i, in: raw), tag == DirectTag.string,
                    let (length, width) = DirectTag.length(raw, start), length <= raw.count - start - width,
                    let result = Self.match(UnsafeRawBufferPointer(rebasing: raw[(start + width)..<(start + width + length)]), op, pattern)
                {
                    if !result { return false }
                } else if !general.evaluate(r, key: key, in: context) {
                    return false
                }
            case .general(let p):
                if !p.evaluate(r, key: key, in: context) { return false }
            }
        }
        return true
    }

    /// Whether matching `pattern` byte for byte gives `String`'s answer on ASCII text. It does, but for one
    /// character of two ASCII bytes: CR LF. A prefix ending in CR, or a suffix starting with LF, would match the
    /// bytes of a CR LF that `String` sees as one character; such patterns go through `String`.
    static func bytewise(_ op: StringOp, _ pattern: [UInt8]) -> Bool {
        guard pattern.allSatisfy({ $0 < 0x80 }) else { return false }
        switch op {
        case .beginsWith: return pattern.last != 0x0D
        case .endsWith: return pattern.first != 0x0A
        case .contains: return pattern.first != 0x0A && pattern.last != 0x0D
        case .like: return false
        }
    }

    /// An ASCII pattern matched against UTF-8 bytes, byte for byte; nil when the value is not ASCII (then
    /// bytes and characters differ, and `String` decides).
    static func match(_ value: UnsafeRawBufferPointer, _ op: StringOp, _ p: [UInt8]) -> Bool? {
        for b in value where b >= 0x80 { return nil }
        let n = p.count, m = value.count
        guard n <= m else { return false }
        switch op {
        case .beginsWith:
            for j in 0..<n where value[j] != p[j] { return false }
            return true
        case .endsWith:
            for j in 0..<n where value[m - n + j] != p[j] { return false }
            return true
        case .contains:
            if n == 0 { return true }
            var offset = 0
            while offset <= m - n {
                var j = 0
                while j < n && value[offset + j] == p[j] { j += 1 }
                if j == n { return true }
                offset += 1
            }
            return false
        case .like: return nil
        }
    }
}

extension RowPredicate.Test {
    var general: Predicate {
        switch self {
        case .int(_, _, _, let p), .ascii(_, _, _, let p), .general(let p): p
        }
    }
}
