import Engine
import Foundation
import Testing
import TestSupport

@testable import Strata

/// The `strata` tool, run as a subprocess against databases that `StrataToolHost` creates.
@Suite(.serialized) struct StrataToolTests {
    static func executable(_ name: String) throws -> String {
        if let path = BuildProducts.executable(name) { return path }
        throw ToolTestError("\(name) was not built beside the tests")
    }

    struct ToolTestError: Error, CustomStringConvertible {
        let description: String
        init(_ d: String) { description = d }
    }

    struct Output {
        var status: Int32
        var out: String
        var err: String
    }

    @discardableResult
    static func run(_ name: String, _ args: [String]) throws -> Output {
        let r = try runProcess(try executable(name), args)
        return Output(status: r.status, out: r.out, err: r.err)
    }

    static func strata(_ args: String...) throws -> Output { try run("strata", args) }

    static func create(_ dir: TemporaryDirectory, _ mode: String = "create", _ extra: [String] = []) throws -> String {
        let path = dir.child("db.realm")
        let r = try run("StrataToolHost", [mode, path] + extra)
        guard r.status == 0 else { throw ToolTestError("StrataToolHost \(mode) failed: \(r.err)") }
        return path
    }

    @Test func infoSchemaAndDumpDescribeADatabase() throws {
        let dir = try TemporaryDirectory()
        let path = try Self.create(dir)
        let info = try Self.strata("info", path)
        #expect(info.status == 0, "\(info.err)")
        #expect(info.out.contains("schema version: 0"))
        #expect(info.out.contains("Person: 5 objects"))
        #expect(info.out.contains("Dog: 3 objects"))
        #expect(info.out.contains("- name: String (primary key)"))
        #expect(info.out.contains("- dog: Dog?"))
        #expect(info.out.contains("- tags: List<String>"))
        #expect(info.out.contains("segments,") && info.out.contains("on disk (compressed)") && info.out.contains("raw"))
        #expect(info.out.contains("write-ahead log:"))

        let schema = try Self.strata("schema", path)
        #expect(schema.status == 0)
        #expect(schema.out.contains("schema version 0"))

        let table = try Self.strata("dump", path, "--type", "Person")
        #expect(table.status == 0)
        #expect(table.out.contains("person 2") && table.out.contains("Dog(2)") && table.out.contains("(5 objects)"))

        let json = try Self.strata("dump", path, "--type", "Person", "--format", "json", "--limit", "3")
        #expect(json.status == 0)
        let objects = try #require(try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [[String: Any]])
        #expect(objects.count == 3)
        #expect(objects[2]["name"] as? String == "person 2")
        #expect(objects[2]["dog"] as? String == "Dog(2)")
        #expect(objects[2]["tags"] as? [String] == ["a", "b \"quoted\""])
        #expect(objects[1]["dog"] is NSNull)

        let missing = try Self.strata("dump", path, "--type", "Cat")
        #expect(missing.status == 1)
        #expect(missing.err == "strata: \(path) has no type 'Cat'; its types are: Person, Dog\n")
    }

