// A to-do list whose open items are watched live: every change made by another Realm (here, the main thread)
// is printed as the observer sees it, with Realm's change sets.
//
//   swift run TodoList [DIRECTORY]
import Foundation
import Strata

final class Todo: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var title = ""
    @Persisted var done = false
}

let directory = CommandLine.arguments.count > 1
    ? CommandLine.arguments[1] : NSTemporaryDirectory() + "strata-todo-\(ProcessInfo.processInfo.processIdentifier)"
let config = Realm.Configuration(fileURL: URL(fileURLWithPath: directory + "/todo.realm"), objectTypes: [Todo.self])
try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
_ = try? Realm.deleteFiles(for: config)

// The observer: a Realm on its own queue, where its notifications are delivered.
let queue = DispatchQueue(label: "todo.observer")
let delivered = DispatchSemaphore(value: 0)
nonisolated(unsafe) var token: NotificationToken?
try queue.sync {
    let watcher = try Realm(configuration: config, queue: queue)
    let open = watcher.objects(Todo.self).where { !$0.done }.sorted(byKeyPath: "id")
    token = open.observe { change in
        switch change {
        case .initial(let todos):
            print("open to-dos: \(todos.map(\.title))")
        case .update(let todos, let deletions, let insertions, let modifications):
            print("  removed at \(deletions), inserted at \(insertions), changed at \(modifications)")
            print("open to-dos: \(todos.map(\.title))")
        case .error(let error):
            print("error: \(error)")
        }
        delivered.signal()
    }
}
delivered.wait()

// The writer: the main thread's own Realm.
let realm = try Realm(configuration: config)
func step(_ what: String, _ body: () -> Void) throws {
    print("> \(what)")
    try realm.write(body)
    guard delivered.wait(timeout: .now() + 10) == .success else {
        print("no notification arrived")
        exit(1)
    }
}

try step("add three to-dos") {
    for (i, title) in ["buy milk", "write the report", "call the plumber"].enumerated() {
        realm.add(Todo(value: ["id": i + 1, "title": title]))
    }
}
try step("finish 'buy milk'") { realm.object(ofType: Todo.self, forPrimaryKey: 1)?.done = true }
try step("rename the report") { realm.object(ofType: Todo.self, forPrimaryKey: 2)?.title = "write the annual report" }
try step("delete the plumber") {
    if let plumber = realm.object(ofType: Todo.self, forPrimaryKey: 3) { realm.delete(plumber) }
}

let left = realm.objects(Todo.self).filter("done == false").count
print("done: \(realm.objects(Todo.self).count) to-dos stored, \(left) open")
token?.invalidate()
realm.invalidate()
if CommandLine.arguments.count <= 1 { try? FileManager.default.removeItem(atPath: directory) }
