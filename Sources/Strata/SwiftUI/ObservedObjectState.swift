import Foundation

/// The state behind `@ObservedRealmObject` and `@StateRealmObject`: one object, observed (a change to it, or its
/// deletion, calls `onChange`), and written through bindings in a transaction of its own, as RealmSwift's
/// `$object.name` bindings are. An unmanaged object is read and written as it is, without a transaction.
public final class ObservedObjectState<ObjectType: Object> {
    private let observed: ObjectType
    /// The properties whose changes count (nil: every property).
    public let keyPaths: [String]?
    private var token: NotificationToken?
    /// A frozen copy as of the last change, which a view reads once the object was deleted.
    private var last: ObjectType?

    /// Called after the object changed or was deleted (or, unmanaged, after a binding set it).
    public var onChange: () -> Void = {} {
        didSet {
            token?.invalidate()
            token = nil
            observeIfManaged()
        }
    }

    public init(_ object: ObjectType, keyPaths: [String]? = nil) {
        observed = object
        self.keyPaths = keyPaths
        remember()
    }

    deinit { token?.invalidate() }

    /// The object as the view shows it (a frozen object stays frozen: writes go to its live version). An
    /// unmanaged object that was added to a Realm since is observed from then on.
    public var object: ObjectType {
        observeIfManaged()
        return observed
    }

    /// Whether the object was deleted (a view shows its last values, and its bindings write nothing).
    public var isInvalidated: Bool { observed.isInvalidated }

    /// The value at `keyPath`: the object's, or, once it was deleted, the value it had at its last change.
    public func value<V>(_ keyPath: KeyPath<ObjectType, V>) -> V {
        if !observed.isInvalidated { return object[keyPath: keyPath] }
        guard let last else { fatalError("\(ObjectType.className()) was deleted before a view read it") }
        return last[keyPath: keyPath]
    }

    /// Sets the value at `keyPath`: in a write transaction of the object's Realm when it is managed (its live
    /// version, when the view holds a frozen one), directly when it is not. Nothing is written for a deleted
    /// object or an unchanged value.
    public func set<V: Equatable>(_ keyPath: ReferenceWritableKeyPath<ObjectType, V>, _ newValue: V) {
        let object = self.object
        guard !object.isInvalidated, object[keyPath: keyPath] != newValue else { return }
        guard object.realm != nil else {
            // Unmanaged: nothing observes it, so the view is told here.
            object[keyPath: keyPath] = newValue
            onChange()
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
        let object = self.object
        guard !object.isInvalidated, let live = object.isFrozen ? object.thaw() : object, let realm = live.realm else { return }
        do {
            try realm.write { realm.delete(live) }
        } catch {
            fatalError("deleting \(ObjectType.className()) failed: \(error)")
        }
    }

    /// Keeps a frozen copy of a managed object's current state, for reads after its deletion.
    private func remember() {
        // In a write, the object may not be committed yet: its copy waits for the next change.
        guard let realm = observed.realm, !realm.isInWriteTransaction, !observed.isInvalidated else { return }
        last = observed.isFrozen ? observed : observed.freeze()
    }

    /// Observes the object once it is managed (live, not deleted), if it is not observed yet.
    private func observeIfManaged() {
        guard token == nil, observed.realm != nil, !observed.isFrozen, !observed.isInvalidated else { return }
        token = observed.observe(keyPaths: keyPaths, on: nil) { [weak self] (change: ObjectChange<ObjectType>) in
            guard let self else { return }
            if case .change = change { self.remember() }
            self.onChange()
        }
    }
}
