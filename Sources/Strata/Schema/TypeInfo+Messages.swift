import Engine
import Foundation

// Realm's texts for values that do not fit a property, shared by every setter and initializer.

extension TypeInfo {
    /// RealmSwift's text for a value of the wrong type (O035): `Invalid value '<v>' of type '<class>' for
    /// '<type>[?]' property '<Type>.<prop>'.`
    static func invalidValue(_ value: Any?, _ property: Property, _ className: String) -> String {
        invalidValueMessage(
            value, type: property.type, target: property.objectClassName, nullable: property.isNullable, collection: "",
            property: "\(className).\(property.name)")
    }

    /// The text of `invalidValue`, for declared and stored properties alike (`collection`: "", " array", " set"
    /// or " dictionary").
    static func invalidValueMessage(
        _ value: Any?, type: PropertyType, target: String?, nullable: Bool, collection: String, property: String
    ) -> String {
        // A value that arrived wrapped in an Optional (`Any?` holding `Int?`) shows as itself, as in Realm's text.
        var inner = value
        while let v = inner, Mirror(reflecting: v).displayStyle == .optional { inner = Mirror(reflecting: v).children.first?.value }
        let shown = inner.map { "\($0)" } ?? "nil"
        let valueType = inner.map { "\(Swift.type(of: $0))" } ?? "nil"
        let base = type == .object ? (target ?? "object") : "\(type)".lowercased()
        return "Invalid value '\(shown)' of type '\(valueType)' for '\(base)\(nullable ? "?" : "")'\(collection) property '\(property)'."
    }
}
