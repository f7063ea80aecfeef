import Foundation
import Strata
import Testing
import TestSupport

final class FPItem: Object {
    @Persisted var name = ""
}

/// Opening a file the process may not open is `.filePermissionDenied` with RealmSwift's text (issue 18; RealmSwift's
/// `testFilePermissionDenied`). Run in a child process that gives up root first: root may open anything.
@Suite struct FilePermissionTests {
    @Test func aFileThisProcessMayNotOpenIsFilePermissionDenied() async throws {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let dir = try TemporaryDirectory()
            let url = URL(fileURLWithPath: dir.child("locked.realm"))
            let config = Realm.Configuration(fileURL: url, objectTypes: [FPItem.self])
            do {
                let realm = try Realm(configuration: config)
                try realm.write { realm.create(FPItem.self, value: ["name": "a"]) }
            }
            // Owner only, then become someone else (root may open anything; another user may not).
            chmod(dir.path, 0o755)
            chmod(url.path, 0o700)
            // (Only the effective ids change, so that root can remove the directory afterwards.)
            let wasRoot = geteuid() == 0
            if wasRoot {
                guard setegid(65534) == 0, seteuid(65534) == 0 else { fatalError("could not drop root to test permissions") }
            } else {
                chmod(url.path, 0o000)
            }
            defer {
                if wasRoot {
                    _ = seteuid(0)
                    _ = setegid(0)
                }
                chmod(url.path, 0o700)
            }
            for readOnly in [false, true] {
                var c = config
                c.readOnly = readOnly
                do {
                    _ = try Realm(configuration: c)
                    fatalError("opened a file without permission (readOnly: \(readOnly))")
                } catch let e as Realm.Error {
                    let mode = readOnly ? "read" : "read-write"
                    guard e.code == .filePermissionDenied,
                          e.message.hasPrefix("Failed to open Realm file at path '\(url.path)': "),
                          e.message.hasSuffix("Please use a path where your app has \(mode) permissions.")
                    else { fatalError("wrong error: \(e.code) \(e.message)") }
                }
            }
        }
        let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(!text.contains("Fatal error"), "\(text)")
    }
}
