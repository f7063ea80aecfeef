import Foundation

/// The field operations that take an object from one state to another: what change capture records for each
/// object a write transaction touched.
enum SyncDiff {
    /// The operations from `before` to `after` (nil: no live object), and `after` with its list elements given
    /// their ids and positions (kept from `before` where an element stayed, new ones from `newID`).
    /// `increments`: the amounts `increment(_:by:)` added to properties in the write, recorded as additions when
    /// the value changed by exactly that.
    static func operations(
        _ ref: ObjectReference, before: SyncObject?, after: SyncObject?, increments: [String: Int64], names: [String]? = nil,
        newID: () -> ElementID
    ) -> (operations: [ChangeOperation], after: SyncObject?) {
        // The properties in one order (the schema's, or by name), so that a write's operations come out the same.
        let names = names ?? after.map { $0.fields.keys.sorted() } ?? []
        guard var after else { return (before == nil ? [] : [.delete(ref)], nil) }
        var ops: [ChangeOperation] = []
        guard let before else {
            // A value holding a link is set after the create: the commit's creates come first in its change set
            // (`RealmCore+SyncCapture`), so that the object it links to, created in the same write, exists.
            var values: [String: SyncValue] = [:]
            var linkSets: [ChangeOperation] = []
            for name in names {
                guard case .value(let v)? = after.fields[name] else { continue }
                if v.holdsLink {
                    values[name] = .null
                    linkSets.append(.set(ref, property: name, value: v))
                } else {
                    values[name] = v
                }
            }
            ops.append(.create(ref, values: values))
            ops += linkSets
            for name in names {
                guard let field = after.fields[name] else { continue }
                let (fieldOps, assigned) = collectionOperations(ref, name, before: nil, after: field, newID: newID)
                ops += fieldOps
                if let assigned { after.fields[name] = assigned }
            }
            return (ops, after)
        }
        for name in names {
            guard let field = after.fields[name] else { continue }
            let old = before.fields[name]
            if case .value(let v) = field {
                guard old != field else { continue }
                if let amount = increments[name], case .value(.int(let x))? = old, case .int(let y) = v, x &+ amount == y {
                    ops.append(.addInteger(ref, property: name, amount: amount))
                } else {
                    ops.append(.set(ref, property: name, value: v))
                }
                continue
            }
            let (fieldOps, assigned) = collectionOperations(ref, name, before: old, after: field, newID: newID)
            ops += fieldOps
            if let assigned { after.fields[name] = assigned }
        }
        return (ops, after)
    }

    /// The operations on one collection property; for a list, its elements with ids and positions.
    private static func collectionOperations(
        _ ref: ObjectReference, _ name: String, before: FieldState?, after: FieldState, newID: () -> ElementID
    ) -> ([ChangeOperation], FieldState?) {
        switch after {
        case .value:
            return ([], nil)
        case .set(let values):
            var old: [SyncValue] = []
            if case .set(let s)? = before { old = s }
            let oldSet = Set(old)
            let newSet = Set(values)
            var ops: [ChangeOperation] = old.filter { !newSet.contains($0) }.map { .setRemove(ref, property: name, value: $0) }
            ops += values.filter { !oldSet.contains($0) }.map { .setInsert(ref, property: name, value: $0) }
            return (ops, nil)
        case .map(let entries):
            var old: [String: SyncValue] = [:]
            if case .map(let m)? = before { old = m }
            var ops: [ChangeOperation] = old.keys.filter { entries[$0] == nil }.sorted().map { .mapRemove(ref, property: name, key: $0) }
            for key in entries.keys.sorted() where old[key] != entries[key] {
                ops.append(.mapPut(ref, property: name, key: key, value: entries[key]!))
            }
            return (ops, nil)
        case .list(let elements):
            var old: [ListElement] = []
            if case .list(let l)? = before { old = l }
            let (ops, list) = listOperations(ref, name, before: old, after: elements.map(\.value), newID: newID)
            return (ops, .list(list))
        }
    }

