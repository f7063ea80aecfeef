import Dispatch
import Foundation

// The logic of RealmSwift's SwiftUI property wrappers, without SwiftUI: which Realm, which objects, observing
// them, and the writes the wrappers offer. `SwiftUI.swift` (Apple platforms only) forwards to these types, so
// that everything but the forwarding is compiled and tested on Linux.

/// Where a SwiftUI view's Realm comes from, in RealmSwift's order: the configuration given to the property
/// wrapper, else the one the environment carries (`.environment(\.realmConfiguration, config)`), else
/// `Realm.Configuration.defaultConfiguration`.
public struct RealmEnvironment: Sendable {
    /// What `.environment(\.realmConfiguration, …)` set above the view; nil when nothing did.
    public var configuration: Realm.Configuration?

    public init(configuration: Realm.Configuration? = nil) {
        self.configuration = configuration
    }

    /// The configuration a wrapper given `explicit` uses.
    public func resolve(_ explicit: Realm.Configuration?) -> Realm.Configuration {
        explicit ?? configuration ?? Realm.Configuration.defaultConfiguration
    }
}

/// The state behind `@ObservedResults`: the objects of one type in the view's Realm, narrowed by a filter, a
/// type-safe query and a search, sorted, and observed; `onChange` is called (SwiftUI: the view redraws) after
/// each change to them. `append` and `remove` write in a transaction of their own, as RealmSwift's do.
public final class ObservedResultsState<ResultType: Object> {
    /// The configuration given to the wrapper (nil: the environment's, then the default).
    public let configuration: Realm.Configuration?
    /// The properties whose changes count (nil: every property).
    public let keyPaths: [String]?
    /// Called after the results changed.
    public var onChange: () -> Void = {}

    /// A string predicate in Realm's syntax, with its arguments; mutually exclusive with `where` in RealmSwift,
    /// and combined with it here when both are set.
    public var filter: (format: String, arguments: [Any])? { didSet { invalidate() } }
    /// An `NSPredicate` (Apple platforms; on Linux Foundation builds compound and constant predicates only).
    public var predicate: NSPredicate? { didSet { invalidate() } }
    /// A type-safe query.
    public var `where`: ((Query<ResultType>) -> Query<Bool>)? { didSet { invalidate() } }
    public var sortDescriptor: SortDescriptor? { didSet { invalidate() } }
    /// `.searchable`: objects whose `searchKeyPath` contains the text, case-insensitively (all when empty).
    public private(set) var search: (text: String, keyPath: String)? = nil

    private var environment = RealmEnvironment()
    private var current: Results<ResultType>?
    private var token: NotificationToken?

    public init(
        _ type: ResultType.Type, configuration: Realm.Configuration? = nil, filter: NSPredicate? = nil, keyPaths: [String]? = nil,
        sortDescriptor: SortDescriptor? = nil
    ) {
        self.configuration = configuration
        self.keyPaths = keyPaths
        self.predicate = filter
        self.sortDescriptor = sortDescriptor
    }

    public init(
        _ type: ResultType.Type, configuration: Realm.Configuration? = nil, where query: ((Query<ResultType>) -> Query<Bool>)?,
        keyPaths: [String]? = nil, sortDescriptor: SortDescriptor? = nil
    ) {
        self.configuration = configuration
        self.keyPaths = keyPaths
        self.where = query
        self.sortDescriptor = sortDescriptor
    }

    deinit { token?.invalidate() }

    /// The environment the view has now (SwiftUI calls the wrapper's `update()` with it before each body).
    /// The view is being updated and reads the results next: the change is not announced (SwiftUI forbids
    /// publishing changes from within a view update).
    public func update(environment: RealmEnvironment) {
        guard environment.configuration?.identity != self.environment.configuration?.identity else { return }
        self.environment = environment
        invalidate(notify: false)
    }

    /// The configuration in use.
    public var resolvedConfiguration: Realm.Configuration { environment.resolve(configuration) }

    /// Narrows the results to objects whose `keyPath` contains `text` (case-insensitively); an empty text
    /// shows everything again. Called while a view's body is built (`.searchable`), it does not announce the
    /// change itself: it returns whether the search changed, and the caller tells the view afterwards.
    @discardableResult
    public func searchText<V>(_ text: String, on keyPath: KeyPath<ResultType, V>) -> Bool {
        let name = TypeRegistry.info(for: ResultType.self).name(of: keyPath)
        let wanted = text.isEmpty ? nil : (text: text, keyPath: name)
        // Called as a view's body is built (`.searchable`): only a new search changes anything.
        guard wanted?.text != search?.text || wanted?.keyPath != search?.keyPath else { return false }
        search = wanted
        invalidate(notify: false)
        return true
    }

