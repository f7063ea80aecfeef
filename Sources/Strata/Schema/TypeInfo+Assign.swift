import Engine
import Foundation

// Setting an object's properties from values given as a dictionary, an array or another object (Realm's
// `init(value:)`, `create(_:value:)`), and the legacy property wrappers.

extension TypeInfo {
    func forEachLegacyProperty(of object: Object, _ body: (any LegacyProperty, Int) -> Void) {
        var m: Mirror? = Mirror(reflecting: object)
        while let mirror = m {
            for child in mirror.children {
                if let label = child.label, let i = legacyLabels[label], let p = child.value as? any LegacyProperty { body(p, i) }
            }
            m = mirror.superclassMirror
        }
    }

    /// Sets link property `index` from a value given by name: an object, a dictionary or an array for a new
    /// one, or nil.
    func assignLink(_ v: Any?, to object: Object, at index: Int) {
        let target = linkTargets[index] ?? Object.self
        let linked: Object?
        switch v {
        case nil, is NSNull: linked = nil
        case let o as Object: linked = o
        case let some?:
            let o = Object.make(target)
            TypeRegistry.info(for: target).assign(some, to: o)
            linked = o
        }
        if let accessor = object._accessor {
            accessor.setLink(index, linked)
        } else {
            if object._unmanagedLinks == nil { object._unmanagedLinks = [:] }
            object._unmanagedLinks?[index] = .some(linked)
        }
    }

    /// The elements of a value given for a list: an array, a List, any sequence; nil for something else.
    static func elements(of v: Any?) -> [Any?]? {
        guard let v, !(v is NSNull) else { return [] }
        if let a = v as? [Any?] { return a }
        if let list = v as? any ListStorage { return list.anyElements }
        if v is String { return nil }
        guard let seq = v as? any Sequence else { return nil }
        return elementsOf(seq)
    }

    static func elementsOf<S: Sequence>(_ s: S) -> [Any?] { s.map { Optional($0) } }

    /// Sets list property `index` from a sequence of values given by name.
    func assignList(_ v: Any?, to object: Object, at index: Int, target: Object.Type?) {
        if schema.properties[index].isMap, let dict = v as? [String: Any?] {
            // A map given as a dictionary: keys and values alternating, as maps pass their entries on.
            let items = dict.sorted { $0.key < $1.key }.flatMap { [Optional($0.key as Any), $0.value] }
            guard let map = listStorage(of: object, at: index) else {
                fatalError("\(schema.className).\(schema.properties[index].name) has no Map")
            }
            map.replace(withAny: items, target: target, className: schema.className, property: schema.properties[index].name)
            return
        }
        if schema.properties[index].isMap, let dict = v as? [String: Any] {
            assignList(dict.mapValues { Optional($0) }, to: object, at: index, target: target)
            return
        }
        guard let items = Self.elements(of: v) else {
            fatalError("Invalid value for list property '\(schema.className).\(schema.properties[index].name)': give an array")
        }
        guard let list = listStorage(of: object, at: index) else {
            fatalError("\(schema.className).\(schema.properties[index].name) has no List")
        }
        list.replace(withAny: items, target: target, className: schema.className, property: schema.properties[index].name)
    }

    /// Applies one value given for property `i` (a link, a list's elements, or a plain value) to an unmanaged object.
    private func assignValue(_ v: Any?, to object: Object, at i: Int) {
        if linkTargets[i] != nil {
            assignLink(v, to: object, at: i)
        } else if let target = listTargets[i] {
            assignList(v, to: object, at: i, target: target)
        } else {
            if schema.properties[i].type == .any {
                // An AnyRealmValue, an object, or a plain value (that value, as RealmSwift bridges it).
                let any: AnyRealmValue
                switch v {
                case nil, is NSNull: any = .none
                case let a as AnyRealmValue: any = a
                case let o as Object: any = .object(o)
                case let some?:
                    guard let plain = StoredValue.from(any: some), plain != .null, let wrapped = AnyRealmValue._fromStored(plain) else {
                        fatalError(Self.invalidValue(v, schema.properties[i], schema.className))
                    }
                    any = wrapped
                }
                if let accessor = object._accessor { accessor.setAny(i, any) } else { object._setUnmanagedAny(i, any) }
                return
            }
            guard let stored = StoredValue.from(any: v, as: schema.properties[i].type) else {
                fatalError(Self.invalidValue(v, schema.properties[i], schema.className))
            }
            setStoredValue(stored, of: object, at: i)
        }
    }

    /// AnyRealmValue property `index` of `object` (managed or not), whose stored form is `stored`: the objects
    /// and nested collections it holds, not only its stored form.
    static func anyRealmValue(of object: Object, at index: Int, stored: StoredValue) -> AnyRealmValue {
        if let accessor = object._accessor { return accessor.anyValue(stored, property: index) }
        if let nested = object._unmanagedNested(index) { return nested }
        if let linked = object._unmanagedLinks?[index], let linked { return .object(linked) }
        return AnyRealmValue._fromStored(stored) ?? .none
    }

    /// Applies `value` (a dictionary by name, an array in order, or another object) to an unmanaged object.
    func assign(_ value: Any, to object: Object) {
        if let dict = value as? [String: Any?] {
            for (k, v) in dict {
                guard let i = propertyIndex[k] else {
                    fatalError("Invalid property name '\(k)' for class '\(schema.className)'.")
                }
                assignValue(v, to: object, at: i)
            }
        } else if let dict = value as? [String: Any] {
            assign(dict.mapValues { Optional($0) }, to: object)
        } else if let array = value as? [Any?] {
            require(array.count <= schema.properties.count, "\(schema.className) has \(schema.properties.count) properties, the array \(array.count) values")
            for (i, v) in array.enumerated() {
                assignValue(v, to: object, at: i)
            }
        } else if let other = value as? Object {
            let otherInfo = TypeRegistry.info(for: type(of: other))
            for (i, p) in schema.properties.enumerated() {
                guard let j = otherInfo.propertyIndex[p.name] else { continue }
                if linkTargets[i] != nil {
                    assignLink(otherInfo.linkedObject(of: other, at: j), to: object, at: i)
                } else if let target = listTargets[i] {
                    assignList(otherInfo.listStorage(of: other, at: j)?.anyElements ?? [], to: object, at: i, target: target)
                } else if p.type == .any {
                    assignValue(Self.anyRealmValue(of: other, at: j, stored: otherInfo.storedValue(of: other, at: j)), to: object, at: i)
                } else {
                    setStoredValue(otherInfo.storedValue(of: other, at: j), of: object, at: i)
                }
            }
        } else {
            fatalError("Object(value:) takes a dictionary, an array or an object, not \(type(of: value))")
        }
    }
}
