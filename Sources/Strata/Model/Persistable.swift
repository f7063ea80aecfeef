import Foundation

/// A type that can be the value of a `@Persisted` property.
#if compiler(>=6.2)
/// Persistable types' metatypes cross isolation freely (they carry no state), so that generic collections can
/// be observed from `@Sendable` closures.
public protocol _PersistableMetatype: SendableMetatype {}
#else
public protocol _PersistableMetatype {}
#endif

public protocol _Persistable: _PersistableMetatype {
    static var _propertyType: PropertyType { get }
    static var _isOptional: Bool { get }
    /// The value a property of this type has when the model declares none (Realm's zero value).
    static var _zeroValue: Self { get }
    /// The value a new object gets for a property declared without a default: the zero value, except a new
    /// `ObjectId` and a random `UUID`, as in RealmSwift.
    static var _initialValue: Self { get }
    /// Converts a stored value; nil when the stored value does not fit this type (the caller reports it).
    static func _fromStored(_ v: StoredValue) -> Self?
    var _storedValue: StoredValue { get }
    /// For links: the target class; nil otherwise.
    static var _objectType: Object.Type? { get }
    /// Whether a property of this type may be the primary key.
    static var _canBePrimaryKey: Bool { get }
    /// For links: the value for a linked object (nil for no object); nil when `object` does not fit.
    static func _fromLinked(_ object: Object?) -> Self?
    /// For links: the linked object.
    var _linkedObject: Object? { get }
    /// Whether this is a `List` (or a `MutableSet`, stored as a list).
    static var _isList: Bool { get }
    /// Whether this is a `MutableSet`.
    static var _isSet: Bool { get }
    /// Whether this is a `Map` (stored as a list of keys and values).
    static var _isMap: Bool { get }
    /// For maps: whether the values are optional.
    static var _isOptionalMapValue: Bool { get }
    /// For collections: whether the elements (a map's values) are optional.
    static var _hasOptionalElements: Bool { get }
    /// For collections: a live view of property `index` of the object whose accessor is `owner`.
    static func _managedCollection(_ owner: AnyObject, _ index: Int) -> Self?
    /// For collections: replaces the contents of property `index` of a managed object with `value`'s.
    static func _setManagedCollection(_ owner: AnyObject, _ index: Int, _ value: Self)
    /// For `LinkingObjects`: the objects linking to the object whose accessor is `owner` (nil: unmanaged).
    static func _linkingObjects(_ owner: AnyObject?, _ property: String) -> Self?
    /// The value of the payload at `start` in a record, whose field tag is `tag`, read straight from the bytes
    /// (no `StoredValue`); nil when this type has no direct reading or the payload is not of this type, and
    /// then the caller takes the general path, which also reports damage.
    static func _decodeDirect(tag: UInt8, at start: Int, in record: UnsafeRawBufferPointer) -> Self?
}

extension _Persistable {
    public static var _initialValue: Self { _zeroValue }
    public static var _isOptional: Bool { false }
    public static var _objectType: Object.Type? { nil }
    public static var _canBePrimaryKey: Bool { false }
    public static func _fromLinked(_ object: Object?) -> Self? { nil }
    public var _linkedObject: Object? { nil }
    public static var _isList: Bool { false }
    public static var _isSet: Bool { false }
    public static var _isMap: Bool { false }
    public static var _isOptionalMapValue: Bool { false }
    public static var _hasOptionalElements: Bool { false }
    public static func _managedCollection(_ owner: AnyObject, _ index: Int) -> Self? { nil }
    public static func _setManagedCollection(_ owner: AnyObject, _ index: Int, _ value: Self) {}
    public static func _linkingObjects(_ owner: AnyObject?, _ property: String) -> Self? { nil }
    public static func _decodeDirect(tag: UInt8, at start: Int, in record: UnsafeRawBufferPointer) -> Self? { nil }
}

/// The record tags the direct readers know (`ObjectRecord.Tag`'s values).
@usableFromInline
enum DirectTag {
    @usableFromInline static let null: UInt8 = 0
    @usableFromInline static let falseValue: UInt8 = 1
    @usableFromInline static let trueValue: UInt8 = 2
    @usableFromInline static let int: UInt8 = 3
    @usableFromInline static let float: UInt8 = 4
    @usableFromInline static let double: UInt8 = 5
    @usableFromInline static let string: UInt8 = 6
    /// `ObjectRecord.Tag.exactDate`: a Date slot of a current-layout record.
    @usableFromInline static let date: UInt8 = 14

