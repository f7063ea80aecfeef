import ArgumentParser
import Engine
import Foundation
import Strata

/// The `strata` command-line tool: `info`, `schema`, `dump`, `verify`, `salvage`, `compact`, `migrate` and `import`.
///
/// The `strata` executable runs it without models. An app that wants `strata migrate` to finish its online
/// migrations builds its own small executable that passes its configurations, so that the migration block
/// (and its `transformObjects` closures) is there:
///
/// ```swift
/// import StrataTool
/// StrataTool.main(configurations: [MyApp.realmConfiguration])
/// ```
public enum StrataTool {
    /// Runs the tool with `arguments` (the process's own when nil) and exits.
    public static func main(_ arguments: [String]? = nil, configurations: [Realm.Configuration] = []) -> Never {
        known.withLock { $0 = configurations }
        StrataCommand.main(arguments)
        exit(0)
    }

    /// The configurations the embedding program gave, for `migrate`.
    static let known = Locked<[Realm.Configuration]>([])
}

struct StrataCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "strata",
        abstract: "Inspect, check, compact and migrate Strata databases.",
        discussion: "PATH is a database's fileURL: a directory holding CURRENT, MANIFEST, segment and log files. info and schema also read a RealmSwift .realm file.",
        subcommands: [Info.self, SchemaCommand.self, Dump.self, Verify.self, Salvage.self, Compact.self, Migrate.self, Import.self])
}

/// `--key-file`: the key of an encrypted database, as RealmSwift's `encryptionKey` (64 bytes), in a file of
/// those 64 bytes or of 128 hexadecimal digits.
struct KeyOption: ParsableArguments {
    @Option(name: .customLong("key-file"), help: "A file holding the database's 64-byte encryption key (raw, or 128 hex digits).")
    var keyFile: String?

    func bytes() throws -> [UInt8]? {
        guard let keyFile else { return nil }
        guard let data = FileManager.default.contents(atPath: keyFile) else {
            throw Realm.Error(.fileNotFound, "the key file \(keyFile) cannot be read")
        }
        if data.count == 64 { return [UInt8](data) }
        let text = String(decoding: data, as: UTF8.self).filter { !$0.isWhitespace }
        var out: [UInt8] = []
        var digits = text.makeIterator()
        while let high = digits.next() {
            guard let low = digits.next(), let h = high.hexDigitValue, let l = low.hexDigitValue else { break }
            out.append(UInt8(h << 4 | l))
        }
        guard out.count == 64, text.count == 128 else {
            throw Realm.Error(
                .invalidInput, "the key file \(keyFile) holds \(data.count) bytes: an encryption key is 64 bytes, raw or as 128 hex digits")
        }
        return out
    }
}

/// Runs a command body: a Realm or storage error becomes one line on standard error and exit status 1.
func running(_ body: () throws -> Void) throws {
    do {
        try body()
    } catch let e as Realm.Error {
        FileHandle.standardError.write(Data("strata: \(e.message)\n".utf8))
        throw ExitCode(1)
    } catch let e as ExitCode {
        throw e
    } catch {
        FileHandle.standardError.write(Data("strata: \(error)\n".utf8))
        throw ExitCode(1)
    }
}

func byteCount(_ n: Int) -> String {
    if n < 1024 { return "\(n) B" }
    if n < 1024 * 1024 { return String(format: "%.1f KiB", Double(n) / 1024) }
    if n < 1024 * 1024 * 1024 { return String(format: "%.1f MiB", Double(n) / 1_048_576) }
    return String(format: "%.2f GiB", Double(n) / 1_073_741_824)
}

/// Progress on a terminal as a bar redrawn in place; elsewhere (a pipe, a log) as plain lines, one per change.
final class Progress {
    let isTerminal = SystemProcess.standardOutputIsTerminal
    private var last: (Int, Int, String)? = nil

