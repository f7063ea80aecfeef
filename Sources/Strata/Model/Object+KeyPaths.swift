import Foundation

extension Object {
    /// The value at a dotted path through links (`"owner.name"`), as NSObject's `value(forKeyPath:)` gives it
    /// to RealmSwift's objects: nil where a link on the way is nil, and an array of the elements' values where
    /// the path goes through a collection (`"dogs.name"`). A one-step path is `value(forKey:)`.
    public func value(forKeyPath keyPath: String) -> Any? {
        guard let dot = keyPath.firstIndex(of: ".") else { return value(forKey: keyPath) }
        let rest = String(keyPath[keyPath.index(after: dot)...])
        return Self.follow(value(forKey: String(keyPath[..<dot])), rest, from: keyPath)
    }

    /// The rest of a path (`rest`) from `value`, the value of its first step.
    private static func follow(_ value: Any?, _ rest: String, from keyPath: String) -> Any? {
        switch value {
        case nil, is NSNull: return nil
        case let object as Object: return object.value(forKeyPath: rest)
        default:
            guard let elements = TypeInfo.elements(of: value), !(value is String) else {
                fatalError("Key path '\(keyPath)' goes on from a value that is neither an object nor a collection of objects (\(type(of: value!)))")
            }
            return elements.map { follow($0, rest, from: keyPath) }
        }
    }
}
