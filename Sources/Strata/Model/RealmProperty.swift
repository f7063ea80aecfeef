import Foundation

/// The older RealmSwift spelling of an optional or `AnyRealmValue` property, kept for source compatibility:
///
/// ```swift
/// final class Person: Object {
///     @Persisted var name = ""
///     let age = RealmProperty<Int?>()
/// }
/// person.age.value = 42
/// ```
///
/// Declare it with `let`. It is stored as `@Persisted var age: Int?` would be (same schema, same file); new code
/// should use `@Persisted`.
public final class RealmProperty<Value: _Persistable> {
    /// The value of an unmanaged object.
    private var unmanaged: Value
    /// The object this property belongs to and its index in the schema, set when the object becomes managed.
    /// The object is held weakly (it holds this property); its accessor strongly, so that
    /// `results.first!.age.value` still reads the object after the temporary object is gone.
    private weak var owner: Object?
    private var boundAccessor: ObjectAccessor?
    private var index = -1

    /// The accessor to read through: the object's own while it lives (nil again after a cancelled add), else the
    /// one it had.
    private var accessor: ObjectAccessor? {
        if let owner { return owner._accessor }
        return boundAccessor
    }

    public init() { unmanaged = Value._zeroValue }

    public var value: Value {
        get {
            guard let accessor else { return unmanaged }
            if Value._propertyType == .any, let v = accessor.anyValue(at: index) as? Value { return v }
            let stored = accessor.get(index)
            guard let v = Value._fromStored(stored) else {
                fatalError(
                    "\(accessor.info.schema.className).\(accessor.info.schema.properties[index].name) holds \(stored), "
                        + "which is not a \(Value.self); the file and the model disagree")
            }
            return v
        }
        set {
            guard let accessor else {
                unmanaged = newValue
                // A value given by name earlier no longer counts.
                if let owner, index >= 0 { owner._unmanagedValues?[index] = nil }
                return
            }
            if Value._propertyType == .any, let any = newValue as? AnyRealmValue {
                accessor.setAny(index, any)
            } else {
                accessor.set(index, newValue._storedValue)
            }
        }
    }
}

/// The oldest RealmSwift spelling of an optional number or `Bool`: `let age = RealmOptional<Int>()` is
/// `RealmProperty<Int?>`, kept for source compatibility.
public final class RealmOptional<Wrapped: _Persistable> {
    let property = RealmProperty<Wrapped?>()

    public init() {}

    public var value: Wrapped? {
        get { property.value }
        set { property.value = newValue }
    }
}

/// The object a property declared with `let` belongs to once it is bound: held weakly (it holds the
/// property), with its accessor held strongly, so that `results.first!.dogs` still reads the object after the
/// temporary object is gone.
final class LegacyBinding: @unchecked Sendable {
    private weak var owner: Object?
    private var boundAccessor: ObjectAccessor?
    private(set) var index = -1

    /// The accessor to read through: the object's own while it lives (nil again after a cancelled add), else
    /// the one it had.
    var accessor: ObjectAccessor? {
        if let owner { return owner._accessor }
        return boundAccessor
    }

    func bind(to owner: Object, index: Int) {
        self.owner = owner
        boundAccessor = owner._accessor
        self.index = index
    }
}

/// A collection declared with `let` in a model, whose elements are stored when its object is added.
protocol LegacyCollection: PersistedProperty, LegacyProperty {
    /// An unmanaged copy holding the elements it holds now.
    func unmanagedCopy() -> any StoredOnAdd
}

/// What reflection reads from a collection declared with `let`: a plain stored collection.
extension LegacyCollection where Self: _Persistable & AnyObject {
    var isPrimaryKey: Bool { false }
    var isIndexed: Bool { false }
    var hasDeclaredDefault: Bool { false }
    var storedValue: StoredValue { _storedValue }
    var valueType: any _Persistable.Type { Self.self }
    var collection: AnyObject? { self }
    var origin: String? { nil }
    func linkingObjects(_ accessor: ObjectAccessor?) -> Any? { nil }
}

/// A property declared with `let` (RealmProperty, RealmOptional, List, MutableSet, Map, LinkingObjects):
/// schema reflection finds it by `Mirror`, and it reads and writes through the object it belongs to once
/// bound to it.
protocol LegacyProperty {
    func bind(to owner: Object, index: Int)
    /// Sets the unmanaged value from a value given by name.
    func setUnmanaged(_ value: StoredValue) -> Bool
}

extension RealmProperty: LegacyProperty {
    func bind(to owner: Object, index: Int) {
        self.owner = owner
        self.boundAccessor = owner._accessor
        self.index = index
    }

    func setUnmanaged(_ value: StoredValue) -> Bool {
        guard let v = Value._fromStored(value) else { return false }
        unmanaged = v
        return true
    }
}

extension RealmOptional: LegacyProperty {
    func bind(to owner: Object, index: Int) { property.bind(to: owner, index: index) }
    func setUnmanaged(_ value: StoredValue) -> Bool { property.setUnmanaged(value) }
}

extension RealmProperty: PersistedProperty {
    var isPrimaryKey: Bool { false }
    var isIndexed: Bool { false }
    var hasDeclaredDefault: Bool { false }
    var storedValue: StoredValue { value._storedValue }
    var valueType: any _Persistable.Type { Value.self }
    var collection: AnyObject? { nil }
    var origin: String? { nil }
    func linkingObjects(_ accessor: ObjectAccessor?) -> Any? { nil }
}

extension RealmOptional: PersistedProperty {
    var isPrimaryKey: Bool { false }
    var isIndexed: Bool { false }
    var hasDeclaredDefault: Bool { false }
    var storedValue: StoredValue { property.storedValue }
    var valueType: any _Persistable.Type { Wrapped?.self }
    var collection: AnyObject? { nil }
    var origin: String? { nil }
    func linkingObjects(_ accessor: ObjectAccessor?) -> Any? { nil }
}
