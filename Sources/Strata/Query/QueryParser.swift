import Foundation

/// Parses Realm's predicate syntax: `age > 18 AND name BEGINSWITH[c] 'a'`, `%@` and `%K` arguments, `IN`,
/// `BETWEEN`, `NOT`, parentheses, `TRUEPREDICATE`, key paths through links, `ANY`/`ALL`/`NONE`, `@count`,
/// `@sum`, `@avg`, `@min`, `@max`, `SUBQUERY(collection, $x, predicate).@count`. Errors give the position and what was expected.
struct QueryParser {
    enum Token: Equatable {
        case identifier(String)
        case string(String)
        case number(String)
        case symbol(String)
        case argument(Character)  // %@ or %K
        case end
    }

    let text: String
    private var tokens: [(Token, Int)] = []
    private var position = 0
    private var arguments: [Any?]
    private var argumentIndex = 0
    /// How deeply the parser has recursed; bounded so that hostile input cannot overflow the stack.
    private var depth = 0
    static let maxDepth = 100

    private mutating func enter() throws {
        depth += 1
        guard depth <= Self.maxDepth else {
            throw QueryError("the query \"\(text.prefix(40))…\" nests parentheses, NOT or lists deeper than \(Self.maxDepth) levels")
        }
    }

    init(_ text: String, arguments: [Any?]) throws {
        self.text = text
        self.arguments = arguments
        tokens = try Self.tokenize(text)
    }

    static func parse(_ text: String, arguments: [Any?] = []) throws -> QueryExpr {
        var p = try QueryParser(text, arguments: arguments)
        let e = try p.parseOr()
        guard case .end = p.peek else { throw p.error("expected the end of the query") }
        guard p.argumentIndex == p.arguments.count else {
            throw QueryError("the query uses \(p.argumentIndex) arguments but \(p.arguments.count) were given")
        }
        return e
    }

    static func tokenize(_ text: String) throws -> [(Token, Int)] {
        var out: [(Token, Int)] = []
        let chars = Array(text)
        var i = 0
        while i < chars.count {
            let c = chars[i]
            if c.isWhitespace { i += 1; continue }
            let start = i
            if c.isLetter || c == "_" || c == "@" || c == "$" || (c == "." && i + 1 < chars.count && chars[i + 1] == "@") {
                var j = i + 1
                while j < chars.count && (chars[j].isLetter || chars[j].isNumber || chars[j] == "_" || chars[j] == "." || chars[j] == "@") { j += 1 }
                out.append((.identifier(String(chars[i..<j])), start))
                i = j
            } else if c.isNumber || (c == "-" && i + 1 < chars.count && chars[i + 1].isNumber) {
                var j = i + 1
                while j < chars.count && (chars[j].isNumber || chars[j] == "." || chars[j] == "e" || chars[j] == "E") { j += 1 }
                out.append((.number(String(chars[i..<j])), start))
                i = j
            } else if c == "'" || c == "\"" {
                var j = i + 1
                var s = ""
                while j < chars.count && chars[j] != c {
                    if chars[j] == "\\" && j + 1 < chars.count { j += 1 }
                    s.append(chars[j])
                    j += 1
                }
                guard j < chars.count else { throw QueryError("unterminated string starting at position \(start) in \"\(text)\"") }
                out.append((.string(s), start))
                i = j + 1
            } else if c == "%" {
                guard i + 1 < chars.count, chars[i + 1] == "@" || chars[i + 1] == "K" else {
                    throw QueryError("expected %@ or %K at position \(start) in \"\(text)\"")
                }
                out.append((.argument(chars[i + 1]), start))
                i += 2
            } else {
                let two = i + 1 < chars.count ? String(chars[i...(i + 1)]) : ""
                if ["==", "!=", "<=", ">=", "<>", "&&", "||", "=<", "=>"].contains(two) {
                    out.append((.symbol(two), start))
                    i += 2
                } else if "=<>!(){},[]".contains(c) {
                    out.append((.symbol(String(c)), start))
                    i += 1
                } else {
                    throw QueryError("unexpected character '\(c)' at position \(start) in \"\(text)\"")
                }
            }
        }
        out.append((.end, chars.count))
        return out
    }

    var peek: Token { tokens[position].0 }

    func error(_ expected: String) -> QueryError {
        let (token, at) = tokens[position]
        let found: String
        switch token {
        case .identifier(let s): found = "'\(s)'"
        case .string(let s): found = "the string '\(s)'"
        case .number(let s): found = s
        case .symbol(let s): found = "'\(s)'"
        case .argument(let c): found = "%\(c)"
        case .end: found = "the end"
        }
        return QueryError("\(expected) at position \(at) of \"\(text)\", found \(found)")
    }

