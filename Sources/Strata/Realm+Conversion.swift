import Engine
import Foundation

/// What converting a RealmSwift `.realm` file into a Strata database copied (``Realm/realmFileConversion(for:)``).
public struct RealmFileConversion: Sendable, Codable, Equatable {
    /// The RealmSwift file that was converted (it is left in place: ``Realm/deleteConvertedRealmFile(configuration:)``).
    public var sourcePath: String
    /// The Strata database it became: the Realm file's path with `.strata` appended.
    public var databasePath: String
    /// The Realm file format it was read from (20 to 24 for files of RealmSwift 10).
    public var formatVersion: Int
    /// The schema version of the Realm file, which the converted database starts at; the configuration's
    /// migration block then takes it to the configuration's version.
    public var schemaVersion: UInt64
    /// Objects copied, per class.
    public var objectCounts: [String: Int]
    /// Values Strata cannot hold exactly, with the object and property of each, and what was stored instead
    /// (realm-core's null marker for a decimal in a required property). Empty for almost every app: every value
    /// of every type, dates at the extremes of realm-core's timestamps included, comes across as RealmSwift read it.
    public var narrowedValues: [String]
    /// When the conversion finished.
    public var date: Date
    /// Tables of the Realm file that are not RealmSwift classes and were not copied (realm-core's own tables, a
    /// file written by realm-core without an SDK's object store), with their object counts. Nil in records of
    /// conversions made before it was recorded.
    public var tablesLeftOut: [String: Int]? = nil
}

extension Realm {
    /// Converts the RealmSwift file `configuration.fileURL` names into its Strata database now, instead of at the
    /// first `Realm(configuration:)` (which converts it otherwise). The Realm file is only read.
    ///
    /// - Returns: What was copied; nil when there is nothing to convert (no Realm file there, or already converted).
    /// - Throws: ``Realm/Error/Code/alreadyOpen`` when a RealmSwift process has the file open (an app extension
    ///   still on RealmSwift); ``Realm/Error/Code/fileAccess`` for a missing or wrong encryption key;
    ///   ``Realm/Error/Code/unsupportedFileFormatVersion`` for files older than RealmSwift 10 (format 10) or newer
    ///   than its last release (24); ``Realm/Error/Code/invalidDatabase`` for a damaged file.
    @discardableResult
    public static func convertRealmFile(
        configuration: Configuration = .defaultConfiguration, progress: ((_ copied: Int, _ total: Int) -> Void)? = nil
    ) throws -> RealmFileConversion? {
        guard let url = configuration.fileURL, configuration.inMemoryIdentifier == nil,
              RealmFileImport.isRealmFile(atPath: url.path, encrypted: configuration.encryptionKey != nil) else { return nil }
        return try RealmFileImport.convertIfNeeded(
            source: url.path, encryptionKey: configuration.encryptionKey.map(Array.init), progress: progress)
    }

    /// What the conversion of a RealmSwift file into `configuration`'s database copied, or nil when that database
    /// was not converted from one (or has not been yet).
    public static func realmFileConversion(for configuration: Configuration = .defaultConfiguration) throws -> RealmFileConversion? {
        guard let url = configuration.fileURL, configuration.inMemoryIdentifier == nil,
              FileManager.default.fileExists(atPath: RealmFileImport.convertedPath(for: url.path) + "/CURRENT") else { return nil }
        let file = try SharedFile.shared(for: configuration)
        do {
            guard let bytes = try file.database.snapshot().get(RealmFileImport.reportKey, in: StoredSchema.metadataPartition) else { return nil }
            return try JSONDecoder().decode(RealmFileConversion.self, from: Data(bytes))
        } catch {
            throw Realm.Error(.invalidDatabase, "the conversion record of \(url.lastPathComponent) cannot be read: \(error)", fileURL: url)
        }
    }

    /// Deletes the RealmSwift file that `configuration`'s database was converted from, with RealmSwift's
    /// auxiliary files beside it (`.lock`, `.note`, `.management`), once the conversion is complete. The
    /// converted database stays where it is and later opens keep using it.
    ///
    /// - Returns: false when there was no converted Realm file to delete.
    /// - Throws: ``Realm/Error/Code/alreadyOpen`` when a RealmSwift process still has the file open.
    @discardableResult
    public static func deleteConvertedRealmFile(configuration: Configuration = .defaultConfiguration) throws -> Bool {
        guard let url = configuration.fileURL, configuration.inMemoryIdentifier == nil,
              FileManager.default.fileExists(atPath: RealmFileImport.convertedPath(for: url.path) + "/CURRENT"),
              RealmFileImport.isRealmFile(atPath: url.path, encrypted: configuration.encryptionKey != nil) else { return false }
        try RealmFileImport.deleteSource(url.path)
        return true
    }

    /// Converts the RealmSwift file at `source` into a new Strata database at `destination` (`strata import`).
    package static func convertRealmFile(
        at source: String, to destination: String, encryptionKey: [UInt8]?, progress: ((Int, Int) -> Void)? = nil
    ) throws -> RealmFileConversion {
        let lock = try RealmFileImport.lockRealmFile(source)
        defer { lock?.unlock() }
        return try RealmFileImport.convert(source: source, destination: destination, encryptionKey: encryptionKey, progress: progress)
    }

    /// Deletes a RealmSwift file and its auxiliary files (`strata import --delete-source`).
    package static func deleteRealmFile(at source: String) throws {
        try RealmFileImport.deleteSource(source)
    }
}
