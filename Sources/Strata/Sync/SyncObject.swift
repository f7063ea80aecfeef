import Foundation

/// One element of a `List` as sync keeps it: its identity, its position and its value.
package struct ListElement: Sendable, Hashable {
    package var id: ElementID
    package var position: ListPosition
    package var value: SyncValue

    /// The order of a list: by position, then by id.
    static func precedes(_ a: ListElement, _ b: ListElement) -> Bool {
        a.position != b.position ? a.position < b.position : a.id < b.id
    }
}

/// A property's value in sync's model of an object.
package enum FieldState: Sendable, Hashable {
    case value(SyncValue)
    /// A `List`: its elements in order.
    case list([ListElement])
    /// A `MutableSet`: its values, each once, in the order of their encodings.
    case set([SyncValue])
    /// A `Map`.
    case map([String: SyncValue])

    static func sortedSet(_ values: [SyncValue]) -> [SyncValue] {
        var seen = Set<SyncValue>()
        return values.filter { seen.insert($0).inserted }.sorted { SyncCoding.encode($0).lexicographicallyPrecedes(SyncCoding.encode($1)) }
    }
}

/// A live object in sync's model: its properties by stored name (the primary key among them).
package struct SyncObject: Sendable, Hashable {
    package var fields: [String: FieldState]

    package init(fields: [String: FieldState]) { self.fields = fields }

    /// Every object this one links to: in values, lists, sets and maps, inside embedded objects and nested
    /// collections (a server's index of who links to whom).
    package var linkTargets: Set<ObjectReference> {
        var out = Set<ObjectReference>()
        for field in fields.values {
            switch field {
            case .value(let v): v.collectLinks(into: &out)
            case .list(let l): for e in l { e.value.collectLinks(into: &out) }
            case .set(let s): for v in s { v.collectLinks(into: &out) }
            case .map(let m): for v in m.values { v.collectLinks(into: &out) }
            }
        }
        return out
    }
}

/// A deleted object: the server version the delete was applied at (`UInt64.max` for a local delete the
/// server has not ordered yet) and the client that deleted it.
package struct Tombstone: Sendable, Hashable {
    package var version: UInt64
    package var client: UInt64

    package init(version: UInt64, client: UInt64) {
        self.version = version
        self.client = client
    }

    static let unordered = UInt64.max
}

/// What sync knows of an object.
package enum SyncObjectState: Sendable, Hashable {
    /// Never seen (or its tombstone was let go).
    case absent
    case deleted(Tombstone)
    case live(SyncObject)

    package var object: SyncObject? {
        if case .live(let o) = self { return o }
        return nil
    }
}

/// What an outbox entry's undo restores of one object: its whole state before the entry, or (an object live
/// before and after it) the properties the entry changed.
enum UndoImage: Sendable, Hashable {
    case state(SyncObjectState)
    case fields([String: FieldState])
}

/// Where a rule reads and changes objects: the oracle's dictionary in tests, a write transaction's objects in
/// a Realm (`RealmCore+SyncApply`).
package protocol SyncStore: AnyObject {
    func state(of object: ObjectReference) -> SyncObjectState
    func setState(_ state: SyncObjectState, of object: ObjectReference)
    /// The live objects that may hold a link to `object` (more is allowed: each is checked).
    func objectsMaybeLinking(to object: ObjectReference) -> [ObjectReference]
}