    /// The operations from list `before` to the values `after`, and `after`'s elements. Elements that stay (a
    /// longest common subsequence of values) keep their ids and positions; an element whose value reappears
    /// elsewhere moved; an element replaced in place was set; the rest were removed or inserted.
    static func listOperations(
        _ ref: ObjectReference, _ name: String, before: [ListElement], after: [SyncValue], newID: () -> ElementID
    ) -> ([ChangeOperation], [ListElement]) {
        let matches = commonSubsequence(before.map(\.value), after)
        var beforeMatched = [Bool](repeating: false, count: before.count)
        var afterSource = [Int?](repeating: nil, count: after.count)
        for (b, a) in matches {
            beforeMatched[b] = true
            afterSource[a] = b
        }
        enum Kind { case kept, set, moved, inserted }
        var kinds = [Kind](repeating: .inserted, count: after.count)
        for (_, a) in matches { kinds[a] = .kept }
        // Moves: an element whose value left one place and arrived in another.
        var leftByValue: [SyncValue: [Int]] = [:]
        for (i, e) in before.enumerated() where !beforeMatched[i] { leftByValue[e.value, default: []].append(i) }
        for a in after.indices where afterSource[a] == nil {
            guard var sources = leftByValue[after[a]], !sources.isEmpty else { continue }
            let b = sources.removeFirst()
            leftByValue[after[a]] = sources
            beforeMatched[b] = true
            afterSource[a] = b
            kinds[a] = .moved
        }
        // Sets: in each gap between elements that stayed, the elements that left and arrived there, in order.
        var gapStart = 0
        var beforeCursor = 0
        func pairGap(_ end: Int, _ beforeEnd: Int) {
            var free = (beforeCursor..<beforeEnd).filter { !beforeMatched[$0] }[...]
            for a in gapStart..<end where afterSource[a] == nil {
                guard let b = free.popFirst() else { break }
                beforeMatched[b] = true
                afterSource[a] = b
                kinds[a] = .set
            }
        }
        for a in after.indices where kinds[a] == .kept {
            let b = afterSource[a]!
            pairGap(a, b)
            gapStart = a + 1
            beforeCursor = b + 1
        }
        pairGap(after.count, before.count)

        var ops: [ChangeOperation] = []
        for (i, e) in before.enumerated() where !beforeMatched[i] { ops.append(.listRemove(ref, property: name, element: e.id)) }
        var result: [ListElement] = after.indices.map { a in
            if let b = afterSource[a] { return ListElement(id: before[b].id, position: before[b].position, value: after[a]) }
            return ListElement(id: ElementID(client: 0, counter: 0), position: ListPosition(bytes: []), value: after[a])
        }
        // Positions: kept and set elements keep theirs (in order already); moved and inserted ones get new ones
        // between their neighbours. A kept neighbour with the same position as the one below the run cannot have
        // a position between them: it moves too.
        var needs = kinds.map { $0 == .moved || $0 == .inserted }
        var a = 0
        while a < after.count {
            guard needs[a] else {
                a += 1
                continue
            }
            let lower = a > 0 ? result[a - 1].position : nil
            var end = a
            while end < after.count && (needs[end] || (lower != nil && !(lower! < result[end].position))) {
                if !needs[end] {
                    needs[end] = true
                    kinds[end] = .moved
                }
                end += 1
            }
            let upper = end < after.count ? result[end].position : nil
            let positions = ListPosition.spread(end - a, between: lower, upper)
            for (k, position) in positions.enumerated() { result[a + k].position = position }
            a = end
        }
        for i in after.indices {
            switch kinds[i] {
            case .kept:
                break
            case .set:
                if before[afterSource[i]!].value != after[i] {
                    ops.append(.listSet(ref, property: name, element: result[i].id, value: after[i]))
                }
            case .moved:
                ops.append(.listMove(ref, property: name, element: result[i].id, position: result[i].position))
            case .inserted:
                result[i].id = newID()
                ops.append(.listInsert(ref, property: name, element: result[i].id, position: result[i].position, value: after[i]))
            }
        }
        return (ops, result)
    }

    /// Index pairs of a common subsequence of `a` and `b`, in order: the longest one for lists whose differing
    /// middles are small, a greedy one otherwise (after the common prefix and suffix, which stay whole).
    static func commonSubsequence(_ a: [SyncValue], _ b: [SyncValue]) -> [(Int, Int)] {
        var prefix = 0
        while prefix < a.count && prefix < b.count && a[prefix] == b[prefix] { prefix += 1 }
        var suffix = 0
        while suffix < a.count - prefix && suffix < b.count - prefix && a[a.count - 1 - suffix] == b[b.count - 1 - suffix] { suffix += 1 }
        var out: [(Int, Int)] = (0..<prefix).map { ($0, $0) }
        let aMid = Array(a[prefix..<(a.count - suffix)])
        let bMid = Array(b[prefix..<(b.count - suffix)])
        if !aMid.isEmpty && !bMid.isEmpty {
            if aMid.count * bMid.count <= 250_000 {
                // Dynamic programming over the middles.
                let n = aMid.count
                let m = bMid.count
                var table = [Int](repeating: 0, count: (n + 1) * (m + 1))
                for i in stride(from: n - 1, through: 0, by: -1) {
                    for j in stride(from: m - 1, through: 0, by: -1) {
                        table[i * (m + 1) + j] =
                            aMid[i] == bMid[j] ? table[(i + 1) * (m + 1) + j + 1] + 1 : max(table[(i + 1) * (m + 1) + j], table[i * (m + 1) + j + 1])
                    }
                }
                var i = 0
                var j = 0
                while i < n && j < m {
                    if aMid[i] == bMid[j] {
                        out.append((prefix + i, prefix + j))
                        i += 1
                        j += 1
                    } else if table[(i + 1) * (m + 1) + j] >= table[i * (m + 1) + j + 1] {
                        i += 1
                    } else {
                        j += 1
                    }
                }
            } else {
                // Greedy: each element of `b` takes the next unused equal element of `a` after the last taken.
                // (The positions of each value, and how many of them are at or below the last taken.)
                var positions: [SyncValue: (list: [Int], used: Int)] = [:]
                for (i, v) in aMid.enumerated() { positions[v, default: ([], 0)].list.append(i) }
                var last = -1
                for (j, v) in bMid.enumerated() {
                    guard var entry = positions[v] else { continue }
                    while entry.used < entry.list.count && entry.list[entry.used] <= last { entry.used += 1 }
                    guard entry.used < entry.list.count else { continue }
                    let i = entry.list[entry.used]
                    entry.used += 1
                    positions[v] = entry
                    out.append((prefix + i, prefix + j))
                    last = i
                }
            }
        }
        for k in 0..<suffix { out.append((a.count - suffix + k, b.count - suffix + k)) }
        return out
    }
}
