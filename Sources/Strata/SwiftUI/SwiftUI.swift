// RealmSwift's SwiftUI API: `@ObservedResults`, `@ObservedSectionedResults`, `@ObservedRealmObject`,
// `@StateRealmObject`, `.searchable` over observed results, and the environment values `realmConfiguration`
// and `realm`.
//
// Only an Apple build compiles this file (SwiftUI exists on Apple platforms only), and none has been run yet.
// Each wrapper forwards to a state type that holds all of its logic and is tested on Linux
// (`ObservedResultsState`, `ObservedSectionedResultsState`, `ObservedObjectState`, `RealmEnvironment`;
// `SwiftUIStateTests`). What only an Apple build checks is what is here: the property wrappers' shapes, `DynamicProperty.update()` handing the
// environment to the state, `objectWillChange` on each change, and the bindings.
//
// `@AsyncOpen` and `@AutoOpen` open synchronized Realms in RealmSwift; Strata has no sync and leaves them out.

#if canImport(SwiftUI) && canImport(Combine)
import Combine
import SwiftUI

private struct RealmConfigurationKey: EnvironmentKey {
    /// Nil: nothing above the view set a configuration (the default configuration applies).
    static let defaultValue: Realm.Configuration? = nil
}

extension EnvironmentValues {
    /// The configuration of the Realm the views below use, as RealmSwift's: set it on the first view that uses
    /// Realm (`.environment(\.realmConfiguration, config)`); unset, it is `Realm.Configuration.defaultConfiguration`.
    public var realmConfiguration: Realm.Configuration {
        get { self[RealmConfigurationKey.self] ?? Realm.Configuration.defaultConfiguration }
        set { self[RealmConfigurationKey.self] = newValue }
    }

    /// The Realm of `realmConfiguration`, opened on the calling thread; setting it sets the configuration.
    public var realm: Realm {
        get {
            do {
                return try Realm(configuration: realmConfiguration)
            } catch {
                fatalError("the environment's Realm could not be opened: \(error)")
            }
        }
        set { self[RealmConfigurationKey.self] = newValue.configuration }
    }

    /// What the state types need to know of the environment: whether a configuration was set, and which.
    var strataRealmEnvironment: RealmEnvironment { RealmEnvironment(configuration: self[RealmConfigurationKey.self]) }
}

/// A value that closures SwiftUI requires to be `Sendable` carry, though it is used on the main thread only.
struct UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

/// Holds a state type for SwiftUI: its changes become `objectWillChange`.
@MainActor
final class ObservableState<State: AnyObject>: ObservableObject {
    let state: State
    init(_ state: State, onChange: (State, @escaping () -> Void) -> Void) {
        self.state = state
        onChange(state) { [weak self] in self?.objectWillChange.send() }
    }
}

/// The objects of one type in the view's Realm, observed: the view redraws when they change. `$items` gives
/// `append` and `remove`, which write in a transaction of their own.
@MainActor
@propertyWrapper public struct ObservedResults<ResultType: Object>: DynamicProperty {
    @Environment(\.strataRealmEnvironment) private var environment
    @StateObject private var storage: ObservableState<ObservedResultsState<ResultType>>

    public var wrappedValue: Results<ResultType> { storage.state.results }
    public var projectedValue: Self { self }

    /// A predicate on the objects (Apple's `NSPredicate`).
    public var filter: NSPredicate? {
        get { storage.state.predicate }
        nonmutating set { storage.state.predicate = newValue }
    }

    /// A type-safe query on the objects.
    public var `where`: ((Query<ResultType>) -> Query<Bool>)? {
        get { storage.state.where }
        nonmutating set { storage.state.where = newValue }
    }

    public var sortDescriptor: SortDescriptor? {
        get { storage.state.sortDescriptor }
        nonmutating set { storage.state.sortDescriptor = newValue }
    }

    public init(
        _ type: ResultType.Type, configuration: Realm.Configuration? = nil, filter: NSPredicate? = nil, keyPaths: [String]? = nil,
        sortDescriptor: SortDescriptor? = nil
    ) {
        let state = ObservedResultsState(type, configuration: configuration, filter: filter, keyPaths: keyPaths, sortDescriptor: sortDescriptor)
        _storage = StateObject(wrappedValue: ObservableState(state) { $0.onChange = $1 })
    }

    public init(
        _ type: ResultType.Type, configuration: Realm.Configuration? = nil, where query: ((Query<ResultType>) -> Query<Bool>)?,
        keyPaths: [String]? = nil, sortDescriptor: SortDescriptor? = nil
    ) {
        let state = ObservedResultsState(type, configuration: configuration, where: query, keyPaths: keyPaths, sortDescriptor: sortDescriptor)
        _storage = StateObject(wrappedValue: ObservableState(state) { $0.onChange = $1 })
    }

    nonisolated public func update() {
        MainActor.assumeIsolated { storage.state.update(environment: environment) }
    }

    /// Adds `object` to the Realm in a write transaction of its own.
    public func append(_ object: ResultType) { storage.state.append(object) }
    /// Deletes the objects at `offsets` (`onDelete(perform: $items.remove)`).
    public func remove(atOffsets offsets: IndexSet) { storage.state.remove(atOffsets: offsets) }
    /// Deletes `object`.
    public func remove(_ object: ResultType) { storage.state.remove(object) }

