import Foundation
import RealmFile
import RealmFileTesting
import Strata

/// The `import-realm` workload: a RealmSwift file of the Bench's N people (written by this project's writer of the
/// Realm format: `Person` with an Int primary key `id`, `firstName`, `lastName`, `age`, at schema version 1),
/// converted into a Strata database as the first open of a configuration naming it does.
enum RealmImportBench {
    static func realmFile(_ people: [Person]) -> [UInt8] {
        var writer = RealmFileWriter()
        writer.schemaVersion = 1
        let table = RealmFileWriter.Table(
            name: "Person", primaryKey: "id",
            properties: [.init("id", .int, indexed: true), .init("firstName", .string), .init("lastName", .string), .init("age", .int)],
            objects: people.map { p in
                (Int64(p.id), [.int(Int64(p.id)), .string(String(decoding: p.firstName, as: UTF8.self)),
                               .string(String(decoding: p.lastName, as: UTF8.self)), .int(Int64(p.age))])
            })
        return writer.write([table])
    }

    /// Objects converted per second.
    static func measure(_ file: [UInt8], count: Int, in dir: String) throws -> Double {
        let source = dir + "/default.realm"
        try Data(file).write(to: URL(fileURLWithPath: source))
        let start = Date()
        let report = try Realm.convertRealmFile(at: source, to: dir + "/default.realm.strata", encryptionKey: nil)
        let seconds = Date().timeIntervalSince(start)
        guard report.objectCounts["Person"] == count else {
            throw Realm.Error(.fail, "import-realm copied \(report.objectCounts) of \(count) people")
        }
        return Double(count) / seconds
    }
}
