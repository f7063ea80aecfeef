import Foundation
import Strata
import StrataTool

// A program for the `strata` tool's tests: it creates databases for them, holds one open, and is a `strata`
// built with an app's configuration (the StrataTool.main(configurations:) way), so that `migrate` can run the
// app's transforms.
//
//   StrataToolHost create PATH       a database at schema version 0: people, dogs, links, lists
//   StrataToolHost pending PATH N    a database at version 1 with N people whose online migration is pending
//   StrataToolHost hold PATH [v1] [exclusive]
//                                    opens PATH (at version 1 with v1, exclusively with exclusive), prints "ready N"
//                                    (N people), then "people N" for each line "check" read, until input closes
//   StrataToolHost strata ARGS...    the strata tool, knowing version 1's configuration

enum V0 {
    final class Person: Object {
        @Persisted(primaryKey: true) var name = ""
        @Persisted var age = 0
        @Persisted var dog: Dog?
        @Persisted var tags: List<String>
    }

    final class Dog: Object {
        @Persisted(primaryKey: true) var id = 0
        @Persisted var name = ""
    }
}

enum V1 {
    final class Person: Object {
        @Persisted(primaryKey: true) var name = ""
        @Persisted var age = 0
        @Persisted var dog: Dog?
        @Persisted var tags: List<String>
        @Persisted var greeting = ""
    }

    final class Dog: Object {
        @Persisted(primaryKey: true) var id = 0
        @Persisted var name = ""
    }
}

func configuration(_ path: String, version: UInt64) -> Realm.Configuration {
    if version == 0 { return Realm.Configuration(fileURL: URL(fileURLWithPath: path), objectTypes: [V0.Person.self, V0.Dog.self]) }
    var config = Realm.Configuration(
        fileURL: URL(fileURLWithPath: path), schemaVersion: 1,
        migrationBlock: { migration, _ in
            migration.transformObjects(ofType: "Person") { old, new in
                new["greeting"] = "hello \(old["name"] as? String ?? "")"
            }
        }, objectTypes: [V1.Person.self, V1.Dog.self])
    config.migrationMode = .online
    config.backgroundMigration = false
    return config
}

func create(_ path: String, people: Int) throws {
    let realm = try Realm(configuration: configuration(path, version: 0))
    try realm.write {
        for i in 0..<people {
            let p = V0.Person()
            p.name = "person \(i)"
            p.age = 20 + i % 50
            p.tags.append(objectsIn: ["a", "b \"quoted\""].prefix(i % 3))
            if i % 2 == 0 {
                let d = V0.Dog()
                d.id = i
                d.name = "dog \(i)"
                p.dog = d
            }
            realm.add(p)
        }
    }
}

let args = CommandLine.arguments
do {
    switch args.count > 2 ? args[1] : "" {
    case "create":
        try create(args[2], people: 5)
    case "pending":
        try create(args[2], people: Int(args[3]) ?? 100)
        let realm = try Realm(configuration: configuration(args[2], version: 1))
        guard !realm.migrationProgress.allSatisfy(\.isFinished) else { throw Realm.Error(.fail, "the migration was not left pending") }
    case "hold":
        let version: UInt64 = args.contains("v1") ? 1 : 0
        var config = configuration(args[2], version: version)
        if args.contains("exclusive") { config.processSharing = .exclusive }
        let realm = try Realm(configuration: config)
        func people() -> String {
            realm.refresh()
            guard version == 1 else { return "\(realm.objects(V0.Person.self).count)" }
            let greeting = realm.object(ofType: V1.Person.self, forPrimaryKey: "person 0")?.greeting ?? "none"
            return "\(realm.objects(V1.Person.self).count) \(greeting)"
        }
        print("ready \(people())")
        fflush(nil)
        while let line = readLine(), line == "check" {
            print("people \(people())")
            fflush(nil)
        }
    case "strata":
        StrataTool.main(Array(args.dropFirst(2)), configurations: [configuration("", version: 1)])
    default:
        FileHandle.standardError.write(Data("usage: StrataToolHost create|pending|hold PATH, or strata ARGS\n".utf8))
        exit(2)
    }
} catch {
    FileHandle.standardError.write(Data("StrataToolHost: \(error)\n".utf8))
    exit(1)
}
