// A child process for the SIGKILL tests of migrations. The parent kills it at random moments.
// - `StrataCrashChild migrate PATH` opens the version-0 file at PATH with version 1 (a new property computed
//   for every object, and a rename) and prints "migrated" once the open returned.
// - `StrataCrashChild online PATH COUNT SEED` opens it with version 1 online (`name` renamed `label`, and a
//   transform appending "#" to the label, read from the new object so that running twice would show), prints
//   "opened", then writes while the background migrator runs: before each write transaction "try ID VALUE NEW",
//   after its commit returned "ack ID VALUE NEW" (ID's value set, object NEW created). Reads check that no
//   label carries two marks.
// - `StrataCrashChild misuse PATH` opens it with a transform that calls `create`, which must trap.
// - `StrataCrashChild convert PATH` converts the RealmSwift file at PATH into its Strata database and prints
//   "converted" once that returned.

import Foundation
import Strata
import StrataSync

enum S1 {
    final class Item: Object {
        @Persisted(primaryKey: true) var id: Int
        @Persisted var value = 0
        @Persisted var doubled = 0
        @Persisted var label = ""
    }
}

enum S2 {
    final class Item: Object {
        @Persisted(primaryKey: true) var id: Int
        @Persisted var value = 0
        @Persisted var label = ""
    }
}

func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

let arguments = CommandLine.arguments
if arguments.count == 5, arguments[1] == "online", let count = Int(arguments[3]), var state = UInt64(arguments[4]) {
    func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    do {
        var config = Realm.Configuration(fileURL: URL(fileURLWithPath: arguments[2]), schemaVersion: 1, migrationBlock: { m, old in
            if old < 1 {
                m.renameProperty(onType: "Item", from: "name", to: "label")
                m.transformObjects(ofType: "Item") { _, new in new["label"] = (new["label"] as? String ?? "") + "#" }
            }
        }, objectTypes: [S2.Item.self])
        config.migrationMode = .online
        let realm = try Realm(configuration: config)
        say("opened")
        // Rounds of the parent pass distinct seeds, so new objects of different rounds never share a key.
        var fresh = count + Int(state % 10_000) * 100_000
        while true {
            let id = Int(next() % UInt64(count))
            let value = 1000 + Int(next() % 1_000_000)
            say("try \(id) \(value) \(fresh)")
            try realm.write {
                realm.object(ofType: S2.Item.self, forPrimaryKey: id)?.value = value
                realm.create(S2.Item.self, value: ["id": fresh, "value": value, "label": "fresh"])
            }
            say("ack \(id) \(value) \(fresh)")
            fresh += 1
            let probe = Int(next() % UInt64(count))
            if let label = realm.object(ofType: S2.Item.self, forPrimaryKey: probe)?.label, label.hasSuffix("##") {
                say("twice \(probe) \(label)")
                exit(3)
            }
        }
    } catch {
        FileHandle.standardError.write(Data("StrataCrashChild: \(error)\n".utf8))
        exit(1)
    }
}
// `StrataCrashChild share PATH` (MultiProcessRealmTests): opens the shared Realm at PATH with `SharedNote`,
// observes its notes sorted by id and prints each change set it is told of ("changes ins=[..] del=[..] mod=[..]");
// prints "ready" once its first notification came, then runs one step per line read from standard input:
// `insert` adds notes 1, 2 and 3; `modify` changes note 1's text; `delete` deletes note 2; `quit` exits.
final class SharedNote: Object {
    @Persisted(primaryKey: true) var id: Int
    @Persisted var text = ""
}

if arguments.count == 3, arguments[1] == "share" {
    do {
        let config = Realm.Configuration(fileURL: URL(fileURLWithPath: arguments[2]), objectTypes: [SharedNote.self])
        // A Realm confined to a queue refreshes there when other instances (and processes) commit.
        let queue = DispatchQueue(label: "share.realm")
        let ready = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var realm: Realm! = nil
        nonisolated(unsafe) var token: NotificationToken? = nil
        try queue.sync {
            realm = try Realm(configuration: config, queue: queue)
            token = realm.objects(SharedNote.self).sorted(byKeyPath: "id").observe { change in
                switch change {
                case .initial: ready.signal()
                case .update(_, let deletions, let insertions, let modifications):
                    say("changes ins=\(insertions) del=\(deletions) mod=\(modifications)")
                case .error(let error): say("ERROR \(error)")
                }
            }
        }
        ready.wait()
        say("ready")
        while let line = readLine(), ["insert", "modify", "delete"].contains(line) {
            try queue.sync {
                try realm.write {
                    switch line {
                    case "insert":
                        for id in 1...3 { realm.add(SharedNote(value: ["id": id, "text": "note \(id)"])) }
                    case "modify":
                        realm.object(ofType: SharedNote.self, forPrimaryKey: 1)?.text = "changed"
                    default:
                        if let note = realm.object(ofType: SharedNote.self, forPrimaryKey: 2) { realm.delete(note) }
                    }
                }
            }
        }
        queue.sync { token?.invalidate() }
        exit(0)
    } catch {
        say("ERROR \(error)")
        exit(1)
    }
}

