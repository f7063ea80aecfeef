import Engine
import Foundation
import Testing
import TestSupport
@testable import Strata

/// Records that passed their block checksums but disagree with the schema, written with the engine directly.
@Suite struct StrataToolRecordTests {
    @Test func verifyNamesTheTypeObjectAndPropertyOfABadRecord() throws {
        let dir = try TemporaryDirectory()
        let path = try StrataToolTests.create(dir)
        do {
            let db = try Database.open(at: path)
            let snapshot = try db.snapshot()
            let schema = try StoredSchema.decode(try #require(try snapshot.get(StoredSchema.schemaKey, in: StoredSchema.metadataPartition)), file: path)
            let person = try #require(schema.type(named: "Person"))
            let age = try #require(person.properties.first { $0.name == "age" })
            let dog = try #require(person.properties.first { $0.name == "dog" })
            let name = try #require(person.properties.first { $0.name == "name" })
            let tx = try db.beginWrite()
            // Object 1: age holds a string; object 3: links to a dog that does not exist.
            try tx.put(ObjectKey.bytes(1), ObjectRecord.encode(schemaVersion: 0, fields: [(name.fieldId, .string("person 1")), (age.fieldId, .string("old"))]), in: person.partition)
            try tx.put(ObjectKey.bytes(3), ObjectRecord.encode(schemaVersion: 0, fields: [(name.fieldId, .string("person 3")), (dog.fieldId, .link(999))]), in: person.partition)
            try tx.commit()
            try db.close()
        }
        let r = try StrataToolTests.strata("verify", path)
        #expect(r.status == 1)
        #expect(r.err.contains("Person object 1: age is a String, but the schema says Int"), "\(r.err)")
        #expect(r.err.contains("Person object 3: dog links to Dog 999, which does not exist"), "\(r.err)")
        #expect(r.err.contains("2 problems found"), "\(r.err)")
    }
}