    /// A length written as a varint of at most three bytes at `start`, and how many bytes it takes; nil for a
    /// longer one (the general path reads it) or one outside the record.
    @inlinable @inline(__always)
    static func length(_ record: UnsafeRawBufferPointer, _ start: Int) -> (Int, Int)? {
        guard start >= 0, start < record.count else { return nil }
        let b0 = Int(record[start])
        if b0 < 0x80 { return (b0, 1) }
        guard start + 1 < record.count else { return nil }
        let b1 = Int(record[start + 1])
        if b1 < 0x80 { return ((b0 & 0x7F) | b1 << 7, 2) }
        guard start + 2 < record.count else { return nil }
        let b2 = Int(record[start + 2])
        if b2 < 0x80 { return ((b0 & 0x7F) | (b1 & 0x7F) << 7 | b2 << 14, 3) }
        return nil
    }

    /// A little-endian word at `start`, bounds-checked.
    @inlinable @inline(__always)
    static func word(_ record: UnsafeRawBufferPointer, _ start: Int) -> UInt64? {
        guard start >= 0, start <= record.count - 8 else { return nil }
        return UInt64(littleEndian: record.loadUnaligned(fromByteOffset: start, as: UInt64.self))
    }
}

/// A to-one link: `@Persisted var owner: Person?`. Links must be optional, as in Realm.
extension Object: _Persistable {
    public static var _propertyType: PropertyType { .object }
    /// Never used for a property (links are optional); a new unmanaged object.
    public static var _zeroValue: Self { unsafeDowncast(Object.make(self), to: Self.self) }
    public static func _fromStored(_ v: StoredValue) -> Self? { nil }
    /// The link's stored form: the object's key once it is managed.
    public var _storedValue: StoredValue { _accessor.map { .link($0.key) } ?? .null }
    public static var _objectType: Object.Type? { Self.self }
    public static func _fromLinked(_ object: Object?) -> Self? { object as? Self }
    public var _linkedObject: Object? { self }
}

extension Bool: _Persistable {
    public static var _propertyType: PropertyType { .bool }
    public static var _zeroValue: Bool { false }
    public static func _fromStored(_ v: StoredValue) -> Bool? { if case .bool(let b) = v { return b }; return nil }
    public var _storedValue: StoredValue { .bool(self) }
    @inlinable
    public static func _decodeDirect(tag: UInt8, at start: Int, in record: UnsafeRawBufferPointer) -> Bool? {
        tag == DirectTag.trueValue ? true : tag == DirectTag.falseValue ? false : nil
    }
}

/// Integers of every width are stored as 64-bit integers.
public protocol _PersistableInteger: _Persistable, FixedWidthInteger {}
extension _PersistableInteger {
    public static var _propertyType: PropertyType { .int }
    public static var _zeroValue: Self { 0 }
    public static func _fromStored(_ v: StoredValue) -> Self? {
        if case .int(let i) = v { return Self(exactly: i) }
        return nil
    }
    public var _storedValue: StoredValue { .int(Int64(self)) }
    public static var _canBePrimaryKey: Bool { true }
    @inlinable
    public static func _decodeDirect(tag: UInt8, at start: Int, in record: UnsafeRawBufferPointer) -> Self? {
        guard tag == DirectTag.int, let w = DirectTag.word(record, start) else { return nil }
        return Self(exactly: Int64(bitPattern: w))
    }
}
extension Int: _PersistableInteger {}
extension Int8: _PersistableInteger {}
extension Int16: _PersistableInteger {}
extension Int32: _PersistableInteger {}
extension Int64: _PersistableInteger {}

extension Float: _Persistable {
    public static var _propertyType: PropertyType { .float }
    public static var _zeroValue: Float { 0 }
    public static func _fromStored(_ v: StoredValue) -> Float? { if case .float(let x) = v { return x }; return nil }
    public var _storedValue: StoredValue { .float(self) }
    @inlinable
    public static func _decodeDirect(tag: UInt8, at start: Int, in record: UnsafeRawBufferPointer) -> Float? {
        guard tag == DirectTag.float, start >= 0, start <= record.count - 4 else { return nil }
        return Float(bitPattern: UInt32(littleEndian: record.loadUnaligned(fromByteOffset: start, as: UInt32.self)))
    }
}

extension Double: _Persistable {
    public static var _propertyType: PropertyType { .double }
    public static var _zeroValue: Double { 0 }
    public static func _fromStored(_ v: StoredValue) -> Double? { if case .double(let x) = v { return x }; return nil }
    public var _storedValue: StoredValue { .double(self) }
    @inlinable
    public static func _decodeDirect(tag: UInt8, at start: Int, in record: UnsafeRawBufferPointer) -> Double? {
        guard tag == DirectTag.double, let w = DirectTag.word(record, start) else { return nil }
        return Double(bitPattern: w)
    }
}

