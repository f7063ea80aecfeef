import Engine
import Foundation

/// Objects and collections that belong to one Realm instance (and so to its thread, queue or actor):
/// objects, `Results`, `List`, `MutableSet`, `Map` and `LinkingObjects`.
public protocol ThreadConfined {
    /// The Realm that manages it; nil when it is unmanaged.
    var realm: Realm? { get }
    /// Whether it can no longer be read (its object was deleted, or its Realm invalidated).
    var isInvalidated: Bool { get }
    /// Whether it belongs to a frozen Realm.
    var isFrozen: Bool { get }
    /// It as of its Realm's current version, immutable and readable from any thread.
    func freeze() -> Self
    /// The live one on the calling thread (itself when it is live); nil when it was deleted since.
    func thaw() -> Self?
}

extension Object: ThreadConfined {}
extension Results: ThreadConfined {}

/// A way to hand a managed object or collection to another thread: make the reference where it lives, send
/// it, and `resolve` it in a Realm of the same file there, once.
///
/// The resolving Realm is first brought up to the version the reference was made at, if it is older; an object
/// deleted since (or the object a collection belongs to) resolves to nil.
public struct ThreadSafeReference<Confined: ThreadConfined>: Sendable {
    let sequence: UInt64
    let identity: String
    let make: @Sendable (RealmCore) -> Any?
    private let state = ResolveOnce()

    /// Whether the reference was resolved already (a reference resolves once).
    public var isInvalidated: Bool { state.isResolved }

    public init(to threadConfined: Confined) {
        let referable: any Referable
        switch threadConfined {
        case let object as Object:
            guard let accessor = object._accessor else {
                fatalError("Cannot construct reference to unmanaged object, which can be passed across threads directly: add it to a Realm first")
            }
            referable = accessor
        case let r as any Referable:
            referable = r
        default:
            fatalError("ThreadSafeReference supports managed objects, Results, List, MutableSet, Map and LinkingObjects")
        }
        guard let core = referable.referenceCore else {
            fatalError("Cannot construct reference to unmanaged object, which can be passed across threads directly (an unmanaged \(Confined.self)): add its object to a Realm first")
        }
        // RealmSwift's words; a deleted object (or a collection of one) has nothing to refer to.
        require(!threadConfined.isInvalidated, "Cannot construct reference to invalidated object (a deleted \(Confined.self), or one of an invalidated Realm)")
        sequence = core.snapshot.sequence
        identity = core.configuration.identity
        make = referable.referenceMaker()
    }

    /// Marks the reference resolved; a second resolve traps, as RealmSwift's does.
    func claim() {
        guard state.claim() else { fatalError("Can only resolve a thread safe reference once.") }
    }
}

/// Whether a reference was resolved, shared by its copies.
final class ResolveOnce: @unchecked Sendable {
    private let lock = NSLock()
    private var resolved = false

    var isResolved: Bool { lock.withLock { resolved } }

    /// True the first time only.
    func claim() -> Bool {
        lock.withLock {
            if resolved { return false }
            resolved = true
            return true
        }
    }
}

/// What a ThreadSafeReference needs from what it refers to, whatever its type: the Realm instance it belongs
/// to (nil: unmanaged), and how to find it again in another instance of the file.
protocol Referable {
    var referenceCore: RealmCore? { get }
    func referenceMaker() -> @Sendable (RealmCore) -> Any?
}

extension ObjectAccessor: Referable {
    var referenceCore: RealmCore? { core }
    func referenceMaker() -> @Sendable (RealmCore) -> Any? {
        let cls = binding.objectClass
        let name = binding.info.schema.className
        let key = self.key
        return { core in
            let binding = cls == DynamicObject.self ? core.dynamicBinding(name) : core.binding(forClass: cls)
            guard core.exists(binding: binding, key: key) else { return nil }
            return core.makeObject(binding: binding, key: key, record: nil)
        }
    }

    /// The same object's accessor in `core`, found as `referenceMaker` finds it.
    static func maker(_ accessor: ObjectAccessor) -> @Sendable (RealmCore) -> ObjectAccessor? {
        let make = accessor.referenceMaker()
        return { core in (make(core) as? Object)?._accessor }
    }
}

extension Results: Referable {
    var referenceCore: RealmCore? { core }
    func referenceMaker() -> @Sendable (RealmCore) -> Any? {
        // What the results are, without the Realm they were read from (which the reference must not keep).
        nonisolated(unsafe) let parts = (predicate, sort, distinctKeys, base, projector, values)
        let (objectClass, name) = (binding.objectClass, binding.info.schema.className)
        return { core in
            let binding = objectClass == DynamicObject.self ? core.dynamicBinding(name) : core.binding(forClass: objectClass)
            return Results<Element>(
                core: core, binding: binding, predicate: parts.0, sort: parts.1, distinct: parts.2, base: parts.3, projector: parts.4, values: parts.5)
        }
    }
}

