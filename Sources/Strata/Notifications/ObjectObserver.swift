import Dispatch
import Engine
import Foundation

final class ObjectObserver<T: Object>: ChangeObserver {
    let object: T
    let binding: TypeBinding
    let key: Int64
    let queue: DispatchQueue?
    let watched: [Int]
    /// Linking objects among the key paths (`owners`, `owners.name`), by their property's name.
    let backlinks: [(name: String, watch: BacklinkWatch)]
    /// Key paths through links and lists (`dog.name`, `employees.hired`): a change of what they reach is a
    /// change of the link or list property, without values (RealmSwift's object key-path notifications).
    let links: [LinkWatch]
    let block: (ObjectChange<T>) -> Void
    var done = false

    init(
        object: T, accessor: ObjectAccessor, queue: DispatchQueue?, watched: [Int], backlinks: [(name: String, watch: BacklinkWatch)] = [],
        links: [LinkWatch] = [], block: @escaping (ObjectChange<T>) -> Void
    ) {
        self.object = object
        self.binding = accessor.binding
        self.key = accessor.key
        self.queue = queue
        self.watched = watched
        self.backlinks = backlinks
        self.links = links
        self.block = block
    }

    func failed(_ error: Realm.Error) -> (() -> Void)? {
        done = true
        let block = self.block
        return { block(.error(error)) }
    }

    func changes(core: RealmCore, old: Snapshot, new: Snapshot, summary: ChangeSummary) throws -> (() -> Void)? {
        guard !done else { return nil }
        // Linking objects that changed: reported as changes of those properties (no values, as for RealmSwift's
        // collections).
        var changes: [PropertyChange] = []
        for (name, watch) in backlinks where try watch.affected(summary, old: old, new: new).contains(key) {
            changes.append(PropertyChange(name: name, oldValue: nil, newValue: nil))
        }
        // Objects this one links to (through each watched path) whose watched properties changed.
        for watch in links {
            let touched = try watch.touched(summary, old: old, new: new)
            guard !touched.isEmpty else { continue }
            let name = binding.info.schema.properties[watch.property].name
            let hit = try new.withValue(forKey: ObjectKey.bytes(key), in: binding.partition) { raw -> Bool in
                guard let raw else { return false }
                return RealmCore.linkKeys(RealmCore.values(binding, raw, [watch.property])[0]).contains(where: touched.contains)
            }
            if hit, !changes.contains(where: { $0.name == name }) { changes.append(PropertyChange(name: name, oldValue: nil, newValue: nil)) }
        }
        guard summary.everything || summary.keys[binding.partition]?.contains(key) == true || !changes.isEmpty else { return nil }
        let k = ObjectKey.bytes(key)
        let before = try old.withValue(forKey: k, in: binding.partition) { $0.map { RealmCore.values(binding, $0, watched) } }
        let after = try new.withValue(forKey: k, in: binding.partition) { $0.map { RealmCore.values(binding, $0, watched) } }
        let block = self.block
        guard let after else {
            guard before != nil else { return nil }
            done = true
            return { block(.deleted) }
        }
        guard let before else { return nil }
        for (n, i) in watched.enumerated() where !RealmCore.same(before[n], after[n]) {
            let name = binding.info.schema.properties[i].name
            changes.removeAll { $0.name == name }
            changes.append(PropertyChange(name: name, oldValue: before[n].anyValue, newValue: after[n].anyValue))
        }
        guard !changes.isEmpty else { return nil }
        let object = self.object
        return { block(.change(object, changes)) }
    }
}

extension Object {
    /// Calls `block` after each change to this managed object (of the properties in `keyPaths`, when given),
    /// with the names and the old and new values, and once with `.deleted` when it is deleted.
    public func observe<T: Object>(
        keyPaths: [String]? = nil, on queue: DispatchQueue? = nil, _ block: @escaping (ObjectChange<T>) -> Void
    ) -> NotificationToken {
        guard let accessor = _accessor, let object = self as? T else {
            fatalError("Only objects which are managed by a Realm support change notifications")
        }
        require(!accessor.core.isInWriteTransaction, "Cannot register notification blocks from within write transactions.")
        let info = accessor.binding.info
        let watched = keyPaths.map { info.indices(ofKeyPaths: $0) } ?? Array(info.schema.properties.indices)
        let inverse = keyPaths.map { paths in
            paths.compactMap { path -> (name: String, watch: BacklinkWatch)? in
                let name = String(path.split(separator: ".").first ?? "")
                return accessor.core.backlinkWatches(accessor.binding, keyPaths: [path]).first.map { (name, $0) }
            }
        } ?? []
        // Paths through links or lists (`dog.name`): what they reach counts too. Without key paths, as in
        // RealmSwift, only the object's own properties count.
        let links = keyPaths.map { accessor.core.linkWatches(accessor.binding, keyPaths: $0, lenient: true) } ?? []
        return accessor.core.addObserver(
            ObjectObserver(
                object: object, accessor: accessor, queue: queue ?? accessor.core.queue, watched: watched, backlinks: inverse, links: links,
                block: block))
    }

    /// `observe(keyPaths:on:_:)` with the properties named by key paths (`[\Dog.name, \Dog.owner.name]`).
    public func observe<T: Object>(
        keyPaths: [PartialKeyPath<T>], on queue: DispatchQueue? = nil, _ block: @escaping (ObjectChange<T>) -> Void
    ) -> NotificationToken {
        let info = TypeRegistry.info(for: T.self)
        return observe(keyPaths: keyPaths.map { info.name(of: $0) }, on: queue, block)
    }
}
