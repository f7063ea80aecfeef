import Engine
import Foundation
import Strata

/// Entry points for the object layer's fuzz targets: none may trap, whatever the bytes.
package enum StrataFuzzing {
    /// An object record: decoded whole and field by field.
    /// Format-2 records are read in `recordLayout` whatever their schema version.
    package static func record(_ bytes: [UInt8]) -> String? {
        bytes.withUnsafeBytes { raw in
            let version = (try? ObjectRecord.schemaVersion(raw)) ?? 0
            let layouts = RecordLayouts([version: recordLayout])
            let all = try? ObjectRecord.decodeAll(raw, layouts: layouts)
            for id: UInt32 in 0..<10 {
                let one = (try? ObjectRecord.value(of: id, in: raw, layouts: layouts)) ?? nil
                if let all, let one, let whole = all.fields[id], !sameBits(whole, one) {
                    return "field \(id) decodes differently alone and with the others"
                }
            }
            if let all {
                let fields = all.fields.sorted { $0.id < $1.id }.map { (id: $0.id, value: $0.value) }
                let again = ObjectRecord.encode(schemaVersion: all.schemaVersion, fields: fields, layout: RecordLayout.isLayout(raw.first) ? recordLayout : nil)
                // A format-2 record (an earlier release's) is written again in format 3.
                let expected = raw.first == RecordLayout.legacyFormat ? RecordLayout.format : raw.first
                guard again.first == expected else { return "a decoded record is written in another format" }
                guard let back = try? again.withUnsafeBytes({ try ObjectRecord.decodeAll($0, layouts: layouts) }), back.fields.count == all.fields.count,
                    back.fields.allSatisfy({ e in all.fields[e.id].map { sameBits($0, e.value) } ?? false })
                else {
                    return "a decoded record does not survive re-encoding"
                }
            }
            return nil
        }
    }

    /// The layout format-2 inputs are read in: one field of each kind, nil allowed where it may be (the
    /// properties as the stored schema's JSON gives them).
    static let recordLayout = RecordLayout(properties(
        """
        [{"fieldId":1,"name":"int","type":"int","isOptional":false,"isPrimaryKey":false,"isIndexed":false},
         {"fieldId":2,"name":"string","type":"string","isOptional":false,"isPrimaryKey":false,"isIndexed":false},
         {"fieldId":3,"name":"optionalInt","type":"int","isOptional":true,"isPrimaryKey":false,"isIndexed":false},
         {"fieldId":4,"name":"bool","type":"bool","isOptional":false,"isPrimaryKey":false,"isIndexed":false},
         {"fieldId":5,"name":"double","type":"double","isOptional":false,"isPrimaryKey":false,"isIndexed":false},
         {"fieldId":6,"name":"date","type":"date","isOptional":true,"isPrimaryKey":false,"isIndexed":false},
         {"fieldId":7,"name":"data","type":"data","isOptional":true,"isPrimaryKey":false,"isIndexed":false},
         {"fieldId":8,"name":"uuid","type":"UUID","isOptional":false,"isPrimaryKey":false,"isIndexed":false},
         {"fieldId":9,"name":"list","type":"any","isOptional":false,"isPrimaryKey":false,"isIndexed":false,"isList":true}]
        """))

    static func properties(_ json: String) -> [StoredSchema.StoredProperty] {
        do {
            return try JSONDecoder().decode([StoredSchema.StoredProperty].self, from: Data(json.utf8))
        } catch {
            fatalError("the fuzz target's own layout does not decode: \(error)")
        }
    }

    /// Equal, or the same bits (NaN is not equal to itself but decodes the same each time).
    static func sameBits(_ a: StoredValue, _ b: StoredValue) -> Bool {
        a == b || ObjectRecord.encode(schemaVersion: 0, fields: [(1, a)]) == ObjectRecord.encode(schemaVersion: 0, fields: [(1, b)])
    }

    /// The persisted schema (JSON in the metadata partition).
    package static func storedSchema(_ bytes: [UInt8]) -> String? {
        _ = try? StoredSchema.decode(bytes, file: "fuzz")
        return nil
    }

    /// A query string, parsed, resolved against a small model and run over an in-memory Realm holding one
    /// object of it (as `filter` does, but throwing where `filter` would trap).
    package static func query(_ bytes: [UInt8]) -> String? {
        let text = String(decoding: bytes, as: UTF8.self)
        let realm: Realm
        do {
            realm = try queryRealm()
        } catch {
            return "opening the in-memory Realm failed: \(error)"
        }
        if let matching = try? realm.objects(FuzzModel.self).filter(text, arguments: [1, "a", [1, 2]]) {
            _ = matching.count
        }
        return nil
    }

    /// The thread's in-memory Realm of `FuzzModel`, with one object in it.
    static func queryRealm() throws -> Realm {
        let realm = try Realm(configuration: .init(inMemoryIdentifier: "strata-fuzz-query", objectTypes: [FuzzModel.self]))
        if realm.objects(FuzzModel.self).isEmpty {
            try realm.write { realm.add(FuzzModel()) }
        }
        return realm
    }

    /// Valid inputs for the corpus.
    package static func seedFiles() -> [String: [[UInt8]]] {
        let record = ObjectRecord.encode(schemaVersion: 3, fields: [
            (1, .int(42)), (2, .string("Ada")), (3, .null), (4, .bool(true)), (5, .double(2.5)),
            (6, .date(Date(timeIntervalSince1970: 1000))), (7, .data(Data([1, 2, 3]))), (8, .uuid(UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)))),
        ])
        let record2 = ObjectRecord.encode(schemaVersion: 3, fields: [
            (1, .int(42)), (2, .string("Ada")), (3, .null), (4, .bool(true)), (5, .double(2.5)),
            (6, .date(Date(timeIntervalSince1970: 1000))), (7, .null), (8, .uuid(UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)))),
            (9, .list([.int(1), .string("x"), .list([.null])])),
        ], layout: recordLayout)
        let schema = """
            {"formatVersion":1,"nextPartition":3,"schemaVersion":2,"types":[{"name":"Person","nextFieldId":3,"partition":1,\
            "primaryKeyPartition":2,"properties":[{"fieldId":1,"isIndexed":true,"isOptional":false,"isPrimaryKey":true,\
            "name":"id","type":"string"},{"fieldId":2,"isIndexed":false,"isOptional":true,"isPrimaryKey":false,"name":"age",\
            "type":"int"}]}]}
            """
        let queries = [
            "age > 18 AND name BEGINSWITH[c] 'a'", "NOT (age < %@) OR name == %@", "id IN %@", "age BETWEEN {1, 10}",
            "name LIKE 'a*b?'", "flag", "TRUEPREDICATE", "(age >= 1 && age <= 2) || name ENDSWITH[cd] \"x\"",
        ]
        return [
            "recordDecode": [record, record2],
            "schemaDecode": [Array(schema.utf8)],
            "queryParse": queries.map { Array($0.utf8) },
        ]
    }
}

/// The model the query target resolves against.
final class FuzzModel: Object {
    @Persisted var id = 0
    @Persisted var age = 0
    @Persisted var name = ""
    @Persisted var flag = false
}
