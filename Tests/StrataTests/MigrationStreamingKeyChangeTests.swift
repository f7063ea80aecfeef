import Foundation
import Testing
import TestSupport
@testable import Strata

enum KC1 {
    final class Part: Object {
        @Persisted var name = ""
        @Persisted var weight = 0
        override class func className() -> String { "KCPart" }
    }
    final class Box: Object {
        @Persisted var label = ""
        @Persisted var part: Part?
        override class func className() -> String { "KCBox" }
    }
}

/// An Int primary key added: objects move to their key value.
enum KC2 {
    final class Part: Object {
        @Persisted(primaryKey: true) var id: Int
        @Persisted var name = ""
        @Persisted var weight = 0
        override class func className() -> String { "KCPart" }
    }
    final class Box: Object {
        @Persisted var label = ""
        @Persisted var part: Part?
        override class func className() -> String { "KCBox" }
    }
}

/// An optional Int primary key added.
enum KC4 {
    final class Part: Object {
        @Persisted(primaryKey: true) var id: Int?
        @Persisted var name = ""
        @Persisted var weight = 0
        override class func className() -> String { "KCPart" }
    }
    final class Box: Object {
        @Persisted var label = ""
        @Persisted var part: Part?
        override class func className() -> String { "KCBox" }
    }
}

/// A String primary key added: objects keep their keys, an index is built.
enum KC3 {
    final class Part: Object {
        @Persisted(primaryKey: true) var code = ""
        @Persisted var name = ""
        @Persisted var weight = 0
        override class func className() -> String { "KCPart" }
    }
    final class Box: Object {
        @Persisted var label = ""
        @Persisted var part: Part?
        override class func className() -> String { "KCBox" }
    }
}

/// A primary key added by the block streams the type's objects like any other migration (issue 21, decision 3):
/// the end checks the keys from a map of key values and moves the objects of an Int key from their encoded
/// records, and links follow the moves.
@Suite struct MigrationStreamingKeyChangeTests {
    static let count = 150

