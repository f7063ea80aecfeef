import Foundation
import Strata
import Testing
import TestSupport

// Models for the schema-wide checks (O032, O050, O056, O057). Invalid ones are left out of the schema a Realm
// with no objectTypes finds, so they only matter where a test lists them.

final class SVOwner: Object {
    @Persisted var name = ""
    @Persisted var pets: List<SVPet>
}

final class SVPet: Object {
    @Persisted var name = ""
    @Persisted(originProperty: "pets") var owners: LinkingObjects<SVOwner>
}

final class SVPart: EmbeddedObject {
    @Persisted var label = ""
}

final class SVSetOfEmbedded: Object {
    @Persisted var parts: MutableSet<SVPart>
}

final class SVNode: EmbeddedObject {
    @Persisted var value = 0
    @Persisted var next: SVNode?
}

final class SVTree: Object {
    @Persisted var root: SVNode?
}

final class SVLeft: EmbeddedObject {
    @Persisted var right: SVRight?
}

final class SVRight: EmbeddedObject {
    @Persisted var left: List<SVLeft>
}

final class SVPair: Object {
    @Persisted var left: SVLeft?
}

/// Realm's core accepts these: an embedded type linking back to a top-level type, and two paths to one
/// embedded type (a diamond).
final class SVHome: Object {
    @Persisted var address: SVAddress?
}

final class SVAddress: EmbeddedObject {
    @Persisted var owner: SVHome?
}

final class SVRoot: Object {
    @Persisted var a: SVDiamondA?
}

final class SVDiamondA: EmbeddedObject {
    @Persisted var b: SVDiamondB?
    @Persisted var c: SVDiamondC?
}

final class SVDiamondB: EmbeddedObject {
    @Persisted var c: SVDiamondC?
}

final class SVDiamondC: EmbeddedObject {
    @Persisted var value = 0
}

final class SVAliased: Object {
    @Persisted var first = ""
    @Persisted var second = ""
    @Persisted var third = ""
    // `first` is stored as "third", and `second` as "first": the name `first` is both a property and an alias.
    override class func propertiesMapping() -> [String: String] { ["first": "x_first", "second": "first"] }
}

final class SVMapped: Object {
    @Persisted var firstName = ""
    override class func propertiesMapping() -> [String: String] { ["firstName": "first_name"] }
}

@Suite struct SchemaValidationConformanceTests {
    private func error(_ types: [Object.Type]) throws -> Realm.Error? {
        let dir = try TemporaryDirectory()
        return Conformance.openError(Conformance.url(dir), types)
    }

    @Test func O050_linkingObjectsAreFoundByNameButNotListedAmongProperties() throws {
        let dir = try TemporaryDirectory()
        let realm = try Conformance.open(Conformance.url(dir), [SVOwner.self, SVPet.self])
        let pet = try #require(realm.schema["SVPet"])
        #expect(pet.properties.map(\.name) == ["name"])
        let owners = try #require(pet["owners"])
        #expect(owners.type == .linkingObjects)
        #expect(owners.objectClassName == "SVOwner")
        #expect(owners.linkOriginPropertyName == "pets")
        #expect(owners.isArray && !owners.isOptional)
        let list = try #require(realm.schema["SVOwner"]?["pets"])
        #expect(list.type == .object && list.isArray && !list.isOptional && list.objectClassName == "SVPet")
    }

    @Test func O032_aSetOfEmbeddedObjectsIsRefused() throws {
        let e = try #require(try error([SVSetOfEmbedded.self, SVPart.self]))
        #expect(e.code == .schemaMismatch)
        #expect(e.message == """
            Schema validation failed due to the following errors:
            - Set property 'SVSetOfEmbedded.parts' cannot contain embedded object type 'SVPart'. Set semantics are not applicable to embedded objects.
            """)
    }

    @Test func O032_aCycleOfEmbeddedTypesIsRefused() throws {
        let selfLoop = try #require(try error([SVTree.self, SVNode.self]))
        #expect(selfLoop.message == """
            Schema validation failed due to the following errors:
            - Cycles containing embedded objects are not currently supported: 'SVNode.next'
            """)
        let twoTypes = try #require(try error([SVPair.self, SVLeft.self, SVRight.self]))
        #expect(twoTypes.message == """
            Schema validation failed due to the following errors:
            - Cycles containing embedded objects are not currently supported: 'SVLeft.right.left'
            - Cycles containing embedded objects are not currently supported: 'SVRight.left.right'
            """)
    }

    @Test func O032_linksBackToTopLevelTypesAndTwoPathsToOneEmbeddedTypeAreNotCycles() throws {
        #expect(try error([SVHome.self, SVAddress.self]) == nil)
        #expect(try error([SVRoot.self, SVDiamondA.self, SVDiamondB.self, SVDiamondC.self]) == nil)
    }

    @Test func O056_everyProblemIsReportedInOneError() throws {
        let e = try #require(try error([SVSetOfEmbedded.self, SVPart.self, SVAliased.self]))
        #expect(e.code == .schemaMismatch)
        #expect(e.message == """
            Schema validation failed due to the following errors:
            - Set property 'SVSetOfEmbedded.parts' cannot contain embedded object type 'SVPart'. Set semantics are not applicable to embedded objects.
            - Property 'SVAliased.x_first' has an alias 'first' that conflicts with a property of the same name.
            """)
    }

    @Test func O057_storedNamesAreColumnNamesAndAnAliasMayNotBeAnotherPropertysName() throws {
        let dir = try TemporaryDirectory()
        let realm = try Conformance.open(Conformance.url(dir), [SVMapped.self])
        #expect(realm.schema["SVMapped"]?["firstName"]?.columnName == "first_name")
        let e = try #require(try error([SVAliased.self]))
        #expect(e.message.hasSuffix("- Property 'SVAliased.x_first' has an alias 'first' that conflicts with a property of the same name."))
    }

    @Test func invalidModelsAreLeftOutOfTheDiscoveredSchema() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: Realm.Configuration(fileURL: Conformance.url(dir)))
        let names = Set(realm.schema.objectSchema.map(\.className))
        #expect(names.isDisjoint(with: ["SVSetOfEmbedded", "SVTree", "SVNode", "SVPair", "SVLeft", "SVRight", "SVAliased"]))
        #expect(names.isSuperset(of: ["SVOwner", "SVPet", "SVPart", "SVMapped"]))
    }
}

final class SVPerson: Object {
    @Persisted var name = ""
    var ignored = ""
}

final class SVIgnoredProjection: Projection<SVPerson> {
    @Projected(\SVPerson.ignored) var ignored
}

final class SVGoodProjection: Projection<SVPerson> {
    @Projected(\SVPerson.name.localizedUppercase) var shout
}
