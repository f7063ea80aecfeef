import Foundation

/// A property that holds a value of any persistable kind, or nothing: `@Persisted var value: AnyRealmValue`.
///
/// Stored as the value itself (an Int stays an Int, queries compare it as one); an object as its type's name
/// and its key, so that it reads back as the object while it exists (and as `.none` once it is deleted).
/// `.list` and `.dictionary` hold nested collections of further `AnyRealmValue`s, to any depth up to 64. Read
/// from a managed object, they are live views of the stored collection, changed in a write transaction as
/// any List or Map is. A nested collection is found by its position: after the collection that holds it
/// changes shape (its index moves, or its key is removed), an older view reads as empty.
public enum AnyRealmValue: Hashable, CustomStringConvertible {
    case none
    case int(Int)
    case bool(Bool)
    case float(Float)
    case double(Double)
    case string(String)
    case data(Data)
    case date(Date)
    case object(Object)
    case objectId(ObjectId)
    case decimal128(Decimal128)
    case uuid(UUID)
    case list(List<AnyRealmValue>)
    case dictionary(Map<String, AnyRealmValue>)

    public static func == (a: AnyRealmValue, b: AnyRealmValue) -> Bool {
        switch (a, b) {
        case (.object(let x), .object(let y)): return x === y || x.isSameObject(as: y)
        case (.list(let x), .list(let y)): return x === y
        case (.dictionary(let x), .dictionary(let y)): return x === y
        default: return a.storedForm == b.storedForm && a.kind == b.kind
        }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(kind)
        switch self {
        case .object(let o):
            if let a = o._accessor { hasher.combine(a.key) } else { hasher.combine(ObjectIdentifier(o)) }
        case .list(let l): hasher.combine(ObjectIdentifier(l))
        case .dictionary(let d): hasher.combine(ObjectIdentifier(d))
        default: hasher.combine(storedForm)
        }
    }

    private var kind: Int {
        switch self {
        case .none: 0
        case .int: 1
        case .bool: 2
        case .float: 3
        case .double: 4
        case .string: 5
        case .data: 6
        case .date: 7
        case .object: 8
        case .objectId: 9
        case .decimal128: 10
        case .uuid: 11
        case .list: 12
        case .dictionary: 13
        }
    }

    public var description: String {
        switch self {
        case .none: "none"
        case .int(let v): "int(\(v))"
        case .bool(let v): "bool(\(v))"
        case .float(let v): "float(\(v))"
        case .double(let v): "double(\(v))"
        case .string(let v): "string(\(v))"
        case .data(let v): "data(\(v.count) bytes)"
        case .date(let v): "date(\(v))"
        case .object(let o): "object(\(type(of: o).className()))"
        case .objectId(let v): "objectId(\(v))"
        case .decimal128(let v): "decimal128(\(v))"
        case .uuid(let v): "uuid(\(v))"
        case .list: "list"
        case .dictionary: "dictionary"
        }
    }

    /// The value as stored (objects not yet managed store nothing: `link(to:)` adds them first).
    var storedForm: StoredValue {
        switch self {
        case .none: .null
        case .int(let v): .int(Int64(v))
        case .bool(let v): .bool(v)
        case .float(let v): .float(v)
        case .double(let v): .double(v)
        case .string(let v): .string(v)
        case .data(let v): .data(v)
        case .date(let v): .date(v)
        case .objectId(let v): .objectId(v)
        case .decimal128(let v): .decimal(v)
        case .uuid(let v): .uuid(v)
        case .object(let o): o._accessor.map { Self.objectForm(type(of: o).className(), $0.key) } ?? .null
        case .list(let l): NestedForm.wrap(l.map(\.storedForm), list: true)
        case .dictionary(let m): NestedForm.wrap(m.flatMap { [StoredValue.string($0.key), $0.value.storedForm] }, list: false)
        }
    }

    /// Whether this is a nested collection (`.list` or `.dictionary`).
    var isNestedCollection: Bool {
        switch self {
        case .list, .dictionary: true
        default: false
        }
    }

    /// An object's stored form: its type's name and its key.
    static func objectForm(_ className: String, _ key: Int64) -> StoredValue { .list([.string(className), .link(key)]) }

    /// The type name and key of an object's stored form; nil for other values.
    static func objectReference(_ v: StoredValue) -> (className: String, key: Int64)? {
        guard case .list(let items) = v, items.count == 2, case .string(let name) = items[0], case .link(let key) = items[1] else { return nil }
        return (name, key)
    }