// A collection is found again through its object: resolved where that object was deleted, it is nil.

extension List: Referable {
    var referenceCore: RealmCore? { accessor?.core }
    func referenceMaker() -> @Sendable (RealmCore) -> Any? {
        guard let accessor else { return { _ in nil } }
        let owner = ObjectAccessor.maker(accessor)
        let location = self.location
        return { core in owner(core).map { List(accessor: $0, location: location) } }
    }
}

extension MutableSet: Referable {
    var referenceCore: RealmCore? { list.referenceCore }
    func referenceMaker() -> @Sendable (RealmCore) -> Any? {
        let make = list.referenceMaker()
        return { core in (make(core) as? List<Element>).map(MutableSet.init(list:)) }
    }
}

extension Map: Referable {
    var referenceCore: RealmCore? { accessor?.core }
    func referenceMaker() -> @Sendable (RealmCore) -> Any? {
        guard let accessor else { return { _ in nil } }
        let owner = ObjectAccessor.maker(accessor)
        let location = self.location
        return { core in owner(core).map { Map(accessor: $0, location: location) } }
    }
}

extension LinkingObjects: Referable {
    var referenceCore: RealmCore? { target?.core }
    func referenceMaker() -> @Sendable (RealmCore) -> Any? {
        guard let target else { return { _ in nil } }
        let owner = ObjectAccessor.maker(target)
        let property = propertyName
        return { core in owner(core).map { LinkingObjects(propertyName: property, target: $0) } }
    }
}

extension AnyRealmCollection: Referable {
    var referenceCore: RealmCore? { (base as? any Referable)?.referenceCore }
    func referenceMaker() -> @Sendable (RealmCore) -> Any? {
        guard let referable = base as? any Referable else { return { _ in nil } }
        let make = referable.referenceMaker()
        return { core in
            guard let made = make(core) else { return nil }
            return Self.wrapping(made)
        }
    }

    /// `base` (the collection a reference made again) wrapped, whatever its concrete type.
    static func wrapping(_ base: Any) -> AnyRealmCollection<Element>? {
        guard let collection = base as? any RealmCollection<Element> else { return nil }
        return AnyRealmCollection(opening: collection)
    }

    private init(opening collection: some RealmCollection<Element>) { self.init(collection) }
}

extension Realm {
    /// The object or collection a reference names, in this Realm; nil when the object (or the collection's
    /// object) was deleted. A reference resolves once.
    public func resolve<Confined: ThreadConfined>(_ reference: ThreadSafeReference<Confined>) -> Confined? {
        require(reference.identity == core.configuration.identity, "A ThreadSafeReference must be resolved in a Realm of the same file")
        reference.claim()
        if core.snapshot.sequence < reference.sequence { core.refresh() }
        return reference.make(core) as? Confined
    }
}

/// A property holding a managed object or collection that may be read on any thread: each read resolves it
/// in a Realm of its file on the reading thread (RealmSwift's `@ThreadSafe`). Suited to function arguments
/// and local variables handed to another thread or task; a long-lived one pins its version of the file.
///
/// ```swift
/// @ThreadSafe var person = realm.objects(Person.self).first
/// DispatchQueue.global().async { print(person?.name ?? "deleted") }
/// ```
@propertyWrapper
public final class ThreadSafe<T: ThreadConfined>: @unchecked Sendable {
    private let lock = NSLock()
    private var reference: ThreadSafeReference<T>?
    private var configuration: Realm.Configuration?

    public init(wrappedValue: T?) {
        self.wrappedValue = wrappedValue
    }

    public var wrappedValue: T? {
        get {
            lock.withLock {
                guard let reference, let configuration else { return nil }
                let realm: Realm
                do {
                    realm = try Realm(configuration: configuration)
                } catch {
                    fatalError("@ThreadSafe could not open \(configuration.fileURL?.path ?? "its Realm") on this thread: \(error)")
                }
                guard let value = realm.resolve(reference) else {
                    self.reference = nil
                    return nil
                }
                // A reference resolves once: the next read resolves a new one.
                self.reference = ThreadSafeReference(to: value)
                return value
            }
        }
        set {
            lock.withLock {
                guard let newValue else {
                    reference = nil
                    return
                }
                guard let realm = newValue.realm else { fatalError("Only managed objects may be wrapped as thread safe.") }
                configuration = realm.configuration
                reference = ThreadSafeReference(to: newValue)
            }
        }
    }
}
