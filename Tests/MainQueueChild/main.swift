// A child process for MainThreadAutorefreshTests: a Realm opened on the main thread without a queue (as an
// app's UI code opens it) hears of commits made on another thread, on the main queue, while the main run
// loop runs, as RealmSwift's main-thread Realm does.
//
// Usage: MainQueueChild PATH
// Prints "initial N", then "update N" for each change the main thread's observer sees, each line checked to
// run on the main thread; exits 0 once the background thread's three commits were all seen, 3 on a timeout.

import Foundation
import Strata

final class Note: Object {
    @Persisted var text = ""
}

func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

guard CommandLine.arguments.count == 2 || (CommandLine.arguments.count == 3 && CommandLine.arguments[2] == "async-writes") else {
    FileHandle.standardError.write(Data("usage: MainQueueChild PATH [async-writes]\n".utf8))
    exit(2)
}
let config = Realm.Configuration(fileURL: URL(fileURLWithPath: CommandLine.arguments[1]), objectTypes: [Note.self])
let realm = try Realm(configuration: config)

// "async-writes": RealmSwift's `testAsyncTransactionCommit` and `testAsyncTransactionShouldNotAutoCommitOnCanceledTransaction`
// on the main thread's Realm. Prints "queued N" (the notes right after scheduling: the work waits for the
// main queue, as in RealmSwift), then "count N" once the queue ran it, and a line for any completion that runs.
if CommandLine.arguments.count == 3 {
    realm.beginAsyncWrite {
        realm.add(Note(value: ["text": "committed"]))
        realm.commitAsyncWrite()
    }
    realm.beginAsyncWrite {
        realm.add(Note(value: ["text": "never committed: the block returns without a commit"]))
    }
    let cancelled = realm.beginAsyncWrite {
        realm.add(Note(value: ["text": "cancelled before it ran"]))
        realm.commitAsyncWrite { _ in say("completion of a cancelled write") }
    }
    try realm.cancelAsyncWrite(cancelled)
    let cancelledWriteAsync = realm.writeAsync({ realm.add(Note(value: ["text": "cancelled writeAsync"])) }, onComplete: { _ in
        say("completion of a cancelled writeAsync")
    })
    try realm.cancelAsyncWrite(cancelledWriteAsync)
    say("queued \(realm.objects(Note.self).count)")
    DispatchQueue.main.asyncAfter(deadline: .now() + 0.3) {
        say("count \(realm.objects(Note.self).count)")
        exit(0)
    }
    RunLoop.main.run(until: Date(timeIntervalSinceNow: 30))
    say("timeout")
    exit(3)
}
let notes = realm.objects(Note.self)
let token = notes.observe { change in
    guard Thread.isMainThread else {
        say("notified off the main thread")
        exit(4)
    }
    switch change {
    case .initial(let results):
        say("initial \(results.count)")
    case .update(let results, _, _, _):
        say("update \(results.count)")
        if results.count == 3 { exit(0) }
    case .error(let error):
        say("error \(error)")
        exit(1)
    }
}

// Another thread writes through its own Realm, three commits apart.
let writer = Thread {
    do {
        for i in 0..<3 {
            let background = try Realm(configuration: config)
            try background.write { background.add(Note(value: ["text": "note \(i)"])) }
            Thread.sleep(forTimeInterval: 0.05)
        }
        say("written")
    } catch {
        say("write failed: \(error)")
        exit(1)
    }
}
writer.start()

RunLoop.main.run(until: Date(timeIntervalSinceNow: 30))
say("timeout with \(notes.count) notes seen on the main thread")
withExtendedLifetime(token) {}
exit(3)
