import Engine
import Foundation

/// Collects the mistakes made in migration closures; one per open or per migrator batch, shared by every
/// object it hands out (a closure per object would cost an allocation each).
final class MigrationReporter {
    var messages: [String] = []
    /// The migration the objects belong to (links read through them give its objects). Held here, once, not
    /// by each object: a weak reference per object would move every retain of the migration to the slow path.
    weak var migration: Migration?
    /// The declared types with a property whose public name is not its stored one (`propertiesMapping()`):
    /// only their new objects look names up in the model first.
    var mappedTypes: Set<String> = []
}

/// The values of an object handed to a migration block, under one stored schema.
///
/// A state belongs to one migration on one thread: dynamic exclusivity checks are off for its state.
final class DynamicState: CustomStringConvertible {
    let type: StoredSchema.StoredType
    /// The values set on the object; every value once the object stopped viewing its record (`values`).
    @exclusivity(unchecked) private(set) var fields: FieldValues
    /// The record the object reads the fields it was not given from (a row view, decoded a field at a time):
    /// a copy of its bytes, kept in this buffer from record to record, in `rowLayout`. Nil layout: no record.
    @exclusivity(unchecked) private var rowBytes: [UInt8] = []
    @exclusivity(unchecked) private(set) var rowLayout: RecordLayout?
    @exclusivity(unchecked) private var rowPlaces = RecordLayout.Places(fixedStart: 0, tableStart: 0, variableStart: 0, minimumLength: 0)
    let writable: Bool
    let defaults: [String: StoredValue]
    @exclusivity(unchecked) var modified = false
    /// Whether the block set the primary key (which means re-keying the type).
    @exclusivity(unchecked) var wrotePrimaryKey = false
    /// Inside a migration, mistakes are recorded here (the open then throws) instead of trapping.
    @exclusivity(unchecked) var report: MigrationReporter?
    /// The object's key, when it is one the migration handed out (links to it store the key).
    @exclusivity(unchecked) var key: Int64?
    /// The migration that handed it out: links read through it give objects (`MigrationObject`s).
    var migration: Migration? { report?.migration }

    init(type: StoredSchema.StoredType, values: FieldValues, writable: Bool, defaults: [String: StoredValue]) {
        self.type = type
        self.fields = values
        self.writable = writable
        self.defaults = defaults
    }

    /// Every value of the object, its record's included: the object stops viewing its record (work on whole
    /// objects asks for this; reading and writing single properties does not).
    var values: FieldValues {
        get {
            materialize()
            return fields
        }
        _modify {
            materialize()
            yield &fields
        }
    }

    /// The object's values become `record`'s, read in place as they are asked for (records of fixed slots of a
    /// layout `layouts` has) or decoded now (format 1); values set before are forgotten.
    func view(_ record: UnsafeRawBufferPointer, layouts: RecordLayouts) throws {
        if RecordLayout.isLayout(record.first), let layout = layouts.layout(try ObjectRecord.schemaVersion(record)) {
            rowPlaces = try layout.checkedPlaces(record)
            rowLayout = layout
            rowBytes.removeAll(keepingCapacity: true)
            rowBytes.append(contentsOf: record)
            fields.removeAll()
        } else {
            rowLayout = nil
            fields.replaceAll(with: try ObjectRecord.decodeAll(record, layouts: layouts).fields)
        }
    }

    /// Replaces every value of the object (it stops viewing a record).
    func setValues(_ values: FieldValues) {
        rowLayout = nil
        fields.replaceAll(with: values)
    }

    /// Calls `body` with the record the object views and its places; nil when it views none.
    func withRow<R>(_ body: (UnsafeRawBufferPointer, RecordLayout, RecordLayout.Places) throws -> R) rethrows -> R? {
        guard let layout = rowLayout else { return nil }
        return try rowBytes.withUnsafeBytes { try body($0, layout, rowPlaces) }
    }

