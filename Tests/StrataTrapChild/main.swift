// A child process that makes one programmer error and traps; a test builds it with `-c release` and checks
// that the trap's message reaches standard error, as `precondition` messages would not under `-O`.
// - `StrataTrapChild query PATH`: a string query naming a property the type does not have.
// - `StrataTrapChild primaryKey PATH`: a lookup with a primary key of the wrong type.
// - `StrataTrapChild initializer PATH`: a model that declares an initializer of its own and no `init()`, which
//   Strata (like RealmSwift's runtime) cannot make. It lives here, not in the test module, whose other tests
//   open Realms that discover every model class.

import Foundation
import Strata

final class TrapItem: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
}

final class TrapOnlyDesignated: Object {
    @Persisted var v = 0
    init(v: Int) {
        self.v = v
        super.init()
    }
}

let arguments = CommandLine.arguments
guard arguments.count == 3 else {
    FileHandle.standardError.write(Data("usage: StrataTrapChild query|primaryKey|initializer PATH\n".utf8))
    exit(2)
}
do {
    if arguments[1] == "initializer" {
        _ = try Realm(configuration: .init(fileURL: URL(fileURLWithPath: arguments[2]), objectTypes: [TrapOnlyDesignated.self]))
        exit(0)
    }
    let realm = try Realm(configuration: .init(fileURL: URL(fileURLWithPath: arguments[2]), objectTypes: [TrapItem.self]))
    try realm.write { realm.create(TrapItem.self, value: ["id": 1, "name": "a"]) }
    switch arguments[1] {
    case "query": print(realm.objects(TrapItem.self).filter("nope == 1").count)
    case "primaryKey": print(realm.object(ofType: TrapItem.self, forPrimaryKey: "x") as Any)
    default: exit(2)
    }
    exit(0)
} catch {
    FileHandle.standardError.write(Data("StrataTrapChild: \(error)\n".utf8))
    exit(1)
}