    /// The object, when this is `.object`.
    public var objectValue: Object? { if case .object(let o) = self { return o } else { return nil } }
    public var intValue: Int? { if case .int(let v) = self { return v } else { return nil } }
    public var stringValue: String? { if case .string(let v) = self { return v } else { return nil } }
    public var doubleValue: Double? { if case .double(let v) = self { return v } else { return nil } }
    public var boolValue: Bool? { if case .bool(let v) = self { return v } else { return nil } }
    public var floatValue: Float? { if case .float(let v) = self { return v } else { return nil } }
    public var dataValue: Data? { if case .data(let v) = self { return v } else { return nil } }
    public var dateValue: Date? { if case .date(let v) = self { return v } else { return nil } }
    public var objectIdValue: ObjectId? { if case .objectId(let v) = self { return v } else { return nil } }
    public var decimal128Value: Decimal128? { if case .decimal128(let v) = self { return v } else { return nil } }
    public var uuidValue: UUID? { if case .uuid(let v) = self { return v } else { return nil } }
    /// The nested list, when this is `.list`.
    public var listValue: List<AnyRealmValue>? { if case .list(let v) = self { return v } else { return nil } }
    /// The nested dictionary, when this is `.dictionary`.
    public var dictionaryValue: Map<String, AnyRealmValue>? { if case .dictionary(let v) = self { return v } else { return nil } }
}

extension AnyRealmValue {
    /// A nested list of these values (RealmSwift's `AnyRealmValue.fromArray`).
    public static func fromArray(_ array: [AnyRealmValue]) -> AnyRealmValue {
        let list = List<AnyRealmValue>()
        list.append(objectsIn: array)
        return .list(list)
    }

    /// A nested dictionary of these values (RealmSwift's `AnyRealmValue.fromDictionary`).
    public static func fromDictionary(_ dictionary: [String: AnyRealmValue]) -> AnyRealmValue {
        let map = Map<String, AnyRealmValue>()
        for (key, value) in dictionary { map[key] = value }
        return .dictionary(map)
    }
}

extension AnyRealmValue: _Persistable {
    public static var _propertyType: PropertyType { .any }
    /// Nothing is a value of its own (`.none`), stored as nil.
    public static var _isOptional: Bool { true }
    public static var _zeroValue: AnyRealmValue { .none }
    public static func _fromStored(_ v: StoredValue) -> AnyRealmValue? {
        switch v {
        case .null: return AnyRealmValue.none
        case .int(let x): return .int(Int(x))
        case .bool(let x): return .bool(x)
        case .float(let x): return .float(x)
        case .double(let x): return .double(x)
        case .string(let x): return .string(x)
        case .data(let x): return .data(x)
        case .date(let x): return .date(x)
        case .objectId(let x): return .objectId(x)
        case .decimal(let x): return .decimal128(x)
        case .uuid(let x): return .uuid(x)
        case .list:
            // Outside a Realm, a nested collection reads as an unmanaged copy (objects need their Realm, and
            // `ObjectAccessor.anyValue` resolves them).
            if let elements = NestedForm.items(v, list: true) {
                let l = List<AnyRealmValue>()
                l.append(contentsOf: elements.map { _fromStored($0) ?? AnyRealmValue.none })
                return .list(l)
            }
            if let items = NestedForm.items(v, list: false) {
                let m = Map<String, AnyRealmValue>()
                var i = 0
                while i + 1 < items.count {
                    if case .string(let k) = items[i] { m[k] = _fromStored(items[i + 1]) ?? AnyRealmValue.none }
                    i += 2
                }
                return .dictionary(m)
            }
            return AnyRealmValue.none
        case .link: return AnyRealmValue.none
        }
    }
    public var _storedValue: StoredValue { storedForm }
    public static func _fromLinked(_ object: Object?) -> AnyRealmValue? { object.map { .object($0) } ?? AnyRealmValue.none }
    public var _linkedObject: Object? { objectValue }
}

extension ObjectAccessor {
    /// An AnyRealmValue stored at `location` of this object: objects resolved in this object's Realm, nested
    /// collections as live views of that place.
    func anyValue(_ stored: StoredValue, at location: NestedLocation) -> AnyRealmValue {
        if let (className, key) = AnyRealmValue.objectReference(stored) {
            guard let object = core.object(className: className, key: key) else { return .none }
            return .object(object)
        }
        if NestedForm.items(stored, list: true) != nil { return .list(List(accessor: self, location: location)) }
        if NestedForm.items(stored, list: false) != nil { return .dictionary(Map(accessor: self, location: location)) }
        return AnyRealmValue._fromStored(stored) ?? .none
    }