    /// Field `id`'s value: set on the object, or read from its record; nil when neither has the field.
    func field(_ id: UInt32) -> StoredValue? {
        if let v = fields[id] { return v }
        guard let layout = rowLayout, let i = layout.fields.firstIndex(where: { $0.id == id }) else { return nil }
        do {
            return try rowBytes.withUnsafeBytes { try layout.value(i, in: $0, rowPlaces) }
        } catch {
            damaged(error)
            return nil
        }
    }

    private func materialize() {
        guard let layout = rowLayout else { return }
        rowLayout = nil
        do {
            try rowBytes.withUnsafeBytes { raw in
                for (i, f) in layout.fields.enumerated() where fields[f.id] == nil {
                    fields.appendNew(f.id, try layout.value(i, in: raw, rowPlaces))
                }
            }
        } catch {
            damaged(error)
        }
    }

    private func damaged(_ error: any Error) {
        fail("an object of \(type.name)\(key.map { " (key \($0))" } ?? "") has a damaged record: \(error)\(RealmCore.damageAdvice)")
    }

    func property(_ key: String) -> StoredSchema.StoredProperty? {
        resolvedIndex(key).map { type.properties[$0] }
    }

    /// The index of property `key` in `type` (looked up once per name and type, see `resolved`); nil, after
    /// reporting it, when the type has none.
    func resolvedIndex(_ key: String) -> Int? {
        for r in resolved where r.name == key { return r.index }
        guard let i = propertyIndex(key) else {
            // Realm's text (M058), then which object of the migration it was.
            fail("Invalid property name '\(key)' for class '\(type.name)'. (an \(writable ? "new" : "old") object of the migration)")
            return nil
        }
        if resolved.count < 32 { resolved.append((key, i)) }
        return i
    }

    /// Whether property `i` holds a plain value (not a collection, a link or an AnyRealmValue): read and
    /// written by its fields in place, without a copy of the property's schema (a copy retains and releases its
    /// strings, atomic operations that were a large part of a migration's time).
    @inline(__always)
    private func isPlain(_ i: Int) -> Bool {
        let t = type.properties[i].type
        return t != .object && t != .any && !(type.properties[i].isList ?? false) && !(type.properties[i].isMap ?? false)
    }

    /// `stored(_:)` for property `i`.
    private func stored(at i: Int) -> StoredValue {
        let v = field(type.properties[i].fieldId) ?? defaults[type.properties[i].name] ?? .null
        return v.isNull && !type.properties[i].isOptional ? (defaults[type.properties[i].name] ?? v) : v
    }

    private func propertyIndex(_ key: String) -> Int? {
        // A new object also answers to the model's public names (`propertiesMapping()`, M071).
        if writable, let report, !report.mappedTypes.isEmpty, report.mappedTypes.contains(type.name),
            let info = migration?.declared[type.name], let declared = info.schema.properties.first(where: { $0.name == key }),
            declared.columnName != key, let i = type.properties.firstIndex(where: { $0.name == declared.columnName })
        {
            return i
        }
        return type.properties.firstIndex(where: { $0.name == key })
    }

    /// The names looked up so far with their property's index. A state is handed out again for the next
    /// object of a streaming enumeration, so a closure's names are resolved once per type, not per object.
    @exclusivity(unchecked) private var resolved: [(name: String, index: Int)] = []

    /// A mistake: recorded when a migration is listening, a trap otherwise (as RealmSwift's exceptions).
    func fail(_ message: String) {
        guard let report else { fatalError(message) }
        report.messages.append(message)
    }

    func stored(forKey key: String) -> StoredValue {
        guard let p = property(key) else { return .null }
        return stored(p)
    }

    func stored(_ p: StoredSchema.StoredProperty) -> StoredValue {
        let v = field(p.fieldId) ?? defaults[p.name] ?? .null
        return v.isNull && !p.isOptional ? (defaults[p.name] ?? v) : v
    }

