import Engine

/// Encodes primary-key values as keys of a type's primary-key partition.
enum PrimaryKeyIndex {
    static func entry(_ v: StoredValue) -> [UInt8] {
        switch v {
        case .null: [0]
        case .int(let i): [1] + ObjectKey.bytes(i)
        case .string(let s): [2] + Array(s.utf8)
        case .uuid(let u): withUnsafeBytes(of: u.uuid) { [3] + Array($0) }
        case .objectId(let o): [4] + o.bytes
        default: [5] + Array("\(v)".utf8)
        }
    }
}