    static func file(_ dir: TemporaryDirectory) throws -> URL {
        let url = URL(fileURLWithPath: dir.child("parts.realm"))
        let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [KC1.Part.self, KC1.Box.self]))
        try realm.write {
            for i in 0..<count {
                let part = realm.create(KC1.Part.self, value: ["name": "p\(i)", "weight": i])
                realm.create(KC1.Box.self, value: ["label": "b\(i)", "part": part])
            }
        }
        return url
    }

    static func configuration(_ url: URL, _ types: [ObjectBase.Type], _ block: @escaping MigrationBlock) -> Realm.Configuration {
        var c = Realm.Configuration(fileURL: url, schemaVersion: 1, migrationBlock: block, objectTypes: types)
        c.migrationSpillBytes = 900
        return c
    }

    @Test(arguments: [Realm.Configuration.MigrationMode.blocking, .online])
    func anAddedIntKeyStreamsMovesObjectsAndKeepsLinks(mode: Realm.Configuration.MigrationMode) throws {
        let dir = try TemporaryDirectory()
        var c = Self.configuration(try Self.file(dir), [KC2.Part.self, KC2.Box.self]) { m, _ in
            // Keys in reverse weight order: most objects move, some onto keys others leave.
            m.enumerateObjects(ofType: "KCPart") { old, new in new!["id"] = 10_000 - (old!["weight"] as! Int) }
        }
        c.migrationMode = mode
        let realm = try Realm(configuration: c)
        #expect(realm.core.shared.objectsStreamed.current == Self.count)
        #expect(realm.objects(KC2.Part.self).count == Self.count)
        for i in 0..<Self.count {
            let part = try #require(realm.object(ofType: KC2.Part.self, forPrimaryKey: 10_000 - i))
            #expect(part.name == "p\(i)" && part.weight == i)
        }
        for box in realm.objects(KC2.Box.self) {
            #expect(box.part?.name == "p" + box.label.dropFirst(), "\(box.label)")
        }
    }

    /// Keys reversed over the objects' own key range: objects move onto keys others leave.
    @Test func M102_objectsMoveOntoKeysOthersLeave() throws {
        let dir = try TemporaryDirectory()
        let url = try Self.file(dir)
        let realm = try Realm(configuration: Self.configuration(url, [KC2.Part.self, KC2.Box.self]) { m, _ in
            m.enumerateObjects(ofType: "KCPart") { old, new in new!["id"] = Self.count - (old!["weight"] as! Int) }
        })
        #expect(realm.objects(KC2.Part.self).count == Self.count)
        for i in 0..<Self.count {
            #expect(realm.object(ofType: KC2.Part.self, forPrimaryKey: Self.count - i)?.weight == i, "\(i)")
        }
        for box in realm.objects(KC2.Box.self) { #expect(box.part?.name == "p" + box.label.dropFirst(), "\(box.label)") }
    }

    /// One object keeps a nil key (it moves to nil's key); the others take keys over the objects' own range,
    /// the nil one's old key included: nothing is replaced.
    @Test func anOptionalIntKeyWithANilMovesToNilsKey() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: Self.configuration(try Self.file(dir), [KC4.Part.self, KC4.Box.self]) { m, _ in
            m.enumerateObjects(ofType: "KCPart") { old, new in
                let w = old!["weight"] as! Int
                new!["id"] = w == 3 ? nil : Self.count - w
            }
        })
        #expect(realm.objects(KC4.Part.self).count == Self.count)
        #expect(realm.object(ofType: KC4.Part.self, forPrimaryKey: nil as Int?)?.weight == 3)
        for i in 0..<Self.count where i != 3 {
            #expect(realm.object(ofType: KC4.Part.self, forPrimaryKey: Self.count - i)?.weight == i, "\(i)")
        }
        for box in realm.objects(KC4.Box.self) { #expect(box.part?.name == "p" + box.label.dropFirst(), "\(box.label)") }
    }

    /// `transformObjects` after `deleteData` of the same type transforms nothing and brings nothing back (both
    /// modes), as `enumerateObjects` enumerates nothing after it.
    @Test(arguments: [Realm.Configuration.MigrationMode.blocking, .online])
    func M078_aTransformAfterDeleteDataBringsNothingBack(mode: Realm.Configuration.MigrationMode) throws {
        let dir = try TemporaryDirectory()
        var c = Self.configuration(try Self.file(dir), [KC3.Part.self, KC3.Box.self]) { m, _ in
            m.deleteData(forType: "KCPart")
            m.transformObjects(ofType: "KCPart") { old, new in new["code"] = "c" + (old["name"] as! String) }
        }
        c.migrationMode = mode
        let realm = try Realm(configuration: c)
        #expect(realm.objects(KC3.Part.self).isEmpty)
        #expect(realm.objects(KC3.Box.self).allSatisfy { $0.part == nil })
    }

    @Test func anAddedStringKeyStreamsAndIsIndexed() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: Self.configuration(try Self.file(dir), [KC3.Part.self, KC3.Box.self]) { m, _ in
            m.enumerateObjects(ofType: "KCPart") { old, new in new!["code"] = "c" + (old!["name"] as! String) }
        })
        #expect(realm.core.shared.objectsStreamed.current == Self.count)
        for i in 0..<Self.count {
            #expect(realm.object(ofType: KC3.Part.self, forPrimaryKey: "cp\(i)")?.weight == i)
        }
        #expect(realm.objects(KC3.Part.self).where { $0.code == "cp7" }.first?.name == "p7")
        for box in realm.objects(KC3.Box.self) { #expect(box.part?.name == "p" + box.label.dropFirst()) }
    }

    @Test func M103_M104_duplicateAddedKeysFailTheOpenAndWriteNothing() throws {
        let dir = try TemporaryDirectory()
        let url = try Self.file(dir)
        #expect {
            _ = try Realm(configuration: Self.configuration(url, [KC3.Part.self, KC3.Box.self]) { m, _ in
                m.enumerateObjects(ofType: "KCPart") { old, new in new!["code"] = "c\((old!["weight"] as! Int) % 100)" }
            })
        } throws: { "\($0)".contains("Primary key property 'KCPart.code' has duplicate values after migration") }
        #expect(try schemaVersionAtURL(url) == 0)
    }
}
