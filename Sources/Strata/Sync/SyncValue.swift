import Foundation

/// A property value as change capture records it and sync carries it: the same on every device. Links name
/// their target by type and primary key (object keys differ between files); an embedded object is its fields
/// (it has no identity of its own), and a collection inside an embedded object or an `AnyRealmValue` is its
/// elements.
public indirect enum SyncValue: Sendable, Hashable, Codable, CustomStringConvertible {
    case null
    case bool(Bool)
    case int(Int64)
    case float(Float)
    case double(Double)
    case string(String)
    case data(Data)
    case date(Date)
    case uuid(UUID)
    case objectId(ObjectId)
    case decimal(Decimal128)
    /// A link to a top-level object (also an `AnyRealmValue` holding one).
    case link(ObjectReference)
    /// An embedded object: its fields by stored property name.
    case embedded([String: SyncValue])
    /// A list inside an embedded object, or an `AnyRealmValue`'s nested list; a set inside an embedded object.
    case list([SyncValue])
    /// A map inside an embedded object, or an `AnyRealmValue`'s nested dictionary.
    case dictionary([String: SyncValue])

    public var description: String {
        switch self {
        case .null: "null"
        case .bool(let v): "\(v)"
        case .int(let v): "\(v)"
        case .float(let v): "\(v)f"
        case .double(let v): "\(v)"
        case .string(let v): "\"\(v)\""
        case .data(let v): "<\(v.count) bytes>"
        case .date(let v): "\(v.timeIntervalSince1970)s"
        case .uuid(let v): v.uuidString
        case .objectId(let v): "ObjectId(\(v.hex))"
        case .decimal(let v): "\(v)"
        case .link(let r): "\(r)"
        case .embedded(let f): "{" + f.keys.sorted().map { "\($0): \(f[$0]!)" }.joined(separator: ", ") + "}"
        case .list(let l): "[" + l.map(\.description).joined(separator: ", ") + "]"
        case .dictionary(let d): "[" + d.keys.sorted().map { "\($0): \(d[$0]!)" }.joined(separator: ", ") + "]"
        }
    }

    /// Values are equal when they are the same value: floating-point numbers by their bits, so that a NaN
    /// equals itself (a property holding one is unchanged when it is left alone) and -0.0 differs from 0.0.
    public static func == (a: SyncValue, b: SyncValue) -> Bool {
        switch (a, b) {
        case (.null, .null): true
        case (.bool(let x), .bool(let y)): x == y
        case (.int(let x), .int(let y)): x == y
        case (.float(let x), .float(let y)): x.bitPattern == y.bitPattern
        case (.double(let x), .double(let y)): x.bitPattern == y.bitPattern
        case (.string(let x), .string(let y)): x == y
        case (.data(let x), .data(let y)): x == y
        case (.date(let x), .date(let y)): x.timeIntervalSinceReferenceDate.bitPattern == y.timeIntervalSinceReferenceDate.bitPattern
        case (.uuid(let x), .uuid(let y)): x == y
        case (.objectId(let x), .objectId(let y)): x == y
        case (.decimal(let x), .decimal(let y)): x.description == y.description
        case (.link(let x), .link(let y)): x == y
        case (.embedded(let x), .embedded(let y)): x == y
        case (.list(let x), .list(let y)): x == y
        case (.dictionary(let x), .dictionary(let y)): x == y
        default: false
        }
    }

    public func hash(into h: inout Hasher) {
        switch self {
        case .null: h.combine(0)
        case .bool(let v): h.combine(v)
        case .int(let v): h.combine(v)
        case .float(let v): h.combine(v.bitPattern)
        case .double(let v): h.combine(v.bitPattern)
        case .string(let v): h.combine(v)
        case .data(let v): h.combine(v)
        case .date(let v): h.combine(v.timeIntervalSinceReferenceDate.bitPattern)
        case .uuid(let v): h.combine(v)
        case .objectId(let v): h.combine(v)
        case .decimal(let v): h.combine(v.description)
        case .link(let r): h.combine(r)
        case .embedded(let f), .dictionary(let f): h.combine(f)
        case .list(let l): h.combine(l)
        }
    }

    /// Whether this is, or holds anywhere inside it, a link.
    var holdsLink: Bool {
        switch self {
        case .link: true
        case .embedded(let f), .dictionary(let f): f.values.contains { $0.holdsLink }
        case .list(let l): l.contains { $0.holdsLink }
        default: false
        }
    }

    /// Adds every object this value links to, anywhere inside it, to `out`.
    package func collectLinks(into out: inout Set<ObjectReference>) {
        switch self {
        case .link(let r): out.insert(r)
        case .embedded(let f), .dictionary(let f): for v in f.values { v.collectLinks(into: &out) }
        case .list(let l): for v in l { v.collectLinks(into: &out) }
        default: break
        }
    }

    /// Whether this is, or holds anywhere inside it, a link to `target`.
    func links(to target: ObjectReference) -> Bool {
        switch self {
        case .link(let r): r == target
        case .embedded(let f), .dictionary(let f): f.values.contains { $0.links(to: target) }
        case .list(let l): l.contains { $0.links(to: target) }
        default: false
        }
    }

    /// This value with links to objects `isLive` denies nulled (inside embedded objects and dictionaries) or
    /// dropped (from lists), as a link to a deleted object is.
    func resolvingLinks(_ isLive: (ObjectReference) -> Bool) -> SyncValue {
        switch self {
        case .link(let r): isLive(r) ? self : .null
        case .embedded(let f): .embedded(f.mapValues { $0.resolvingLinks(isLive) })
        case .dictionary(let d): .dictionary(d.mapValues { $0.resolvingLinks(isLive) })
        case .list(let l):
            .list(l.compactMap { v in
                if case .link(let r) = v, !isLive(r) { return nil }
                return v.resolvingLinks(isLive)
            })
        default: self
        }
    }
}

