import Engine
import Foundation

// Aggregates over a Results: counts, min, max, sum, average, and values of one property.

extension Results where Element: Object {
    func values(of property: String, for verb: String) -> [StoredValue] {
        guard let i = binding.info.propertyIndex[property] else {
            fatalError("Invalid property name '\(property)' for class '\(binding.info.schema.className)'")
        }
        // Realm's aggregates: numbers (and mixed) for all four, dates too for min and max.
        let p = binding.info.schema.properties[i]
        let numeric: Set<PropertyType> = [.int, .float, .double, .decimal128, .any]
        let supported = !p.isCollection && (numeric.contains(p.type) || ((verb == "min" || verb == "max") && p.type == .date))
        guard supported else {
            let kind = p.isCollection ? "array" : QueryExpr.realmTypeName(p.type)
            fatalError("Cannot \(verb) property '\(property)': operation not supported for '\(kind)' properties")
        }
        if core.tracksObservation { observeRead(count: false) }
        var out: [StoredValue] = []
        let context = queryContext()
        forEachCandidate { key, ref in
            if let predicate, !predicate.evaluate(ref, key: key, in: context) { return true }
            let v = ref.value(i)
            if !v.isNull { out.append(v) }
            return true
        }
        return out
    }

    public func min<T: _Persistable>(ofProperty property: String) -> T? {
        values(of: property, for: "min").min { (StoredValue.compare($0, $1) ?? 0) < 0 }.flatMap { T._fromStored($0) }
    }

    public func max<T: _Persistable>(ofProperty property: String) -> T? {
        values(of: property, for: "max").max { (StoredValue.compare($0, $1) ?? 0) < 0 }.flatMap { T._fromStored($0) }
    }

    public func sum<T: _Persistable>(ofProperty property: String) -> T {
        let vs = values(of: property, for: "sum")
        if T._propertyType == .int {
            let total = vs.reduce(Int64(0)) { acc, v in if case .int(let x) = v { return acc &+ x }; return acc }
            return T._fromStored(.int(total)) ?? T._zeroValue
        }
        let total = vs.reduce(0.0) { $0 + ($1.numeric ?? 0) }
        return T._fromStored(T._propertyType == .float ? .float(Float(total)) : .double(total)) ?? T._zeroValue
    }

    public func average<T: _Persistable>(ofProperty property: String) -> T? {
        let vs = values(of: property, for: "average")
        guard !vs.isEmpty else { return nil }
        let avg = vs.reduce(0.0) { $0 + ($1.numeric ?? 0) } / Double(vs.count)
        return T._fromStored(T._propertyType == .float ? .float(Float(avg)) : .double(avg))
    }

    public func min<V: _Persistable>(of keyPath: KeyPath<Element, V>) -> V? { min(ofProperty: binding.info.name(of: keyPath)) }
    public func max<V: _Persistable>(of keyPath: KeyPath<Element, V>) -> V? { max(ofProperty: binding.info.name(of: keyPath)) }
    public func sum<V: _Persistable>(of keyPath: KeyPath<Element, V>) -> V { sum(ofProperty: binding.info.name(of: keyPath)) }
    public func average<V: _Persistable>(of keyPath: KeyPath<Element, V>) -> V? { average(ofProperty: binding.info.name(of: keyPath)) }

    /// Sets one property of every object (in a write transaction).
    public func setValue(_ value: Any?, forKey key: String) {
        for object in Array(self) { object.setValue(value, forKey: key) }
    }

    /// The values at a dotted path (`"owner.name"`) from every object, as `Object.value(forKeyPath:)` gives them.
    public func value(forKeyPath keyPath: String) -> [Any?] {
        guard keyPath.contains(".") else { return value(forKey: keyPath) }
        return map { $0.value(forKeyPath: keyPath) }
    }

    /// The values of one property of every object, each as `Object.value(forKey:)` gives it: the declared type
    /// (an `Int8` property's values are `Int8`s, a list property's are its `List`s), as RealmSwift's
    /// `value(forKey:)` bridges them, so that `as! [Int8]` works as it does there.
    public func value(forKey key: String) -> [Any?] {
        guard binding.info.propertyIndex[key] != nil || binding.info.linkingObjects.contains(where: { $0.name == key }) else {
            fatalError("Invalid property name '\(key)' for class '\(binding.info.schema.className)'")
        }
        return map { $0.value(forKey: key) }
    }
}
