import Engine
import Foundation
import Strata
import Testing
import TestSupport

/// Binding the declared models to a file: discovery on first use, schema versions, differences listed,
/// defaults for added properties, invalid models named.
@Suite struct SchemaBindingTests {
    @Test func typesAreDiscoveredOnFirstUseWhenObjectTypesIsNil() throws {
        let realm = try Realm(configuration: .init(inMemoryIdentifier: "discover-\(UUID())"))
        try realm.write { realm.add(Note(value: ["text": "hello"])) }
        #expect(realm.objects(Note.self).count == 1)
        #expect(realm.schema["Note"]?.properties.map(\.name) == ["text", "priority", "payload"])
    }

    /// A file whose schema already holds the declared types, their indexes included, binds them without a write
    /// transaction: a Realm opens while another thread's write is open (the open waited for that write before).
    @Test func anOpenOfAnUnchangedSchemaDoesNotWaitForAnotherWrite() throws {
        let dir = try TemporaryDirectory()
        let config = Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("w.realm")), objectTypes: [Note.self])
        do {
            let realm = try Realm(configuration: config)
            try realm.write { realm.add(Note(value: ["text": "first", "priority": 2])) }
        }
        let writing = DispatchSemaphore(value: 0), finish = DispatchSemaphore(value: 0), opened = DispatchSemaphore(value: 0)
        let writer = Thread {
            do {
                let realm = try Realm(configuration: config)
                realm.beginWrite()
                realm.add(Note(value: ["text": "second"]))
                writing.signal()
                _ = finish.wait(timeout: .now() + 120)
                try realm.commitWrite()
            } catch {
                Issue.record("the writer failed: \(error)")
                writing.signal()
            }
        }
        writer.start()
        writing.wait()
        let count = Locked<Int?>(nil)
        Thread {
            let realm = try? Realm(configuration: config)
            count.withLock { $0 = realm?.objects(Note.self).filter("priority == 2").count }
            opened.signal()
        }.start()
        let openedDuringTheWrite = opened.wait(timeout: .now() + 60) == .success
        finish.signal()
        if !openedDuringTheWrite { opened.wait() }
        #expect(openedDuringTheWrite, "the open waited for another thread's write")
        #expect(count.withLock { $0 } == 1)
    }

    @Test func aLowerSchemaVersionIsAnErrorNamingBothVersions() throws {
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("v.realm"))
        do { _ = try Realm(configuration: .init(fileURL: url, schemaVersion: 3, objectTypes: [V0.Item.self])) }
        #expect {
            _ = try Realm(configuration: .init(fileURL: url, schemaVersion: 2, objectTypes: [V0.Item.self]))
        } throws: { error in
            guard let e = error as? Realm.Error else { return false }
            return e.code == .fail && e.message == "Provided schema version 2 is less than last set version 3."
                && "\(e)".contains("open it with schemaVersion 3 or higher")
        }
    }

    @Test func theSameVersionWithADifferentSchemaListsEveryDifference() throws {
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("m.realm"))
        do {
            let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [V0.Item.self]))
            try realm.write { realm.add(V0.Item(value: ["id": 1, "name": "one"])) }
        }
        do {
            _ = try Realm(configuration: .init(fileURL: url, objectTypes: [V1.Item.self]))
            Issue.record("opening with a changed schema and the same version succeeded")
        } catch Realm.Error.schemaMismatch {
            // The pattern form ported code uses.
        }
        #expect {
            _ = try Realm(configuration: .init(fileURL: url, objectTypes: [V1.Item.self]))
        } throws: { error in
            guard let e = error as? Realm.Error else { return false }
            return e.message.contains("'Item.email' has been added") && e.message.contains("'Item.score' has been added")
                && "\(e)".contains("raise schemaVersion to 1")
        }
        // Nothing was written: the old schema still opens.
        let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [V0.Item.self]))
        #expect(realm.objects(V0.Item.self).first?.name == "one")
    }

    @Test func addedPropertiesGetTheDeclaredDefaultOnExistingObjects() throws {
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("a.realm"))
        do {
            let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [V0.Item.self]))
            try realm.write { realm.add(V0.Item(value: ["id": 1, "name": "one"])) }
        }
        let realm = try Realm(configuration: .init(fileURL: url, schemaVersion: 1, objectTypes: [V1.Item.self]))
        let item = try #require(realm.object(ofType: V1.Item.self, forPrimaryKey: 1))
        #expect(item.name == "one")
        #expect(item.email == "none")
        #expect(item.score == nil)
        #expect(try schemaVersionAtURL(url) == 1)
    }

    @Test func invalidModelsAreErrorsNamingTheTypeAndProperty() throws {
        final class TwoKeys: Object {
            @Persisted(primaryKey: true) var a: Int
            @Persisted(primaryKey: true) var b: Int
        }
        final class BadKey: Object {
            @Persisted(primaryKey: true) var value: Double
        }
        #expect {
            _ = try Realm(configuration: .init(inMemoryIdentifier: "bad1", objectTypes: [TwoKeys.self]))
        } throws: { error in "\(error)".contains("Properties 'b' and 'a' are both marked as the primary key of 'TwoKeys'") }
        #expect {
            _ = try Realm(configuration: .init(inMemoryIdentifier: "bad2", objectTypes: [BadKey.self]))
        } throws: { error in
            "\(error)".contains("Property 'value' cannot be made the primary key of 'BadKey' because it is not a 'string', 'int', 'objectId', or 'uuid' property.")
        }
    }
}