    @Test func verifyPassesACleanFileAndNamesTheFileAndOffsetOfDamage() throws {
        let dir = try TemporaryDirectory()
        let path = try Self.create(dir, "pending", ["400"])
        let clean = try Self.strata("verify", path)
        #expect(clean.status == 0, "\(clean.err)")
        #expect(clean.out.contains("no problem found"))

        // Damage one byte in the middle of each segment's data.
        let segments = try FileManager.default.contentsOfDirectory(atPath: path).filter { $0.hasSuffix(".seg") }.sorted()
        #expect(!segments.isEmpty)
        for name in segments {
            let file = path + "/" + name
            var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: file)))
            bytes[bytes.count / 3] ^= 0x5A
            try Data(bytes).write(to: URL(fileURLWithPath: file))
        }
        let damaged = try Self.strata("verify", path)
        #expect(damaged.status == 1)
        #expect(damaged.err.contains(".seg"), "\(damaged.err)")
        #expect(damaged.err.contains("offset"), "\(damaged.err)")
        #expect(damaged.err.contains("problem"))
        #expect(!damaged.err.contains("Fatal error") && !damaged.err.contains("Stack dump"))
        // Every other command answers in one line, never with a crash.
        for args in [["info", path], ["dump", path, "--type", "Person"]] {
            let r = try Self.run("strata", args)
            #expect(r.status == 0 || (r.status == 1 && r.err.split(separator: "\n").count == 1), "\(args): \(r.err)")
        }
    }

    @Test func badPathsAndDamagedFilesGiveOneLineErrors() throws {
        let dir = try TemporaryDirectory()
        let nowhere = try Self.strata("info", dir.child("nothing"))
        #expect(nowhere.status == 1)
        #expect(nowhere.err == "strata: \(dir.child("nothing")): no such file or directory\n")
        let notADatabase = try Self.strata("info", dir.path)
        #expect(notADatabase.status == 1)
        #expect(notADatabase.err.contains("not a Strata database"))

        let path = try Self.create(dir)
        let manifest = try #require(try FileManager.default.contentsOfDirectory(atPath: path).first { $0.hasPrefix("MANIFEST") })
        try Data("garbage".utf8).write(to: URL(fileURLWithPath: path + "/" + manifest))
        for command in ["info", "verify", "schema", "compact"] {
            let r = try Self.strata(command, path)
            #expect(r.status == 1, "\(command)")
            #expect(r.err.hasPrefix("strata: ") && r.err.split(separator: "\n").count == 1, "\(command): \(r.err)")
            #expect(r.err.contains(manifest), "\(command): \(r.err)")
        }
    }

    @Test func anOnlineMigrationPendingIsShownAndFinishedByAToolWithTheAppsConfiguration() throws {
        let dir = try TemporaryDirectory()
        let path = try Self.create(dir, "pending", ["300"])
        let info = try Self.strata("info", path)
        #expect(info.out.contains("schema version: 1"))
        #expect(info.out.contains("pending online migration from schema version 0: 300 objects left"), "\(info.out)")
        let schema = try Self.strata("schema", path)
        #expect(schema.out.contains("schema version 0") && schema.out.contains("schema version 1"))
        #expect(schema.out.contains("* Person.greeting added (greeting: String)"))
        let one = try Self.strata("schema", path, "--version", "0")
        #expect(!one.out.contains("schema version 1") && one.out.contains("schema version 0"))

        // The plain tool has no transforms: it says what is pending and how to finish it, and changes nothing.
        let generic = try Self.strata("migrate", path)
        #expect(generic.status == 1)
        #expect(generic.err.contains("Person from schema version 0: 300 objects left"))
        #expect(generic.err.contains("StrataTool.main(configurations:)"))

        let migrate = try Self.run("StrataToolHost", ["strata", "migrate", path])
        #expect(migrate.status == 0, "\(migrate.err)")
        #expect(migrate.out.contains("migrated \(path) in"))
        #expect(migrate.out.contains("before") && migrate.out.contains("after"))
        let done = try Self.strata("info", path)
        #expect(!done.out.contains("pending online migration"))
        let json = try Self.strata("dump", path, "--type", "Person", "--format", "json", "--limit", "2")
        let objects = try #require(try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [[String: Any]])
        #expect(objects.map { $0["greeting"] as? String } == ["hello person 0", "hello person 1"])
        #expect(try Self.strata("verify", path).status == 0)
        let again = try Self.run("StrataToolHost", ["strata", "migrate", path])
        #expect(again.out.contains("no migration pending"))
    }

    @Test func compactShrinksAndKeepsEveryObject() throws {
        let dir = try TemporaryDirectory()
        let path = try Self.create(dir, "pending", ["500"])
        _ = try Self.run("StrataToolHost", ["strata", "migrate", path])
        let before = try Self.strata("dump", path, "--type", "Person", "--format", "json")
        let compact = try Self.strata("compact", path)
        #expect(compact.status == 0, "\(compact.err)")
        // Not a terminal: plain progress lines, then the summary.
        #expect(compact.out.contains("Person"))
        #expect(compact.out.contains("compacted \(path) in") && compact.out.contains("before") && compact.out.contains("after"))
        #expect(try Self.strata("dump", path, "--type", "Person", "--format", "json").out == before.out)
        #expect(try Self.strata("verify", path).status == 0)
    }

    /// `StrataToolHost hold` running beside a test, with `arguments` after the path.
    final class Holder {
        let process = Process()
        let input = Pipe()
        let output = Pipe()
        let ready: String

        init(_ path: String, _ arguments: [String] = []) throws {
            process.executableURL = URL(fileURLWithPath: try StrataToolTests.executable("StrataToolHost"))
            process.arguments = ["hold", path] + arguments
            process.standardInput = input
            process.standardOutput = output
            try process.run()
            // Once it has the database open.
            ready = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
        }

        /// What the holder reads now ("people N ...").
        func check() -> String {
            input.fileHandleForWriting.write(Data("check\n".utf8))
            return String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
        }

        func end() {
            try? input.fileHandleForWriting.close()  // try?: the holder may have exited already
            process.waitUntilExit()
        }
    }

    /// `info`, `verify` and `dump` of the 5-person database at `path` while another process has it open.
    static func readingCommandsWork(besideAnotherProcess path: String) throws {
        let info = try Self.strata("info", path)
        #expect(info.status == 0, "\(info.err)")
        #expect(info.out.contains("open in another process"))
        #expect(info.out.contains("Person: 5 objects"))
        #expect(try Self.strata("verify", path).status == 0)
        #expect(try Self.strata("dump", path, "--type", "Dog").status == 0)
    }

    @Test func everyCommandWorksBesideAnAppSharingTheFile() throws {
        let dir = try TemporaryDirectory()
        let path = try Self.create(dir)
        let holder = try Holder(path)
        defer { holder.end() }
        #expect(holder.ready.hasPrefix("ready 5"))
        try Self.readingCommandsWork(besideAnotherProcess: path)
        let compact = try Self.strata("compact", path)
        #expect(compact.status == 0, "\(compact.err)")
        #expect(holder.check().hasPrefix("people 5"))
        #expect(try Self.strata("verify", path).status == 0)
    }

    @Test func migrateFinishesAnOnlineMigrationBesideAnAppThatReadsIt() throws {
        let dir = try TemporaryDirectory()
        let path = try Self.create(dir, "pending", ["300"])
        let holder = try Holder(path, ["v1"])
        defer { holder.end() }
        // The app reads through the pending migration (its transform runs as it reads).
        #expect(holder.ready.hasPrefix("ready 300 hello person 0"), "\(holder.ready)")
        let migrate = try Self.run("StrataToolHost", ["strata", "migrate", path])
        #expect(migrate.status == 0, "\(migrate.err)")
        #expect(migrate.out.contains("migrated \(path) in"), "\(migrate.out)")
        #expect(holder.check().hasPrefix("people 300 hello person 0"))
        let done = try Self.strata("info", path)
        #expect(!done.out.contains("pending online migration"), "\(done.out)")
        #expect(try Self.strata("verify", path).status == 0)
    }

    @Test func readOnlyCommandsWorkBesideAnExclusiveOpenAndWritingOnesRefuse() throws {
        let dir = try TemporaryDirectory()
        let path = try Self.create(dir)
        let holder = try Holder(path, ["exclusive"])
        defer { holder.end() }
        #expect(holder.ready.hasPrefix("ready"))
        try Self.readingCommandsWork(besideAnotherProcess: path)
        for command in ["compact", "migrate"] {
            let r = try Self.strata(command, path)
            #expect(r.status == 1)
            #expect(r.err.contains("is open exclusively in another process"), "\(command): \(r.err)")
            #expect(r.err.split(separator: "\n").count == 1)
        }
    }
}
