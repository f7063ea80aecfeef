import ArgumentParser
import Foundation
import RealmFile
import Strata

/// `strata import`: converts a RealmSwift file into a Strata database, as the first open of a configuration naming
/// it would (`Realm.convertRealmFile`), to a destination of the caller's choice.
struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Convert a RealmSwift .realm file (formats 10, 11, 20-24, encrypted too) into a Strata database.",
        discussion: "The Realm file is only read. DEST must not exist; it is written completely or not at all.")
    @Argument(help: "The RealmSwift file.") var source: String
    @Argument(help: "The Strata database to create (a directory).") var destination: String
    @OptionGroup var key: KeyOption
    @Flag(help: "Delete the Realm file and its .lock, .note and .management files once the conversion is complete.")
    var deleteSource = false

    func run() throws {
        try running {
            guard !FileManager.default.fileExists(atPath: destination) else {
                throw Realm.Error(.fileExists, "\(destination) already exists; give a path that does not exist")
            }
            let progress = Progress()
            var shownPercent = -1
            let report = try Realm.convertRealmFile(at: source, to: destination, encryptionKey: try key.bytes()) { done, total in
                // A line per 10% when the output is not a terminal (a log), the bar's every step when it is.
                let percent = total == 0 ? 100 : done * 100 / total
                guard progress.isTerminal || percent / 10 != shownPercent / 10 else { return }
                shownPercent = percent
                progress.update(done, total, "objects copied")
            }
            progress.end()
            print("converted \(source) (Realm file format \(report.formatVersion), schema version \(report.schemaVersion)) into \(destination)")
            for (name, count) in report.objectCounts.sorted(by: { $0.key < $1.key }) { print("  \(name): \(count) objects") }
            if let leftOut = report.tablesLeftOut, !leftOut.isEmpty {
                print("tables that are not RealmSwift classes, not copied:")
                for (name, count) in leftOut.sorted(by: { $0.key < $1.key }) { print("  \(name): \(count) objects") }
            }
            if report.narrowedValues.isEmpty {
                print("every value copied exactly; the database passed `strata verify` before it was put in place")
            } else {
                print("\(report.narrowedValues.count) values Strata cannot hold exactly were narrowed:")
                for line in report.narrowedValues.prefix(20) { print("  \(line)") }
                if report.narrowedValues.count > 20 { print("  … and \(report.narrowedValues.count - 20) more") }
                print("the database passed `strata verify` before it was put in place")
            }
            if deleteSource {
                try Realm.deleteRealmFile(at: source)
                print("deleted \(source) and RealmSwift's files beside it")
            }
        }
    }
}

/// Whether `path` is a RealmSwift file (rather than a Strata database directory).
func isRealmFile(_ path: String) -> Bool {
    var isDirectory: ObjCBool = false
    return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && !isDirectory.boolValue
}

/// `strata info` and `strata schema` of a RealmSwift file: its format, schema version and classes.
func printRealmFile(_ path: String, key: [UInt8]?, counts: Bool) throws {
    let file: RealmFile
    do {
        file = try RealmFile(path: path, encryptionKey: key)
    } catch let e as RealmFileError {
        throw Realm.Error(.invalidDatabase, "\(e)")
    }
    print("RealmSwift file: \(path)")
    print("file format: \(file.formatVersion)\(file.isStreamingForm ? " (streaming form, as writeCopy writes)" : "")\(file.isEncrypted ? ", encrypted" : "")")
    print("schema version: \(file.schemaVersion.map(String.init) ?? "none")")
    print("convert it with: strata import \(path) DEST, or open it with Realm(configuration:) (converted beside it)")
    for table in file.classes {
        print("")
        print("\(table.className ?? table.name)\(table.isEmbedded ? " (embedded)" : "")\(counts ? ": \(table.objectCount) objects" : "")")
        for p in table.properties {
            var type = p.type == .object ? (p.targetTable.flatMap { file.tables[$0].className } ?? "?") : p.type.rawValue
            if p.isOptional && p.collection == .none { type += "?" }
            switch p.collection {
            case .list: type = "List<\(type)\(p.isOptional && p.type != .object ? "?" : "")>"
            case .set: type = "MutableSet<\(type)\(p.isOptional ? "?" : "")>"
            case .map: type = "Map<String, \(type)\(p.isOptional ? "?" : "")>"
            case .none: break
            }
            let notes = [p.isPrimaryKey ? "primary key" : nil, p.isIndexed && !p.isPrimaryKey ? "indexed" : nil].compactMap { $0 }
            print("  - \(p.name): \(type)\(notes.isEmpty ? "" : " (\(notes.joined(separator: ", ")))")")
        }
    }
}
