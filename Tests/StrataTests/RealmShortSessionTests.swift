import Engine
import Foundation
@testable import Strata
import Testing
import TestSupport

/// Issue 37's pattern through the public API: a program that opens a Realm, commits one transaction of 100
/// objects and lets the Realm go, 400 times with no pause, keeps a handful of segments in every partition.
@Suite struct RealmShortSessionTests {
    @Test func fourHundredRealmSessionsKeepAtMostTwelveSegmentsPerPartition() throws {
        let dir = try TemporaryDirectory()
        let config = Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("sessions.realm")), objectTypes: [Person.self])
        let sessions = 400
        for session in 0..<sessions {
            let realm = try Realm(configuration: config)
            try realm.write {
                for i in 0..<100 { realm.add(Person(value: ["id": session * 100 + i, "firstName": "p\(session)-\(i)"])) }
            }
        }
        do {
            let realm = try Realm(configuration: config)
            #expect(realm.objects(Person.self).count == sessions * 100)
            let perPartition = realm.core.database.partitionStatistics().mapValues(\.segments)
            #expect(perPartition.values.allSatisfy { $0 <= 12 }, "segments per partition: \(perPartition)")
        }
        // What `strata info` reports, from the closed file.
        let inspector = try DatabaseInspector(path: dir.child("sessions.realm"))
        defer { try? inspector.close() }  // try?: a read-only inspection
        let summary = try inspector.summary()
        #expect(summary.types.first { $0.name == "Person" }?.objects == sessions * 100)
        #expect(summary.types.allSatisfy { $0.segments <= 12 }, "\(summary.types.map { ($0.name, $0.segments) })")
    }
}
