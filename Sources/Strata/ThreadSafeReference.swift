import Engine
import Foundation

/// Objects and collections that belong to one Realm instance (and so to its thread, queue or actor).
public protocol ThreadConfined {}

extension Object: ThreadConfined {}
extension Results: ThreadConfined {}

/// A way to hand a managed object or `Results` to another thread: make the reference where the object lives,
/// send it, and `resolve` it in a Realm of the same file there.
///
/// The resolving Realm is first brought up to the version the reference was made at, if it is older; an object
/// deleted since resolves to nil.
public struct ThreadSafeReference<Confined: ThreadConfined>: Sendable {
    let sequence: UInt64
    let identity: String
    let make: @Sendable (RealmCore) -> Any?

    public init(to threadConfined: Confined) {
        switch threadConfined {
        case let object as Object:
            guard let accessor = object._accessor else {
                fatalError("Cannot construct a ThreadSafeReference to an unmanaged object: add it to a Realm first")
            }
            let cls: Object.Type = type(of: object)
            let key = accessor.key
            sequence = accessor.core.snapshot.sequence
            identity = accessor.core.configuration.identity
            make = { core in
                let binding = core.binding(forClass: cls)
                guard core.exists(binding: binding, key: key) else { return nil }
                return core.makeObject(binding: binding, key: key, record: nil)
            }
        case let results as any ResultsReferable:
            sequence = results.referenceCore.snapshot.sequence
            identity = results.referenceCore.configuration.identity
            make = results.referenceMaker()
        default:
            fatalError("ThreadSafeReference supports managed objects and Results")
        }
    }
}

/// What a ThreadSafeReference needs from `Results`, whatever its element type.
protocol ResultsReferable {
    var referenceCore: RealmCore { get }
    func referenceMaker() -> @Sendable (RealmCore) -> Any?
}

extension Results: ResultsReferable {
    var referenceCore: RealmCore { core }
    func referenceMaker() -> @Sendable (RealmCore) -> Any? {
        let (predicate, sort, distinct) = (self.predicate, self.sort, self.distinct)
        return { core in
            Results<Element>(core: core, binding: core.binding(forClass: Element.self), predicate: predicate, sort: sort, distinct: distinct)
        }
    }
}

extension Realm {
    /// The object or `Results` a reference names, in this Realm; nil when the object was deleted.
    public func resolve<Confined: ThreadConfined>(_ reference: ThreadSafeReference<Confined>) -> Confined? {
        require(reference.identity == core.configuration.identity, "A ThreadSafeReference must be resolved in a Realm of the same file")
        if core.snapshot.sequence < reference.sequence { core.refresh() }
        return reference.make(core) as? Confined
    }
}