    /// The results, made and observed on first use after any change to what they are.
    public var results: Results<ResultType> {
        if let current { return current }
        let realm: Realm
        do {
            realm = try Realm(configuration: resolvedConfiguration)
        } catch {
            // RealmSwift's wrapper opens with `try!`: a view cannot show a Realm it cannot open.
            fatalError("@ObservedResults could not open \(resolvedConfiguration.fileURL?.path ?? "its Realm"): \(error)")
        }
        var value = realm.objects(ResultType.self)
        if let filter {
            do {
                value = try value.filter(filter.format, arguments: filter.arguments.map { Optional($0) })
            } catch {
                fatalError("Invalid predicate: \(error)")
            }
        }
        if let predicate { value = value.filter(predicate) }
        if let query = self.where { value = value.where(query) }
        if let search {
            do {
                value = try value.filter("%K CONTAINS[c] %@", arguments: [search.keyPath, search.text])
            } catch {
                fatalError("Invalid search on '\(search.keyPath)': \(error)")
            }
        }
        if let sortDescriptor { value = value.sorted(byKeyPath: sortDescriptor.keyPath, ascending: sortDescriptor.ascending) }
        current = value
        // The initial delivery is the results as made: only later changes redraw.
        token = value.observe(keyPaths: keyPaths) { [weak self] change in
            if case .initial = change { return }
            self?.onChange()
        }
        return value
    }

    /// Adds `object` to the Realm, in a write transaction of its own (an object the filter leaves out is added
    /// all the same, and does not show).
    public func append(_ object: ResultType) {
        write { $0.add(object) }
    }

    /// Deletes the objects at `offsets` of the results, in one write transaction.
    public func remove(atOffsets offsets: IndexSet) {
        let objects = offsets.map { results[$0] }
        write { realm in realm.delete(objects) }
    }

    /// Deletes `object`, in a write transaction of its own.
    public func remove(_ object: ResultType) {
        write { realm in
            guard let live = object.isFrozen ? object.thaw() : object, !live.isInvalidated else { return }
            realm.delete(live)
        }
    }

    private func write(_ body: (Realm) -> Void) {
        do {
            let realm = try Realm(configuration: resolvedConfiguration)
            try realm.write { body(realm) }
        } catch {
            fatalError("@ObservedResults could not write to \(resolvedConfiguration.fileURL?.path ?? "its Realm"): \(error)")
        }
    }

    func invalidate(notify: Bool = true) {
        token?.invalidate()
        token = nil
        current = nil
        if notify { onChange() }
    }
}

/// The state behind `@ObservedSectionedResults`: an `ObservedResultsState`'s objects (its Realm, filter, query and
/// search), sorted by `sortDescriptors` and grouped into sections by a key path or a block.
public final class ObservedSectionedResultsState<Key: _Persistable & Hashable, ResultType: Object> {
    /// The objects before sectioning: set `filter`, `where` or a search here.
    public let base: ObservedResultsState<ResultType>
    private let section: (Results<ResultType>, [SortDescriptor]) -> SectionedResults<Key, ResultType>
    /// The order of the objects; the first descriptor must decide the sections (RealmSwift's rule).
    public var sortDescriptors: [SortDescriptor] { didSet { base.invalidate() } }
    private var current: (base: Results<ResultType>, sectioned: SectionedResults<Key, ResultType>)?

    /// Called after the sections changed.
    public var onChange: () -> Void {
        get { base.onChange }
        set { base.onChange = newValue }
    }

    /// Sections by the value at `sectionKeyPath`; the objects are sorted by it first, then by `sortDescriptors`.
    public init(
        _ type: ResultType.Type, sectionKeyPath: KeyPath<ResultType, Key>, sortDescriptors: [SortDescriptor] = [],
        configuration: Realm.Configuration? = nil, keyPaths: [String]? = nil
    ) {
        base = ObservedResultsState(type, configuration: configuration, keyPaths: keyPaths)
        let name = TypeRegistry.info(for: ResultType.self).name(of: sectionKeyPath)
        self.sortDescriptors = sortDescriptors
        section = { results, descriptors in
            let order = descriptors.first?.keyPath == name ? descriptors : [SortDescriptor(keyPath: name)] + descriptors
            return results.sectioned(by: sectionKeyPath, sortDescriptors: order)
        }
    }

    /// Sections by the key `sectionBlock` gives each object; `sortDescriptors` (at least one) must keep each
    /// section's objects together.
    public init(
        _ type: ResultType.Type, sectionBlock: @escaping (ResultType) -> Key, sortDescriptors: [SortDescriptor],
        configuration: Realm.Configuration? = nil, keyPaths: [String]? = nil
    ) {
        base = ObservedResultsState(type, configuration: configuration, keyPaths: keyPaths)
        self.sortDescriptors = sortDescriptors
        section = { results, descriptors in results.sectioned(by: sectionBlock, sortDescriptors: descriptors) }
    }

    public func update(environment: RealmEnvironment) { base.update(environment: environment) }

    /// The sections, made again only when the objects' query or order changed (they are live in between).
    public var results: SectionedResults<Key, ResultType> {
        let objects = base.results
        if let current, current.base.cache === objects.cache { return current.sectioned }
        let sectioned = section(objects, sortDescriptors)
        current = (objects, sectioned)
        return sectioned
    }

    /// Deletes the object at `indexPath` (`[section, item]`), in a write transaction of its own.
    public func remove(at indexPath: IndexPath) {
        base.remove(results[indexPath[0]][indexPath[1]])
    }
}
