import Dispatch
import Engine
import Foundation

/// What changed in an observed collection.
public enum RealmCollectionChange<CollectionType> {
    /// The collection as it was when observation started.
    case initial(CollectionType)
    /// The collection after a change: deletions in old indices, insertions and modifications in new ones.
    case update(CollectionType, deletions: [Int], insertions: [Int], modifications: [Int])
    case error(any Error)
}

/// One property of an observed object that changed.
public struct PropertyChange: @unchecked Sendable, CustomStringConvertible {
    public let name: String
    /// The value before the change.
    public let oldValue: Any?
    /// The value after the change.
    public let newValue: Any?

    public var description: String { "\(name): \(String(describing: oldValue)) -> \(String(describing: newValue))" }
}

/// What happened to an observed object.
public enum ObjectChange<T> {
    /// Properties changed; the object shows the new values.
    case change(T, [PropertyChange])
    /// The object was deleted; no further notification comes.
    case deleted
    case error(any Error)
}
