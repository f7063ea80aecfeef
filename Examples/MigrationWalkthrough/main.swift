// A file written by version 0 of an app, opened by version 3: every step of the migration block runs in one
// open, in order. The per-object work is recorded (`transformObjects`), so open returns at once; reads see
// migrated objects while a background thread rewrites the file, and the progress is printed as it goes.
//
//   swift run MigrationWalkthrough [OBJECTS]
import Foundation
import Strata

enum V0 {
    final class Person: Object {
        @Persisted(primaryKey: true) var id = 0
        @Persisted var firstName = ""
        @Persisted var lastName = ""
        @Persisted var age = 0
    }
}

// Version 3: the names combined (1), age renamed (2), and a new email whose default comes from the model (3).
enum V3 {
    final class Person: Object {
        @Persisted(primaryKey: true) var id = 0
        @Persisted var fullName = ""
        @Persisted var yearsSinceBirth = 0
        @Persisted var email = "none"
    }
}

let count = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 50_000 : 50_000
let url = URL(fileURLWithPath: NSTemporaryDirectory() + "strata-walkthrough-\(ProcessInfo.processInfo.processIdentifier).realm")

// Version 0 writes its objects.
let v0 = Realm.Configuration(fileURL: url, objectTypes: [V0.Person.self])
_ = try? Realm.deleteFiles(for: v0)
do {
    let realm = try Realm(configuration: v0)
    try realm.write {
        for i in 0..<count {
            realm.add(V0.Person(value: ["id": i, "firstName": "Ada\(i)", "lastName": "Lovelace", "age": 20 + i % 60]))
        }
    }
    print("version 0: \(realm.objects(V0.Person.self).count) people written")
}

// Version 3 opens the same file.
let v3 = Realm.Configuration(fileURL: url, schemaVersion: 3, migrationBlock: { migration, oldSchemaVersion in
    print("migration block called with oldSchemaVersion \(oldSchemaVersion)")
    if oldSchemaVersion < 1 {
        migration.transformObjects(ofType: "Person") { old, new in
            let first = old["firstName"] as? String ?? ""
            let last = old["lastName"] as? String ?? ""
            new["fullName"] = "\(first) \(last)"
        }
    }
    if oldSchemaVersion < 2 {
        migration.renameProperty(onType: "Person", from: "age", to: "yearsSinceBirth")
    }
    // Version 3 only adds `email`: nothing to write, it reads as the declared "none".
}, objectTypes: [V3.Person.self])
let start = Date()
let realm = try Realm(configuration: v3)
print(String(format: "version 3 opened in %.1f ms", Date().timeIntervalSince(start) * 1000))

if let first = realm.object(ofType: V3.Person.self, forPrimaryKey: 0) {
    print("already readable: \(first.fullName), \(first.yearsSinceBirth) years, email \(first.email)")
}
while true {
    let progress = realm.migrationProgress
    for p in progress { print("  \(p)") }
    if progress.allSatisfy(\.isFinished) { break }
    Thread.sleep(forTimeInterval: 0.05)
}
try realm.finishMigrations()
let people = realm.objects(V3.Person.self)
let combined = people.filter("fullName ENDSWITH ' Lovelace'").count
print("done: \(people.count) people at version 3, \(combined) with a combined fullName, ages \(people.min(ofProperty: "yearsSinceBirth") as Int? ?? -1)...\(people.max(ofProperty: "yearsSinceBirth") as Int? ?? -1)")
guard combined == count else {
    print("expected \(count) combined names")
    exit(1)
}
realm.invalidate()
_ = try? Realm.deleteFiles(for: v3)
