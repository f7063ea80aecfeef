import Engine
import Foundation
import RealmFile

/// Converts a RealmSwift `.realm` file into a Strata database, the first time a `Realm.Configuration` names one.
///
/// Where things are: a Realm file `X` (`default.realm`) is converted into the Strata database directory `X.strata`
/// beside it; every later open of a configuration naming `X` uses `X.strata`. The Realm file is only read, never
/// written or removed (``Realm/deleteConvertedRealmFile(configuration:)`` and `strata import --delete-source` remove it
/// once the app no longer needs it).
///
/// How: the Realm file's classes become the Strata database's stored schema, at the Realm file's schema version
/// (from its `metadata` table), and every object is copied under its Realm object key (or, for an `Int` primary
/// key, under the key value, which is what Strata's keys are for such types), so links copy as they are. The
/// configuration's own schema version and migration block then apply at the open that follows, as they would to
/// a Strata file of that version. Secondary indexes are not copied: the first open that declares them builds them.
///
/// Crash safety: the database is built in `X.strata.converting` and renamed to `X.strata` only when complete (and
/// synced). A kill at any instant leaves either no `X.strata` (the next open starts again, removing the partial
/// directory) or a complete one.
///
/// Checked before it is put in place: the built database is verified as `strata verify` does
/// (`DatabaseInspector.verify`: every block, every record against the stored schema, every link, the primary-key
/// indexes). A database that fails the check is removed and the conversion throws ``Realm/Error/Code/invalidDatabase``
/// naming what disagreed; the Realm file is left as it was.
///
/// Concurrency: a RealmSwift process (an app extension still on RealmSwift) that has the file open holds a shared
/// lock on `X.lock`; conversion takes that lock exclusively, without waiting, and refuses with
/// ``Realm/Error/Code/alreadyOpen`` when it cannot, rather than read a file that is being written.
enum RealmFileImport {
    /// Objects copied per engine batch before the batch spills to disk: bounds memory on large files.
    static let spillBytes = 8 << 20

    /// The Strata database a Realm file `path` converts into.
    static func convertedPath(for path: String) -> String { path + ".strata" }
    static func stagingPath(for path: String) -> String { path + ".strata.converting" }