    /// AnyRealmValue property `index`'s value.
    func anyValue(_ stored: StoredValue, property index: Int) -> AnyRealmValue {
        anyValue(stored, at: NestedLocation(property: index, plainRoot: false, path: []))
    }
}

// Invariants:
// (1) A nested collection is stored as a list whose first element is a marker, a bare link with a key no object
//     has: `listMarker` then the elements, or `dictionaryMarker` then keys and values alternating, keys distinct
//     and ascending (as a Map property). A bare link is never an AnyRealmValue's stored form (an object is
//     its type's name and its key), so the marker cannot be confused with a value, and queries never match it.
// (2) A managed view of a nested collection names its place: the property, and the steps (list index or
//     dictionary key) from the property's value to the collection. Every read follows the steps through the
//     current value; every change rebuilds the property's value along them and writes it whole.

/// One step from a collection to a collection nested in it.
enum NestedStep: Hashable, Sendable {
    case index(Int)
    case key(String)
}

/// Where a collection lives in its object: property `property`, then `path`. `plainRoot`: the property is a
/// List or Map of AnyRealmValue (its value is a plain list), not an AnyRealmValue (its value is a nested form).
struct NestedLocation: Sendable {
    let property: Int
    let plainRoot: Bool
    let path: [NestedStep]

    /// A List or Map property itself.
    static func property(_ index: Int) -> NestedLocation { NestedLocation(property: index, plainRoot: true, path: []) }

    func appending(_ step: NestedStep) -> NestedLocation { NestedLocation(property: property, plainRoot: plainRoot, path: path + [step]) }

    /// Whether the collection here is stored plainly (a List or Map property) rather than as a nested form.
    var isPlain: Bool { plainRoot && path.isEmpty }
}

/// The stored forms of nested collections, and paths through them.
enum NestedForm {
    static let listMarker = StoredValue.link(Int64.min)
    static let dictionaryMarker = StoredValue.link(Int64.min + 1)

    static func wrap(_ items: [StoredValue], list: Bool) -> StoredValue { .list([list ? listMarker : dictionaryMarker] + items) }

    /// The elements (or keys and values) of a nested form of the given kind; nil for anything else.
    static func items(_ v: StoredValue, list: Bool) -> [StoredValue]? {
        guard case .list(let items) = v, let first = items.first, first == (list ? listMarker : dictionaryMarker) else { return nil }
        return Array(items.dropFirst())
    }

    /// The elements of a container, plain (a List or Map property's value) or a nested form.
    static func items(_ v: StoredValue, plain: Bool, list: Bool) -> [StoredValue]? {
        if plain {
            guard case .list(let items) = v else { return nil }
            return items
        }
        return items(v, list: list)
    }

    static func wrap(_ items: [StoredValue], plain: Bool, list: Bool) -> StoredValue { plain ? .list(items) : wrap(items, list: list) }

    /// The position of the element a step names in a container's items, nil when there is none.
    static func position(of step: NestedStep, in items: [StoredValue]) -> Int? {
        switch step {
        case .index(let i): return i >= 0 && i < items.count ? i : nil
        case .key(let k):
            var j = 0
            while j + 1 < items.count {
                if items[j] == .string(k) { return j + 1 }
                j += 2
            }
            return nil
        }
    }

    private static func isList(_ step: NestedStep) -> Bool { if case .index = step { return true } else { return false } }

    /// The value at `path` below `root`; nil when the path no longer leads anywhere.
    static func value(at path: ArraySlice<NestedStep>, in root: StoredValue, plain: Bool) -> StoredValue? {
        guard let step = path.first else { return root }
        guard let items = items(root, plain: plain, list: isList(step)), let p = position(of: step, in: items) else { return nil }
        return value(at: path.dropFirst(), in: items[p], plain: false)
    }

    /// `root` with the value at `path` replaced by `new`; nil when the path no longer leads anywhere.
    static func replacing(at path: ArraySlice<NestedStep>, in root: StoredValue, plain: Bool, with new: StoredValue) -> StoredValue? {
        guard let step = path.first else { return new }
        guard var items = items(root, plain: plain, list: isList(step)), let p = position(of: step, in: items),
            let inner = replacing(at: path.dropFirst(), in: items[p], plain: false, with: new)
        else { return nil }
        items[p] = inner
        return wrap(items, plain: plain, list: isList(step))
    }
}