    func update(_ done: Int, _ total: Int, _ label: String) {
        if let last, last == (done, total, label) { return }
        last = (done, total, label)
        if isTerminal {
            let width = 30
            let filled = total == 0 ? width : width * done / max(total, 1)
            let bar = String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled)
            print("\r[\(bar)] \(done)/\(total) \(label)\u{1B}[K", terminator: "")
            fflush(nil)
        } else if !label.isEmpty {
            print("\(done)/\(total) \(label)")
        }
    }

    func end() {
        if isTerminal { print("") }
    }
}

struct Info: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Versions, object types with their properties, object counts and bytes, log size, pending migrations.")
    @Argument(help: "The database (a Realm's fileURL).") var path: String
    @OptionGroup var key: KeyOption

    func run() throws {
        try running {
            if isRealmFile(path) { return try printRealmFile(path, key: try key.bytes(), counts: true) }
            let db = try DatabaseInspector(path: path, encryptionKey: try key.bytes())
            let s = try db.summary()
            print("database: \(path)")
            if db.isBesideWriter { print("note: open in another process; this is what its files hold now") }
            print("format version: \(s.formatVersion)")
            print("schema version: \(s.schemaVersion.map(String.init) ?? "none (no schema written yet)")")
            print("write-ahead log: \(byteCount(s.logBytes)); commits: \(s.sequence)")
            print("live snapshots: \(s.liveSnapshots) (snapshots belong to the process that has the database open; a process of its own sees only its own)")
            for t in s.types {
                print("")
                print("\(t.name)\(t.isEmbedded ? " (embedded)" : ""): \(t.objects) objects")
                print("  storage: \(t.segments) segments, \(byteCount(t.segmentBytes)) on disk (compressed), \(byteCount(t.rawBytes)) raw"
                    + (t.memtableBytes > 0 ? ", \(byteCount(t.memtableBytes)) in the log not yet in a segment" : ""))
                for p in t.properties { print("  - \(p)") }
                for m in t.pending {
                    print("  pending online migration from schema version \(m.fromVersion): \(m.objectsLeft) objects left")
                }
            }
            try db.close()
        }
    }
}

struct SchemaCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schema", abstract: "The schema history, version by version, with what changed between versions.")
    @Argument(help: "The database (a Realm's fileURL).") var path: String
    @OptionGroup var key: KeyOption
    @Option(help: "Show this schema version only.") var version: UInt64?

    func run() throws {
        try running {
            if isRealmFile(path) { return try printRealmFile(path, key: try key.bytes(), counts: false) }
            let db = try DatabaseInspector(path: path, encryptionKey: try key.bytes())
            let history = try db.schemaHistory()
            try db.close()
            guard !history.isEmpty else {
                print("\(path) has no schema yet (nothing was written)")
                return
            }
            let shown = version.map { v in history.filter { $0.version == v } } ?? history
            if let version, shown.isEmpty {
                throw Realm.Error(
                    .fail, "\(path) recorded no schema version \(version); it recorded: \(history.map { String($0.version) }.joined(separator: ", "))")
            }
            if version == nil, history.count == 1 {
                print("(earlier versions, if any, were not recorded: the history starts with the file's first migration after it was kept)")
            }
            for (i, v) in shown.enumerated() {
                if i > 0 { print("") }
                print("schema version \(v.version)")
                if !v.changes.isEmpty {
                    print("  changes from the version before:")
                    for c in v.changes { print("  * \(c)") }
                }
                for t in v.types {
                    print("  \(t.name)\(t.isEmbedded ? " (embedded)" : "")")
                    for p in t.properties { print("    - \(p)") }
                }
            }
        }
    }
}

