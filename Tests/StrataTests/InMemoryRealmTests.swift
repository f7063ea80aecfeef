import Foundation
import Strata
import Testing
import TestSupport

@Suite struct InMemoryRealmTests {
    @Test func anInMemoryRealmLivesWhileAnInstanceDoes() throws {
        let id = "mem-\(UUID())"
        do {
            let a = try Realm(configuration: .init(inMemoryIdentifier: id, objectTypes: [Note.self]))
            try a.write { a.add(Note(value: ["text": "kept"])) }
            let b = try Realm(configuration: .init(inMemoryIdentifier: id, objectTypes: [Note.self]))
            #expect(b.objects(Note.self).count == 1)
        }
        let c = try Realm(configuration: .init(inMemoryIdentifier: id, objectTypes: [Note.self]))
        #expect(c.objects(Note.self).isEmpty)
    }
}