extension ObjectAccessor {
    /// The items of the collection at `location` (elements of a list; keys and values of a map), nil when
    /// nothing is there any more.
    func nestedItems(_ location: NestedLocation, list: Bool) -> [StoredValue]? {
        let root = get(location.property)
        guard let v = NestedForm.value(at: location.path[...], in: root, plain: location.plainRoot) else { return nil }
        return NestedForm.items(v, plain: location.isPlain, list: list)
    }

    /// Replaces the items of the collection at `location`.
    func setNestedItems(_ location: NestedLocation, list: Bool, _ items: [StoredValue]) {
        if location.path.isEmpty {
            set(location.property, NestedForm.wrap(items, plain: location.plainRoot, list: list))
            return
        }
        let new = NestedForm.wrap(items, plain: false, list: list)
        guard let root = NestedForm.replacing(at: location.path[...], in: get(location.property), plain: location.plainRoot, with: new) else {
            fatalError(
                "\(info.schema.className).\(info.schema.properties[location.property].name): this nested collection is no longer there "
                    + "(the collection holding it changed); read it again from the object")
        }
        set(location.property, root)
    }
}

extension RealmCore {
    /// The stored form of an AnyRealmValue, adding the unmanaged objects it holds (at any depth).
    func storedAny(_ value: AnyRealmValue, update: Realm.UpdatePolicy = .error) -> StoredValue {
        switch value {
        case .object(let o):
            guard case .link(let k) = link(to: o, update: update) else { return .null }
            return AnyRealmValue.objectForm(type(of: o).className(), k)
        case .list(let l): return NestedForm.wrap(l.map { storedAny($0, update: update) }, list: true)
        case .dictionary(let m): return NestedForm.wrap(m.flatMap { [StoredValue.string($0.key), storedAny($0.value, update: update)] }, list: false)
        default: return value.storedForm
        }
    }
}

/// An AnyRealmValue holding a nested collection, set on an unmanaged object: kept whole, so that the objects
/// in it are added with the object.
final class UnmanagedAnyValue: StoredOnAdd {
    let value: AnyRealmValue
    init(_ value: AnyRealmValue) { self.value = value }
    func storedElements(in core: RealmCore, update: Realm.UpdatePolicy) -> StoredValue { core.storedAny(value, update: update) }
}

extension RealmCore {
    /// The object of the type named `className` with `key`, when the type is bound here and the object exists.
    func object(className: String, key: Int64) -> Object? {
        guard let b = boundType(named: className), exists(binding: b, key: key) else { return nil }
        return makeObject(binding: b, key: key, record: nil)
    }
}

extension Object {
    /// The nested collection an unmanaged object's AnyRealmValue property `index` was set to.
    @usableFromInline final func _unmanagedNested(_ index: Int) -> AnyRealmValue? {
        (_unmanagedCollections?[index] as? UnmanagedAnyValue)?.value
    }

    /// Sets an unmanaged object's AnyRealmValue property `index` (stored after any earlier value of it):
    /// its stored form, the object it holds (added with this one) and its nested collection (kept whole).
    @usableFromInline final func _setUnmanagedAny(_ index: Int, _ value: AnyRealmValue) {
        if _unmanagedValues != nil { _unmanagedValues?[index] = nil }
        if _setValues == nil {
            let info = _unmanagedInfo ?? TypeRegistry.info(for: type(of: self))
            _setValues = info.unsetValues()
            _unmanagedInfo = info
        }
        _setValues?[index] = value._storedValue
        if let o = value._linkedObject {
            if _unmanagedLinks == nil { _unmanagedLinks = [:] }
            _unmanagedLinks?[index] = .some(o)
        } else {
            _unmanagedLinks?[index] = nil
        }
        _setUnmanagedNested(index, value)
    }

    /// Records (or forgets) the nested collection an unmanaged object's AnyRealmValue property is set to.
    @usableFromInline final func _setUnmanagedNested(_ index: Int, _ value: AnyRealmValue?) {
        if let value, value.isNestedCollection {
            if _unmanagedCollections == nil { _unmanagedCollections = [:] }
            _unmanagedCollections?[index] = UnmanagedAnyValue(value)
        } else {
            _unmanagedCollections?[index] = nil
        }
    }
}
