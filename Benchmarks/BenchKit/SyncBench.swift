import Foundation
import Strata

// Issue 57's rows: what change capture costs a write (insert and update-all with capture on, against off, in the
// same run), and the rate of applying a server's batch of changes.

extension Runner {
    struct SyncFigures {
        var insertOff: Double
        var insertOn: Double
        var updateOff: Double
        var updateOn: Double
        /// Commits per second of one-object writes (one property set each), without capture and with it.
        var smallOff: Double
        var smallOn: Double
        /// Objects per second of applying a server change set that creates all N, and one that sets every age.
        var applyCreates: Double
        var applySets: Double
    }

    /// Insert and update-all of `people` on a file without capture and on one with it, then the captured change
    /// sets applied as a server's to a third file.
    func syncFigures(in directory: String, people: [Person]) throws -> SyncFigures {
        func config(_ name: String, captures: Bool) -> Realm.Configuration {
            var c = Realm.Configuration(fileURL: URL(fileURLWithPath: directory + "/" + name + ".realm"), objectTypes: [BenchPerson.self])
            c.capturesChanges = captures
            return c
        }
        func insert(_ realm: Realm) throws -> Double {
            let start = now()
            try realm.write { for p in people { realm.add(BenchPerson(p)) } }
            return Double(people.count) / (now() - start)
        }
        func update(_ realm: Realm) throws -> Double {
            let start = now()
            try realm.write { for p in realm.objects(BenchPerson.self) { p.age += 1 } }
            return Double(people.count) / (now() - start)
        }
        /// Commits of one set each, of objects spread over the type (each commit syncs as every write does).
        func small(_ realm: Realm) throws -> Double {
            let commits = min(people.count, 500)
            let step = max(1, people.count / commits)
            let start = now()
            for i in 0..<commits {
                guard let p = realm.object(ofType: BenchPerson.self, forPrimaryKey: people[i * step].id) else {
                    throw BenchFailure("Strata: person \(people[i * step].id) is missing")
                }
                try realm.write { p.age += 1 }
            }
            return Double(commits) / (now() - start)
        }
        var f = SyncFigures(insertOff: 0, insertOn: 0, updateOff: 0, updateOn: 0, smallOff: 0, smallOn: 0, applyCreates: 0, applySets: 0)
        var changes: [ChangeSet] = []
        do {
            progress("Strata: sync, capture off")
            let off = try Realm(configuration: config("off", captures: false))
            f.insertOff = try insert(off)
            f.updateOff = try update(off)
            progress("Strata: sync, capture on")
            let on = try Realm(configuration: config("on", captures: true))
            f.insertOn = try insert(on)
            f.updateOn = try update(on)
            changes = try on.pendingChanges()
            f.smallOff = try small(off)
            f.smallOn = try small(on)
        }
        guard changes.count == 2, changes[0].operations.count == people.count, changes[1].operations.count == people.count else {
            throw BenchFailure("Strata: capture recorded \(changes.map(\.operations.count)) operations for two writes of \(people.count) objects")
        }
        progress("Strata: sync, apply")
        let receiver = try Realm(configuration: config("receiver", captures: true))
        var start = now()
        try receiver.applyServerChanges([ServerChangeSet(version: 1, changeSet: changes[0])])
        f.applyCreates = Double(people.count) / (now() - start)
        start = now()
        try receiver.applyServerChanges([ServerChangeSet(version: 2, changeSet: changes[1])])
        f.applySets = Double(people.count) / (now() - start)
        let ages = receiver.objects(BenchPerson.self).sum(of: \.age)
        let expected = people.reduce(0) { $0 + $1.age + 1 }
        guard receiver.objects(BenchPerson.self).count == people.count, ages == expected else {
            throw BenchFailure("Strata: applying the captured changes gave \(receiver.objects(BenchPerson.self).count) people, ages summing to \(ages), not \(expected)")
        }
        return f
    }
}