    mutating func advance() { if position < tokens.count - 1 { position += 1 } }

    func isKeyword(_ words: String...) -> Bool {
        if case .identifier(let s) = peek { return words.contains(s.uppercased()) }
        return false
    }

    func isSymbol(_ symbols: String...) -> Bool {
        if case .symbol(let s) = peek { return symbols.contains(s) }
        return false
    }

    mutating func parseOr() throws -> QueryExpr {
        var terms = [try parseAnd()]
        while isKeyword("OR") || isSymbol("||") {
            advance()
            terms.append(try parseAnd())
        }
        return Self.balanced(terms, QueryExpr.or)
    }

    mutating func parseAnd() throws -> QueryExpr {
        var terms = [try parseNot()]
        while isKeyword("AND") || isSymbol("&&") {
            advance()
            terms.append(try parseNot())
        }
        return Self.balanced(terms, QueryExpr.and)
    }

    /// The terms of a chain of one associative operator as a balanced tree, in their order: its depth is the
    /// logarithm of their number, so that 100,000 `OR` terms do not make every recursive walk of the predicate
    /// (resolving, evaluating, freeing it) 100,000 calls deep.
    static func balanced(_ terms: [QueryExpr], _ join: (QueryExpr, QueryExpr) -> QueryExpr) -> QueryExpr {
        var level = terms
        while level.count > 1 {
            var next: [QueryExpr] = []
            next.reserveCapacity((level.count + 1) / 2)
            var i = 0
            while i + 1 < level.count {
                next.append(join(level[i], level[i + 1]))
                i += 2
            }
            if i < level.count { next.append(level[i]) }
            level = next
        }
        return level[0]
    }

    mutating func parseNot() throws -> QueryExpr {
        if isKeyword("NOT") || isSymbol("!") {
            try enter()
            defer { depth -= 1 }
            advance()
            return .not(try parseNot())
        }
        return try parsePrimary()
    }

    mutating func parsePrimary() throws -> QueryExpr {
        if isSymbol("(") {
            try enter()
            defer { depth -= 1 }
            advance()
            let e = try parseOr()
            guard isSymbol(")") else { throw error("expected ')'") }
            advance()
            return e
        }
        if isKeyword("TRUEPREDICATE") { advance(); return .truePredicate }
        if isKeyword("FALSEPREDICATE") { advance(); return .falsePredicate }
        let left = try parseOperand()
        return try parseComparison(left)
    }

    mutating func parseOptions() throws -> StringOptions {
        guard isSymbol("[") else { return [] }
        advance()
        guard case .identifier(let flags) = peek else { throw error("expected c, d or cd inside [ ]") }
        var options: StringOptions = []
        for f in flags.lowercased() {
            switch f {
            case "c": options.insert(.caseInsensitive)
            case "d": options.insert(.diacriticInsensitive)
            default: throw error("expected c, d or cd inside [ ]")
            }
        }
        advance()
        guard isSymbol("]") else { throw error("expected ']'") }
        advance()
        return options
    }

    mutating func parseComparison(_ left: QueryExpr) throws -> QueryExpr {
        if case .symbol(let s) = peek {
            let op: CompareOp
            switch s {
            case "==", "=": op = .equal
            case "!=", "<>": op = .notEqual
            case "<": op = .less
            case "<=", "=<": op = .lessOrEqual
            case ">": op = .greater
            case ">=", "=>": op = .greaterOrEqual
            default:
                if case .property = left, peek == .end || isSymbol(")") { return left }
                throw error("expected a comparison operator")
            }
            advance()
            let options = try parseOptions()
            return .comparison(left, op, try parseOperand(), options)
        }
        if case .identifier(let word) = peek {
            switch word.uppercased() {
            case "BEGINSWITH", "ENDSWITH", "CONTAINS", "LIKE":
                advance()
                let options = try parseOptions()
                guard let op = StringOp(rawValue: word.uppercased()) else { throw error("expected a string operator") }
                return .stringOp(left, op, try parseOperand(), options)
            case "IN":
                advance()
                let options = try parseOptions()
                return .isIn(left, try parseOperand(), options)
            case "BETWEEN":
                advance()
                return .between(left, try parseOperand())
            default: break
            }
        }
        // A Bool property alone.
        if case .property = left { return left }
        throw error("expected a comparison operator")
    }

    mutating func nextArgument() throws -> Any? {
        guard argumentIndex < arguments.count else {
            throw QueryError("the query \"\(text)\" has more %@/%K placeholders than the \(arguments.count) arguments given")
        }
        defer { argumentIndex += 1 }
        return arguments[argumentIndex]
    }

