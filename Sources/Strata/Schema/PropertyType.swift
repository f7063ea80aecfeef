/// The storage type of a property, as RealmSwift names it.
public enum PropertyType: String, Sendable, Codable, Hashable, CustomStringConvertible {
    case int, bool, float, double, string, data, any, date, objectId, decimal128, UUID, object, linkingObjects

    public var description: String {
        switch self {
        case .int: "Int"
        case .bool: "Bool"
        case .float: "Float"
        case .double: "Double"
        case .string: "String"
        case .data: "Data"
        case .any: "AnyRealmValue"
        case .date: "Date"
        case .objectId: "ObjectId"
        case .decimal128: "Decimal128"
        case .UUID: "UUID"
        case .object: "Object"
        case .linkingObjects: "LinkingObjects"
        }
    }
}
