import Foundation
import Strata
import Testing
import TestSupport

enum Mood: Int, RealmEnum {
    case calm, busy
}

final class MoodyPerson: Object {
    @Persisted var name = ""
    @Persisted var mood = Mood.busy
    let lastMood = RealmProperty<Mood?>()
}

/// RealmSwift's spellings of models: `sharedSchema()`, `RealmEnum`.
@Suite struct ModelSpellingTests {
    @Test func aModelClassGivesItsSchemaAndARealmEnumIsStored() throws {
        let schema = try #require(MoodyPerson.sharedSchema())
        #expect(schema.className == "MoodyPerson" && schema.properties.map(\.name) == ["name", "mood", "lastMood"])
        #expect(schema.properties[1].type == .int)
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: .init(fileURL: URL(fileURLWithPath: dir.child("m.realm")), objectTypes: [MoodyPerson.self]))
        let person = MoodyPerson()
        person.lastMood.value = .calm
        try realm.write { realm.add(person) }
        #expect(realm.objects(MoodyPerson.self).where { $0.mood == .busy }.count == 1)
        #expect(realm.objects(MoodyPerson.self).first?.lastMood.value == .calm)
        #expect(Mood.allCases == [.calm, .busy])
    }

    static func text(_ result: ExitTest.Result?) -> String { String(decoding: result?.standardErrorContent ?? [], as: UTF8.self) }

    /// Frozen and unmanaged objects misused trap with RealmSwift's texts.
    @Test func freezingThawingAndModifyingFrozenObjectsTrapWithRealmSwiftsText() async {
        let freeze = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = MoodyPerson().freeze()
        }
        #expect(Self.text(freeze).contains("Unmanaged objects cannot be frozen."))
        let thaw = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = MoodyPerson().thaw()
        }
        #expect(Self.text(thaw).contains("Unmanaged objects cannot be thawed."))
        let modify = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = try TemporaryDirectory()
            let realm = try Realm(configuration: .init(fileURL: URL(fileURLWithPath: dir.child("m.realm")), objectTypes: [MoodyPerson.self]))
            let person = try realm.write { realm.create(MoodyPerson.self) }
            let frozen = person.freeze()
            try realm.write { frozen.name = "x" }
        }
        #expect(Self.text(modify).contains("Attempting to modify a frozen object - call thaw on the Object instance first."))
    }
}
