import Dispatch
import Engine
import Foundation

final class RealmObserver: ChangeObserver {
    let realm: Realm
    let queue: DispatchQueue?
    let block: (Realm.Notification, Realm) -> Void

    init(realm: Realm, queue: DispatchQueue?, block: @escaping (Realm.Notification, Realm) -> Void) {
        self.realm = realm
        self.queue = queue
        self.block = block
    }

    /// A Realm notification reads nothing and has no error case.
    func failed(_ error: Realm.Error) -> (() -> Void)? { nil }

    func changes(core: RealmCore, old: Snapshot, new: Snapshot, summary: ChangeSummary) throws -> (() -> Void)? {
        let (realm, block) = (self.realm, self.block)
        return { block(.didChange, realm) }
    }
}

extension Realm {
    /// What a Realm-level notification reports.
    public enum Notification: String, Sendable {
        /// The Realm moved to a newer version.
        case didChange = "RLMRealmDidChangeNotification"
        /// Another instance wrote and this Realm does not refresh by itself (autorefresh is off).
        case refreshRequired = "RLMRealmRefreshRequiredNotification"
    }

    /// Calls `block` each time this Realm moves to a newer version.
    public func observe(_ block: @escaping (Notification, Realm) -> Void) -> NotificationToken {
        // The observer holds the core only weakly through the token; the Realm value it passes is rebuilt.
        core.addObserver(RealmObserver(realm: self, queue: core.queue, block: block))
    }
}

extension RealmCore {
    /// The links whose targets an observer of `binding`'s objects watches: those named by key paths through a
    /// link (`dog.name`: the dog's name; `dog`: the link itself only), or, without key paths, every link and
    /// list of objects with all of the linked type's properties (one level deep, as far as Strata follows).
    /// The link watches of `keyPaths`; a path that is not links to a property traps, unless `lenient` (an
    /// object observer, whose paths may also go through linking objects, which `backlinkWatches` follow): then
    /// it is left out.
    func linkWatches(_ binding: TypeBinding, keyPaths: [String]?, lenient: Bool = false) -> [LinkWatch] {
        let info = binding.info
        func target(_ i: Int) -> TypeBinding? {
            guard let cls = info.linkTargets[i] ?? info.listTargets[i] ?? nil else { return nil }
            return self.binding(forClass: cls)
        }
        guard let keyPaths else {
            return info.schema.properties.indices.compactMap { i in
                target(i).map { LinkWatch(property: i, target: $0, targetProperties: Array($0.info.schema.properties.indices)) }
            }
        }
        var out: [LinkWatch] = []
        paths: for path in keyPaths {
            let parts = path.split(separator: ".").map(String.init)
            guard parts.count >= 2, let i = info.propertyIndex[parts[0]], let first = target(i) else { continue }
            var further: [(property: Int, target: TypeBinding)] = []
            var current = first
            for part in parts.dropFirst().dropLast() {
                guard let j = current.info.propertyIndex[part], let cls = current.info.linkTargets[j] ?? current.info.listTargets[j] ?? nil else {
                    if lenient { continue paths }
                    fatalError("'\(part)' in key path '\(path)' is not a link of '\(current.info.schema.className)'")
                }
                let next = self.binding(forClass: cls)
                further.append((j, next))
                current = next
            }
            guard let last = parts.last, let j = current.info.propertyIndex[last] else {
                if lenient { continue paths }
                fatalError("Property '\(parts.last ?? "")' not found in object of type '\(current.info.schema.className)' (key path '\(path)')")
            }
            out.append(LinkWatch(property: i, target: first, further: further, targetProperties: [j]))
        }
        return out
    }
}
