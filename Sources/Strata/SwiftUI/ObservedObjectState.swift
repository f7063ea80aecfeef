import Foundation

/// The state behind `@ObservedRealmObject` and `@StateRealmObject`: one object, observed (a change to it, or its
/// deletion, calls `onChange`), and written through bindings in a transaction of its own, as RealmSwift's
/// `$object.name` bindings are. An unmanaged object is read and written as it is, without a transaction.
public final class ObservedObjectState<ObjectType: Object> {
    /// The object as the view shows it (a frozen object stays frozen: writes go to its live version).
    public private(set) var object: ObjectType
    /// Called after the object changed or was deleted.
    public var onChange: () -> Void = {} {
        didSet { observe() }
    }
    /// The properties whose changes count (nil: every property).
    public let keyPaths: [String]?
    private var token: NotificationToken?

    public init(_ object: ObjectType, keyPaths: [String]? = nil) {
        self.object = object
        self.keyPaths = keyPaths
    }

    deinit { token?.invalidate() }

    /// Whether the object was deleted (a view shows its last values, and its bindings write nothing).
    public var isInvalidated: Bool { object.isInvalidated }

    /// The value at `keyPath`, or `fallback` once the object was deleted.
    public func value<V>(_ keyPath: KeyPath<ObjectType, V>, fallback: V) -> V {
        object.isInvalidated ? fallback : object[keyPath: keyPath]
    }

    /// Sets the value at `keyPath`: in a write transaction of the object's Realm when it is managed (its live
    /// version, when the view holds a frozen one), directly when it is not. Nothing is written for a deleted
    /// object or an unchanged value.
    public func set<V: Equatable>(_ keyPath: ReferenceWritableKeyPath<ObjectType, V>, _ newValue: V) {
        guard !object.isInvalidated, object[keyPath: keyPath] != newValue else { return }
        guard object.realm != nil else {
            object[keyPath: keyPath] = newValue
            return
        }
        guard let live = object.isFrozen ? object.thaw() : object, let realm = live.realm else { return }
        do {
            if realm.isInWriteTransaction {
                live[keyPath: keyPath] = newValue
            } else {
                try realm.write { live[keyPath: keyPath] = newValue }
            }
        } catch {
            fatalError("writing \(ObjectType.className()) through a binding failed: \(error)")
        }
    }

    /// Deletes the object from its Realm, in a write transaction of its own (RealmSwift's `$object.delete()`).
    public func delete() {
        guard !object.isInvalidated, let live = object.isFrozen ? object.thaw() : object, let realm = live.realm else { return }
        do {
            try realm.write { realm.delete(live) }
        } catch {
            fatalError("deleting \(ObjectType.className()) failed: \(error)")
        }
    }

    private func observe() {
        token?.invalidate()
        token = nil
        guard object.realm != nil, !object.isFrozen, !object.isInvalidated else { return }
        let onChange = self.onChange
        token = object.observe(keyPaths: keyPaths, on: nil) { (change: ObjectChange<ObjectType>) in
            switch change {
            case .change, .deleted: onChange()
            case .error: onChange()
            }
        }
    }
}