    func value(forKey key: String) -> Any? {
        guard let i = resolvedIndex(key) else { return nil }
        if isPlain(i) { return stored(at: i).anyValue }
        let p = type.properties[i]
        let v = stored(p)
        // Collections are live views typed as RealmSwift types them (`List<MigrationObject>`, `Map<String, Int>`…).
        if (p.isList ?? false) || (p.isMap ?? false) { return MigrationCollection.view(of: self, p) }
        // Links read as the objects they name (in this object's schema, old or new).
        if p.type == .object, let target = p.objectClassName, let migration {
            guard case .link(let k) = v else { return nil }
            return migration.linkedObject(target, key: k, old: !writable)
        }
        // An AnyRealmValue holding an object reads as that object, a migration object.
        if p.type == .any, let (className, k) = AnyRealmValue.objectReference(v), let migration {
            return migration.linkedObject(className, key: k, old: !writable)
        }
        return v.anyValue
    }

    /// The stored form of an object given for link or collection property `p`: a link to an object this
    /// migration handed out, to an unmanaged model object (added to the new schema now), or to a new object
    /// made from a dictionary or an array; `.null` for nil; nil (after reporting it) for anything else.
    func link(to value: Any?, for p: StoredSchema.StoredProperty) -> StoredValue? {
        guard let migration else {
            fail("Objects can be assigned to '\(type.name).\(p.name)' only inside a migration")
            return nil
        }
        return migration.link(to: value, target: p.objectClassName ?? "", property: "\(type.name).\(p.name)")
    }

    /// Replaces collection property `p`'s stored elements.
    func setCollection(_ items: [StoredValue], of p: StoredSchema.StoredProperty) {
        guard writable else {
            fail("Cannot modify '\(type.name).\(p.name)' of an old object in a migration: old objects are read-only; write the new object")
            return
        }
        fields[p.fieldId] = .list(items)
        modified = true
    }