extension String: _Persistable {
    public static var _propertyType: PropertyType { .string }
    public static var _zeroValue: String { "" }
    public static func _fromStored(_ v: StoredValue) -> String? { if case .string(let s) = v { return s }; return nil }
    public var _storedValue: StoredValue { .string(self) }
    public static var _canBePrimaryKey: Bool { true }
    @inlinable
    public static func _decodeDirect(tag: UInt8, at start: Int, in record: UnsafeRawBufferPointer) -> String? {
        guard tag == DirectTag.string, let (length, bytes) = DirectTag.length(record, start) else { return nil }
        let from = start + bytes
        guard length <= record.count - from else { return nil }
        return String(decoding: UnsafeRawBufferPointer(rebasing: record[from..<(from + length)]), as: UTF8.self)
    }
}

/// `NSString`, as models ported from RealmSwift's Objective-C-era declarations have it
/// (`@Persisted var name: NSString?`): a string property, read back as an `NSString` (a `NSMutableString`
/// property reads back as a new mutable string).
extension NSString: _Persistable {
    public static var _propertyType: PropertyType { .string }
    public static var _zeroValue: Self { make("") }
    public static func _fromStored(_ v: StoredValue) -> Self? { if case .string(let s) = v { return make(s) }; return nil }
    public var _storedValue: StoredValue { .string(String(describing: self)) }
    public static var _canBePrimaryKey: Bool { true }

    /// An instance of this class holding `string` (`init(string:)` is not a required initializer).
    private static func make(_ string: String) -> Self {
        let made: NSString = Self.self is NSMutableString.Type ? NSMutableString(string: string) : NSString(string: string)
        guard let typed = made as? Self else { fatalError("\(Self.self) cannot be a persisted property type: use String or NSString") }
        return typed
    }
}

extension Data: _Persistable {
    public static var _propertyType: PropertyType { .data }
    public static var _zeroValue: Data { Data() }
    public static func _fromStored(_ v: StoredValue) -> Data? { if case .data(let d) = v { return d }; return nil }
    public var _storedValue: StoredValue { .data(self) }
}

extension Date: _Persistable {
    public static var _propertyType: PropertyType { .date }
    public static var _zeroValue: Date { Date(timeIntervalSince1970: 0) }
    public static func _fromStored(_ v: StoredValue) -> Date? { if case .date(let d) = v { return d }; return nil }
    public var _storedValue: StoredValue { .date(self) }
    @inlinable
    public static func _decodeDirect(tag: UInt8, at start: Int, in record: UnsafeRawBufferPointer) -> Date? {
        guard tag == DirectTag.date, let w = DirectTag.word(record, start) else { return nil }
        return Date(timeIntervalSinceReferenceDate: Double(bitPattern: w))
    }
}

extension UUID: _Persistable {
    public static var _initialValue: UUID { UUID() }
    public static var _propertyType: PropertyType { .UUID }
    public static var _zeroValue: UUID { UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)) }
    public static func _fromStored(_ v: StoredValue) -> UUID? { if case .uuid(let u) = v { return u }; return nil }
    public var _storedValue: StoredValue { .uuid(self) }
    public static var _canBePrimaryKey: Bool { true }
}

extension ObjectId: _Persistable {
    public static var _initialValue: ObjectId { .generate() }
    public static var _propertyType: PropertyType { .objectId }
    public static var _zeroValue: ObjectId { ObjectId(bytes: [UInt8](repeating: 0, count: 12)) }
    public static func _fromStored(_ v: StoredValue) -> ObjectId? { if case .objectId(let o) = v { return o }; return nil }
    public var _storedValue: StoredValue { .objectId(self) }
    public static var _canBePrimaryKey: Bool { true }
}

extension Optional: _PersistableMetatype where Wrapped: _Persistable {}

extension Optional: _Persistable where Wrapped: _Persistable {
    public static var _propertyType: PropertyType { Wrapped._propertyType }
    public static var _isOptional: Bool { true }
    public static var _zeroValue: Wrapped? { nil }
    public static func _fromStored(_ v: StoredValue) -> Wrapped?? {
        if case .null = v { return .some(nil) }
        if let value = Wrapped._fromStored(v) { return .some(value) }
        // A failable custom type that refuses the stored value reads as nil where nil is allowed (RealmSwift).
        return Wrapped.self is any FailableCustomPersistable.Type ? .some(nil) : nil
    }
    @inlinable
    public static func _decodeDirect(tag: UInt8, at start: Int, in record: UnsafeRawBufferPointer) -> Wrapped?? {
        if tag == DirectTag.null { return .some(nil) }
        return Wrapped._decodeDirect(tag: tag, at: start, in: record).map { .some($0) }
    }
    public var _storedValue: StoredValue { self?._storedValue ?? .null }
    public static var _objectType: Object.Type? { Wrapped._objectType }
    public static var _canBePrimaryKey: Bool { Wrapped._canBePrimaryKey }
    public static func _fromLinked(_ object: Object?) -> Wrapped?? {
        guard let object else { return .some(nil) }
        return Wrapped._fromLinked(object).map { .some($0) }
    }
    public var _linkedObject: Object? { self?._linkedObject }
}

