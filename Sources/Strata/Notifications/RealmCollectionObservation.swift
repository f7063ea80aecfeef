import Foundation

/// `observe` for generic code over collections of objects, with RealmSwift's default arguments.
extension RealmCollection {
    /// Calls `block` with the collection now (`.initial`), then after each change to its objects (to the
    /// properties in `keyPaths`, when given).
    public func observe(
        keyPaths: [String]? = nil, on queue: DispatchQueue? = nil, _ block: @escaping (RealmCollectionChange<Self>) -> Void
    ) -> NotificationToken {
        observe(keyPaths: keyPaths, on: queue, block)
    }

    /// `observe(keyPaths:on:_:)` with the properties of the objects named by key paths.
    public func observe(
        keyPaths: [PartialKeyPath<Element>], on queue: DispatchQueue? = nil, _ block: @escaping (RealmCollectionChange<Self>) -> Void
    ) -> NotificationToken {
        let info = TypeRegistry.info(for: Element.self)
        return observe(keyPaths: keyPaths.map { info.name(of: $0) }, on: queue, block)
    }

    /// Observes the collection's objects as `Results` in its order, and reports the changes as this
    /// collection's: the positions of a collection and of its `Results` are the same.
    func observeThroughResults(
        keyPaths: [String]?, on queue: DispatchQueue?, _ block: @escaping (RealmCollectionChange<Self>) -> Void
    ) -> NotificationToken {
        guard let results = _results else { fatalError("Only collections of managed objects support change notifications") }
        let collection = self
        return results.observe(keyPaths: keyPaths, on: queue) { change in
            switch change {
            case .initial: block(.initial(collection))
            case .update(_, let deletions, let insertions, let modifications):
                block(.update(collection, deletions: deletions, insertions: insertions, modifications: modifications))
            case .error(let error): block(.error(error))
            }
        }
    }
}

extension LinkingObjects {
    /// Calls `block` with the objects linking here now (`.initial`), then after each change: a link made or
    /// removed is an insertion or a deletion, a change to a linking object (to the properties in `keyPaths`,
    /// when given) a modification.
    public func observe(
        keyPaths: [String]? = nil, on queue: DispatchQueue? = nil, _ block: @escaping (RealmCollectionChange<LinkingObjects<Element>>) -> Void
    ) -> NotificationToken {
        observeThroughResults(keyPaths: keyPaths, on: queue, block)
    }
}

extension AnyRealmCollection {
    /// Calls `block` with the collection now (`.initial`), then after each change to the wrapped collection.
    public func observe(
        keyPaths: [String]? = nil, on queue: DispatchQueue? = nil, _ block: @escaping (RealmCollectionChange<AnyRealmCollection<Element>>) -> Void
    ) -> NotificationToken {
        let collection = self
        func observeBase<C: RealmCollection>(_ base: C) -> NotificationToken where C.Element == Element {
            base.observe(keyPaths: keyPaths, on: queue) { (change: RealmCollectionChange<C>) in
                switch change {
                case .initial: block(.initial(collection))
                case .update(_, let deletions, let insertions, let modifications):
                    block(.update(collection, deletions: deletions, insertions: insertions, modifications: modifications))
                case .error(let error): block(.error(error))
                }
            }
        }
        return observeBase(base)
    }
}
