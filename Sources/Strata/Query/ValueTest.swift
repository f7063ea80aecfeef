import Foundation

/// The test a query applies to each value a key path reaches.
enum ValueTest: Sendable {
    case compare(CompareOp, StoredValue, StringOptions)
    case string(StringOp, String, StringOptions)
    case isIn([StoredValue], StringOptions)
    case between(StoredValue, StoredValue)

    func matches(_ v: StoredValue) -> Bool {
        switch self {
        case .compare(let op, let value, let options): return Predicate.compare(v, op, value, options)
        case .string(let op, let s, let options):
            guard case .string(let value) = v else { return false }
            return Predicate.match(value, op, s, options)
        case .isIn(let values, let options): return values.contains { Predicate.compare(v, .equal, $0, options) }
        case .between(let lo, let hi):
            return Predicate.compare(v, .greaterOrEqual, lo, []) && Predicate.compare(v, .lessOrEqual, hi, [])
        }
    }
}