// `StrataCrashChild tag PATH` (MultiProcessRealmTests): opens the shared Realm at PATH with a type the parent does
// not declare (`SharedTag`) beside `SharedNote`, adds a tag, and prints "tags N" with the number of tags then.
final class SharedTag: Object {
    @Persisted(primaryKey: true) var name = ""
}

if arguments.count == 3, arguments[1] == "tag" {
    do {
        let realm = try Realm(configuration: Realm.Configuration(fileURL: URL(fileURLWithPath: arguments[2]), objectTypes: [SharedNote.self, SharedTag.self]))
        let tags = realm.objects(SharedTag.self)
        try realm.write { realm.add(SharedTag(value: ["name": "tag \(tags.count + 1)"])) }
        say("tags \(tags.count) notes \(realm.objects(SharedNote.self).count)")
        exit(0)
    } catch {
        say("ERROR \(error)")
        exit(1)
    }
}

if arguments.count == 3, arguments[1] == "misuse" {
    // A transform that creates an object: the probe at open must trap, naming the type.
    let config = Realm.Configuration(fileURL: URL(fileURLWithPath: arguments[2]), schemaVersion: 1, migrationBlock: { m, _ in
        m.renameProperty(onType: "Item", from: "name", to: "label")
        m.transformObjects(ofType: "Item") { _, _ in m.create("Item", value: ["id": -1]) }
    }, objectTypes: [S2.Item.self])
    _ = try? Realm(configuration: config)
    say("no trap")
    exit(0)
}
// `StrataCrashChild capture PATH SEED` (SyncOutboxKillTests): opens the Realm at PATH capturing changes and writes
// until killed: before each write transaction "try ID VALUE", after its commit returned "ack ID VALUE" (object ID
// given VALUE and VALUE appended to its marks, an object sometimes deleted). Another process may write beside it.
// `StrataCrashChild apply PATH HISTORY SEED`: the same writes (no deletions), and between them applies the next
// server change set of HISTORY (a JSON array of `ServerChangeSet`), until killed or out of them: "apply V"
// before, "applied V" after `applyServerChanges` returned.
final class SyncKillItem: Object {
    @Persisted(primaryKey: true) var id: Int
    @Persisted var value = 0
    @Persisted var marks: List<Int>
}