struct Dump: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Objects of a type, links shown by primary key or object key.")
    enum Format: String, ExpressibleByArgument { case json, table }
    @Argument(help: "The database (a Realm's fileURL).") var path: String
    @OptionGroup var key: KeyOption
    @Option(help: "The object type.") var type: String
    @Option(help: "At most this many objects.") var limit: Int?
    @Option(help: "json or table.") var format: Format = .table

    func run() throws {
        try running {
            let db = try DatabaseInspector(path: path, encryptionKey: try key.bytes())
            let (names, rows) = try db.objects(ofType: type, limit: limit)
            try db.close()
            switch format {
            case .json:
                print("[")
                for (i, row) in rows.enumerated() {
                    let fields = [("\"$key\"", String(row.key))] + zip(names, row.values).map { (json(.string($0)), $1.map(json) ?? "\"(default)\"") }
                    print("  {" + fields.map { "\($0): \($1)" }.joined(separator: ", ") + "}" + (i + 1 < rows.count ? "," : ""))
                }
                print("]")
            case .table:
                let header = ["key"] + names
                let cells = rows.map { [String($0.key)] + $0.values.map { $0.map(text) ?? "(default)" } }
                var widths = header.map(\.count)
                for r in cells { for (i, c) in r.enumerated() { widths[i] = min(max(widths[i], c.count), 40) } }
                func line(_ r: [String]) -> String {
                    r.enumerated().map { i, c in
                        let t = c.count > widths[i] ? String(c.prefix(widths[i] - 1)) + "…" : c
                        return t.padding(toLength: widths[i], withPad: " ", startingAt: 0)
                    }.joined(separator: " | ")
                }
                print(line(header))
                print(widths.map { String(repeating: "-", count: $0) }.joined(separator: "-+-"))
                for r in cells { print(line(r)) }
                print("(\(rows.count) objects\(limit.map { rows.count >= $0 ? ", limited to \($0)" : "" } ?? ""))")
            }
        }
    }

    func json(_ v: DatabaseInspector.DumpValue) -> String {
        switch v {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .int(let i): return String(i)
        case .double(let d): return d.isFinite ? "\(d)" : "\"\(d)\""
        case .string(let s):
            var out = "\""
            for u in s.unicodeScalars {
                switch u {
                case "\"": out += "\\\""
                case "\\": out += "\\\\"
                case "\n": out += "\\n"
                case "\r": out += "\\r"
                case "\t": out += "\\t"
                default: out += u.value < 0x20 ? String(format: "\\u%04x", u.value) : String(u)
                }
            }
            return out + "\""
        case .link(let name): return json(.string(name))
        case .list(let items): return "[" + items.map(json).joined(separator: ", ") + "]"
        case .map(let pairs): return "{" + pairs.map { json(.string($0.0)) + ": " + json($0.1) }.joined(separator: ", ") + "}"
        }
    }

    func text(_ v: DatabaseInspector.DumpValue) -> String {
        switch v {
        case .string(let s): return s
        case .link(let name): return name
        case .list(let items): return "[" + items.map(text).joined(separator: ", ") + "]"
        case .map(let pairs): return "{" + pairs.map { "\($0.0): \(text($0.1))" }.joined(separator: ", ") + "}"
        default: return json(v)
        }
    }
}

struct Verify: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Reads every block, checks every checksum and every record against the schema; exits 1 naming each problem.")
    @Argument(help: "The database (a Realm's fileURL).") var path: String
    @OptionGroup var key: KeyOption

    func run() throws {
        try running {
            let db = try DatabaseInspector(path: path, encryptionKey: try key.bytes())
            let problems = db.verify()
            try db.close()
            guard problems.isEmpty else {
                for p in problems { FileHandle.standardError.write(Data("strata: \(p)\n".utf8)) }
                FileHandle.standardError.write(Data("strata: \(path): \(problems.count) problem\(problems.count == 1 ? "" : "s") found\n".utf8))
                throw ExitCode(1)
            }
            print("\(path): every block and record checked, no problem found")
        }
    }
}