/// An object as sync names it: its type and its primary key.
public struct ObjectReference: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    public var type: String
    public var primaryKey: SyncValue

    public init(type: String, primaryKey: SyncValue) {
        self.type = type
        self.primaryKey = primaryKey
    }

    public var description: String { "\(type)(\(primaryKey))" }

    /// A total order (by type, then by the primary key's encoding), so that work over many objects is done
    /// in the same order on every device.
    public static func < (a: ObjectReference, b: ObjectReference) -> Bool {
        if a.type != b.type { return a.type < b.type }
        // Keys of one kind compare as themselves; others (nil against a value) by their encodings, where nil is
        // below every value.
        switch (a.primaryKey, b.primaryKey) {
        case (.int(let x), .int(let y)): return x < y
        case (.string(let x), .string(let y)): return x < y
        default: return SyncCoding.encode(a.primaryKey).lexicographicallyPrecedes(SyncCoding.encode(b.primaryKey))
        }
    }
}

/// The identity of one element of a `List`, given when the element is inserted and kept while it stays: list
/// operations name elements by it, so that concurrent inserts, moves and removals on two devices all find
/// their element.
public struct ElementID: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// The client that inserted the element.
    public var client: UInt64
    /// That client's counter of elements.
    public var counter: UInt64

    public init(client: UInt64, counter: UInt64) {
        self.client = client
        self.counter = counter
    }

    public var description: String { "\(String(client, radix: 16)).\(counter)" }

    public static func < (a: ElementID, b: ElementID) -> Bool { (a.client, a.counter) < (b.client, b.counter) }
}

/// Where an element stands in a `List`: a fractional index, bytes compared lexicographically. A list is its
/// elements ordered by position, then by element id (two devices may give the same position).
public struct ListPosition: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    public var bytes: [UInt8]

    public init(bytes: [UInt8]) { self.bytes = bytes }

    public var description: String { bytes.map { String(format: "%02x", $0) }.joined() }

    public static func < (a: ListPosition, b: ListPosition) -> Bool { a.bytes.lexicographicallyPrecedes(b.bytes) }

    /// A position strictly between `lower` and `upper` (either open): close to `lower` when `upper` is open
    /// (appends), close to `upper` when `lower` is open (prepends), halfway otherwise. Positions never end in
    /// a zero byte, so that there is always room below one.
    static func between(_ lower: ListPosition?, _ upper: ListPosition?) -> ListPosition {
        let a = lower?.bytes ?? []
        var b: [UInt8]? = upper?.bytes
        var out: [UInt8] = []
        var i = 0
        while true {
            let da = i < a.count ? Int(a[i]) : 0
            let db = b.map { i < $0.count ? Int($0[i]) : 0 } ?? 256
            if db - da > 1 {
                let digit: Int
                if b == nil {
                    digit = da + 1
                } else if lower == nil && i >= a.count {
                    digit = db - 1
                } else {
                    digit = (da + db) / 2
                }
                out.append(UInt8(digit))
                return ListPosition(bytes: out)
            }
            out.append(UInt8(da))
            // The digit equals `a`'s: below `b` whatever follows once `b`'s digit is larger.
            if db > da { b = nil }
            i += 1
        }
    }

    /// `count` positions in increasing order, strictly between `lower` and `upper`: halves of the gap
    /// recursively, so that a long run inserted at once gets short positions.
    static func spread(_ count: Int, between lower: ListPosition?, _ upper: ListPosition?) -> [ListPosition] {
        guard count > 0 else { return [] }
        if upper == nil {
            // Appends: one just above `lower`; a run, between `lower` and a bound a little above it (its first
            // byte below 254, raised by two), so that it is halved like any gap.
            if count == 1 { return [between(lower, nil)] }
            let a = lower?.bytes ?? []
            var bound: [UInt8]
            if let i = a.firstIndex(where: { $0 < 254 }) {
                bound = Array(a[..<i])
                bound.append(a[i] + 2)
            } else {
                bound = a + [2]
            }
            return spread(count, between: lower, ListPosition(bytes: bound))
        }
        let mid = between(lower, upper)
        let left = (count - 1) / 2
        return spread(left, between: lower, mid) + [mid] + spread(count - 1 - left, between: mid, upper)
    }
}