    /// Called while the view's body is built: a new search is announced after the update, not during it.
    func searchText<V>(_ text: String, on keyPath: KeyPath<ResultType, V>) {
        guard storage.state.searchText(text, on: keyPath) else { return }
        let storage = self.storage
        Task { @MainActor in storage.objectWillChange.send() }
    }
}

/// The objects of one type in the view's Realm, grouped into sections and observed.
@MainActor
@propertyWrapper public struct ObservedSectionedResults<Key: _Persistable & Hashable, ResultType: Object>: DynamicProperty {
    @Environment(\.strataRealmEnvironment) private var environment
    @StateObject private var storage: ObservableState<ObservedSectionedResultsState<Key, ResultType>>

    public var wrappedValue: SectionedResults<Key, ResultType> { storage.state.results }
    public var projectedValue: Self { self }

    public var filter: NSPredicate? {
        get { storage.state.base.predicate }
        nonmutating set { storage.state.base.predicate = newValue }
    }

    public var `where`: ((Query<ResultType>) -> Query<Bool>)? {
        get { storage.state.base.where }
        nonmutating set { storage.state.base.where = newValue }
    }

    public var sortDescriptors: [SortDescriptor] {
        get { storage.state.sortDescriptors }
        nonmutating set { storage.state.sortDescriptors = newValue }
    }

    public init(
        _ type: ResultType.Type, sectionKeyPath: KeyPath<ResultType, Key>, sortDescriptors: [SortDescriptor] = [],
        filter: NSPredicate? = nil, keyPaths: [String]? = nil, configuration: Realm.Configuration? = nil
    ) {
        let state = ObservedSectionedResultsState(
            type, sectionKeyPath: sectionKeyPath, sortDescriptors: sortDescriptors, configuration: configuration, keyPaths: keyPaths)
        state.base.predicate = filter
        _storage = StateObject(wrappedValue: ObservableState(state) { $0.onChange = $1 })
    }

    public init(
        _ type: ResultType.Type, sectionBlock: @escaping (ResultType) -> Key, sortDescriptors: [SortDescriptor], filter: NSPredicate? = nil,
        keyPaths: [String]? = nil, configuration: Realm.Configuration? = nil
    ) {
        let state = ObservedSectionedResultsState(
            type, sectionBlock: sectionBlock, sortDescriptors: sortDescriptors, configuration: configuration, keyPaths: keyPaths)
        state.base.predicate = filter
        _storage = StateObject(wrappedValue: ObservableState(state) { $0.onChange = $1 })
    }

    nonisolated public func update() {
        MainActor.assumeIsolated { storage.state.update(environment: environment) }
    }

    /// Deletes the object at each index path (`[section, item]`).
    public func remove(at indexPath: IndexPath) { storage.state.remove(at: indexPath) }
}

extension View {
    /// A search field whose text narrows `collection` to the objects whose `keyPath` contains it, as
    /// RealmSwift's `searchable(text:collection:keyPath:)`.
    public func searchable<T: Object>(
        text: Binding<String>, collection: ObservedResults<T>, keyPath: KeyPath<T, String>, placement: SearchFieldPlacement = .automatic,
        prompt: Text? = nil
    ) -> some View {
        collection.searchText(text.wrappedValue, on: keyPath)
        return searchable(text: text, placement: placement, prompt: prompt)
    }
}

/// A managed object the view observes: it redraws when the object changes; `$object.name` is a binding that
/// writes in a transaction of its own, and `$object.delete()` deletes the object.
@MainActor
@propertyWrapper public struct ObservedRealmObject<ObjectType: Object>: DynamicProperty {
    @ObservedObject private var storage: ObservableState<ObservedObjectState<ObjectType>>

    public init(wrappedValue: ObjectType) {
        _storage = ObservedObject(wrappedValue: ObservableState(ObservedObjectState(wrappedValue)) { $0.onChange = $1 })
    }

    public var wrappedValue: ObjectType { storage.state.object }
    public var projectedValue: RealmObjectBindings<ObjectType> { RealmObjectBindings(state: storage.state) }
}

/// An object a view creates and owns (often unmanaged until added): it lives as long as the view.
@MainActor
@propertyWrapper public struct StateRealmObject<ObjectType: Object>: DynamicProperty {
    @StateObject private var storage: ObservableState<ObservedObjectState<ObjectType>>

    public init(wrappedValue: ObjectType) {
        _storage = StateObject(wrappedValue: ObservableState(ObservedObjectState(wrappedValue)) { $0.onChange = $1 })
    }

    public var wrappedValue: ObjectType { storage.state.object }
    public var projectedValue: RealmObjectBindings<ObjectType> { RealmObjectBindings(state: storage.state) }
}

/// `$object`: bindings to an observed object's properties.
@MainActor
@dynamicMemberLookup public struct RealmObjectBindings<ObjectType: Object> {
    let state: ObservedObjectState<ObjectType>

    public var wrappedValue: ObjectType { state.object }

    /// A binding to a property: reading gives its value (the one it had at its last change once the object was
    /// deleted); writing sets it in a write transaction of its own.
    public subscript<V: Equatable>(dynamicMember keyPath: ReferenceWritableKeyPath<ObjectType, V>) -> Binding<V> {
        // The state is the view's, used on the main thread only; the box lets `Binding`'s closures carry it.
        let box = UncheckedBox((state, keyPath))
        return Binding(get: { box.value.0.value(box.value.1) }, set: { box.value.0.set(box.value.1, $0) })
    }

    /// Deletes the object, in a write transaction of its own.
    public func delete() { state.delete() }
}
#endif