    /// Whether `path` is a Realm file: a regular file that starts with a Realm header, or (given a key) a file
    /// of whole 4 KiB pages, which is what an encrypted Realm file is.
    static func isRealmFile(atPath path: String, encrypted: Bool) -> Bool {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue,
              let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }  // try?: closing a file opened for reading loses nothing.
        // try?: an unreadable file is not taken for a Realm file; opening it reports why.
        guard let header = try? handle.read(upToCount: 24), header.count == 24 else { return false }
        if Array(header[16..<20]) == Array("T-DB".utf8) { return true }
        // try?: a file whose size cannot be read is not taken for an encrypted Realm file; opening it reports why.
        guard encrypted, let size = try? handle.seekToEnd() else { return false }
        return size >= 8192 && size % 4096 == 0
    }

    /// The metadata key of the conversion's record (`RealmFileConversion`, JSON), written with the data.
    static let reportKey = Array("converted-from-realm".utf8)

    /// Converts the Realm file `source` into a new Strata database at `convertedPath(for: source)`, unless it is
    /// there already. Returns nil when nothing had to be done.
    @discardableResult
    static func convertIfNeeded(source: String, encryptionKey: [UInt8]?, progress: ((Int, Int) -> Void)? = nil) throws -> RealmFileConversion? {
        let destination = convertedPath(for: source)
        if FileManager.default.fileExists(atPath: destination + "/CURRENT") { return nil }
        let lock = try lockRealmFile(source)
        defer { lock?.unlock() }
        return try convert(source: source, destination: destination, encryptionKey: encryptionKey, progress: progress)
    }

    /// Realm's lock file is held (shared) by every RealmSwift process that has the file open.
    static func lockRealmFile(_ source: String) throws -> (any FileLock)? {
        let lockPath = source + ".lock"
        guard FileManager.default.fileExists(atPath: lockPath) else { return nil }
        do {
            return try PosixFileSystem().lock(atPath: lockPath)
        } catch let e as StorageError where e.code == .locked {
            throw Realm.Error(
                .alreadyOpen,
                "Cannot convert the Realm file at path '\(source)': another process (a RealmSwift app or extension) has it open.",
                fileURL: URL(fileURLWithPath: source), underlying: e,
                suggestion: "Close it there first (update the extension to Strata), then open it again; the file is left as it is.")
        } catch {
            throw Realm.Error(.fileAccess, "Cannot lock \(lockPath) to convert the Realm file: \(error)", fileURL: URL(fileURLWithPath: source))
        }
    }

    /// Builds the Strata database of `source` in a staging directory and renames it to `destination`.
    static func convert(source: String, destination: String, encryptionKey: [UInt8]?, progress: ((Int, Int) -> Void)? = nil) throws -> RealmFileConversion {
        let url = URL(fileURLWithPath: source)
        let file: RealmFile
        do {
            file = try RealmFile(path: source, encryptionKey: encryptionKey)
        } catch let e as RealmFileError {
            throw realmError(e, url)
        }
        let staging = stagingPath(for: source)
        if FileManager.default.fileExists(atPath: staging) {
            // A conversion that was stopped: its directory was never renamed into place.
            do { try FileManager.default.removeItem(atPath: staging) } catch {
                throw Realm.Error(.fileAccess, "cannot remove \(staging), left by a conversion that was stopped: \(error)", fileURL: url)
            }
        }
        var converter = Converter(file: file, source: source)
        do {
            let schema = try converter.schema()
            var options = Database.Options()
            options.backgroundMaintenance = false
            options.encryptionKey = encryptionKey
            // A staging directory only this conversion writes.
            options.sharing = .exclusive
            let db = try Database.open(at: staging, options: options)
            do {
                try converter.copy(into: db, schema: schema, progress: progress) { copied, narrowed in
                RealmFileConversion(
                    sourcePath: source, databasePath: destination, formatVersion: file.formatVersion, schemaVersion: schema.schemaVersion,
                    objectCounts: Dictionary(copied.map { ($0.className, $0.count) }, uniquingKeysWith: +), narrowedValues: narrowed, date: Date(),
                    tablesLeftOut: Dictionary(file.tables.filter { $0.className == nil || $0.isAsymmetric }.filter { $0.name != "metadata" }
                        .map { ($0.name, $0.objectCount) }, uniquingKeysWith: +))
            }
                try db.close()
            } catch {
                // try?: the conversion already failed; the staging directory is removed by the next attempt.
                try? db.close()
                throw error
            }
            try verifyConverted(staging, source: source, encryptionKey: encryptionKey)
            let fs = PosixFileSystem()
            try fs.rename(from: staging, to: destination)
            try fs.syncDirectory(atPath: url.deletingLastPathComponent().path, .durable)
        } catch let e as RealmFileError {
            throw realmError(e, url)
        } catch let e as Realm.Error {
            throw e
        } catch {
            throw Realm.Error(.fileAccess, "converting the Realm file at path '\(source)' failed: \(error)", fileURL: url, underlying: error)
        }
        guard let report = converter.report else {
            throw Realm.Error(.fail, "converting the Realm file at path '\(source)' finished without its record", fileURL: url)
        }
        return report
    }

    /// Verifies the database a conversion built in `staging`; when it fails, removes it and throws, naming the
    /// first problems.
    static func verifyConverted(_ staging: String, source: String, encryptionKey: [UInt8]?) throws {
        let inspector = try DatabaseInspector(path: staging, encryptionKey: encryptionKey)
        let problems = inspector.verify()
        try inspector.close()
        guard problems.isEmpty else {
            // try?: the conversion has failed already; a staging directory left behind is removed by the next attempt.
            try? FileManager.default.removeItem(atPath: staging)
            let shown = problems.prefix(5).map { $0.replacingOccurrences(of: staging, with: convertedPath(for: source)) }
            throw Realm.Error(
                .invalidDatabase,
                "Converting the Realm file at path '\(source)' made a database that fails its check (\(problems.count) problem\(problems.count == 1 ? "" : "s")): "
                    + shown.joined(separator: "; ") + (problems.count > shown.count ? "; …" : ""),
                fileURL: URL(fileURLWithPath: source),
                suggestion: "The Realm file was not changed and nothing was put in its place. This is a defect of Strata's conversion: report it with the output of `strata schema` on the Realm file.")
        }
    }

    /// Removes a converted Realm file and RealmSwift's files beside it, under the Realm lock file.
    static func deleteSource(_ source: String) throws {
        let lock = try lockRealmFile(source)
        defer { lock?.unlock() }
        for path in [source, source + ".note", source + ".management", source + ".log", source + ".log_a", source + ".log_b", source + ".lock"]
        where FileManager.default.fileExists(atPath: path) {
            do { try FileManager.default.removeItem(atPath: path) } catch {
                throw Realm.Error(.fileAccess, "cannot delete \(path): \(error)", fileURL: URL(fileURLWithPath: source))
            }
        }
    }

    static func realmError(_ e: RealmFileError, _ url: URL) -> Realm.Error {
        switch e.code {
        case .encryptionKey:
            return Realm.Error(
                .fileAccess, "Unable to open a realm at path '\(url.path)': Realm file decryption failed (\(e))", fileURL: url, underlying: e,
                suggestion: "Give Realm.Configuration.encryptionKey the 64-byte key RealmSwift wrote this file with.")
        case .unsupportedFormat:
            return Realm.Error(.unsupportedFileFormatVersion, "The Realm file at path '\(url.path)' cannot be converted: \(e.message)", fileURL: url, underlying: e)
        case .io:
            return Realm.Error(.fileAccess, "Unable to read the Realm file at path '\(url.path)': \(e.message)", fileURL: url, underlying: e)
        default:
            return Realm.Error(
                .invalidDatabase, "The Realm file at path '\(url.path)' is damaged and cannot be converted: \(e)", fileURL: url, underlying: e,
                suggestion: "The file was not changed. Open it with RealmSwift to check it, or restore it from a backup.")
        }
    }
}
