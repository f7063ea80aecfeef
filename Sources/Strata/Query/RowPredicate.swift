import Engine

/// A predicate compiled once per query for reading rows in place: its top-level conjuncts, each either a
/// direct test (an integer comparison, an option-less string operator with an ASCII pattern) that reads the
/// record's bytes where they lie, or the general `Predicate` for everything else. A direct test that meets a
/// record it cannot read directly (another layout, nil, non-ASCII text) asks the general predicate of that
/// conjunct, so the answer is always the general one.
struct RowPredicate {
    /// One conjunct: a fast test on the record's bytes (`int`, `ascii`), with its general form for values the
    /// fast test cannot read, or the general form alone. Plain values only, so that the loop over a record's
    /// tests retains nothing; the general forms and patterns are in arrays of their own (`slot`).
    struct Test {
        enum Kind { case int, ascii, general }
        var kind: Kind
        var index: Int
        var compare: CompareOp
        var stringOp: StringOp
        var value: Int64
        var slot: Int
    }

    let tests: [Test]
    let generals: [Predicate]
    let patterns: [[UInt8]]

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
        var patterns: [[UInt8]] = []
        tests = conjuncts.enumerated().map { slot, p in
            switch p {
            case .compare(let i, let op, .int(let v), _):
                return Test(kind: .int, index: i, compare: op, stringOp: .beginsWith, value: v, slot: slot)
            case .string(let i, let op, let s, let options) where options.isEmpty && op != .like && Self.bytewise(op, Array(s.utf8)):
                patterns.append(Array(s.utf8))
                return Test(kind: .ascii, index: i, compare: .equal, stringOp: op, value: Int64(patterns.count - 1), slot: slot)
            default:
                return Test(kind: .general, index: 0, compare: .equal, stringOp: .beginsWith, value: 0, slot: slot)
            }
        }
        generals = conjuncts
        self.patterns = patterns
    }

    func evaluate(_ r: RecordRef, key: Int64, in context: QueryContext?) -> Bool {
        guard case .bytes(let raw, let binding) = r else {
            return generals.allSatisfy { $0.evaluate(r, key: key, in: context) }
        }
        return matches(raw, binding, key: key, in: context)
    }

    /// `evaluate` of a record's bytes, in `binding`'s type.
    @inline(__always)
    func matches(_ raw: UnsafeRawBufferPointer, _ binding: TypeBinding, key: Int64, in context: QueryContext?) -> Bool {
        tests.withUnsafeBufferPointer { tests in
            for test in tests {
                switch test.kind {
                case .int:
                    if let (tag, start) = binding.directPayload(test.index, in: raw), tag == DirectTag.int, let w = DirectTag.word(raw, start) {
                        if !Predicate.compare(Int64(bitPattern: w), test.compare, test.value) { return false }
                    } else if !generals[test.slot].evaluate(.bytes(raw, binding), key: key, in: context) {
                        return false
                    }
                case .ascii:
                    if let (tag, start) = binding.directPayload(test.index, in: raw), tag == DirectTag.string,
                        let (length, width) = DirectTag.length(raw, start), length <= raw.count - start - width,
                        let result = Self.match(UnsafeRawBufferPointer(rebasing: raw[(start + width)..<(start + width + length)]),
                                                test.stringOp, patterns[Int(test.value)])
                    {
                        if !result { return false }
                    } else if !generals[test.slot].evaluate(.bytes(raw, binding), key: key, in: context) {
                        return false
                    }
                case .general:
                    if !generals[test.slot].evaluate(.bytes(raw, binding), key: key, in: context) { return false }
                }
            }
            return true
        }
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