struct Salvage: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Copies every object of a damaged database that can still be read into a new one; reports what was lost.",
        discussion: "SOURCE is only read. DESTINATION must not exist: it becomes a database with SOURCE's schema and schema "
            + "version. Indexes are built again when an app first opens the copy. Exits 1 when anything was lost.")
    @Argument(help: "The damaged database (a Realm's fileURL).") var source: String
    @Argument(help: "Where to write the copy (must not exist).") var destination: String
    @OptionGroup var key: KeyOption

    func run() throws {
        try running {
            let summary = try DatabaseInspector.salvage(source: source, destination: destination, encryptionKey: try key.bytes())
            for note in summary.notes { print("note: \(note)") }
            var lost = !summary.losses.isEmpty
            for t in summary.types {
                var line = "\(t.name): \(t.copied) object\(t.copied == 1 ? "" : "s") copied"
                if !t.lostKeys.isEmpty {
                    let ranges = t.lostKeys.map { r -> String in
                        switch (r.from, r.through) {
                        case (nil, nil): return "unknown keys"
                        case (let a?, let b?) where a == b: return "key \(a)"
                        case (let a, let b): return "keys \(a.map(String.init) ?? "start")...\(b.map(String.init) ?? "end")"
                        }
                    }
                    line += "; could not read \(ranges.joined(separator: ", "))"
                }
                if t.duplicates > 0 {
                    line += "; \(t.duplicates) older cop\(t.duplicates == 1 ? "y" : "ies") of objects with the same primary key left out"
                    lost = true
                }
                print(line)
            }
            for loss in summary.losses { print("lost: \(loss)") }
            print("\(destination): schema version \(summary.schemaVersion), \(summary.types.reduce(0) { $0 + $1.copied }) objects")
            if lost { throw ExitCode(1) }
        }
    }
}

struct Compact: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Rewrites each type's segments into one, dropping deleted and overwritten records; works beside an app that shares the file.")
    @Argument(help: "The database (a Realm's fileURL).") var path: String
    @OptionGroup var key: KeyOption

    func run() throws {
        try running {
            let start = Date()
            let db = try DatabaseInspector(path: path, forWriting: true, encryptionKey: try key.bytes())
            let progress = Progress()
            let (before, after) = try db.compact { done, total, label in progress.update(done, total, label) }
            progress.end()
            print(String(format: "compacted %@ in %.2f s: %@ before, %@ after", path, Date().timeIntervalSince(start), byteCount(before), byteCount(after)))
        }
    }
}

struct Migrate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Finishes the online migrations pending in a database now; needs the app's configuration; works beside an app that shares the file.")
    @Argument(help: "The database (a Realm's fileURL).") var path: String
    @OptionGroup var key: KeyOption

    func run() throws {
        try running {
            let start = Date()
            let db = try DatabaseInspector(path: path, forWriting: true, encryptionKey: try key.bytes())
            let summary = try db.summary()
            let before = db.bytesOnDisk
            try db.close()
            let pending = summary.types.flatMap { t in t.pending.map { (t.name, $0.fromVersion, $0.objectsLeft) } }
            guard !pending.isEmpty else {
                print("\(path): no migration pending (schema version \(summary.schemaVersion.map(String.init) ?? "none"))")
                return
            }
            let list = pending.map { "\($0.0) from schema version \($0.1): \($0.2) objects left" }.joined(separator: "; ")
            guard var config = StrataTool.known.withLock({ $0.first }) else {
                throw Realm.Error(
                    .fail,
                    "\(path) has online migrations pending (\(list)). Their transforms are closures in the app's migration block, "
                        + "which this tool does not have: finish them from the app with realm.finishMigrations(), or build a tool "
                        + "that has the app's configuration with StrataTool.main(configurations:)")
            }
            config.fileURL = URL(fileURLWithPath: path)
            if let bytes = try key.bytes() { config.encryptionKey = Data(bytes) }
            config.migrationMode = .online
            config.backgroundMigration = true
            print("pending: \(list)")
            let realm = try Realm(configuration: config)
            let progress = Progress()
            while true {
                let states = realm.migrationProgress
                let total = states.reduce(0) { $0 + ($1.objectsTotal ?? 0) }
                let done = states.reduce(0) { $0 + $1.objectsMigrated }
                progress.update(done, total, states.filter { !$0.isFinished }.map(\.objectType).joined(separator: ", "))
                if states.allSatisfy(\.isFinished) { break }
                Thread.sleep(forTimeInterval: 0.1)
            }
            try realm.finishMigrations()
            progress.end()
            realm.invalidate()
            print(String(format: "migrated %@ in %.2f s: %@ before, %@ after", path, Date().timeIntervalSince(start), byteCount(before), byteCount(try DatabaseInspector.filesBytes(atPath: path))))
        }
    }
}