/// Realm's conflict rules, made deterministic: every device applies the server's change sets in the server's
/// order with these, and so reaches the same objects.
///
/// - The primary key is the identity. Last writer wins per property, in the server's order.
/// - A delete wins over concurrent edits (an edit of a deleted object does nothing). A create brings a deleted
///   object back only when its author had seen the delete (it came from the same client, or the server had
///   applied the delete at or below the create's base version).
/// - Integer additions sum.
/// - List inserts are all kept, ordered by (position, element id); a remove wins over a move or a set of the
///   same element; a move is last-writer-wins on the position.
/// - A link to a deleted object becomes null, leaves a list or set, and becomes null in a map; a link set to a
///   missing object is null.
package enum SyncRules {
    /// Applies `op` of a change set by `author` that had seen server version `base`; a delete it applies leaves
    /// a tombstone of `version`.
    package static func apply(_ op: ChangeOperation, author: UInt64, base: UInt64, version: UInt64, to store: some SyncStore) {
        let ref = op.object
        let current = store.state(of: ref)
        func isLive(_ r: ObjectReference) -> Bool { r == ref ? current.object != nil : store.state(of: r).object != nil }
        switch op {
        case .create(_, let values):
            switch current {
            case .live(var o):
                for (name, v) in values { o.fields[name] = .value(v.resolvingLinks(isLive)) }
                store.setState(.live(o), of: ref)
            case .deleted(let t) where t.client != author && t.version > base:
                return
            case .deleted, .absent:
                let o = SyncObject(fields: values.mapValues { .value($0.resolvingLinks { r in r == ref || store.state(of: r).object != nil }) })
                store.setState(.live(o), of: ref)
            }
        case .delete:
            let tombstone = Tombstone(version: version, client: author)
            guard current.object != nil else {
                store.setState(.deleted(tombstone), of: ref)
                return
            }
            store.setState(.deleted(tombstone), of: ref)
            for other in store.objectsMaybeLinking(to: ref) where other != ref {
                guard var o = store.state(of: other).object else { continue }
                if unlink(&o, from: ref) { store.setState(.live(o), of: other) }
            }
        default:
            guard var o = current.object else { return }
            if change(&o, op, isLive: isLive) { store.setState(.live(o), of: ref) }
        }
    }

    /// Applies a field operation to a live object; true when it changed it.
    private static func change(_ o: inout SyncObject, _ op: ChangeOperation, isLive: (ObjectReference) -> Bool) -> Bool {
        switch op {
        case .set(_, let p, let v):
            o.fields[p] = .value(v.resolvingLinks(isLive))
        case .addInteger(_, let p, let n):
            guard case .value(.int(let x))? = o.fields[p] else { return false }
            o.fields[p] = .value(.int(x &+ n))
        case .listInsert(_, let p, let id, let pos, let v):
            var list = list(o, p)
            if case .link(let r) = v, !isLive(r) { return false }
            guard !list.contains(where: { $0.id == id }) else { return false }
            let e = ListElement(id: id, position: pos, value: v.resolvingLinks(isLive))
            let at = list.firstIndex { ListElement.precedes(e, $0) } ?? list.endIndex
            list.insert(e, at: at)
            o.fields[p] = .list(list)
        case .listMove(_, let p, let id, let pos):
            var list = list(o, p)
            guard let i = list.firstIndex(where: { $0.id == id }) else { return false }
            var e = list.remove(at: i)
            e.position = pos
            let at = list.firstIndex { ListElement.precedes(e, $0) } ?? list.endIndex
            list.insert(e, at: at)
            o.fields[p] = .list(list)
        case .listRemove(_, let p, let id):
            var list = list(o, p)
            guard let i = list.firstIndex(where: { $0.id == id }) else { return false }
            list.remove(at: i)
            o.fields[p] = .list(list)
        case .listSet(_, let p, let id, let v):
            var list = list(o, p)
            guard let i = list.firstIndex(where: { $0.id == id }) else { return false }
            if case .link(let r) = v, !isLive(r) {
                list.remove(at: i)
            } else {
                list[i].value = v.resolvingLinks(isLive)
            }
            o.fields[p] = .list(list)
        case .setInsert(_, let p, let v):
            if case .link(let r) = v, !isLive(r) { return false }
            var set = set(o, p)
            guard !set.contains(v) else { return false }
            set.append(v)
            o.fields[p] = .set(FieldState.sortedSet(set))
        case .setRemove(_, let p, let v):
            var set = set(o, p)
            guard let i = set.firstIndex(of: v) else { return false }
            set.remove(at: i)
            o.fields[p] = .set(set)
        case .mapPut(_, let p, let k, let v):
            var map = map(o, p)
            map[k] = v.resolvingLinks(isLive)
            o.fields[p] = .map(map)
        case .mapRemove(_, let p, let k):
            var map = map(o, p)
            guard map.removeValue(forKey: k) != nil else { return false }
            o.fields[p] = .map(map)
        case .create, .delete:
            return false
        }
        return true
    }

    private static func list(_ o: SyncObject, _ p: String) -> [ListElement] {
        if case .list(let l)? = o.fields[p] { return l }
        return []
    }

    private static func set(_ o: SyncObject, _ p: String) -> [SyncValue] {
        if case .set(let s)? = o.fields[p] { return s }
        return []
    }

    private static func map(_ o: SyncObject, _ p: String) -> [String: SyncValue] {
        if case .map(let m)? = o.fields[p] { return m }
        return [:]
    }

    /// Removes every link to `target` from `o` (nulled, or dropped from lists and sets); true when it held one.
    static func unlink(_ o: inout SyncObject, from target: ObjectReference) -> Bool {
        var changed = false
        let isLive = { (r: ObjectReference) in r != target }
        for (name, field) in o.fields {
            switch field {
            case .value(let v) where v.links(to: target):
                o.fields[name] = .value(v.resolvingLinks(isLive))
                changed = true
            case .list(let l) where l.contains(where: { $0.value.links(to: target) }):
                o.fields[name] = .list(l.compactMap { e in
                    if case .link(target) = e.value { return nil }
                    var e = e
                    e.value = e.value.resolvingLinks(isLive)
                    return e
                })
                changed = true
            case .set(let s) where s.contains(where: { $0.links(to: target) }):
                o.fields[name] = .set(s.filter { !$0.links(to: target) })
                changed = true
            case .map(let m) where m.values.contains(where: { $0.links(to: target) }):
                o.fields[name] = .map(m.mapValues { $0.resolvingLinks(isLive) })
                changed = true
            default:
                break
            }
        }
        return changed
    }
}