    mutating func parseOperand() throws -> QueryExpr {
        try enter()
        defer { depth -= 1 }
        switch peek {
        case .identifier(let s):
            advance()
            switch s.uppercased() {
            case "SUBQUERY":
                // SUBQUERY(collection, $variable, predicate).@count
                guard isSymbol("(") else { throw error("expected '(' after SUBQUERY") }
                advance()
                guard case .identifier(let collection) = peek else { throw error("expected the collection's key path in SUBQUERY") }
                advance()
                guard isSymbol(",") else { throw error("expected ',' after the collection of SUBQUERY") }
                advance()
                guard case .identifier(let variable) = peek, variable.hasPrefix("$") else { throw error("expected a $variable in SUBQUERY") }
                advance()
                guard isSymbol(",") else { throw error("expected ',' after the variable of SUBQUERY") }
                advance()
                let predicate = try parseOr()
                guard isSymbol(")") else { throw error("expected ')' to close SUBQUERY") }
                advance()
                guard case .identifier(let count) = peek, count.lowercased() == ".@count" else {
                    throw error("expected .@count after SUBQUERY(...)")
                }
                advance()
                return .subquery(collection: collection, variable: variable, predicate: predicate)
            case "ANY", "SOME", "ALL", "NONE":
                // A quantifier before a key path: `ANY dogs.age > 3`.
                guard case .identifier(let path) = peek else { throw error("expected a key path after \(s.uppercased())") }
                advance()
                let quantifier: Quantifier = switch s.uppercased() {
                case "ALL": .all
                case "NONE": .none
                default: .any
                }
                return .quantified(quantifier, path)
            case "TRUE", "YES": return .value(.bool(true))
            case "FALSE", "NO": return .value(.bool(false))
            case "NIL", "NULL": return .value(.null)
            default: return .property(try subscripted(s))
            }
        case .string(let s):
            advance()
            return .value(.string(s))
        case .number(let n):
            advance()
            if let i = Int64(n) { return .value(.int(i)) }
            if let d = Double(n) { return .value(.double(d)) }
            throw error("expected a number")
        case .argument(let kind):
            advance()
            let arg = try nextArgument()
            if kind == "K" {
                guard let name = arg as? String else { throw QueryError("%K needs a property name (String) argument") }
                return .property(try subscripted(name))
            }
            if let array = arg as? [Any?] { return .list(try array.map(Self.value)) }
            if let array = arg as? [Any] { return .list(try array.map { try Self.value($0) }) }
            return .value(try Self.value(arg))
        case .symbol("{"):
            advance()
            var values: [StoredValue] = []
            if !isSymbol("}") {
                while true {
                    guard case .value(let v) = try parseOperand() else { throw error("expected a value in { }") }
                    values.append(v)
                    if isSymbol(",") { advance(); continue }
                    break
                }
            }
            guard isSymbol("}") else { throw error("expected '}'") }
            advance()
            return .list(values)
        default:
            throw error("expected a property name or a value")
        }
    }

    /// A key path and the map subscript after it, if any (`settings['theme']`, `settings[%@]`), as the key path
    /// `settings[theme]`.
    mutating func subscripted(_ path: String) throws -> String {
        guard isSymbol("[") else { return path }
        advance()
        let key: String
        switch peek {
        case .string(let s): key = s
        case .argument("@"):
            guard let s = try nextArgument() as? String else { throw QueryError("a Map's key in a query is a String") }
            key = s
        default: throw error("expected a string key inside [ ]")
        }
        advance()
        guard isSymbol("]") else { throw error("expected ']' after a Map's key") }
        advance()
        return path + "[" + key + "]"
    }

    static func value(_ arg: Any?) throws -> StoredValue {
        guard let arg else { return .null }
        switch arg {
        case let v as Int: return .int(Int64(v))
        case let v as Int64: return .int(v)
        case let v as Int32: return .int(Int64(v))
        case let v as Double: return .double(v)
        case let v as Float: return .float(v)
        case let v as Bool: return .bool(v)
        case let v as String: return .string(v)
        case let v as Date: return .date(v)
        case let v as Data: return .data(v)
        case let v as UUID: return .uuid(v)
        case let v as ObjectId: return .objectId(v)
        case let v as Object:
            // An object: a link to it (`owner == %@`, `ANY dogs == %@`).
            guard let accessor = v._accessor else {
                throw QueryError("an unmanaged \(type(of: v).className()) cannot be a query argument: add it to the Realm first")
            }
            return .link(accessor.key)
        case let v as any _Persistable: return v._storedValue
        default: throw QueryError("unsupported query argument of type \(type(of: arg))")
        }
    }
}
