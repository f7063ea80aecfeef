import Engine
import Foundation
import Observation

// Swift's Observation (`withObservationTracking`, SwiftUI's redraws on iOS 17 and later): objects take part as
// `@Observable` classes do.
//
// - A read of a property records an access with the object's registrar. The registrar is made by the object's
//   first such read; an object that was never read that way has no registrar, so no tracking can be waiting on
//   it, and its setters skip the mutation calls.
// - Managed objects: the commit that changes a property a tracked object read (from any thread, Realm or
//   process) calls the tracking's `onChange`, when the object's Realm moves to that version. The objects with
//   a registrar are watched by one change observer per Realm (`ObservationObserver`), which compares their
//   records in the old and the new version and names the properties that differ; a deleted object names every
//   property read.
// - The object a `for`-`in` loop over `Results` reuses from step to step (`ObjectAccessor.lent`) is a cursor,
//   not an object a view holds: its reads record nothing. A loop that keeps its objects (`Array(results)`) gets
//   objects of their own, which do.

extension Object: Observable {}

/// An object's part in Observation: its registrar, and how to name each property it read when it changes.
@usableFromInline
final class ObjectObservation: @unchecked Sendable {
    let registrar = ObservationRegistrar()
    /// Calls the registrar's mutation for property `index` (the key path it was read through), by index.
    var mutations: [(() -> Void)?]
    weak var object: Object?

    init(object: Object, properties: Int) {
        self.object = object
        self.mutations = Array(repeating: nil, count: properties)
    }

    /// Tells the trackings that read property `index`, or every property read when nil, that it changed.
    func changed(_ index: Int?) {
        if let index {
            if index < mutations.count { mutations[index]?() }
        } else {
            for m in mutations { m?() }
        }
    }
}

extension Object {
    /// Records a read of property `index` through `keyPath` for Observation.
    @usableFromInline
    static func _observeRead<S: Object, V>(_ object: S, _ index: Int, _ keyPath: ReferenceWritableKeyPath<S, V>) {
        let observation = object._observation ?? object._startObservation()
        if index < observation.mutations.count, observation.mutations[index] == nil {
            let registrar = observation.registrar
            observation.mutations[index] = { [weak object] in
                guard let object else { return }
                registrar.withMutation(of: object, keyPath: keyPath) {}
            }
        }
        observation.registrar.access(object, keyPath: keyPath)
    }

    /// Records a read of an unmanaged object's property for Observation.
    @usableFromInline
    static func _observeUnmanagedRead<S: Object, V>(
        _ object: S, _ storage: ReferenceWritableKeyPath<S, Persisted<V>>, _ keyPath: ReferenceWritableKeyPath<S, V>
    ) {
        let info = object._unmanagedInfo ?? TypeRegistry.info(for: type(of: object))
        _observeRead(object, info.cachedIndex(storage) ?? info.propertyIndex(for: storage, in: object), keyPath)
    }

    /// Before and after a set of an unmanaged object with a registrar: the trackings that read the property
    /// hear of the change.
    @usableFromInline
    static func _observeWillSet<S: Object, V>(_ object: S, _ keyPath: ReferenceWritableKeyPath<S, V>) {
        object._observation?.registrar.willSet(object, keyPath: keyPath)
    }

    @usableFromInline
    static func _observeDidSet<S: Object, V>(_ object: S, _ keyPath: ReferenceWritableKeyPath<S, V>) {
        object._observation?.registrar.didSet(object, keyPath: keyPath)
    }

    private func _startObservation() -> ObjectObservation {
        let count = (_accessor?.info ?? _unmanagedInfo ?? TypeRegistry.info(for: type(of: self))).schema.properties.count
        let observation = ObjectObservation(object: self, properties: count)
        _observation = observation
        if let accessor = _accessor { accessor.core.observe(observation) }
        return observation
    }
}

extension RealmCore {
    /// Watches `observation`'s object for commits that change what it read.
    func observe(_ observation: ObjectObservation) {
        guard !isFrozen else { return }
        if let watcher = observationObserver {
            watcher.add(observation)
            return
        }
        let watcher = ObservationObserver()
        watcher.add(observation)
        observationObserver = watcher
        // No token: the observer lives as long as the list (a token held here would be released inside the
        // list's lock when the last object of this Realm goes with another observer).
        observerList.add(watcher)
        attachToFileForMainQueueRefresh()
        shared.watchOtherProcesses()
    }
}

/// The change observer of a Realm's objects that Observation tracks.
final class ObservationObserver: ChangeObserver {
    var queue: DispatchQueue? { nil }
    private var watched: [ObjectObservation] = []

    func add(_ observation: ObjectObservation) {
        // Objects gone since are dropped as the list grows.
        if watched.count >= 64, watched.count.nonzeroBitCount == 1 { watched.removeAll { $0.object == nil } }
        watched.append(observation)
    }

    func changes(core: RealmCore, old: Snapshot, new: Snapshot, summary: ChangeSummary) throws -> (() -> Void)? {
        var calls: [(ObjectObservation, Int?)] = []
        watched.removeAll { $0.object?._accessor == nil }
        for observation in watched {
            guard let object = observation.object, let accessor = object._accessor, accessor.core === core else { continue }
            let partition = accessor.binding.partition
            guard summary.everything || summary.keys[partition]?.contains(accessor.key) == true else { continue }
            let key = ObjectKey.bytes(accessor.key)
            let before = try old.get(key, in: partition)
            guard let after = try new.get(key, in: partition) else {
                calls.append((observation, nil))
                continue
            }
            guard let before, before != after else { continue }
            let binding = accessor.binding
            before.withUnsafeBytes { b in
                after.withUnsafeBytes { a in
                    for index in observation.mutations.indices where observation.mutations[index] != nil {
                        if RealmCore.values(binding, b, [index]) != RealmCore.values(binding, a, [index]) { calls.append((observation, index)) }
                    }
                }
            }
        }
        guard !calls.isEmpty else { return nil }
        return {
            for (observation, index) in calls { observation.changed(index) }
        }
    }

    func failed(_ error: Realm.Error) -> (() -> Void)? { nil }
}
