/// A default identity for objects, as RealmSwift's: `class Dog: Object, ObjectKeyIdentifiable {}` is
/// `Identifiable` (SwiftUI's `List` and `ForEach` use it). A managed object's `id` is its object key, the same for
/// every instance of that object; an unmanaged object's is its address, as in RealmSwift.
public protocol ObjectKeyIdentifiable: Identifiable {
    /// The stable identity of the entity associated with `self`.
    var id: UInt64 { get }
}

@available(*, deprecated, renamed: "ObjectKeyIdentifiable")
public typealias ObjectKeyIdentifable = ObjectKeyIdentifiable

extension ObjectKeyIdentifiable where Self: Object {
    /// For managed objects the same for all instances of one object (`isSameObject(as:)`).
    public var id: UInt64 {
        if isInvalidated { fatalError("Object has been deleted or invalidated.") }
        if let accessor = _accessor { return UInt64(bitPattern: accessor.key) }
        return UInt64(UInt(bitPattern: ObjectIdentifier(self)))
    }
}

extension ObjectKeyIdentifiable where Self: _ProjectionType {
    /// The identity of the projected object.
    public var id: UInt64 {
        let root = rootObject
        if root.isInvalidated { fatalError("Object has been deleted or invalidated.") }
        if let accessor = root._accessor { return UInt64(bitPattern: accessor.key) }
        return UInt64(UInt(bitPattern: ObjectIdentifier(root)))
    }
}