/// SplitMix64, as the tests' generator.
struct ChildRandom {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// One write of the sync kill tests, said before and after.
func syncKillWrite(_ realm: Realm, _ random: inout ChildRandom, deleting: Bool) throws {
    let id = Int(random.next() % 40)
    let value = 1 + Int(random.next() % 1_000_000)
    let victim = deleting && random.next() % 6 == 0 ? Int(random.next() % 40) : nil
    say("try \(id) \(value)")
    try realm.write {
        let item = realm.object(ofType: SyncKillItem.self, forPrimaryKey: id) ?? realm.create(SyncKillItem.self, value: ["id": id])
        item.value = value
        item.marks.append(value)
        if item.marks.count > 4 { item.marks.remove(at: 0) }
        if let victim, victim != id, let other = realm.object(ofType: SyncKillItem.self, forPrimaryKey: victim) { realm.delete(other) }
    }
    say("ack \(id) \(value)")
}

if arguments.count >= 4, ["capture", "apply"].contains(arguments[1]), let seed = UInt64(arguments[arguments.count - 1]) {
    var random = ChildRandom(state: seed)
    do {
        var config = Realm.Configuration(fileURL: URL(fileURLWithPath: arguments[2]), objectTypes: [SyncKillItem.self])
        config.capturesChanges = true
        let realm = try Realm(configuration: config)
        let history = arguments[1] == "apply" && arguments.count == 5
            ? try JSONDecoder().decode([ServerChangeSet].self, from: Data(contentsOf: URL(fileURLWithPath: arguments[3]))) : []
        while true {
            let version = (realm.syncStatus?.serverVersion ?? 0) + 1
            if version <= UInt64(history.count), random.next() % 2 == 0 {
                say("apply \(version)")
                try realm.applyServerChanges([history[Int(version) - 1]])
                say("applied \(version)")
            } else {
                try syncKillWrite(realm, &random, deleting: history.isEmpty)
            }
        }
    } catch {
        FileHandle.standardError.write(Data("StrataCrashChild: \(error)\n".utf8))
        exit(1)
    }
}
// `syncclient PATH URL TOKEN SEED`: writes with a sync session running (uploading, and applying another client's
// changes), until killed.
if arguments.count == 6, arguments[1] == "syncclient", let url = URL(string: arguments[3]), let seed = UInt64(arguments[5]) {
    var random = ChildRandom(state: seed)
    do {
        let token = arguments[4]
        var config = Realm.Configuration(fileURL: URL(fileURLWithPath: arguments[2]), objectTypes: [SyncKillItem.self])
        config.syncConfiguration = SyncConfiguration(serverURL: url, partition: "team", token: { token })
        let realm = try Realm(configuration: config)
        _ = realm.syncSession
        while true {
            try syncKillWrite(realm, &random, deleting: false)
            Thread.sleep(forTimeInterval: Double(random.next() % 20_000) / 1_000_000)
        }
    } catch {
        FileHandle.standardError.write(Data("StrataCrashChild: \(error)\n".utf8))
        exit(1)
    }
}
// `syncshare PATH URL TOKEN COUNT` (SyncSharedFileTests): beside another process that syncs the same file, creates
// objects 10000..<10000+COUNT (their value the object's id, one write each) with its own sync session running,
// waits until the server holds every change set of the file, prints "uploaded", and exits.
if arguments.count == 6, arguments[1] == "syncshare", let url = URL(string: arguments[3]), let count = Int(arguments[5]) {
    let token = arguments[4]
    var config = Realm.Configuration(fileURL: URL(fileURLWithPath: arguments[2]), objectTypes: [SyncKillItem.self])
    config.syncConfiguration = SyncConfiguration(serverURL: url, partition: "team", token: { token })
    let done = DispatchSemaphore(value: 0)
    final class Failure: @unchecked Sendable {
        private let lock = NSLock()
        private var message: String?
        func set(_ m: String) { lock.withLock { message = m } }
        var value: String? { lock.withLock { message } }
    }
    struct NoSession: Error {}
    let failure = Failure()
    let configuration = config
    Thread.detachNewThread {
        do {
            let realm = try Realm(configuration: configuration)
            guard let session = realm.syncSession else { throw NoSession() }
            for i in 0..<count {
                try realm.write { realm.create(SyncKillItem.self, value: ["id": 10_000 + i, "value": 10_000 + i]) }
                if i % 7 == 0 { Thread.sleep(forTimeInterval: 0.002) }
            }
            Task {
                do {
                    try await session.wait(for: .upload)
                } catch {
                    failure.set("\(error)")
                }
                done.signal()
            }
        } catch {
            failure.set("\(error)")
            done.signal()
        }
    }
    done.wait()
    if let message = failure.value {
        FileHandle.standardError.write(Data("StrataCrashChild: \(message)\n".utf8))
        exit(1)
    }
    say("uploaded")
    exit(0)
}
if arguments.count == 3, arguments[1] == "convert" {
    do {
        try Realm.convertRealmFile(configuration: Realm.Configuration(fileURL: URL(fileURLWithPath: arguments[2])))
        say("converted")
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("conversion failed: \(error)\n".utf8))
        exit(1)
    }
}
guard arguments.count == 3, arguments[1] == "migrate" else {
    FileHandle.standardError.write(Data("usage: StrataCrashChild migrate PATH | online PATH COUNT SEED | misuse PATH | convert PATH | share PATH | tag PATH | capture PATH SEED | apply PATH HISTORY SEED\n".utf8))
    exit(2)
}
do {
    let config = Realm.Configuration(fileURL: URL(fileURLWithPath: arguments[2]), schemaVersion: 1, migrationBlock: { m, old in
        if old < 1 {
            m.enumerateObjects(ofType: "Item") { oldObject, newObject in
                newObject?["doubled"] = (oldObject?["value"] as? Int ?? 0) * 2
            }
            m.renameProperty(onType: "Item", from: "name", to: "label")
        }
    }, objectTypes: [S1.Item.self])
    _ = try Realm(configuration: config)
    FileHandle.standardOutput.write(Data("migrated\n".utf8))
} catch {
    FileHandle.standardError.write(Data("StrataCrashChild: \(error)\n".utf8))
    exit(1)
}
