import Dispatch
import Engine
import Foundation

extension TypeInfo {
    /// Property indices of the names in `keyPaths`; an unknown name traps, naming the type and the property.
    /// Linking objects (`owners`, `owners.name`) are not stored properties: `RealmCore.backlinkWatches` watches
    /// them.
    func indices(ofKeyPaths keyPaths: [String]) -> [Int] {
        keyPaths.compactMap { path in
            let name = path.split(separator: ".").first.map(String.init) ?? path
            guard let i = propertyIndex[name] else {
                if linkingObjects.contains(where: { $0.name == name }) { return nil }
                fatalError("Property '\(name)' not found in object of type '\(schema.className)'")
            }
            return i
        }
    }
}

/// A key path through linking objects that an observer watches (`owners`, `owners.name`): an observed object
/// is modified when an object starts or stops linking to it, or (with a property after the name) when a
/// property of an object linking to it changes.
struct BacklinkWatch {
    /// The linking type, and its link or list property that points at the observed type.
    let origin: TypeBinding
    let originProperty: Int
    /// The linking type's properties that count besides the link itself (`owners.name`: name).
    let originProperties: [Int]

    /// The keys of observed objects whose linking objects changed between `old` and `new`.
    func affected(_ summary: ChangeSummary, old: Snapshot, new: Snapshot) throws -> Set<Int64> {
        var out = Set<Int64>()
        for key in try LinkWatch.candidates(summary, origin, old: old, new: new) {
            let before = try Self.links(origin, key, originProperty, in: old)
            let after = try Self.links(origin, key, originProperty, in: new)
            // Objects that gained or lost this linking object.
            if before != after { out.formUnion(before.symmetricDifference(after)) }
            if !originProperties.isEmpty, try RealmCore.differs(origin, key: key, old: old, new: new, indices: originProperties) {
                out.formUnion(before.union(after))
            }
        }
        return out
    }

    /// The keys property `property` of object `key` links to in `snapshot` (none when it is not there).
    static func links(_ binding: TypeBinding, _ key: Int64, _ property: Int, in snapshot: Snapshot) throws -> Set<Int64> {
        try snapshot.withValue(forKey: ObjectKey.bytes(key), in: binding.partition) { raw -> Set<Int64> in
            guard let raw else { return [] }
            return Set(RealmCore.linkKeys(RealmCore.values(binding, raw, [property])[0]))
        }
    }
}

extension RealmCore {
    /// The watches for the key paths through linking objects among `keyPaths` (all of the type's linking
    /// objects are not watched when no key paths are given: RealmSwift reports them only when named).
    func backlinkWatches(_ binding: TypeBinding, keyPaths: [String]?) -> [BacklinkWatch] {
        guard let keyPaths else { return [] }
        var out: [BacklinkWatch] = []
        for path in keyPaths {
            let parts = path.split(separator: ".").map(String.init)
            guard let first = parts.first, let inverse = binding.info.linkingObjects.first(where: { $0.name == first }) else { continue }
            let origin = self.binding(forClass: inverse.origin)
            guard let property = origin.info.propertyIndex[inverse.property] else { continue }
            var watched: [Int] = []
            if parts.count == 2 {
                guard let j = origin.info.propertyIndex[parts[1]] else {
                    fatalError("Property '\(parts[1])' not found in object of type '\(origin.info.schema.className)' (key path '\(path)')")
                }
                watched = [j]
            } else if parts.count > 2 {
                fatalError("Key path '\(path)' goes further than one property past the linking objects '\(first)'; observe '\(parts[0]).\(parts[1])'")
            }
            out.append(BacklinkWatch(origin: origin, originProperty: property, originProperties: watched))
        }
        return out
    }
}
