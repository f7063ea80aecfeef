import Foundation
import RealmFile
import TestSupport

/// Turns a dump's encoding of a value back into the value the reader should give.
struct DumpDecoder {
    let file: RealmFile

    func table(named className: String) -> Int? {
        file.tables.first { $0.name == "class_" + className }?.index
    }

    func value(_ json: JSON, _ property: RealmFileProperty) -> RealmFileValue {
        switch property.collection {
        case .list: return .list(json.array.map { element($0, property) })
        case .set: return .set(json.array.map { element($0, property) })
        case .map: return .map(json.array.map { RealmFileMapEntry(key: $0["key"]?.string ?? "?", value: element($0["value"] ?? .null, property)) })
        case .none: return element(json, property)
        }
    }

    func element(_ json: JSON, _ property: RealmFileProperty) -> RealmFileValue {
        if json == .null { return .null }
        switch property.type {
        case .int: return .int(json.int ?? 0)
        case .bool: return .bool(json.bool ?? false)
        case .string: return .string(json.string ?? "?")
        case .data: return data(json)
        case .date: return timestamp(json)
        case .float: return .float(Float(bitPattern: UInt32(json["bits"]!.string!.dropFirst(2), radix: 16)!))
        case .double: return .double(Double(bitPattern: UInt64(json["bits"]!.string!.dropFirst(2), radix: 16)!))
        case .decimal128: return decimal(json)
        case .objectId: return .objectId(hex(json.string!))
        case .uuid: return .uuid(hex(json.string!.replacingOccurrences(of: "-", with: "")))
        case .object: return .link(RealmFileLink(table: table(named: json["class"]!.string!)!, key: json["key"]!.int!))
        case .mixed: return mixed(json)
        }
    }

    func mixed(_ json: JSON) -> RealmFileValue {
        let v = json["value"] ?? .null
        switch json["type"]?.string {
        case "null": return .null
        case "int": return .int(v.int!)
        case "bool": return .bool(v.bool!)
        case "string": return .string(v.string!)
        case "binary": return data(v)
        case "date": return timestamp(v)
        case "float": return .float(Float(bitPattern: UInt32(v["bits"]!.string!.dropFirst(2), radix: 16)!))
        case "double": return .double(Double(bitPattern: UInt64(v["bits"]!.string!.dropFirst(2), radix: 16)!))
        case "decimal128": return decimal(v)
        case "objectId": return .objectId(hex(v.string!))
        case "uuid": return .uuid(hex(v.string!.replacingOccurrences(of: "-", with: "")))
        case "link": return .link(RealmFileLink(table: table(named: v["class"]!.string!)!, key: v["key"]!.int!))
        case "list": return .list(v.array.map(mixed))
        case "dictionary": return .map(v.array.map { RealmFileMapEntry(key: $0["key"]!.string!, value: mixed($0["value"]!)) })
        default: return .string("unknown mixed \(json)")
        }
    }

    private func data(_ json: JSON) -> RealmFileValue {
        .data([UInt8](Data(base64Encoded: json["base64"]!.string!)!))
    }

    private func timestamp(_ json: JSON) -> RealmFileValue {
        .timestamp(RealmFileTimestamp(seconds: json["seconds"]!.int!, nanoseconds: Int32(json["nanoseconds"]!.int!)))
    }

    private func decimal(_ json: JSON) -> RealmFileValue {
        let bytes = hex(json["bytes"]!.string!)
        let low = (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[$1]) << UInt64(8 * $1) }
        let high = (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[8 + $1]) << UInt64(8 * $1) }
        return .decimal128(RealmFileDecimal128(low: low, high: high))
    }

    private func hex(_ s: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var chars = Array(s.utf8)[...]
        while chars.count >= 2 {
            bytes.append(UInt8(String(decoding: chars.prefix(2), as: UTF8.self), radix: 16)!)
            chars = chars.dropFirst(2)
        }
        return bytes
    }
}
