// A child process for the SIGKILL test of blocking migrations: `StrataCrashChild migrate PATH` opens the
// version-0 file at PATH with version 1 (a new property computed for every object, and a rename) and prints
// "migrated" once the open returned. The parent kills it at random moments.

import Foundation
import Strata

enum S1 {
    final class Item: Object {
        @Persisted(primaryKey: true) var id: Int
        @Persisted var value = 0
        @Persisted var doubled = 0
        @Persisted var label = ""
    }
}

let arguments = CommandLine.arguments
guard arguments.count == 3, arguments[1] == "migrate" else {
    FileHandle.standardError.write(Data("usage: StrataCrashChild migrate PATH\n".utf8))
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