/// An enum stored through its raw value (`Int` or `String`), as RealmSwift's `PersistableEnum`.
/// Like RealmSwift's, it can be held in collections (`List<Status>`, `Map<String, Status?>`) and ordered by
/// `min()` and `max()`.
public protocol PersistableEnum: _RealmCollectionValueInsideOptional, MinMaxType, RawRepresentable, CaseIterable where RawValue: _Persistable {}

/// RealmSwift's older spelling of an enum stored through its `Int` raw value (`@objc enum Kind: Int, RealmEnum`,
/// without `@objc`, which needs the Objective-C runtime): a `PersistableEnum`.
public protocol RealmEnum: PersistableEnum where RawValue == Int {}

extension PersistableEnum {
    public static var _propertyType: PropertyType { RawValue._propertyType }
    public static var _zeroValue: Self { allCases.first! }
    public static func _fromStored(_ v: StoredValue) -> Self? { RawValue._fromStored(v).flatMap { Self(rawValue: $0) } }
    @inlinable
    public static func _decodeDirect(tag: UInt8, at start: Int, in record: UnsafeRawBufferPointer) -> Self? {
        RawValue._decodeDirect(tag: tag, at: start, in: record).flatMap { Self(rawValue: $0) }
    }
    public var _storedValue: StoredValue { rawValue._storedValue }
    /// An enum backed by Int or String can be the primary key, as in RealmSwift (O010).
    public static var _canBePrimaryKey: Bool { RawValue._canBePrimaryKey }
}

/// A type of your own stored as a persistable type (RealmSwift's `CustomPersistable`): `URL` as a `String`,
/// a value type as `Data`… `@Persisted var site: URL` then stores `site.persistedValue`.
public protocol CustomPersistable: _Persistable {
    associatedtype PersistedType: _Persistable
    /// The value for a stored one.
    init(persistedValue: PersistedType)
    /// The value to store.
    var persistedValue: PersistedType { get }
}

extension CustomPersistable {
    public static var _propertyType: PropertyType { PersistedType._propertyType }
    public static var _zeroValue: Self { Self(persistedValue: PersistedType._zeroValue) }
    public static func _fromStored(_ v: StoredValue) -> Self? { PersistedType._fromStored(v).map(Self.init(persistedValue:)) }
    public var _storedValue: StoredValue { persistedValue._storedValue }
    public static var _canBePrimaryKey: Bool { PersistedType._canBePrimaryKey }
}

/// A `CustomPersistable` whose conversion from the stored value can fail (RealmSwift's
/// `FailableCustomPersistable`): a stored value that does not convert reads as a mismatch, with a message.
public protocol FailableCustomPersistable: _Persistable {
    associatedtype PersistedType: _Persistable
    init?(persistedValue: PersistedType)
    var persistedValue: PersistedType { get }
}

/// RealmSwift's texts for a stored value that a `FailableCustomPersistable` refuses where nil is not allowed.
@usableFromInline
enum FailableConversion {
    /// A property (`obj.int`).
    @usableFromInline
    static func property(_ stored: StoredValue, _ type: Any.Type) -> String? {
        guard type is any FailableCustomPersistable.Type else { return nil }
        return "Failed to convert persisted value '\(stored.anyValue ?? "nil")' to type '\(type)' in a non-optional context."
    }

    /// An element of a List, a MutableSet or a Map: traps when `type` is failable (other types cannot refuse).
    static func checkElement(_ stored: StoredValue, _ type: Any.Type) {
        if type is any FailableCustomPersistable.Type {
            fatalError("Could not convert value '\(stored.anyValue ?? "nil")' to type '\(type)'.")
        }
    }
}

extension FailableCustomPersistable {
    public static var _propertyType: PropertyType { PersistedType._propertyType }
    public static var _zeroValue: Self {
        guard let v = Self(persistedValue: PersistedType._zeroValue) else {
            fatalError("\(Self.self) has no value for \(PersistedType.self)'s zero value: declare the property optional or give it a default")
        }
        return v
    }
    public static func _fromStored(_ v: StoredValue) -> Self? { PersistedType._fromStored(v).flatMap(Self.init(persistedValue:)) }
    public var _storedValue: StoredValue { persistedValue._storedValue }
    public static var _canBePrimaryKey: Bool { PersistedType._canBePrimaryKey }
}
