import Foundation

/// A property that holds a value of any persistable kind, or nothing: `@Persisted var value: AnyRealmValue`.
///
/// Stored as the value itself (an Int stays an Int, queries compare it as one); an object as its type's name
/// and its key, so that it reads back as the object while it exists (and as `.none` once it is deleted).
/// The nested-collection cases (`.list`, `.dictionary`) are not supported yet: storing one traps with a
/// message.
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
        case .decimal128(let v): .decimal(v.value)
        case .uuid(let v): .uuid(v)
        case .object(let o): o._accessor.map { Self.objectForm(type(of: o).className(), $0.key) } ?? .null
        case .list, .dictionary:
            preconditionFailure("AnyRealmValue.list and .dictionary (nested collections) are not supported by Strata yet")
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
        case .decimal(let x): return .decimal128(Decimal128(value: x))
        case .uuid(let x): return .uuid(x)
        // An object needs its Realm to be read: `ObjectAccessor.anyValue` resolves it.
        case .link, .list: return AnyRealmValue.none
        }
    }
    public var _storedValue: StoredValue { storedForm }
    public static func _fromLinked(_ object: Object?) -> AnyRealmValue? { object.map { .object($0) } ?? AnyRealmValue.none }
    public var _linkedObject: Object? { objectValue }
}

extension ObjectAccessor {
    /// An AnyRealmValue property's value, objects resolved in this object's Realm.
    func anyValue(_ stored: StoredValue) -> AnyRealmValue {
        guard let (className, key) = AnyRealmValue.objectReference(stored) else { return AnyRealmValue._fromStored(stored) ?? .none }
        guard let object = core.object(className: className, key: key) else { return .none }
        return .object(object)
    }
}

extension RealmCore {
    /// The object of the type named `className` with `key`, when the type is bound here and the object exists.
    func object(className: String, key: Int64) -> Object? {
        guard let b = boundType(named: className), exists(binding: b, key: key) else { return nil }
        return makeObject(binding: b, key: key, record: nil)
    }
}