    func setValue(_ value: Any?, forKey key: String) {
        guard writable else {
            fail("Cannot modify '\(type.name).\(key)' of an old object in a migration: old objects are read-only; write the new object")
            return
        }
        guard let i = resolvedIndex(key) else { return }
        if isPlain(i) {
            let t = type.properties[i].type
            guard let v = StoredValue.from(any: value, as: t), v.isNull || Self.fits(v, t) else {
                fail(Self.invalidValue(value, type.properties[i], type.name))
                return
            }
            guard !v.isNull || type.properties[i].isOptional else {
                fail(Self.invalidValue(nil, type.properties[i], type.name))
                return
            }
            fields[type.properties[i].fieldId] = v
            if type.properties[i].isPrimaryKey { wrotePrimaryKey = true }
            modified = true
            return
        }
        let p = type.properties[i]
        if p.isMap ?? false {
            // A map: a dictionary (or a Map), stored as its keys in order with their values.
            let dict: [String: Any?]
            if let d = value as? [String: Any?] {
                dict = d
            } else if let d = value as? [String: Any] {
                dict = d.mapValues { Optional($0) }
            } else if let storage = value as? any ListStorage {
                let flat = storage.anyElements
                dict = Dictionary(stride(from: 0, to: flat.count - 1, by: 2).compactMap { i in (flat[i] as? String).map { ($0, flat[i + 1]) } },
                                  uniquingKeysWith: { _, b in b })
            } else {
                fail("Invalid value '\(String(describing: value))' for Map property '\(type.name).\(key)': give a dictionary")
                return
            }
            var items: [StoredValue] = []
            for (k, v) in dict.sorted(by: { $0.key < $1.key }) {
                let stored: StoredValue?
                if p.type == .object {
                    stored = link(to: v, for: p)
                } else {
                    stored = StoredValue.from(any: v, as: p.type).flatMap { $0.isNull ? (p.elementsMayBeNull ? $0 : nil) : (Self.fits($0, p.type) ? $0 : nil) }
                }
                guard let stored else {
                    fail("Invalid value '\(String(describing: v))' for key '\(k)' of Map property '\(type.name).\(key)'")
                    return
                }
                items += [.string(k), stored]
            }
            setCollection(items, of: p)
            return
        }
        if p.isList ?? false {
            // A list or set: an array, a List, a MutableSet, any sequence.
            guard let elements = TypeInfo.elements(of: value) else {
                fail("Invalid value '\(String(describing: value))' for collection property '\(type.name).\(key)': give an array")
                return
            }
            var items: [StoredValue] = []
            for e in elements {
                let stored = p.type == .object
                    ? link(to: e, for: p)
                    : StoredValue.from(any: e, as: p.type).flatMap { $0.isNull ? (p.elementsMayBeNull ? $0 : nil) : (Self.fits($0, p.type) ? $0 : nil) }
                guard let stored else {
                    fail("Invalid value '\(String(describing: value))' for collection property '\(type.name).\(key)'")
                    return
                }
                if (p.isSet ?? false) && items.contains(stored) { continue }
                items.append(stored)
            }
            setCollection(items, of: p)
            return
        }
        if p.type == .object {
            guard let v = link(to: value, for: p) else { return }
            fields[p.fieldId] = v
            modified = true
            return
        }
        if p.type == .any {
            // An AnyRealmValue: any value, or an object (a migration object, or an unmanaged one added now).
            func object(_ o: Object) -> StoredValue? {
                let className = o._dynamic?.type.name ?? Swift.type(of: o).className()
                guard let migration, case .link(let k)? = migration.link(to: o, target: className, property: "\(type.name).\(key)") else { return nil }
                return AnyRealmValue.objectForm(className, k)
            }
            let stored: StoredValue?
            switch value {
            case nil, is NSNull: stored = .null
            case let any as AnyRealmValue:
                if case .object(let o) = any { stored = object(o) } else { stored = any.storedForm }
            case let o as Object: stored = object(o)
            default: stored = StoredValue.from(any: value)
            }
            guard let stored else {
                fail("Invalid value '\(String(describing: value))' of type '\(Swift.type(of: value))' for 'mixed' property '\(type.name).\(key)'.")
                return
            }
            fields[p.fieldId] = stored
            modified = true
            return
        }
        guard let v = StoredValue.from(any: value, as: p.type), v.isNull || Self.fits(v, p.type) else {
            fail(Self.invalidValue(value, p, type.name))
            return
        }
        guard !v.isNull || p.isOptional else {
            fail(Self.invalidValue(nil, p, type.name))
            return
        }
        fields[p.fieldId] = v
        if p.isPrimaryKey { wrotePrimaryKey = true }
        modified = true
    }

    /// RealmSwift's text for a value of the wrong type (M061): `Invalid value '<v>' of type '<class>' for
    /// '<type>[?]'[ array| set| dictionary] property '<Type>.<prop>'.`
    static func invalidValue(_ value: Any?, _ p: StoredSchema.StoredProperty, _ typeName: String) -> String {
        let kind = (p.isMap ?? false) ? " dictionary" : (p.isList ?? false) ? ((p.isSet ?? false) ? " set" : " array") : ""
        return TypeInfo.invalidValueMessage(
            value, type: p.type, target: p.objectClassName, nullable: (p.isList ?? false) ? p.hasOptionalElements ?? false : p.isOptional,
            collection: kind, property: "\(typeName).\(p.name)")
    }

    static func fits(_ v: StoredValue, _ t: PropertyType) -> Bool {
        switch (v, t) {
        case (.bool, .bool), (.int, .int), (.float, .float), (.double, .double), (.string, .string), (.data, .data),
            (.date, .date), (.uuid, .UUID), (.objectId, .objectId), (.link, .object), (.decimal, .decimal128):
            return true
        default:
            return false
        }
    }

    var description: String {
        "\(type.name) {\n" + type.properties.map { "\t\($0.name) = \(Object.describe(stored(forKey: $0.name)));" }.joined(separator: "\n") + "\n}"
    }
}
